#!/usr/bin/python3
"""A stand-in for `accelerate launch` in the real-torchrun test: it reads the arguments the exported
launch.sh passes with accelerate's own names (commands/launch.py: --config_file, --num_machines,
--num_processes, --machine_rank, --main_process_ip, --main_process_port, --rdzv_backend, --rdzv_conf)
and starts torchrun the way accelerate's multi-GPU launcher does with same_network false
(utils/launch.py prepare_multi_gpu_env: nproc_per_node = processes / machines, node_rank = machine
rank, rdzv_endpoint = ip:port). The config file is handed to the script as --accelerate_config so
that tests/launch/tiny_train.py can check the batch against it (real accelerate applies it through
ACCELERATE_* variables instead). Fails on any argument accelerate would not take."""
import argparse
import os
import sys

ap = argparse.ArgumentParser(prog="accelerate")
ap.add_argument("command", choices=["launch"])
ap.add_argument("--config_file", required=True)
ap.add_argument("--num_machines", type=int, required=True)
ap.add_argument("--num_processes", type=int, required=True)
ap.add_argument("--machine_rank", type=int, required=True)
ap.add_argument("--main_process_ip", required=True)
ap.add_argument("--main_process_port", type=int, required=True)
ap.add_argument("--rdzv_backend", default="static")
ap.add_argument("--rdzv_conf", default="")
ap.add_argument("training_script")
ap.add_argument("training_script_args", nargs=argparse.REMAINDER)
a = ap.parse_args()
if not os.path.isfile(a.config_file):
    sys.exit(f"accelerate stub: --config_file {a.config_file}: no such file")
if a.num_processes % a.num_machines:
    sys.exit("accelerate stub: --num_processes is not a multiple of --num_machines")
cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(a.num_machines),
       "--nproc_per_node", str(a.num_processes // a.num_machines), "--node_rank", str(a.machine_rank),
       "--rdzv_backend", a.rdzv_backend, "--rdzv_endpoint", f"{a.main_process_ip}:{a.main_process_port}",
       "--rdzv_id", os.environ.get("GPUPLAN_JOB_ID", "none")]
if a.rdzv_conf:
    cmd += ["--rdzv_conf", a.rdzv_conf]
cmd += [a.training_script] + a.training_script_args + ["--accelerate_config", a.config_file]
os.execv(sys.executable, cmd)
