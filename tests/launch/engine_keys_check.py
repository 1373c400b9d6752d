#!/usr/bin/python3
"""Every key, flag and value gpuplan writes, checked against the engines' key facts (data/engine_keys/*.csv,
read from each engine's upstream source at a pinned commit; data/README.md), and every key of the import
corpus that `gpuplan import` reads.

Exports: every format of every examples/*.yaml job and of the pinned jobs in tests/launch/key_jobs/ (offload,
fp16, fp8, interleaved pipeline, tp+cp). Each file is parsed by a real parser (json, PyYAML, toml; bash for the
Megatron argument array) and every key/flag found must be a row of its engine's table (unknown key = fail), with
a value of the row's type and, where the row lists allowed values, one of them. Import: every key of every
structured file in the import corpus (../shared/fixtures/import-corpus) that `gpuplan import --json` does not
list as unknown, and every flag of its launch scripts it does not list as unknown, must be a row of a table.

Usage: engine_keys_check.py --binary GPUPLAN --source SRC [--corpus DIR] [--keep DIR]
Fails (never skips) when a parser is missing. Prints one FAIL line per finding, then a summary."""
import argparse
import csv
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    import toml
    import yaml
except ImportError as e:
    sys.exit(f"engine_keys_check: needs Debian's python3-yaml and python3-toml for /usr/bin/python3: {e}")

FORMATS = ["deepspeed", "accelerate", "torchrun", "megatron", "torchtitan", "slurm", "kubernetes", "skypilot", "fabric"]
TYPES = {"int", "float", "bool", "string", "enum", "object", "map", "list", "flag", "path"}
FAILS = []
CHECKED = {}  # engine -> number of keys checked


QUIET = [False]  # the self-test's controls collect their findings without printing them


def fail(msg):
    FAILS.append(msg)
    if not QUIET[0]:
        print("FAIL:", msg)


# ---------------------------------------------------------------- tables

def load_tables(src):
    tables = {}
    for path in sorted(glob.glob(os.path.join(src, "data", "engine_keys", "*.csv"))):
        engine = os.path.splitext(os.path.basename(path))[0]
        rows = {}
        with open(path, newline="") as f:
            for n, r in enumerate(csv.DictReader(f), start=2):
                where = f"data/engine_keys/{engine}.csv:{n}"
                for col in ("id", "name", "type", "source", "commit", "date"):
                    if not r.get(col):
                        fail(f"{where}: {col}: empty")
                if r["type"] not in TYPES:
                    fail(f"{where}: type: '{r['type']}' is not one of {sorted(TYPES)}")
                if r["type"] == "enum" and not r["allowed"]:
                    fail(f"{where}: allowed: an enum lists its values")
                if not re.fullmatch(r"[0-9a-f]{7,40}|[0-9A-Za-z.+~-]+ \(Debian\)", r["commit"] or ""):
                    fail(f"{where}: commit: '{r['commit']}' is not a git commit or a Debian package version")
                if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"] or ""):
                    fail(f"{where}: date: '{r['date']}' is not YYYY-MM-DD")
                if not re.search(r":\d+(-\d+)?$|\(\w[^()]*\)$| @[0-9a-f]{7,40}$", r["source"] or ""):
                    fail(f"{where}: source: '{r['source']}' names no file:line, (symbol) or @commit")
                if r["id"] in rows:
                    fail(f"{where}: id: '{r['id']}' repeats")
                r["where"] = where
                rows[r["id"]] = r
        tables[engine] = rows
    return tables


def allowed_values(row):
    return [v for v in row["allowed"].split("|") if v != ""] if row["allowed"] else []


