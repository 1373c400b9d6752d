pretrain_gpt.py --tensor-model-parallel-size nan --micro-batch-size 1
