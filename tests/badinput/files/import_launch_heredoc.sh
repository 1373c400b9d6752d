torchrun --nnodes 1 --nproc-per-node 8 train.py <<EOF
hello
EOF
