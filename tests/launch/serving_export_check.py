#!/usr/bin/python3
"""`gpuplan export JOB --serving --to vllm|sglang|tensorrt-llm|kubernetes` for the jobs in tests/launch/serving_jobs/:
serve.sh passes bash -n and every --flag of its launch line is a row of the engine's key table
(data/engine_keys/{vllm,sglang,tensorrt_llm}.csv, via engine_keys_check.load_tables); deployment.yaml parses
back (PyYAML), validates against tests/fixtures/k8s/serving.schema.json (python3-jsonschema), asks for tp x pp
GPUs, probes /health and runs the engine's launch line; a broken manifest (unknown field) must be refused.
Usage: serving_export_check.py --binary GPUPLAN --source SRC."""
import argparse, copy, glob, json, os, shlex, subprocess, sys, tempfile

try:
    import jsonschema
    import yaml
except ImportError as e:
    sys.exit(f"serving_export_check: needs python3-yaml and python3-jsonschema: {e}")

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def export(binary, src, job, to, out):
    p = subprocess.run([binary, "export", job, "--serving", "--to", to, "--out", out], cwd=src, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"{os.path.basename(job)} --to {to}: exit {p.returncode}: {p.stderr.strip()[:300]}")
        return False
    return True


def launch_words(script):
    text = open(script).read().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("exec "):
            return shlex.split(line[len("exec "):])
    return []


def check_flags(tables, table, words, where):
    flags = [w for w in words if w.startswith("--")]
    if not flags:
        fail(f"{where}: no flags in the launch line")
    for f in flags:
        if f not in tables.get(table, {}):
            fail(f"{where}: {f}: not in data/engine_keys/{table}.csv")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.source, "tests", "launch"))
    import engine_keys_check
    tables = engine_keys_check.load_tables(a.source)
    schema = json.load(open(os.path.join(a.source, "tests", "fixtures", "k8s", "serving.schema.json")))
    jsonschema.Draft7Validator.check_schema(schema)
    v = jsonschema.Draft7Validator(schema)
    engines = {"vllm": ("vllm", "vllm serve"), "sglang": ("sglang", "sglang.launch_server"), "tensorrt-llm": ("tensorrt_llm", "trtllm-serve")}
    with tempfile.TemporaryDirectory() as tmp:
        for job in sorted(glob.glob(os.path.join(a.source, "tests", "launch", "serving_jobs", "*.yaml"))):
            label = os.path.splitext(os.path.basename(job))[0]
            for to, (table, program) in engines.items():
                d = os.path.join(tmp, label, to)
                if not export(a.binary, a.source, job, to, d):
                    continue
                script = os.path.join(d, "serve.sh")
                if subprocess.run(["bash", "-n", script]).returncode != 0:
                    fail(f"{label}/{to}/serve.sh: bash -n")
                words = launch_words(script)
                if program not in " ".join(words):
                    fail(f"{label}/{to}/serve.sh: no '{program}' line")
                check_flags(tables, table, words, f"{label}/{to}/serve.sh")
            d = os.path.join(tmp, label, "kubernetes")
            if not export(a.binary, a.source, job, "kubernetes", d):
                continue
            docs = [x for x in yaml.safe_load_all(open(os.path.join(d, "deployment.yaml"))) if x]
            kinds = sorted(x.get("kind") for x in docs)
            if kinds != ["Deployment", "Service"]:
                fail(f"{label}/deployment.yaml: kinds {kinds}")
            for doc in docs:
                for e in v.iter_errors(doc):
                    fail(f"{label}/deployment.yaml {doc.get('kind')}: {'/'.join(map(str, e.absolute_path))}: {e.message[:160]}")
            dep = next((x for x in docs if x.get("kind") == "Deployment"), None)
            if dep:
                c = dep["spec"]["template"]["spec"]["containers"][0]
                if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/health":
                    fail(f"{label}: readiness probe is not /health")
                if int(c["resources"]["limits"]["nvidia.com/gpu"]) < 1:
                    fail(f"{label}: no GPU limit")
                check_flags(tables, "vllm", c.get("command", []) + c.get("args", []), f"{label}/deployment.yaml")
                broken = copy.deepcopy(dep)
                broken["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
                if not list(v.iter_errors(broken)):
                    fail("control: a container with an unknown field 'gpus' was accepted by the schema")
    print(f"serving_export_check: {len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
