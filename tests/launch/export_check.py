#!/usr/bin/python3
"""Every export format of the 70B example, parsed by a real parser of its format (json, PyYAML, toml,
bash -n), with the plan's numbers in the keys that carry them; and the refusals (exit 1/2, nothing
written). Run by tests/launch/export_parse_test.sh; fails (never skips) when a parser is missing."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import toml
    import yaml
except ImportError as e:  # the test says what it needs
    sys.exit(f"export_check: needs Debian's python3-yaml and python3-toml for /usr/bin/python3: {e}")

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def run(binary, args, cwd):
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def parse_file(path):
    """The file parsed by the real parser of its kind; shell files are checked by bash -n."""
    name = os.path.basename(path)
    with open(path) as f:
        text = f.read()
    if name.endswith(".json"):
        return json.loads(text)
    if name.endswith(".yaml") or name.endswith(".yml"):
        return list(yaml.safe_load_all(text))
    if name.endswith(".toml"):
        return toml.loads(text)
    if name.endswith(".sh") or name.endswith(".sbatch") or name.endswith(".env"):
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: bash -n: {r.stderr.strip()}")
        return text
    return text


def flag_value(text, flag):
    m = re.search(re.escape(flag) + r"[ =]+\"?([^\s\"]+)", text)
    return m.group(1) if m else None


def check_format(fmt, files, job, expected):
    tp, pp, dp = int(job["parallel.tp"]), int(job["parallel.pp"]), int(job.get("parallel.dp", "1"))
    gb, mb = int(job["training.global_batch"]), int(job["training.micro_batch"])
    nodes, gpn, accum = expected["nodes"], expected["gpus_per_node"], expected["grad_accum"]
    num_gpus = int(job["cluster.num_gpus"])
    check(mb * accum * dp == gb, f"{fmt}: micro {mb} x accumulation {accum} x dp {dp} != global batch {gb}")
    check(nodes * gpn == num_gpus, f"{fmt}: nodes {nodes} x {gpn} != {num_gpus} GPUs")
    if "launch.sh" in files:
        sh = files["launch.sh"]
        check(flag_value(sh, "--nnodes") == str(nodes), f"{fmt}: launch.sh --nnodes != {nodes}")
        check(flag_value(sh, "--nproc-per-node") in (str(gpn), None) or flag_value(sh, "--nproc_per_node") == str(gpn),
              f"{fmt}: launch.sh --nproc-per-node != {gpn}")
        check("--rdzv-backend c10d" in sh or "--rdzv_backend c10d" in sh, f"{fmt}: launch.sh has no c10d rendezvous")
    if fmt == "deepspeed":
        ds = files["ds_config.json"]
        check(ds["train_batch_size"] == gb, f"deepspeed: train_batch_size {ds['train_batch_size']} != {gb}")
        check(ds["train_micro_batch_size_per_gpu"] == mb, "deepspeed: micro-batch")
        check(ds["gradient_accumulation_steps"] == accum, "deepspeed: accumulation")
        check(ds["zero_optimization"]["stage"] == int(job["parallel.zero"]), "deepspeed: ZeRO stage")
        check(ds.get("bf16", {}).get("enabled") == (job["training.precision"] in ("bf16", "fp8")), "deepspeed: bf16")
        check("_gpuplan" in ds, "deepspeed: no _gpuplan trace object")
        hosts = [l for l in files["hostfile"].splitlines() if l.strip() and not l.startswith("#")]
        check(len(hosts) == nodes and all(f"slots={gpn}" in h for h in hosts), "deepspeed: hostfile lines / slots")
    if fmt == "accelerate":
        docs = files["accelerate.yaml"]
        acc = docs[0]
        check(acc["num_processes"] == num_gpus, f"accelerate: num_processes {acc['num_processes']} != {num_gpus}")
        check(acc["num_machines"] == nodes, "accelerate: num_machines")
    if fmt == "megatron":
        args = files["megatron-args.sh"]
        check(flag_value(args, "--tensor-model-parallel-size") == str(tp), "megatron: tp")
        check(flag_value(args, "--pipeline-model-parallel-size") == str(pp), "megatron: pp")
        check(flag_value(args, "--global-batch-size") == str(gb), "megatron: global batch")
        check(flag_value(args, "--micro-batch-size") == str(mb), "megatron: micro-batch")
        vpp = int(job.get("parallel.vpp", "1"))
        if vpp > 1:
            layers = int(flag_value(args, "--num-layers"))
            check(flag_value(args, "--num-layers-per-virtual-pipeline-stage") == str(layers // (pp * vpp)), "megatron: vpp")
        check(("--sequence-parallel" in args) == (job.get("parallel.sequence_parallel") == "true"), "megatron: sequence parallel")
    if fmt == "torchtitan":
        t = files["torchtitan.toml"]
        par = t["parallelism"]
        check(par.get("tensor_parallel_degree", 1) == tp, "torchtitan: tp")
        check(par.get("pipeline_parallel_degree", 1) == pp, "torchtitan: pp")
        check(t["training"]["global_batch_size"] == gb, "torchtitan: global batch")
        # With pipeline stages torchtitan splits one local batch into microbatches of
        # pipeline_parallel_microbatch_size: the local batch is then micro x accumulation.
        local = mb * accum if pp > 1 else mb
        check(t["training"]["local_batch_size"] == local, f"torchtitan: local batch {t['training']['local_batch_size']} != {local}")
        if pp > 1:
            check(par.get("pipeline_parallel_microbatch_size") == mb, "torchtitan: pipeline microbatch size")
    if fmt == "slurm":
        sb = files["gpuplan.sbatch"]
        check(re.search(rf"^#SBATCH --nodes={nodes}\b", sb, re.M) is not None, "slurm: --nodes")
        check(re.search(rf"^#SBATCH --gpus-per-node={gpn}\b", sb, re.M) is not None, "slurm: --gpus-per-node")
    if fmt == "kubernetes":
        tj = [d for d in files["trainjob.yaml"] if d and d.get("kind") == "TrainJob"][0]
        check(tj["spec"]["trainer"]["numNodes"] == nodes, "kubernetes: numNodes")
        check(tj["spec"]["trainer"]["numProcPerNode"] == gpn, "kubernetes: numProcPerNode")
        check(tj["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == gpn, "kubernetes: nvidia.com/gpu")
        pj = [d for d in files["pytorchjob.yaml"] if d and d.get("kind") == "PyTorchJob"][0]
        workers = pj["spec"]["pytorchReplicaSpecs"].get("Worker", {}).get("replicas", 0)
        check(workers == nodes - 1, "kubernetes: PyTorchJob workers")
    if fmt == "skypilot":
        sky = files["sky.yaml"][0]
        check(sky["num_nodes"] == nodes, "skypilot: num_nodes")
        check(str(sky["resources"]["accelerators"]).endswith(f":{gpn}"), "skypilot: accelerators")
    if "fabric.env" in files and expected.get("network"):
        env = files["fabric.env"]
        tcp = expected["network"].startswith("tcp")
        check(("NCCL_IB_DISABLE=1" in env) == tcp, f"{fmt}: fabric.env NCCL_IB_DISABLE=1 iff the network is TCP")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    example = "examples/70b-full-finetune.yaml"
    rc, out, err = run(a.binary, ["plan", example, "--json"], a.source)
    check(rc == 0, f"plan exit {rc}: {err}")
    best = json.loads(out)["plans"][0]
    tmp = tempfile.mkdtemp(prefix="gpuplan-export-")
    try:
        for fmt in ["deepspeed", "accelerate", "torchrun", "megatron", "torchtitan", "slurm", "kubernetes", "skypilot", "fabric"]:
            d = os.path.join(tmp, fmt)
            rc, out, err = run(a.binary, ["export", example, "--to", fmt, "--out", d, "--json"], a.source)
            check(rc == 0, f"export --to {fmt}: exit {rc}: {err.strip()}")
            if rc != 0:
                continue
            res = json.loads(out)
            job = res["job"]
            if not res["note"]:  # the best plan itself: the same job as plan --json row 1
                check(job == best["job"], f"{fmt}: exported job differs from plan #1 without a note")
                check(res["expected"]["nodes"] == best["nodes"], f"{fmt}: nodes differ from plan #1")
            else:
                print(f"{fmt}: {res['note']}")
            files = {}
            for entry in res["files"]:
                path = os.path.join(d, entry["name"])
                check(os.path.isfile(path), f"{fmt}: {entry['name']} not written")
                files[entry["name"]] = parse_file(path)
                with open(path) as f:
                    head = f.read(600)
                check("gpuplan" in head, f"{fmt}: {entry['name']} does not start with the gpuplan header")
                if entry["executable"]:
                    check(os.access(path, os.X_OK), f"{fmt}: {entry['name']} not executable")
            check(not [n for n in os.listdir(d) if n.startswith(".gpuplan-tmp")], f"{fmt}: temporary files left")
            check_format(fmt, files, job, res["expected"])
        # Refusals: unknown format (1), a pinned job that does not fit (2), a layout the format cannot say (1);
        # an existing --out directory keeps exactly what it had.
        keep = os.path.join(tmp, "keep")
        os.makedirs(keep)
        with open(os.path.join(keep, "mine.txt"), "w") as f:
            f.write("user file\n")
        cases = [
            (["export", example, "--to", "helm", "--out", keep], 1),
            (["export", "--model", "llama-3-70b", "--gpu", "rtx4090", "--num-gpus", "1", "--to", "deepspeed", "--out", keep], 2),
            (["export", "--model", "llama-3-8b", "--num-gpus", "16", "--pp", "2", "--to", "deepspeed", "--out", keep], 1),
            (["export", "--model", "llama-3-8b", "--num-gpus", "16", "--gpus-per-node", "4", "--tp", "8", "--to", "torchtitan", "--out", keep], 1),
        ]
        for args, want in cases:
            rc, out, err = run(a.binary, args, a.source)
            check(rc == want, f"{' '.join(args)}: exit {rc}, want {want} ({err.strip()})")
            check(err.startswith("gpuplan: ") and len(err.strip()) > 12, f"{' '.join(args)}: no message on stderr")
            check(sorted(os.listdir(keep)) == ["mine.txt"], f"{' '.join(args)}: the --out directory changed: {os.listdir(keep)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    print("export_check: all formats parsed and carry the plan's numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
