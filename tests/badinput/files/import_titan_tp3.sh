torchrun --nnodes 1 --nproc-per-node 8 -m torchtitan.train --job.config_file import_titan_tp3.toml
