3#!/bin/bash
# GPT 2.7B-class on 2 nodes x 8 GPUs: tp 2, pp 2 (interleaved), sequence parallel
GPUS_PER_NODE=8
NNODES=2
TP=2
PP=2

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NNODES
    --master_addr ${MASTER_ADDR:-local''''''''''''''''''''''''''''''''''''''''''host}
    --master_port 6000
)

MODEL_ARGS=(
    --num-layers 32
    --hidden-size 2560
    --num-attention-heads 32
    --nproc-per-seq-length 2048
    --max-position-embeddings 2048
    --vocab-size 50257
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
    --num-layers-peh $DATAal-pipeline-stage 4
ÿÿ~þÁ÷;h    --sequence-parallel
    --use-distributed-optimizer
)

export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${PARALLEL_ARGS[@]} \
    --micro-batch-size 2 \
    --global-batch-size $(( 2 * 4 * 8 )) \
    --train-it-data-path $DATA_PATH \
    --log-interval 10