def type_ok(row, value, strict=False):
    """Whether VALUE (a parsed value, or a string for flags) fits the row's type and allowed values. STRICT
    (a parsed JSON/YAML/TOML value): a string is no number or bool."""
    t = row["type"]
    if isinstance(value, str) and "$" in value:  # a shell variable: its value is the user's
        return True
    if strict and isinstance(value, str) and t in ("int", "float", "bool"):
        return False
    if t == "flag":
        return value is None
    if value is None:
        return t in ("object", "map")
    if t == "bool":
        ok = isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false"))
    elif t == "int":
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and re.fullmatch(r"-?\d+", value) is not None)
    elif t == "float":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
            isinstance(value, str) and re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", value) is not None)
    elif t in ("string", "path"):
        ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
    elif t == "enum":
        ok = not isinstance(value, (dict, list))
    elif t == "object" or t == "map":
        ok = isinstance(value, dict)
    elif t == "list":
        ok = isinstance(value, list)
    else:
        ok = False
    allowed = allowed_values(row)
    if ok and allowed and not isinstance(value, (dict, list)):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        # "aws/*": the value is that word, or starts with it and a slash (SkyPilot's cloud[/region[/zone]])
        ok = text in allowed or any(a.endswith("/*") and (text.lower() == a[:-2] or text.lower().startswith(a[:-1])) for a in allowed)
    return ok


def check_key(tables, engine, key, value, where, has_value=True, name_only=False, strict=False):
    """KEY must be a row of ENGINE's table; unless NAME_ONLY (an environment name, a command), VALUE must fit it."""
    CHECKED[engine] = CHECKED.get(engine, 0) + 1
    row = tables.get(engine, {}).get(key)
    if row is None:
        fail(f"{where}: {key}: not a {engine} key at the pinned upstream version (data/engine_keys/{engine}.csv)")
        return
    if name_only:
        if value is not None and allowed_values(row) and str(value) not in allowed_values(row):
            fail(f"{where}: {key} = {value!r}: not one of {row['allowed']} ({row['source']} @{row['commit'][:7]})")
        return
    if not has_value:
        value = None
    if not type_ok(row, value, strict):
        want = row["type"] + (f" ({row['allowed']})" if row["allowed"] else "")
        fail(f"{where}: {key} = {value!r}: not {want} ({row['source']} @{row['commit'][:7]})")


def open_prefixes(table):
    """Keys of type map: their subtree is free-form (environment variables, a scheduler's params)."""
    return [k for k, r in table.items() if r["type"] == "map"]


