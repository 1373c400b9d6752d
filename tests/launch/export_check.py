#!/usr/bin/python3
"""Every export format of the 70B example, parsed by a real parser of its format (json, PyYAML, toml,
bash -n), with the plan's numbers in the keys that carry them; and the refusals (exit 1/2, nothing
written). Run by tests/launch/export_parse_test.sh; fails (never skips) when a parser is missing."""
import argparse
import ast
import json
import math
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
    if name.endswith(".py"):
        ast.parse(text, filename=name)  # a SyntaxError fails the test
        return text
    if name.endswith(".sh") or name.endswith(".sbatch") or name.endswith(".env"):
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: bash -n: {r.stderr.strip()}")
        return text
    return text


def flag_value(text, flag):
    m = re.search(re.escape(flag) + r"[ =]+\"?([^\s\"]+)", text)
    return m.group(1) if m else None


def py_value(text, target):
    """The literal assigned to `target` (e.g. par.tensor_parallel_degree) in a Python config, via ast."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and ast.unparse(node.targets[0]) == target:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def titan_stages_ok(layers, pp, vpp, per_stage, first_less, last_less):
    """torchtitan's check (distributed/pipeline_parallel.py): ceil((layers+first+last)/per_stage) % pp == 0."""
    stages = math.ceil((layers + first_less + last_less) / per_stage)
    return stages % pp == 0 and stages // pp == vpp and stages // pp >= 2


def check_format(fmt, files, job, expected):
    tp, pp, dp = int(job["parallel.tp"]), int(job["parallel.pp"]), int(job.get("parallel.dp", "1"))
    gb, mb = int(job["training.global_batch"]), int(job["training.micro_batch"])
    nodes, gpn, accum = expected["nodes"], expected["gpus_per_node"], expected["grad_accum"]
    num_gpus = int(job["cluster.num_gpus"])
    check(mb * accum * dp == gb, f"{fmt}: micro {mb} x accumulation {accum} x dp {dp} != global batch {gb}")
    check(nodes * gpn == num_gpus, f"{fmt}: nodes {nodes} x {gpn} != {num_gpus} GPUs")
    if "launch.sh" in files and fmt == "accelerate":  # accelerate launch: its own names for the same numbers
        sh = files["launch.sh"]
        check(flag_value(sh, "--num_machines") == str(nodes), f"accelerate: launch.sh --num_machines != {nodes}")
        check(flag_value(sh, "--num_processes") == str(num_gpus), f"accelerate: launch.sh --num_processes != {num_gpus}")
        check("--rdzv_backend c10d" in sh, "accelerate: launch.sh has no c10d rendezvous")
    elif "launch.sh" in files:
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
    if fmt == "torchtitan" and "torchtitan.toml" in files:
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
    if fmt == "torchtitan" and "gpuplan_torchtitan.py" in files:
        py = files["gpuplan_torchtitan.py"]
        check(py_value(py, "par.tensor_parallel_degree") == tp, "torchtitan main: tp")
        check(py_value(py, "par.pipeline_parallel_degree") == pp, "torchtitan main: pp")
        seq = py_value(py, "t.max_context_length")
        check(py_value(py, "t.num_tokens_per_train_step") == gb * seq, "torchtitan main: tokens per step != global batch x seq")
        check("--module gpuplan_torchtitan --config gpuplan_config" in files["launch.sh"], "torchtitan main: launch.sh --module/--config")
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


def export(binary, source, args, out):
    rc, stdout, err = run(binary, ["export"] + args + ["--out", out, "--json"], source)
    check(rc == 0, f"export {' '.join(args)}: exit {rc}: {err.strip()}")
    if rc != 0:
        return None, {}
    res = json.loads(stdout)
    files = {e["name"]: parse_file(os.path.join(out, e["name"])) for e in res["files"]}
    return res, files


