#!/usr/bin/python3
"""Writes the part of a Kubernetes CRD's OpenAPI v3 schema that gpuplan's manifests use, as a JSON Schema
(draft 7) for python3-jsonschema: tests/launch/k8s_schema_test.py validates the exported trainjob.yaml and
pytorchjob.yaml against it.

What is kept: along every property path the export writes (PATHS below), each object's full list of property
names (an unknown field is then an error, as the API server's strict field validation makes it), `required`,
`type`, `enum`, `format`, `minimum`/`maximum`, `minLength`/`maxLength`, `pattern`, and maps' value types; a
property off those paths keeps only its name. Descriptions are dropped. `x-kubernetes-int-or-string` becomes
integer-or-string; the CEL rules gpuplan's values meet are written as their JSON Schema equivalents
(RULES). Nothing else of the CRD is copied.

Usage: crd_schema_subset.py CRD.yaml KIND REPO COMMIT PATH_IN_REPO [VERSION] > OUT.json
  (the CRD read from a checkout of REPO at COMMIT; REPO, COMMIT and PATH only label the output; VERSION: the CRD
  version to take, default the storage version)"""
import json
import sys

import yaml

POD = ["containers[].name", "containers[].image", "containers[].command", "containers[].env[].name", "containers[].env[].value",
       "containers[].resources.limits", "containers[].volumeMounts[].name", "containers[].volumeMounts[].mountPath",
       "containers[].securityContext.capabilities.add", "volumes[].name", "volumes[].configMap.name", "volumes[].configMap.defaultMode",
       "volumes[].emptyDir.medium"]
