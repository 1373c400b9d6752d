torchrun --nnodes 2 --nproc-per-node $GPUS train.py --per_device_train_batch_size 2
