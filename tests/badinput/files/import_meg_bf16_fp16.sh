pretrain_gpt.py --bf16 --fp16 --micro-batch-size 1
