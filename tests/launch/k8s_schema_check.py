#!/usr/bin/python3
"""The exported trainjob.yaml and pytorchjob.yaml of every example job and every pinned job in
tests/launch/key_jobs/, validated with python3-jsonschema against the Kubeflow CRDs' schemas
(tests/fixtures/k8s/*.schema.json: the subset of the upstream CRDs the manifests use, written by
tools/crd_schema_subset.py with the source and commit in its $comment). Then the controls: a manifest
with an unknown field, a wrong type, a value outside the CRD's rules, or a replica type the operator does
not know must be refused, so a schema that accepts everything fails the test.
Usage: k8s_schema_check.py --binary GPUPLAN --source SRC. Fails (never skips) without PyYAML/jsonschema."""
import argparse
import copy
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
    import yaml
except ImportError as e:
    sys.exit(f"k8s_schema_check: needs Debian's python3-yaml and python3-jsonschema for /usr/bin/python3: {e}")

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def validator(src, name):
    schema = json.load(open(os.path.join(src, "tests", "fixtures", "k8s", f"{name}.schema.json")))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in v.iter_errors(doc)]


def exported_docs(binary, src, tmp):
    """(label, kind, document) of every manifest the kubernetes export writes for the jobs."""
    jobs = sorted(glob.glob(os.path.join(src, "examples", "*.yaml"))) + sorted(glob.glob(os.path.join(src, "tests", "launch", "key_jobs", "*.yaml")))
    out = []
    for job in jobs:
        label = os.path.splitext(os.path.basename(job))[0]
        # Serving jobs export a Deployment + Service, checked by serving_export_check.py.
        if any(line.startswith("serving:") for line in open(job)):
            continue
        # Pool and fleet files are not jobs; a job with uneven stages is laid over a pool (`plan --pool`), and its
        # exports are checked by export_split_test.
        text = open(job).read()
        if any(line.startswith(("groups:", "pool:", "jobs:")) for line in text.splitlines()) or "layer_split:" in text:
            continue
        extra = ["--catalog", os.path.join(src, "examples", "onprem-catalog.csv")] if label.startswith("onprem") else []
        d = os.path.join(tmp, label)
        p = subprocess.run([binary, "export", job, "--to", "kubernetes", "--out", d] + extra, cwd=src, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail(f"{label}: export --to kubernetes: exit {p.returncode}: {p.stderr.strip()[:200]}")
            continue
        for name in ("trainjob.yaml", "pytorchjob.yaml"):
            for doc in yaml.safe_load_all(open(os.path.join(d, name))):
                if doc:
                    out.append((f"{label}/{name}", doc.get("kind"), doc))
    return out


def mutations(kind, doc):
    """(what, broken copy) pairs the CRD must refuse."""
    out = []
    def with_change(what, change):
        d = copy.deepcopy(doc)
        change(d)
        out.append((what, d))
    if kind == "TrainJob":
        with_change("unknown field spec.trainer.gpus", lambda d: d["spec"]["trainer"].update(gpus=8))
        with_change("numProcPerNode 0 (CEL: >= 1)", lambda d: d["spec"]["trainer"].update(numProcPerNode=0))
        with_change("numNodes as a string", lambda d: d["spec"]["trainer"].update(numNodes="2"))
        with_change("metadata.name not a DNS-1035 label", lambda d: d["metadata"].update(name="Gpuplan_Job"))
        with_change("runtimeRef without its name", lambda d: d["spec"]["runtimeRef"].pop("name"))
        patch = lambda d: d["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        with_change("image in a runtime patch's container (not patchable)", lambda d: patch(d)["containers"][0].update(image="x"))
        with_change("v2.1's podTemplateOverrides instead of runtimePatches", lambda d: d["spec"].update(podTemplateOverrides=d["spec"].pop("runtimePatches")))
    else:
        specs = lambda d: d["spec"]["pytorchReplicaSpecs"]
        with_change("replica type Workers", lambda d: specs(d).update(Workers=specs(d).pop("Master")))
        with_change("restartPolicy Sometimes", lambda d: specs(d)["Master"].update(restartPolicy="Sometimes"))
        with_change("replicas as a string", lambda d: specs(d)["Master"].update(replicas="1"))
        with_change("unknown container field gpu", lambda d: specs(d)["Master"]["template"]["spec"]["containers"][0].update(gpu=8))
        with_change("container without a name", lambda d: specs(d)["Master"]["template"]["spec"]["containers"][0].pop("name"))
    with_change("apiVersion of another group", lambda d: d.update(apiVersion="kubeflow.org/v2"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    validators = {"TrainJob": validator(a.source, "trainjob"), "PyTorchJob": validator(a.source, "pytorchjob")}
    tmp = tempfile.mkdtemp(prefix="gpuplan-k8s-")
    try:
        docs = exported_docs(a.binary, a.source, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = {"TrainJob": 0, "PyTorchJob": 0}
    for label, kind, doc in docs:
        if kind not in validators:
            fail(f"{label}: kind {kind!r} is neither TrainJob nor PyTorchJob")
            continue
        counts[kind] += 1
        for e in errors(validators[kind], doc):
            fail(f"{label}: {e}")
    for kind, n in counts.items():
        if n < 10:
            fail(f"only {n} {kind} manifests exported: the check covers too little")
    refused = 0
    for kind in validators:
        sample = next((d for _, k, d in docs if k == kind), None)
        if sample is None:
            continue
        for what, broken in mutations(kind, sample):
            if errors(validators[kind], broken):
                refused += 1
            else:
                fail(f"{kind} control '{what}' validates: the schema accepts what the CRD refuses")
    print(f"k8s_schema_check: {counts['TrainJob']} TrainJob and {counts['PyTorchJob']} PyTorchJob manifests validated; {refused} broken controls refused")
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
