pretrain_gpt.py --num-layers 30 --hidden-size 1024 --num-attention-heads 16 --vocab-size 32000 \
  --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4 --micro-batch-size 1