def flatten(obj, prefix=""):
    """(dotted key, value) for every key of a parsed document; list elements of maps are walked with []."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            out.append((key, v))
            if isinstance(v, dict):
                out += flatten(v, key)
            elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
                for x in v:
                    if isinstance(x, dict):
                        out += flatten(x, key + "[]")
    return out


TJ_POD = "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec."
PJ_POD = "spec.pytorchReplicaSpecs.<replica>.template.spec."


def k8s_key(kind, key):
    """A manifest path as data/engine_keys/kubernetes.csv names it: the pod template under its own prefix."""
    if kind == "TrainJob" and key.startswith(TJ_POD):
        return "TrainJob:<podSpecPatch>." + key[len(TJ_POD):]
    key = re.sub(r"^spec\.pytorchReplicaSpecs\.[^.]+", "spec.pytorchReplicaSpecs.<replica>", key)
    if key.startswith(PJ_POD):
        return "PodSpec:" + key[len(PJ_POD):]
    return f"{kind}:{key}"


def value_text(value):
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_requires(tables, engine, flat, where):
    """A row's `requires` (WHEN -> ALT | ALT ...): when the key has one of the WHEN values, one ALT (a key, or
    key=value) must be in the same file."""
    for key, value in flat.items():
        row = tables.get(engine, {}).get(key)
        if not row or not row.get("requires"):
            continue
        when, _, alts = row["requires"].partition("->")
        if value_text(value) not in [w.strip() for w in when.split("|")]:
            continue
        ok = False
        for alt in alts.split("|"):
            k, eq, v = alt.strip().partition("=")
            ok |= k in flat and (not eq or value_text(flat[k]) == v)
        if not ok:
            fail(f"{where}: {key} = {value_text(value)} needs {alts.strip()} in the same file ({row['source']} @{row['commit'][:7]}; {row['notes']})")


def check_document(tables, engine, doc, where, prefix=""):
    table = tables.get(engine, {})
    free = open_prefixes(table)
    check_requires(tables, engine, dict(flatten(doc)), where)
    for key, value in flatten(doc):
        full = prefix + key
        if engine == "kubernetes":
            kind = prefix.rstrip(":")
            full = k8s_key(kind, key)
            if re.fullmatch(r"spec\.pytorchReplicaSpecs\.[^.]+", key):  # the replica name is the value checked
                check_key(tables, engine, full, key.rsplit(".", 1)[1], where, name_only=True)
                continue
        if any(full.startswith(p + ".") or full.startswith(p + "[]") for p in free):
            continue
        check_key(tables, engine, full, value, where, strict=True)


# ---------------------------------------------------------------- shell command lines

def logical_lines(text):
    return re.sub(r"\\\n", " ", text).splitlines()


def command_tokens(text, launcher_re):
    """The words of every line that starts with a launcher (e.g. `$TORCHRUN`), after the launcher itself."""
    out = []
    for line in logical_lines(text):
        s = line.strip()
        m = re.match(launcher_re, s)
        if m:
            out.append(shlex.split(s[m.end():], comments=True))
    return out


def check_flags(tables, engine, words, where, stop_at_positional=True, id_prefix=""):
    """Flags of one command against ENGINE's table (rows named ID_PREFIX + flag); returns the words after the
    first positional."""
    table = {k[len(id_prefix):]: r for k, r in tables.get(engine, {}).items() if k.startswith(id_prefix)}
    i = 0
    while i < len(words):
        w = words[i]
        if not w.startswith("-") or w == "--":
            return words[i:] if stop_at_positional else []
        name, eq, inline = w.partition("=")
        row = table.get(name)
        if row is not None and row["type"] != "flag":
            if eq:
                value = inline
            elif i + 1 < len(words):
                value = words[i + 1]
                i += 1
            else:
                value = None
            check_key(tables, engine, id_prefix + name, value, where)
        else:
            check_key(tables, engine, id_prefix + name, inline if eq else None, where, has_value=bool(eq))
        i += 1
    return []


def check_script_args(tables, engine, words, where):
    """After the script: its flags (the engine's script flags)."""
    if not words:
        return
    rest = words[1:]
    check_flags(tables, engine, rest, where, stop_at_positional=False)


STUB = """#!/bin/sh
# stub {name}: records its arguments, one per line, then a separator
log="${{GPUPLAN_STUB_LOG:?}}/{name}.argv"
for a in "$@"; do printf '%s\\n' "$a" >>"$log"; done
printf '%s\\n' '--end--' >>"$log"
exit 0
"""
LAUNCHER_NAMES = ("torchrun", "deepspeed", "accelerate")


def make_stubs(d):
    """Executables named like the launchers that record the arguments bash hands them."""
    os.makedirs(d, exist_ok=True)
    for name in LAUNCHER_NAMES:
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(STUB.format(name=name))
        os.chmod(p, 0o755)


def stub_calls(log_dir, name):
    p = os.path.join(log_dir, f"{name}.argv")
    if not os.path.exists(p):
        return []
    out, cur = [], []
    for line in open(p).read().split("\n")[:-1]:
        if line == "--end--":
            out.append(cur)
            cur = []
        else:
            cur.append(line)
    return out


def run_with_stubs(script, stubs, env_extra=None, args=()):
    """Runs SCRIPT with the stub launchers first on PATH; returns (process, {launcher: [argv, ...]})."""
    log = tempfile.mkdtemp(prefix="gpuplan-stub-log-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_") and k not in ("ACCELERATE", "DEEPSPEED", "TORCHRUN")}
    env.update(PATH=stubs + os.pathsep + env["PATH"], GPUPLAN_STUB_LOG=log, **(env_extra or {}))
    p = subprocess.run(["bash", script] + list(args), env=env, capture_output=True, text=True, timeout=60)
    calls = {name: stub_calls(log, name) for name in LAUNCHER_NAMES}
    shutil.rmtree(log, ignore_errors=True)
    return p, calls


