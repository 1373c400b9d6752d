3ARGS=(
  --tensor-model-parallel-size 2
  --micro-batch-size "1
