torchrun --nnodes 1 --nproc-per-node 1000 train.py
