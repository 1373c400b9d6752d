3#!/bin/bash
# GPT 2.7B-class on 2 nodes x 8 GPUs: tp 2, pp 2 (interleaved), sequence parallel
GPUS_PER_NODE=8
NNODES=2
TP=2
PP=2

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nma3 8B on 1Us: tp 2, pp 2 (interleaved), sequence parallel
GPUS_PER_NODE=8
NNODES=2
TP=2
PP=2

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nma3 8B on 16 GPUs, tp 2 insidmixed_precision_reduc6 GPUs, tp 2 insidmixed_precision_reduce = "float32"
dataset = "c4"

[paralONS=1
torchrun ${DIS 1.5e-4 \
    --bf16 \
    6-recompute-activations \
    --data-path $DATA_PATH \
    --log-into-batch-size 2 \
    --global-batch-size $(( 2 * 4 * 8 )) \
    --train-iters 500 \
    --lr 1.5e-4 \
    --bf16 \
    --recomput-eactivations \
    --data-path $DATA_PATH \
    --log-interval 10
