#!/usr/bin/python3
"""The exported accelerate and DeepSpeed launch scripts run with stub `accelerate`, `deepspeed` and
`torchrun` executables first on PATH that record the arguments they get (one per line). Checked:
- accelerate: every launch script of an accelerate export runs `accelerate launch --config_file FILE` with
  FILE the exported accelerate.yaml (otherwise accelerate's FSDP/DeepSpeed settings are never applied:
  Accelerator() reads them from the environment `accelerate launch` sets), the machine count, the total
  process count, this node's rank and the head's address and port from GPUPLAN_*, the script, and the
  user's extra arguments last;
- DeepSpeed: launch-deepspeed.sh of a multi-node job passes --hostfile (the exported file, one line per
  node with slots = GPUs per node), --num_nodes, --num_gpus, and never --master_addr localhost/127.0.0.1
  when GPUPLAN_HEAD is not set (DeepSpeed's runner finds the first host itself only when --master_addr is
  not given; a localhost master on every node hangs the run); with GPUPLAN_HEAD set, a --master_addr is
  that address; the script gets --deepspeed --deepspeed_config FILE (the exported ds_config.json); a
  one-node job does not send the runner to a placeholder host (node-0) over ssh;
- every flag a stub receives is a flag of the engine at its pinned version (data/engine_keys/*.csv).
Usage: launcher_stub_check.py --binary GPUPLAN --source SRC"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_keys_check as keys  # noqa: E402  the tables and the flag checker

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def run_script(script, stubs, env_extra, extra_args):
    """(process, {launcher: [argv, ...]}) of SCRIPT run against the stub launchers."""
    return keys.run_with_stubs(script, stubs, env_extra, extra_args)


def value_after(argv, flag):
    for i, w in enumerate(argv):
        if w == flag and i + 1 < len(argv):
            return argv[i + 1]
        if w.startswith(flag + "="):
            return w.split("=", 1)[1]
    return None


def export(binary, src, job, fmt, out):
    p = subprocess.run([binary, "export", job, "--to", fmt, "--out", out], cwd=src, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"export {os.path.basename(job)} --to {fmt}: exit {p.returncode}: {p.stderr.strip()[:200]}")
        return False
    return True


def write_job(tmp, name, nodes, gpn, parallel):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write("model: {preset: llama-3-8b}\n"
                "training: {method: full, seq_len: 2048, micro_batch: 1, global_batch: %d, precision: bf16, tokens: 1.0e8}\n"
                "parallel: {tp: 1, pp: 1, %s}\n"
                "cluster: {gpu: h100-sxm-80gb, num_gpus: %d, gpus_per_node: %d}\n" % (nodes * gpn * 2, parallel, nodes * gpn, gpn))
    return path


EXTRA = ["--gpuplan-extra", "x y"]


def check_accelerate(binary, src, tmp, stubs):
    job = write_job(tmp, "acc-2x8", 2, 8, "zero: 3")
    out = os.path.join(tmp, "acc")
    if not export(binary, src, job, "accelerate", out):
        return
    yaml_path = os.path.realpath(os.path.join(out, "accelerate.yaml"))
    for script in sorted(n for n in os.listdir(out) if n.startswith("launch") and n.endswith(".sh")):
        env = {"GPUPLAN_HEAD": "10.1.2.3", "GPUPLAN_PORT": "29511", "GPUPLAN_NODE_RANK": "1", "GPUPLAN_JOB_ID": "stub"}
        p, got = run_script(os.path.join(out, script), stubs, env, EXTRA)
        got = got["accelerate"]
        if p.returncode != 0:
            fail(f"accelerate/{script}: exit {p.returncode}: {p.stderr.strip()[:200]}")
            continue
        if len(got) != 1:
            fail(f"accelerate/{script}: runs `accelerate` {len(got)} times, not once (an accelerate export's launch must be "
                 f"`accelerate launch --config_file accelerate.yaml`, or Accelerator() runs plain DDP)")
            continue
        argv = got[0]
        where = f"accelerate/{script}"
        if argv[:1] != ["launch"]:
            fail(f"{where}: first argument {argv[:1]}, not launch")
            continue
        cfg = value_after(argv, "--config_file")
        if cfg is None or os.path.realpath(cfg) != yaml_path:
            fail(f"{where}: --config_file is {cfg!r}, not the exported accelerate.yaml")
        for flag, want in (("--num_machines", "2"), ("--num_processes", "16"), ("--machine_rank", "1"),
                           ("--main_process_ip", "10.1.2.3"), ("--main_process_port", "29511")):
            got_v = value_after(argv, flag)
            if got_v is not None and got_v != want:
                fail(f"{where}: {flag} {got_v}, want {want}")
            if got_v is None and flag in ("--machine_rank", "--main_process_ip"):
                fail(f"{where}: no {flag}: every node would take the YAML's rank-0 / localhost values")
        rest = keys.check_flags(keys.TABLES, "accelerate", argv[1:], where, id_prefix="launch ")
        if not rest or not rest[0].endswith(".py"):
            fail(f"{where}: no training script after the launch flags: {rest[:3]}")
        elif rest[-len(EXTRA):] != EXTRA:
            fail(f"{where}: the user's arguments do not come last, unsplit: {rest[-4:]}")


def check_deepspeed(binary, src, tmp, stubs):
    for nodes in (2, 1):
        job = write_job(tmp, f"ds-{nodes}x8", nodes, 8, "zero: 2")
        out = os.path.join(tmp, f"ds{nodes}")
        if not export(binary, src, job, "deepspeed", out):
            continue
        script = os.path.join(out, "launch-deepspeed.sh")
        where = f"deepspeed {nodes} node(s)/launch-deepspeed.sh"
        if not os.path.exists(script):
            fail(f"{where}: not exported")
            continue
        for env in ({}, {"GPUPLAN_HEAD": "10.9.8.7"}):
            p, got = run_script(script, stubs, dict(env, GPUPLAN_PORT="29522"), EXTRA)
            got = got["deepspeed"]
            tag = f"{where} (GPUPLAN_HEAD {'set' if env else 'unset'})"
            if p.returncode != 0 or len(got) != 1:
                fail(f"{tag}: exit {p.returncode}, {len(got)} deepspeed call(s): {p.stderr.strip()[:200]}")
                continue
            argv = got[0]
            master = value_after(argv, "--master_addr")
            if not env and master in ("localhost", "127.0.0.1") and nodes > 1:
                fail(f"{tag}: --master_addr {master}: every node would rendezvous with itself (DeepSpeed's runner finds the "
                     f"first hostfile host only when --master_addr is not given)")
            if env and master is not None and master != env["GPUPLAN_HEAD"]:
                fail(f"{tag}: --master_addr {master}, not GPUPLAN_HEAD {env['GPUPLAN_HEAD']}")
            rest = keys.check_flags(keys.TABLES, "deepspeed", argv, tag)
            hostfile = value_after(argv, "--hostfile") or value_after(argv, "-H")
            if nodes > 1:
                if value_after(argv, "--num_nodes") not in (None, str(nodes)) or value_after(argv, "--num_gpus") not in (None, "8"):
                    fail(f"{tag}: --num_nodes/--num_gpus {value_after(argv, '--num_nodes')}/{value_after(argv, '--num_gpus')}, want {nodes}/8")
                if hostfile is None or not os.path.isfile(hostfile):
                    fail(f"{tag}: no --hostfile naming an existing file ({hostfile!r})")
                else:
                    hosts = [l.split() for l in open(hostfile) if l.strip() and not l.startswith("#")]
                    if len(hosts) != nodes or any(h[1:] != ["slots=8"] for h in hosts):
                        fail(f"{tag}: hostfile has {hosts}, want {nodes} lines with slots=8")
            elif hostfile is not None and os.path.isfile(hostfile):
                hosts = [l.split()[0] for l in open(hostfile) if l.strip() and not l.startswith("#")]
                if any(h.startswith("node-") for h in hosts):
                    fail(f"{tag}: a one-node run is sent to placeholder host(s) {hosts} over ssh (DeepSpeed's runner "
                         f"stops with 'not reachable via ssh'); one node needs no hostfile")
            if not rest or not rest[0].endswith(".py"):
                fail(f"{tag}: no training script after the launcher flags: {rest[:3]}")
                continue
            script_args = rest[1:]
            cfg = value_after(script_args, "--deepspeed_config")
            if "--deepspeed" not in script_args or cfg is None or os.path.realpath(cfg) != os.path.realpath(os.path.join(out, "ds_config.json")):
                fail(f"{tag}: the script does not get --deepspeed --deepspeed_config <the exported ds_config.json>: {script_args}")
            if script_args[-len(EXTRA):] != EXTRA:
                fail(f"{tag}: the user's arguments do not come last, unsplit: {script_args[-4:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    keys.TABLES.update(keys.load_tables(a.source))
    tmp = tempfile.mkdtemp(prefix="gpuplan-stub-")
    try:
        stubs = os.path.join(tmp, "bin")
        keys.make_stubs(stubs)
        check_accelerate(a.binary, a.source, tmp, stubs)
        check_deepspeed(a.binary, a.source, tmp, stubs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    FAILS.extend(keys.FAILS)
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    print("launcher_stub_check: the accelerate and DeepSpeed launches hand their engines the exported files and flags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
