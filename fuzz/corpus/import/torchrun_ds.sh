3#!/usr/bin/env bash
set -euo pipefail
# HF Trainer script with a DeepSpeed config whose batch is "auto": the script's flags give it
torchrun --nnodes=1 --nproc-per-node=8 --standalone train.py \
  --model_name_or_path meta-llama/Meta-Llama-3-8B \
  --deepspeed ds_auto.json \
  --per_device_train_batch_size 2 \
  --bf16 True \
  --gradient_checkpointing \
  --learning_rate 2e-5 \
  --output_dir ./out