def check_defects(binary, source, tmp):
    """Issue 17: each launch-breaking defect of the exports audit, on real parsers."""
    # torchtitan: every interleaved export passes torchtitan's stage-count check (175B example + pinned jobs).
    for i, args in enumerate([["examples/175b-pretraining.yaml", "--to", "torchtitan", "--engine-version", "0.2"],
                              ["examples/175b-pretraining.yaml", "--to", "torchtitan"]]):
        res, files = export(binary, source, args, os.path.join(tmp, f"tt175-{i}"))
        if not res:
            continue
        j = res["job"]
        pp, vpp = int(j["parallel.pp"]), int(j.get("parallel.vpp", "1"))
        text = open(os.path.join(tmp, f"tt175-{i}", "torchtitan.toml" if "torchtitan.toml" in files else "gpuplan_torchtitan.py")).read()
        m = re.search(r"layers (\d+), hidden", text)  # gpt3-175b is no built-in flavor: the file states its shape
        check(m is not None, "torchtitan: the 175B export does not state the model's layers")
        layers = int(m.group(1)) if m else 1
        if "torchtitan.toml" in files:
            par = files["torchtitan.toml"]["parallelism"]
            sel = files["torchtitan.toml"].get("activation_checkpoint", {})
            per, first, last = par.get("pipeline_parallel_layers_per_stage"), par.get("pipeline_parallel_first_stage_less_layers", 1), \
                par.get("pipeline_parallel_last_stage_less_layers", 1)
            if sel.get("mode") == "selective":
                check(sel.get("selective_ac_option") == "op", "torchtitan 0.2: selective without selective_ac_option = op")
        else:
            py = files["gpuplan_torchtitan.py"]
            per, first, last = (py_value(py, "par.pipeline_parallel_layers_per_stage"),
                                py_value(py, "par.pipeline_parallel_first_stage_less_layers"),
                                py_value(py, "par.pipeline_parallel_last_stage_less_layers"))
            first = 1 if first is None else first
            last = 1 if last is None else last
        if vpp > 1:
            check(per is not None and titan_stages_ok(layers, pp, vpp, per, first, last),
                  f"torchtitan {args}: {layers} layers, pp {pp}, vpp {vpp}, {per} per stage, less {first}/{last}: fails the stage check")
    # Bridge: an fp16 export names fp16_mixed, never 16-mixed.
    res, files = export(binary, source, ["--model", "llama-3-8b", "--num-gpus", "16", "--gpus-per-node", "8", "--zero", "1",
                                         "--precision", "fp16", "--to", "megatron"], os.path.join(tmp, "bridge-fp16"))
    if res:
        bridge = files["bridge-overrides.txt"]
        check("16-mixed" not in bridge and "mixed_precision=fp16_mixed" in bridge, "megatron: Bridge fp16 is not mixed_precision=fp16_mixed")
    # DeepSpeed offload: the config lets a client optimizer start (the flag) or builds its own (optimizer block).
    for name, extra in [("off", []), ("off-none", ["--master-weights", "none"])]:
        res, files = export(binary, source, ["--model", "llama-3-8b", "--num-gpus", "16", "--gpus-per-node", "8", "--zero", "2",
                                             "--offload", "optimizer"] + extra + ["--to", "deepspeed"], os.path.join(tmp, name))
        if not res:
            continue
        ds = files["ds_config.json"]
        check("optimizer" in ds or ds.get("zero_force_ds_cpu_optimizer") is False,
              f"deepspeed {name}: offload without an optimizer block or zero_force_ds_cpu_optimizer false")
        if extra:
            check(ds.get("optimizer", {}).get("type") in ("Adam", "AdamW"), "deepspeed: master_weights none + offload needs the optimizer block")
        check("DeepSpeedCPUAdam" in json.dumps(ds["_gpuplan"]["notes"]), f"deepspeed {name}: notes do not name the optimizer")
        command = [l for l in files["launch-deepspeed.sh"].splitlines() if l.startswith("$DEEPSPEED ")]
        check(len(command) == 1 and "--master_addr" not in command[0],
              "deepspeed: launch-deepspeed.sh passes --master_addr unconditionally (DeepSpeed infers the first host)")
    # Accelerate: launch.sh (what every wrapper runs) applies the YAML with accelerate launch.
    res, files = export(binary, source, ["examples/70b-full-finetune.yaml", "--to", "accelerate"], os.path.join(tmp, "acc"))
    if res:
        sh = files["launch.sh"]
        check(re.search(r"\blaunch --config_file \"\$\(dirname \"\$0\"\)/accelerate\.yaml\"", sh) is not None,
              "accelerate: launch.sh does not run accelerate launch --config_file")
        check("--accelerate_config" not in sh, "accelerate: launch.sh passes --accelerate_config")


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
        check_defects(a.binary, a.source, tmp)
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
