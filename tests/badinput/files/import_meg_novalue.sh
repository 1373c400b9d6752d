pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size
