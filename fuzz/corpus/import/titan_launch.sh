3#!/usr/bin/env bash
# two nodes of eight GPUs running titan_llama3_8b.toml
NGPU=${NGPU:-8}
torchrun --nnodes 2 --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint "node-0:29500" \
  -m torchtitan.train --job.config_file "$(dirname "$0")/titan_llama3_8b.toml" --training.steps 2000
