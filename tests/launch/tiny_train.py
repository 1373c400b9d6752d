#!/usr/bin/env python3
"""One optimizer step of a tiny model, launched by an exported launch.sh (tests/launch/torchrun_test.sh).

Reads the exported config given on the command line (--deepspeed_config ds_config.json or
--accelerate_config accelerate.yaml with --per_device_train_batch_size/--gradient_accumulation_steps;
the plain torchrun export passes none: the script owns its batch, here TINY_MICRO and TINY_ACCUM),
checks the world the launcher built against it and against what the test expects (TINY_EXPECT_NODES,
TINY_EXPECT_NPROC, TINY_EXPECT_GLOBAL_BATCH), then runs one DDP step on the CPU (gloo) with the exported
micro-batch and accumulation and checks every rank ends with the same gradients and weights, equal to
the gradient of the whole global batch computed on one process. Prints one line per rank:
GPUPLAN_TINY_TRAIN_OK rank=R world=W.  Needs Debian's python3-torch and python3-yaml (/usr/bin/python3).
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import yaml


def fail(msg):
    print(f"GPUPLAN_TINY_TRAIN_FAIL rank={os.environ.get('RANK', '?')}: {msg}", flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--deepspeed", action="store_true")
    p.add_argument("--deepspeed_config")
    p.add_argument("--accelerate_config")
    p.add_argument("--per_device_train_batch_size", type=int)
    p.add_argument("--gradient_accumulation_steps", type=int)
    return p.parse_args()


def batch_from_deepspeed(path, world):
    """micro, accumulation, dp and global batch as ds_config.json states them."""
    with open(path, encoding="utf-8") as f:
        c = json.load(f)
    tp = c.get("tensor_parallel", {}).get("autotp_size", 1)
    pp = 1  # the DeepSpeed export carries no pipeline
    check(world % (tp * pp) == 0, f"world {world} not divisible by tp {tp} x pp {pp}")
    return c["train_micro_batch_size_per_gpu"], c["gradient_accumulation_steps"], world // (tp * pp), c["train_batch_size"]


def batch_from_accelerate(path, args, world, nodes, expect_global):
    """micro and accumulation from the script's arguments (accelerate's YAML has no batch keys)."""
    with open(path, encoding="utf-8") as f:
        y = yaml.safe_load(f)
    check(y["num_processes"] == world, f"accelerate num_processes {y['num_processes']} != WORLD_SIZE {world}")
    check(y["num_machines"] == nodes, f"accelerate num_machines {y['num_machines']} != {nodes} nodes")
    pc = y.get("parallelism_config") or {}
    tp = pc.get("parallelism_config_tp_size", 1)
    cp = pc.get("parallelism_config_cp_size", 1)
    check(world % (tp * cp) == 0, f"world {world} not divisible by tp {tp} x cp {cp}")
    micro, accum = args.per_device_train_batch_size, args.gradient_accumulation_steps
    check(micro is not None and accum is not None, "launch.sh passed no --per_device_train_batch_size/--gradient_accumulation_steps")
    ds = y.get("deepspeed_config") or {}
    if "gradient_accumulation_steps" in ds:
        check(ds["gradient_accumulation_steps"] == accum, f"deepspeed_config accumulation {ds['gradient_accumulation_steps']} != {accum}")
    return micro, accum, world // (tp * cp), expect_global


def check_world(nodes, nproc):
    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    check(world == nodes * nproc, f"WORLD_SIZE {world} != {nodes} nodes x {nproc} processes")
    check(0 <= rank < world, f"RANK {rank} outside [0, {world})")
    check(0 <= local_rank < nproc, f"LOCAL_RANK {local_rank} outside [0, {nproc})")
    check(int(os.environ.get("LOCAL_WORLD_SIZE", nproc)) == nproc, f"LOCAL_WORLD_SIZE {os.environ.get('LOCAL_WORLD_SIZE')} != {nproc}")
    return world, rank


def micro_batch(rank, step, micro):
    """The same data on whichever process asks: seeded by (rank, micro-step)."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(micro, 16, generator=g), torch.randn(micro, 4, generator=g)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).double()


def reference_grads(world, micro, accum):
    """The global batch's gradient on one process: the mean over every rank's accumulated micro-steps."""
    model = make_model()
    for r in range(world):
        for s in range(accum):
            x, y = micro_batch(r, s, micro)
            (torch.nn.functional.mse_loss(model(x.double()), y.double()) / (accum * world)).backward()
    return [p.grad.clone() for p in model.parameters()]


def same_on_every_rank(tensors, what):
    flat = torch.cat([t.reshape(-1) for t in tensors]).double()
    checksum = torch.stack([flat.sum(), (flat * flat).sum(), (flat * torch.arange(flat.numel(), dtype=flat.dtype)).sum()])
    hi, lo = checksum.clone(), checksum.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    check(torch.allclose(hi, lo, rtol=0, atol=1e-12), f"{what} differ across ranks: max {hi.tolist()} min {lo.tolist()}")


def train_step(world, rank, micro, accum):
    model = torch.nn.parallel.DistributedDataParallel(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for s in range(accum):
        x, y = micro_batch(rank, s, micro)
        loss = torch.nn.functional.mse_loss(model(x.double()), y.double()) / accum
        if s < accum - 1:
            with model.no_sync():  # accumulate locally; the last micro-step all-reduces
                loss.backward()
        else:
            loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    same_on_every_rank(grads, "gradients")
    for g, ref in zip(grads, reference_grads(world, micro, accum)):
        check(torch.allclose(g, ref, rtol=1e-9, atol=1e-12), "DDP gradient != the global batch's gradient")
    opt.step()
    same_on_every_rank([p.detach() for p in model.parameters()], "weights after the step")


def main():
    args = parse_args()
    nodes = int(os.environ["TINY_EXPECT_NODES"])
    nproc = int(os.environ["TINY_EXPECT_NPROC"])
    expect_global = int(os.environ["TINY_EXPECT_GLOBAL_BATCH"])
    world, rank = check_world(nodes, nproc)
    if args.deepspeed_config:
        check(args.deepspeed, "--deepspeed_config without --deepspeed")
        micro, accum, dp, global_batch = batch_from_deepspeed(args.deepspeed_config, world)
    elif args.accelerate_config:
        micro, accum, dp, global_batch = batch_from_accelerate(args.accelerate_config, args, world, nodes, expect_global)
    elif os.environ.get("TINY_MICRO") and os.environ.get("TINY_ACCUM"):  # the torchrun export: no config
        micro, accum, dp, global_batch = int(os.environ["TINY_MICRO"]), int(os.environ["TINY_ACCUM"]), world, expect_global
    else:
        fail("no exported config on the command line (--deepspeed_config or --accelerate_config) and no TINY_MICRO/TINY_ACCUM")
    check(global_batch == expect_global, f"the config's global batch {global_batch} != the job's {expect_global}")
    check(micro * accum * dp == global_batch, f"micro {micro} x accumulation {accum} x dp {dp} != global batch {global_batch}")
    check(dp == world, f"dp {dp} != world {world}: this tiny step is data-parallel only")
    dist.init_process_group("gloo")
    train_step(world, rank, micro, accum)
    print(f"GPUPLAN_TINY_TRAIN_OK rank={rank} world={world} micro={micro} accumulation={accum} dp={dp}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
