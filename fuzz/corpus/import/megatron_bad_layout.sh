3torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \
  --tensor-model-parallel-size 3 \
  --micro-batch-size 1
