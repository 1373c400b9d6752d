torchrun --nproc-per-node 8 pretrain_gpt.py \
  --micro-batch-size "1 \
  --bf16
