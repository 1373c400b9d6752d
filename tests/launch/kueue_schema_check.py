#!/usr/bin/python3
"""`gpuplan fleet --export kueue` against Kueue's and JobSet's CRD schemas (tests/fixtures/k8s/kueue-*.schema.json and
jobset.schema.json: the subsets of the upstream CRDs the manifests use, written by tools/crd_schema_subset.py with the
source and commit in their $comment). Two fleets: the lab example, and one whose job spans two groups (a JobSet).
Then the controls: manifests with an unknown field, a wrong type or a missing required field must be refused, so a
schema that accepts everything fails the test. Also: each Job's queue label names the LocalQueue, its nodeSelector a
ResourceFlavor's nodeLabels, and the ClusterQueue covers the only resource the pods request.
Usage: kueue_schema_check.py --binary GPUPLAN --source SRC. Fails (never skips) without PyYAML/jsonschema."""
import argparse
import copy
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
    sys.exit(f"kueue_schema_check: needs Debian's python3-yaml and python3-jsonschema for /usr/bin/python3: {e}")

FAILS = []
KINDS = {"ResourceFlavor": "kueue-resourceflavor", "ClusterQueue": "kueue-clusterqueue", "LocalQueue": "kueue-localqueue",
         "JobSet": "jobset"}
SPANNING = """pool:
  pool: twin
  groups:
    - {name: left, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8, network: ib-hdr, price_per_gpu_hour: 1.1}
    - {name: right, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8, network: ib-hdr, price_per_gpu_hour: 1.1}
jobs:
  - name: wide
    kind: training
    model: {preset: llama-2-13b}
    training: {seq_len: 2048, global_batch: 128, tokens: 1e9}
"""


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg)


def validator(src, name):
    schema = json.load(open(os.path.join(src, "tests", "fixtures", "k8s", f"{name}.schema.json")))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in v.iter_errors(doc)]


def export(binary, src, fleet, out):
    p = subprocess.run([binary, "fleet", fleet, "--export", "kueue", "--out", out], cwd=src, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"{fleet}: fleet --export kueue: exit {p.returncode}: {p.stderr.strip()[:200]}")
        return []
    docs = []
    for name in sorted(os.listdir(out)):
        if name.endswith(".yaml"):
            docs += [(f"{os.path.basename(fleet)}/{name}", d) for d in yaml.safe_load_all(open(os.path.join(out, name))) if d]
    return docs


def cross_checks(label, docs):
    flavors = {d["metadata"]["name"]: d["spec"]["nodeLabels"] for _, d in docs if d["kind"] == "ResourceFlavor"}
    queues = [d for _, d in docs if d["kind"] == "ClusterQueue"]
    local = [d for _, d in docs if d["kind"] == "LocalQueue"]
    if len(queues) != 1 or len(local) != 1:
        fail(f"{label}: expected one ClusterQueue and one LocalQueue")
        return
    if local[0]["spec"]["clusterQueue"] != queues[0]["metadata"]["name"]:
        fail(f"{label}: the LocalQueue points to {local[0]['spec']['clusterQueue']}")
    covered = set()
    for rg in queues[0]["spec"]["resourceGroups"]:
        covered |= set(rg["coveredResources"])
        for f in rg["flavors"]:
            if f["name"] not in flavors:
                fail(f"{label}: ClusterQueue flavor {f['name']} has no ResourceFlavor")
            if [r["name"] for r in f["resources"]] != rg["coveredResources"]:
                fail(f"{label}: flavor {f['name']} lists other resources than coveredResources (a CEL rule of the CRD)")
    for name, d in docs:
        if d["kind"] not in ("Job", "JobSet"):
            continue
        if d["metadata"]["labels"].get("kueue.x-k8s.io/queue-name") != local[0]["metadata"]["name"]:
            fail(f"{name}: queue-name label does not name the LocalQueue")
        specs = [d["spec"]] if d["kind"] == "Job" else [r["template"]["spec"] for r in d["spec"]["replicatedJobs"]]
        for s in specs:
            pod = s["template"]["spec"]
            if not any(all(pod["nodeSelector"].get(k) == v for k, v in labels.items()) for labels in flavors.values()):
                fail(f"{name}: nodeSelector {pod['nodeSelector']} matches no ResourceFlavor")
            for c in pod["containers"]:
                asked = set(c.get("resources", {}).get("limits", {})) | set(c.get("resources", {}).get("requests", {}))
                if not asked <= covered:
                    fail(f"{name}: requests {sorted(asked - covered)}, not covered by the ClusterQueue (never admitted)")


