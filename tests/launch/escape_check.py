#!/usr/bin/python3
"""Issue 17 item 5: nothing a user names runs as code. Jobs whose model name, file name, script,
script arguments and image carry newlines, quotes, $( ), backticks, '#' and ';' are exported to every
format; every shell file passes bash -n and is then run (launchers and srun stubbed on PATH, in a scratch
directory) without creating PWNED; every YAML/TOML/JSON file parses, no key holds a user's text, and every
value holding it holds it whole. Run by tests/launch/escape_test.sh; fails (never skips) without a parser."""
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
except ImportError as e:
    sys.exit(f"escape_check: needs Debian's python3-yaml and python3-toml for /usr/bin/python3: {e}")

FAILS = []
FORMATS = ["deepspeed", "accelerate", "torchrun", "megatron", "torchtitan", "slurm", "kubernetes", "skypilot", "fabric"]
# Each starts with "evil" so that a value split at a newline or quote is caught (its tail lacks the mark).
NASTY = [
    "evil\ntouch PWNED",
    "evil'; touch PWNED; '",
    'evil"; touch PWNED; "',
    "evil$(touch PWNED)",
    "evil`touch PWNED`",
    "evil # comment; touch PWNED",
    "evil\r\n#x\n$(touch PWNED)\n`touch PWNED`\n'\"}{",
    "evil\\\"$(touch PWNED)\\",
]
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
STUBS = ["torchrun", "deepspeed", "accelerate", "python", "python3", "scontrol", "srun", "sky", "kubectl"]


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def write_stubs(d):
    """Launchers that record their argv and exit 0; srun runs its command (bash -c ...) as Slurm would."""
    os.makedirs(d, exist_ok=True)
    for name in STUBS:
        path = os.path.join(d, name)
        with open(path, "w") as f:
            if name == "srun":
                f.write('#!/bin/bash\nwhile [[ "${1:-}" == --* ]]; do shift; done\nexec "$@"\n')
            elif name == "scontrol":
                f.write("#!/bin/bash\necho node-a\n")
            else:
                f.write(f'#!/bin/bash\nprintf "%s\\n" "{name}" "$@" >> "$GPUPLAN_STUB_LOG"\n')
        os.chmod(path, 0o755)


def walk(node, path, where):
    """Every key and string value: keys never hold a user's text, values hold it whole."""
    if isinstance(node, dict):
        for k, v in node.items():
            check("PWNED" not in str(k) and "evil" not in str(k), f"{where}: key {k!r} carries a user's text")
            walk(v, path + [str(k)], where)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, path + [str(i)], where)
    elif isinstance(node, str) and "PWNED" in node:
        check(node.find("evil") != -1 and node.find("evil") < node.find("PWNED"),
              f"{where}: {'.'.join(path)} = {node[:80]!r} holds a user's text cut apart")


def check_structured(path, name):
    text = open(path, encoding="utf-8", errors="strict").read()
    try:
        if name.endswith(".json"):
            docs = [json.loads(text)]
        elif name.endswith(".yaml"):
            docs = list(yaml.safe_load_all(text))
        else:
            docs = [toml.loads(text)]
    except Exception as e:  # the test reports every parser error as a failure
        check(False, f"{path}: does not parse: {e}")
        return []
    for d in docs:
        walk(d, [], path)
    return docs