def check_launch_script(tables, path, engine_of_script, stubs):
    """The launch line as bash expands it (run against stub launchers), checked flag by flag."""
    name = os.path.basename(path)
    p, calls = run_with_stubs(path, stubs)
    if p.returncode != 0:
        fail(f"{name}: exit {p.returncode} under stub launchers: {p.stderr.strip()[:200]}")
    if not any(calls.values()):
        fail(f"{name}: runs none of torchrun, deepspeed, accelerate")
    for launcher, argvs in calls.items():
        for argv in argvs:
            where = f"{name} ({launcher})"
            if launcher == "accelerate":
                if argv[:1] != ["launch"]:
                    fail(f"{where}: accelerate {argv[:1]}, not accelerate launch")
                    continue
                argv = argv[1:]
            rest = check_flags(tables, launcher, argv, where, id_prefix="launch " if launcher == "accelerate" else "")
            if rest and os.path.basename(rest[0]) == "pretrain_gpt.py":
                check_flags(tables, "megatron", rest[1:], f"{name} (Megatron flags)", stop_at_positional=False)
                continue
            check_script_args(tables, engine_of_script, rest, f"{name} (script flags)")
    text = open(path).read()
    for m in re.finditer(r"\bexport\s+([A-Z_][A-Z0-9_]*)=", text):
        if m.group(1).startswith("NCCL_"):
            check_key(tables, "nccl", m.group(1), None, name, name_only=True)
    for m in re.finditer(r"PET_RDZV_CONF=\S*?(\w+)=", text):
        check_key(tables, "torchrun", "PET_RDZV_CONF", None, name, name_only=True)
        check_key(tables, "torchrun", "rdzv_conf." + m.group(1), None, name, name_only=True)