def mutations(kind, doc):
    out = []
    def with_change(what, change):
        d = copy.deepcopy(doc)
        change(d)
        out.append((what, d))
    if kind == "ClusterQueue":
        flavor = lambda d: d["spec"]["resourceGroups"][0]["flavors"][0]
        with_change("unknown field quota", lambda d: flavor(d).update(quota=8))
        with_change("nominalQuota as a list", lambda d: flavor(d)["resources"][0].update(nominalQuota=[8]))
        with_change("resource group without coveredResources", lambda d: d["spec"]["resourceGroups"][0].pop("coveredResources"))
        with_change("v1beta2's cohortName in v1beta1", lambda d: d["spec"].update(cohortName="x"))
    elif kind == "ResourceFlavor":
        with_change("nodeLabels as a list", lambda d: d["spec"].update(nodeLabels=["a"]))
        with_change("unknown field nodeSelector", lambda d: d["spec"].update(nodeSelector={"a": "b"}))
    elif kind == "LocalQueue":
        with_change("clusterQueue as a number", lambda d: d["spec"].update(clusterQueue=3))
    elif kind == "JobSet":
        rj = lambda d: d["spec"]["replicatedJobs"][0]
        with_change("replicas as a string", lambda d: rj(d).update(replicas="1"))
        with_change("replicated job without a template", lambda d: rj(d).pop("template"))
        with_change("unknown container field gpus", lambda d: rj(d)["template"]["spec"]["template"]["spec"]["containers"][0].update(gpus=8))
    with_change("apiVersion of another version", lambda d: d.update(apiVersion=d["apiVersion"].rsplit("/", 1)[0] + "/v9"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    validators = {k: validator(a.source, v) for k, v in KINDS.items()}
    tmp = tempfile.mkdtemp(prefix="gpuplan-kueue-")
    try:
        spanning = os.path.join(tmp, "spanning.yaml")
        open(spanning, "w").write(SPANNING)
        all_docs = []
        for fleet, out in ((os.path.join(a.source, "examples", "fleet-lab.yaml"), "lab"), (spanning, "span")):
            docs = export(a.binary, a.source, fleet, os.path.join(tmp, out))
            cross_checks(fleet, docs)
            all_docs += docs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = {k: 0 for k in KINDS}
    for label, doc in all_docs:
        kind = doc.get("kind")
        if kind == "Job":
            if doc.get("apiVersion") != "batch/v1":
                fail(f"{label}: a Job of {doc.get('apiVersion')}")
            continue
        if kind not in validators:
            fail(f"{label}: unexpected kind {kind!r}")
            continue
        counts[kind] += 1
        for e in errors(validators[kind], doc):
            fail(f"{label}: {e}")
    for kind, n in counts.items():
        if n == 0:
            fail(f"no {kind} exported: the check covers too little")
    refused = 0
    for kind in validators:
        sample = next((d for _, d in all_docs if d.get("kind") == kind), None)
        if sample is None:
            continue
        for what, broken in mutations(kind, sample):
            if errors(validators[kind], broken):
                refused += 1
            else:
                fail(f"{kind} control '{what}' validates: the schema accepts what the CRD refuses")
    print(f"kueue_schema_check: {', '.join(f'{n} {k}' for k, n in counts.items())} validated; {refused} broken controls refused")
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