def run_script(src_dir, script, env_extra):
    """The script run in a scratch copy of the export directory; True when no PWNED appeared."""
    with tempfile.TemporaryDirectory() as scratch:
        work = os.path.join(scratch, "export")
        shutil.copytree(src_dir, work)
        stubs = os.path.join(scratch, "stubs")
        write_stubs(stubs)
        env = {"PATH": stubs + ":/usr/bin:/bin", "HOME": scratch, "GPUPLAN_STUB_LOG": os.path.join(scratch, "argv.log")}
        env.update(env_extra)
        env = {k: v.replace("@WORK@", work) for k, v in env.items()}
        p = subprocess.run(["bash", os.path.join(work, script)], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        pwned = [os.path.join(r, f) for r, _, fs in os.walk(scratch) for f in fs if "PWNED" in f]
        check(not pwned, f"{script}: running it created {pwned} (rc {p.returncode}: {p.stderr[-300:]})")
        check(p.returncode == 0, f"{script}: exit {p.returncode}: {p.stderr[-400:]}")


def check_export(d, fmt, label):
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name)
        where = f"{label} --to {fmt}: {name}"
        if name.endswith((".sh", ".sbatch", ".env")):
            r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
            check(r.returncode == 0, f"{where}: bash -n: {r.stderr.strip()}")
        elif name.endswith((".json", ".yaml", ".toml")):
            for doc in check_structured(path, name):
                if isinstance(doc, dict) and name.endswith(".yaml") and "metadata" in doc:
                    check(bool(DNS1035.match(doc["metadata"]["name"])), f"{where}: metadata.name {doc['metadata']['name']!r}")
                if isinstance(doc, dict) and name == "sky.yaml":
                    check(bool(DNS1035.match(doc["name"])), f"{where}: name {doc['name']!r}")
                if isinstance(doc, dict) and name == "configmap.yaml":
                    for k, v in doc["data"].items():
                        check(v == open(os.path.join(d, k)).read(), f"{where}: data.{k} differs from {k}")
        elif name == "bridge-overrides.txt":
            for line in open(path):
                line = line.rstrip("\n")
                check(line.startswith("#") or re.fullmatch(r"[A-Za-z_.]+=[A-Za-z0-9_./:=+,@%-]+", line) is not None,
                      f"{where}: line {line!r} is not one override word")
        elif name == "hostfile":
            for line in open(path):
                check(line.startswith("#") or re.fullmatch(r"\S+ slots=\d+\n", line) is not None, f"{where}: line {line!r}")
        for line in open(path, encoding="utf-8"):
            check(not re.match(r"\s*touch PWNED", line), f"{where}: a line starts with the user's command: {line!r}")
    slurm_env = {"SLURM_SUBMIT_DIR": "@WORK@", "SLURM_JOB_NODELIST": "node-a", "SLURM_JOB_ID": "7", "SLURM_NODEID": "0",
                 "SLURM_JOB_NUM_NODES": "2"}
    for name in sorted(os.listdir(d)):
        if name.endswith((".sh", ".sbatch", ".env")):
            run_script(d, name, slurm_env)


def job_yaml(name):
    return ("model:\n  preset: llama-3-8b\n  name: " + json.dumps(name) + "\n"
            "training:\n  seq_len: 2048\n  micro_batch: 1\n  global_batch: 64\n  tokens: 1e9\n  recompute: full\n"
            "parallel:\n  zero: 3\n"
            "cluster:\n  gpu: h100\n  gpus_per_node: 8\n  num_gpus: 16\n  network: ib-ndr\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    a = ap.parse_args()
    exported = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, nasty in enumerate(NASTY):
            # The job file's own name carries the text too (it is the artefacts' origin).
            job = os.path.join(tmp, f"job{i}-" + nasty.replace("/", "_") + ".yaml")
            with open(job, "w") as f:
                f.write(job_yaml(nasty))
            for fmt in FORMATS:
                out = os.path.join(tmp, f"out-{i}-{fmt}")
                args = [a.binary, "export", job, "--to", fmt, "--out", out, "--script", "train" + nasty + ".py",
                        "--script-arg", nasty, "--script-arg", "--name=" + nasty]
                if fmt == "kubernetes":
                    args += ["--image", "registry.example/" + nasty]
                p = subprocess.run(args, cwd=tmp, capture_output=True, text=True, timeout=300)
                label = f"job {i} ({nasty[:24]!r})"
                if p.returncode == 1:  # refused at input, with its location: allowed, if nothing was written
                    print(f"refused at input ({label} --to {fmt}): {p.stderr.strip()[:160]}")
                    check(not os.path.exists(out) or not os.listdir(out), f"{label} --to {fmt}: refused but wrote files")
                    continue
                check(p.returncode == 0, f"{label} --to {fmt}: exit {p.returncode}: {p.stderr.strip()[:300]}")
                if p.returncode == 0:
                    check_export(out, fmt, label)
                    exported += 1
                check(not os.path.exists(os.path.join(tmp, "PWNED")), f"{label} --to {fmt}: gpuplan itself created PWNED")
    check(exported >= len(NASTY) * len(FORMATS) // 2, f"only {exported} exports were written: the test checks too little")
    print(f"escape_check: {exported} exports checked, {len(FAILS)} failures")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