def megatron_args(path):
    script = 'source "$1"; printf "%s\\n" "${MEGATRON_ARGS[@]}"'
    r = subprocess.run(["bash", "-c", script, "bash", path], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    if r.returncode != 0:
        fail(f"{os.path.basename(path)}: bash could not source it: {r.stderr.strip()}")
        return []
    return r.stdout.splitlines()


# ---------------------------------------------------------------- one export directory

def check_export_dir(tables, d, fmt, label, stubs):
    files = sorted(os.listdir(d))
    script_engine = "hf_trainer"  # accelerate: the script's HF Trainer arguments
    if "ds_config.json" in files:
        script_engine = "deepspeed"
    elif "torchtitan.toml" in files or any(n.endswith("_torchtitan.py") for n in files):
        script_engine = "torchtitan"  # v0.2.x: --job.config_file; main: --module/--config
    for name in files:
        path = os.path.join(d, name)
        where = f"{label}/{name}"
        if name == "ds_config.json":
            check_document(tables, "deepspeed", json.load(open(path)), where)
        elif name.startswith("accelerate") and name.endswith(".yaml"):
            check_document(tables, "accelerate", yaml.safe_load(open(path)), where)
        elif name == "torchtitan.toml":
            check_document(tables, "torchtitan", toml.load(path), where)
        elif name == "megatron-args.sh":
            check_flags(tables, "megatron", megatron_args(path), where, stop_at_positional=False)
        elif name == "bridge-overrides.txt":
            for n, line in enumerate(open(path), start=1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                key, _, value = line.partition("=")
                check_key(tables, "megatron_bridge", key, value, f"{where}:{n}")
        elif name == "gpuplan.sbatch":
            text = open(path).read()
            for n, line in enumerate(text.splitlines(), start=1):
                m = re.match(r"#SBATCH\s+(--[\w-]+)(=(\S+))?", line)
                if m:
                    check_key(tables, "slurm", "sbatch " + m.group(1), m.group(3), f"{where}:{n}", has_value=m.group(2) is not None)
            for words in command_tokens(text, r"srun\b"):
                for w in words:
                    if w.startswith("--"):
                        flag, eq, value = w.partition("=")
                        check_key(tables, "slurm", "srun " + flag, value if eq else None, where, has_value=bool(eq))
            for m in re.finditer(r"\bscontrol show hostnames\b", text):
                check_key(tables, "slurm", "scontrol show hostnames", None, where, name_only=True)
            for var in sorted(set(re.findall(r"\$\{?(SLURM_[A-Z_]+)", text))):
                check_key(tables, "slurm", var, None, where, name_only=True)
        elif name in ("trainjob.yaml", "pytorchjob.yaml"):
            for doc in yaml.safe_load_all(open(path)):
                if doc:
                    check_document(tables, "kubernetes", doc, where, prefix=doc.get("kind", "?") + ":")
                    check_pod_env(tables, doc, where)
        elif name == "sky.yaml":
            doc = yaml.safe_load(open(path))
            check_document(tables, "skypilot", doc, where)
            for var in sorted(set(re.findall(r"\$\{?(SKYPILOT_[A-Z_]+)", doc.get("run", "")))):
                check_key(tables, "skypilot", var, None, where, name_only=True)
        elif name == "fabric.env":
            text = open(path).read()
            for m in re.finditer(r"^export\s+([A-Z_][A-Z0-9_]*)=", text, re.M):
                if m.group(1).startswith("NCCL_"):
                    check_key(tables, "nccl", m.group(1), None, where, name_only=True)
        elif name.endswith(".sh") and name.startswith("launch"):
            check_launch_script(tables, path, script_engine, stubs)
    return files


def check_pod_env(tables, doc, where):
    """Environment names the operators inject that the pod's command reads."""
    text = json.dumps(doc)
    kind = doc.get("kind", "?")
    for var in sorted(set(re.findall(r"\$\{?((?:PET|MASTER|RANK|WORLD)[A-Z_]*)", text))):
        check_key(tables, "kubernetes", f"{kind}:env.{var}", None, where, name_only=True)


# ---------------------------------------------------------------- exports

def export_all(binary, src, tmp):
    stubs = os.path.join(tmp, "stub-bin")
    make_stubs(stubs)
    jobs = sorted(glob.glob(os.path.join(src, "examples", "*.yaml")))
    jobs += sorted(glob.glob(os.path.join(src, "tests", "launch", "key_jobs", "*.yaml")))
    exported = 0
    for job in jobs:
        label = os.path.splitext(os.path.basename(job))[0]
        extra = []
        if label.startswith("onprem"):
            extra = ["--catalog", os.path.join(src, "examples", "onprem-catalog.csv")]
        for fmt in FORMATS:
            d = os.path.join(tmp, label, fmt)
            p = subprocess.run([binary, "export", job, "--to", fmt, "--out", d] + extra, cwd=src,
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:  # a refusal is a clear line with exit 1 or 2 (export_parse_test checks those)
                if p.returncode not in (1, 2) or not p.stderr.startswith("gpuplan: "):
                    fail(f"{label} --to {fmt}: exit {p.returncode}: {p.stderr.strip()[:200]}")
                continue
            exported += 1
            check_export_dir(TABLES, d, fmt, f"{label}/{fmt}", stubs)
    return len(jobs), exported


def fabric_csv(src):
    """Every NCCL_* name data/fabric_env.csv can write into fabric.env (also as a 'do not set' note)."""
    with open(os.path.join(src, "data", "fabric_env.csv"), newline="") as f:
        for n, r in enumerate(csv.DictReader(f), start=2):
            if r["variable"].startswith("NCCL_") and r["action"] in ("export", "default", "note"):
                check_key(TABLES, "nccl", r["variable"], None, f"data/fabric_env.csv:{n}", name_only=True)


# ---------------------------------------------------------------- import corpus

IMPORT_ENGINE = {".json": "deepspeed", ".yaml": "accelerate", ".yml": "accelerate", ".toml": "torchtitan"}
KIND_ENGINE = {"deepspeed config": "deepspeed", "accelerate config": "accelerate", "torchtitan config": "torchtitan"}
SCRIPT_TABLES = ["megatron", "torchrun", "deepspeed", "hf_trainer", "training_scripts"]


def import_keys(binary, path):
    p = subprocess.run([binary, "import", path, "--json"], capture_output=True, text=True, timeout=120)
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        return None, None
    unknown = {u.get("key", "") for u in d.get("unknown", [])}
    return d, unknown


def check_import_structured(tables, binary, path, rel):
    ext = os.path.splitext(path)[1]
    d, unknown = import_keys(binary, path)
    if d is None or "error" in d or not d.get("files"):
        return 0  # refused (import_test checks the refusal's message)
    engine = KIND_ENGINE.get(d["files"][0].get("kind", ""))
    if engine is None:
        return 0  # read as something else than an engine's config (a gpuplan job, a launch line)
    text = open(path).read()
    doc = json.loads(text) if ext == ".json" else toml.loads(text) if ext == ".toml" else yaml.safe_load(text)
    n = 0
    free = open_prefixes(tables.get(engine, {}))
    skip = [u for u in unknown if u]
    for key, value in flatten(doc):
        if key in unknown or any(key.startswith(u + ".") or key.startswith(u + "[]") for u in skip):
            continue
        if any(key.startswith(p + ".") or key.startswith(p + "[]") for p in free):
            continue
        if engine == "deepspeed" and key.startswith("_gpuplan"):
            continue
        n += 1
        row = None
        for e in [engine] + (["deepspeed"] if engine == "accelerate" else []):
            row = tables.get(e, {}).get(key) or row
        if row is None:
            fail(f"import {rel}: {key}: read by gpuplan import but not a {engine} key in data/engine_keys/{engine}.csv")
        CHECKED["import"] = CHECKED.get("import", 0) + 1
    return n


def wrapper_arrays_removed(text):
    """A bash array whose first element is a program (`P=( nsys profile --trace=... )`) holds a wrapper's
    words, which import reads as "the words before python" and never as the engine's flags."""
    return re.sub(r"=\(\s*[A-Za-z][\w./-]*\s[^()]*\)", "=()", text)


def check_import_script(tables, binary, path, rel):
    d, unknown = import_keys(binary, path)
    if d is None or "error" in d:
        return 0
    text = wrapper_arrays_removed(open(path).read())
    n = 0
    for flag in sorted(set(re.findall(r"(?<![\w.-])(--[a-zA-Z][\w.-]*[\w])", text))):
        if flag in unknown:
            continue
        n += 1
        CHECKED["import"] = CHECKED.get("import", 0) + 1
        known = any(flag in tables.get(t, {}) for t in SCRIPT_TABLES) or "launch " + flag in tables.get("accelerate", {})
        # torchtitan's command-line overrides: --section.key is the TOML key section.key
        known |= "." in flag and (flag in tables.get("torchtitan", {}) or flag[2:] in tables.get("torchtitan", {}))
        if not known:
            fail(f"import {rel}: {flag}: read by gpuplan import but in no table of {SCRIPT_TABLES + ['accelerate', 'torchtitan']}")
    return n


def check_corpus(binary, corpus):
    files = 0
    for root, _, names in os.walk(corpus):
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, corpus)
            ext = os.path.splitext(name)[1]
            if ext in IMPORT_ENGINE:
                check_import_structured(TABLES, binary, path, rel)
                files += 1
            elif ext == ".sh":
                check_import_script(TABLES, binary, path, rel)
                files += 1
    return files


TABLES = {}


def self_test():
    """Controls: what the check must refuse (so a table or a checker that accepts everything fails)."""
    bad = [
        ("deepspeed", {"zero_optimization": {"stage": 4}}, "ZeRO stage 4"),
        ("deepspeed", {"zero_optimization": {"stgae": 1}}, "a misspelt key"),
        ("deepspeed", {"train_batch_size": "64"}, "a batch as a string"),
        ("deepspeed", {"zero_optimization": {"offload_optimizer": {"device": "cpu"}}}, "offload without an optimizer or the flag"),
        ("accelerate", {"distributed_type": "ZERO"}, "an unknown distributed_type"),
        ("torchtitan", {"activation_checkpoint": {"mode": "selective"}}, "selective without selective_ac_option"),
        ("torchtitan", {"parallelism": {"fsdp_reshard_after_forward": "sometimes"}}, "a value outside the Literal"),
        ("skypilot", {"resources": {"infra": "autodl/cn"}}, "a cloud SkyPilot does not have"),
        ("megatron_bridge", {"mixed_precision": "16-mixed"}, "Bridge's fp16 recipe misnamed"),
    ]
    good = [("deepspeed", {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "zero_force_ds_cpu_optimizer": False}),
            ("torchtitan", {"activation_checkpoint": {"mode": "selective", "selective_ac_option": "op"}}),
            ("skypilot", {"resources": {"infra": "aws/us-east-1"}}), ("megatron_bridge", {"mixed_precision": "fp16_mixed"})]
    saved = list(FAILS)
    QUIET[0] = True
    broken = []
    for engine, doc, what in bad:
        del FAILS[:]
        if engine == "megatron_bridge":
            check_key(TABLES, engine, "mixed_precision", doc["mixed_precision"], "control")
        else:
            check_document(TABLES, engine, doc, "control")
        if not FAILS:
            broken.append(f"control '{what}' ({engine}) passes")
    for engine, doc in good:
        del FAILS[:]
        if engine == "megatron_bridge":
            check_key(TABLES, engine, "mixed_precision", doc["mixed_precision"], "control")
        else:
            check_document(TABLES, engine, doc, "control")
        if FAILS:
            broken.append(f"valid control {doc} ({engine}) fails: {FAILS[0]}")
    FAILS[:] = saved
    QUIET[0] = False
    for b in broken:
        fail(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--corpus", action="append", default=[],
                    help="a folder of real configs and launch scripts (repeatable); tests/fixtures/import always")
    ap.add_argument("--keep", default="", help="export into this directory and keep it (default: a temp dir)")
    a = ap.parse_args()
    TABLES.update(load_tables(a.source))
    for engine in ("deepspeed", "accelerate", "torchrun", "megatron", "megatron_bridge", "torchtitan", "slurm",
                   "kubernetes", "skypilot", "nccl"):
        if not TABLES.get(engine):
            fail(f"data/engine_keys/{engine}.csv: missing or empty")
    self_test()
    tmp = a.keep or tempfile.mkdtemp(prefix="gpuplan-keys-")
    try:
        jobs, exported = export_all(a.binary, a.source, tmp)
        if exported < 40:
            fail(f"only {exported} exports succeeded over {jobs} jobs: the check covers too little")
        fabric_csv(a.source)
        files = 0
        for corpus in [os.path.join(a.source, "tests", "fixtures", "import")] + a.corpus:
            if not os.path.isdir(corpus):  # the shared corpus lives beside the repository (GPUPLAN_SHARED_DIR)
                print(f"engine_keys_check: {corpus} is not here: its keys are not checked")
            else:
                files += check_corpus(a.binary, corpus)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(CHECKED.items()))
    print(f"engine_keys_check: {exported} exports of {jobs} jobs, {files} import files; keys checked: {summary}")
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    print("engine_keys_check: every emitted and imported key is an upstream key of its engine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