PATHS = {
    "TrainJob": ["apiVersion", "kind", "metadata", "spec.runtimeRef.apiGroup", "spec.runtimeRef.kind", "spec.runtimeRef.name",
                 "spec.trainer.image", "spec.trainer.command", "spec.trainer.numNodes", "spec.trainer.numProcPerNode",
                 "spec.trainer.resourcesPerNode.limits", "spec.trainer.env[].name", "spec.trainer.env[].value", "spec.runtimePatches[].manager"]
                + ["spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].name"]
                + ["spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec." + p for p in POD
                   if not p.startswith(("containers[].image", "containers[].command", "containers[].env", "containers[].resources"))],
    "PyTorchJob": ["apiVersion", "kind", "metadata", "spec.pytorchReplicaSpecs.*.replicas", "spec.pytorchReplicaSpecs.*.restartPolicy"]
                  + ["spec.pytorchReplicaSpecs.*.template.spec." + p for p in POD],
    # Issue 20 (gpuplan fleet --export kueue): Kueue's queues and flavors, and the JobSet of a job across groups.
    "ResourceFlavor": ["apiVersion", "kind", "metadata", "spec.nodeLabels"],
    "ClusterQueue": ["apiVersion", "kind", "metadata", "spec.namespaceSelector", "spec.resourceGroups[].coveredResources",
                     "spec.resourceGroups[].flavors[].name", "spec.resourceGroups[].flavors[].resources[].name",
                     "spec.resourceGroups[].flavors[].resources[].nominalQuota"],
    "LocalQueue": ["apiVersion", "kind", "metadata", "spec.clusterQueue"],
    "JobSet": ["apiVersion", "kind", "metadata", "spec.suspend", "spec.replicatedJobs[].name", "spec.replicatedJobs[].replicas"]
              + ["spec.replicatedJobs[].template.spec." + p for p in ("parallelism", "completions", "completionMode", "backoffLimit",
                                                                       "template.spec.restartPolicy", "template.spec.nodeSelector")]
              + ["spec.replicatedJobs[].template.spec.template.spec." + p for p in POD if p.startswith(("containers[].name",
                 "containers[].image", "containers[].command", "containers[].resources"))],
}
# CEL rules of the CRDs, as JSON Schema: (path, schema keywords added there, the rule they stand for).
RULES = {
    "TrainJob": [("metadata.name", {"pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
                  "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$'); size(self.metadata.name) <= 63"),
                 ("spec.trainer.numProcPerNode", {"minimum": 1}, "self >= 1")],
    "PyTorchJob": [],
    "ResourceFlavor": [], "ClusterQueue": [], "LocalQueue": [], "JobSet": [],
}
# Values the operators' Go types and webhooks allow where the CRD says only "string" (path, keywords, source).
GO_FACTS = {
    "TrainJob": [],
    "PyTorchJob": [("spec.pytorchReplicaSpecs", {"propertyNames": {"enum": ["Master", "Worker"]}},
                    "pkg/apis/kubeflow.org/v1/pytorch_types.go:41-43 (ReplicaType Master, Worker; webhook pytorchjob_webhook.go:115)"),
                   ("spec.pytorchReplicaSpecs.*.restartPolicy", {"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
                    "pkg/apis/kubeflow.org/v1/common_types.go:179-186 (RestartPolicy)")],
    "ResourceFlavor": [], "ClusterQueue": [], "LocalQueue": [], "JobSet": [],
}
KEEP = ("type", "enum", "format", "minimum", "maximum", "minLength", "maxLength", "pattern", "required", "maxItems", "minItems")


def leaf(node):
    out = {k: node[k] for k in KEEP if k in node}
    if node.get("x-kubernetes-int-or-string"):
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = leaf(node["additionalProperties"])
    return out


def subset(node, paths):
    """node's schema restricted to the property paths (dotted; [] = array items; * = every map value)."""
    out = leaf(node)
    if node.get("type") == "array" and "items" in node:
        inner = [p[3:] if p.startswith("[].") else p[2:] for p in paths if p.startswith("[]")]
        out["items"] = subset(node["items"], [p for p in inner if p]) if inner else leaf(node["items"])
        return out
    props = node.get("properties")
    heads = {}
    for p in paths:
        head, _, rest = p.partition(".")
        bracket = head.find("[]")
        if bracket >= 0:
            head, rest = head[:bracket], p[bracket:]
        heads.setdefault(head, []).append(rest)
    if "*" in heads and isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = subset(node["additionalProperties"], [r for r in heads["*"] if r])
    if props is not None:
        out["properties"] = {}
        for name, child in props.items():
            rests = heads.get(name)
            out["properties"][name] = subset(child, [r for r in rests if r]) if rests is not None else {}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        for name in heads:
            if name != "*" and name not in props:
                sys.exit(f"crd_schema_subset: {name}: not a property here ({sorted(props)})")
    return out


def apply_rules(schema, kind):
    for path, extra, _ in RULES[kind]:
        node = schema
        for part in path.split("."):
            node = node["properties"].setdefault(part, {})
        node.update(extra)
    return schema


def apply_go_facts(schema, kind):
    for path, extra, _ in GO_FACTS[kind]:
        node = schema
        for part in path.split("."):
            node = node["additionalProperties"] if part == "*" else node["properties"][part]
        node.update(extra)


def main():
    crd_path, kind, repo, commit, repo_path = sys.argv[1:6]
    crd = yaml.safe_load(open(crd_path))
    wanted = sys.argv[6] if len(sys.argv) > 6 else None
    version = [v for v in crd["spec"]["versions"] if (v["name"] == wanted if wanted else v.get("storage"))][0]
    root = version["schema"]["openAPIV3Schema"]
    schema = subset(root, PATHS[kind])
    # The CRD leaves metadata to the API server (ObjectMeta): the manifests set only its name.
    schema["properties"]["metadata"] = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    apply_rules(schema, kind)
    apply_go_facts(schema, kind)
    schema["properties"]["apiVersion"] = {"const": f"{crd['spec']['group']}/{version['name']}"}
    schema["properties"]["kind"] = {"const": crd["spec"]["names"]["kind"]}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata", "spec"})
    schema = {"$schema": "http://json-schema.org/draft-07/schema#",
              "$comment": f"subset of {repo} {repo_path} @ {commit} (CRD {crd['metadata']['name']}, version {version['name']}), "
                          f"written by tools/crd_schema_subset.py; CEL rules as JSON Schema: "
                          + "; ".join(f"{p}: {r}" for p, _, r in RULES[kind])
                          + "; values from the operator's Go types: " + "; ".join(f"{p}: {r}" for p, _, r in GO_FACTS[kind]), **schema}
    json.dump(schema, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
