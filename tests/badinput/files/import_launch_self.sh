source import_launch_self.sh
torchrun --nproc-per-node 8 train.py
