3accelerate launch --config_file accelerate_fsdp2.yaml --num_processes 16 --num_machines 2 train.py \
  --per_device_train_batch_size 1 --gradient_accumulation_steps 2
