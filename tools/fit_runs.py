#!/usr/bin/env python3
"""Fit report for the calibration constants (data/efficiency.csv, data/frameworks.csv, data/calibration.csv).

Fits on the FIT SUBSET only, and prints the error on the fit subset and on the held-out rest for
every point tried and for the chosen one, so a constant that only helps its own rows is visible.
The split is the one `gpuplan validate` states (docs/validation.md "Train/test split": a run is held
out when FNV-1a-64 of "repository|model_name|gpu id|num_gpus" is 0 mod 3).

Search: coordinate descent over a grid. Starting from the constants in force, each key in turn is
set to each of its candidate values (the others at their best so far) by running
`gpuplan validate FILES --calibration OVERRIDE`; the value with the lowest fit-subset score is kept.
Passes repeat until no key changes (at most --passes). Keys are scored on the rows they act on:
framework.<name>.* on that framework's fit rows; a global throughput (memory) key on the fit
throughput (memory) rows as the mean over frameworks of each framework's score (frameworks with 5
or more fit rows, each counted once, so the source with most rows does not decide alone).

    score = median |error| + 0.5 x p90 |error| + 0.5 x |mean signed error|

usage: python3 tools/fit_runs.py build/gpuplan FILE... [--grid GRID.csv] [--passes N]
  GRID.csv: key,scope,values   (scope: throughput | memory | throughput:<framework> | memory:<framework>;
                                values separated by ';'). Without --grid the GRID below is used;
                                keys the calibration does not have are reported and skipped.
  e.g. python3 tools/fit_runs.py build/gpuplan ../shared/validation/{runs,memory,runs_vtrain,peft_runs}.csv
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

# key -> (scope, candidate values). Scope "throughput:<fw>" scores on that framework's fit rows.
GRID = {
    "framework_overhead": ("throughput", [1.0, 1.1, 1.2, 1.3]),
    "cpu_op_s": ("throughput", [10e-6, 18e-6, 25e-6]),
    "nccl_overlap_slowdown": ("throughput", [0.0, 0.5, 1.0]),
    "flash_attention_eff.ampere": ("throughput", [0.35, 0.45, 0.575]),
    "flash_attention_eff.hopper": ("throughput", [0.2, 0.25, 0.33]),
    "framework.generic.step_fixed_s": ("throughput:generic", [0.0, 0.05, 0.1]),
    "framework.hf-trainer.step_fixed_s": ("throughput:hf-trainer", [0.0, 0.05, 0.1, 0.2]),
    "framework.megatron.step_fixed_s": ("throughput:megatron", [0.0, 0.01, 0.02, 0.05]),
    "framework.fsdp.step_fixed_s": ("throughput:fsdp", [0.0, 0.05, 0.1]),
    "allocator_fragmentation": ("memory", [0.05, 0.1, 0.15, 0.2]),
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def current_values():
    """Every key of the shipped calibration files with its value."""
    values = {}
    for name in ("calibration.csv", "efficiency.csv", "frameworks.csv"):
        path = os.path.join(ROOT, "data", name)
        if not os.path.exists(path):
            continue
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                try:
                    values[row["key"]] = float(row["value"])
                except (KeyError, ValueError):
                    pass
    return values


def read_grid(path):
    grid = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            grid[row["key"]] = (row["scope"], [float(v) for v in row["values"].split(";") if v.strip()])
    return grid


def predicted_rows(markdown):
    """The 'Every predicted row' table of docs/validation.md-style output: one dict per row."""
    lines = markdown.splitlines()
    try:
        start = lines.index("## Every predicted row")
    except ValueError:
        return []
    table = [l for l in lines[start + 1:] if l.startswith("|")]
    header = None
    rows = []
    for l in table:
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(l.replace("|", "").strip()) <= set("-"):
            continue
        if len(cells) != len(header):
            continue
        r = dict(zip(header, cells))
        try:
            r["err"] = float(r["error"].rstrip("%")) / 100
        except ValueError:
            continue
        r["memory"] = r["measured"].endswith("GiB")
        rows.append(r)
        if l.strip() == "":
            break
    return rows


def run(binary, files, overrides):
    with tempfile.TemporaryDirectory() as d:
        cal = os.path.join(d, "cal.csv")
        md = os.path.join(d, "report.md")
        with open(cal, "w") as f:
            f.write("key,value\n")
            for k, v in overrides.items():
                f.write(f"{k},{v!r}\n")
        p = subprocess.run([binary, "validate", *files, "--write", md, "--calibration", cal], capture_output=True, text=True)
        if p.returncode not in (0, 2) or not os.path.exists(md):
            sys.exit(f"gpuplan validate failed ({p.returncode}): {p.stderr.strip()}")
        with open(md) as f:
            return predicted_rows(f.read())


def stats(errors):
    if not errors:
        return None
    a = sorted(abs(e) for e in errors)

    def q(p):  # linear interpolation between order statistics, as gpuplan validate computes it
        i = p * (len(a) - 1)
        lo = int(i)
        hi = min(lo + 1, len(a) - 1)
        return a[lo] + (a[hi] - a[lo]) * (i - lo)

    return {"n": len(a), "median": q(0.5), "p90": q(0.9), "mean": sum(errors) / len(errors)}


def select(rows, scope, held_out):
    kind, _, fw = scope.partition(":")
    return [r["err"] for r in rows
            if r["memory"] == (kind == "memory") and (r["split"] == "held out") == held_out and (not fw or r["framework"] == fw)]


def score(s):
    return float("inf") if s is None else s["median"] + 0.5 * s["p90"] + 0.5 * abs(s["mean"])


def frameworks(rows):
    return sorted({r["framework"] for r in rows})


def fit_score(rows, scope):
    """A framework's scope: its fit rows. A global scope: the mean of the per-framework scores (each
    framework with >= 5 fit rows counts once), so the source with most rows does not decide alone."""
    kind, _, fw = scope.partition(":")
    if fw:
        return score(stats(select(rows, scope, False)))
    per = [score(s) for s in (stats(select(rows, f"{kind}:{f}", False)) for f in frameworks(rows)) if s and s["n"] >= 5]
    return sum(per) / len(per) if per else float("inf")


def fmt(s):
    if s is None:
        return "no rows"
    return f"median {100 * s['median']:5.1f}%  p90 {100 * s['p90']:6.1f}%  mean {100 * s['mean']:+6.1f}%  (n={s['n']})"


def report(label, rows, scopes):
    print(label)
    for scope in scopes:
        print(f"  {scope:24s} fit: {fmt(stats(select(rows, scope, False)))}")
        print(f"  {'':24s} held-out: {fmt(stats(select(rows, scope, True)))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--grid", help="key,scope,values CSV (default: the GRID in this file)")
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    grid = read_grid(args.grid) if args.grid else GRID
    have = current_values()
    for k in [k for k in grid if k not in have]:
        print(f"skipped {k}: not a key of data/calibration.csv, efficiency.csv or frameworks.csv")
        del grid[k]
    best = {}
    base = run(args.binary, args.files, best)
    scopes = sorted({s for s, _ in grid.values()} | {"throughput", "memory"})
    print("split: a run is held out when FNV-1a-64 of \"repository|model_name|gpu id|num_gpus\" is 0 mod 3 "
          "(gpuplan validate); every score below is on the fit subset only\n")
    report("constants in force:", base, scopes)
    for p in range(args.passes):
        changed = False
        for key, (scope, values) in grid.items():
            results = []
            for v in values:
                point = dict(best, **{key: v})
                rows = run(args.binary, args.files, point)
                fit, held = stats(select(rows, scope, False)), stats(select(rows, scope, True))
                results.append((fit_score(rows, scope), v))
                print(f"pass {p + 1} {key}={v:<10g} [{scope}] fit: {fmt(fit)} | held-out: {fmt(held)}")
            s, v = min(results)
            if best.get(key, have[key]) != v:
                changed = True
            best[key] = v
        if not changed:
            break
    chosen = run(args.binary, args.files, best)
    print()
    by_fw = [f"{k}:{f}" for k in ("throughput", "memory") for f in frameworks(chosen)]
    report("chosen: " + ", ".join(f"{k}={v:g}" for k, v in best.items()), chosen, sorted(set(scopes) | set(by_fw)))
    print("\nwrite the chosen values into data/*.csv with source "
          "'fit: tools/fit_runs.py on the fit subset (docs/validation.md split); fit / held-out error as printed'")


if __name__ == "__main__":
    main()
