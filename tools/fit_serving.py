#!/usr/bin/env python3
"""Leave-one-source-out fit of the serving step constants (docs/validation.md "Serving").

The keys of GRID (data/calibration.csv serving.*) are fitted once on every source (the in-sample
fit, for comparison) and once per source group on all the OTHER groups' rows (one fold per
`source_group` of serving_runs.csv, or the repository of an inference.csv row). The values chosen
without a group are the ones its rows are predicted with (`gpuplan validate ... --serving-loso`).

Each grid point is one run of `gpuplan validate SERVING_FILES --calibration OVERRIDE --serving-csv
OUT` (cached). The score of a point on a set of folds is the mean of three pooled medians of
|error| over their rows: TPOT, throughput, and TTFT at concurrency <= 8 (the issue's bars). Search:
coordinate descent from the shipped values; a key moves only when the score drops by MIN_GAIN.

usage: python3 tools/fit_serving.py [--binary build/gpuplan] FILE... [--model-configs DIR]
                                    [--loso data/serving_loso_fits.csv] [--passes N]
"""
import argparse
import csv
import datetime
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

GRID = {
    "serving.step_fixed_s": [0.0, 0.5e-3, 1.0e-3, 2.0e-3, 3.0e-3, 4.0e-3],
    "serving.step_per_seq_s": [0.0, 2e-6, 5e-6, 1e-5, 2e-5, 4e-5, 8e-5, 1.6e-4],
    "serving.graph_kernel_gap_s": [0.0, 1e-6, 2e-6, 4e-6, 8e-6],
    "serving.frontend_s": [0.0, 0.01, 0.02, 0.03, 0.045, 0.06],
    "serving.frontend_per_seq_s": [0.0, 2e-5, 4e-5, 8e-5, 1.6e-4, 3.2e-4],
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = "(all sources)"
MIN_GAIN = 0.005
FAMILIES = ("TPOT", "throughput", "TTFT low")


def shipped():
    values = {}
    with open(os.path.join(ROOT, "data", "calibration.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["key"] in GRID:
                values[row["key"]] = float(row["value"])
    return values


class Evaluator:
    def __init__(self, binary, files, dirs):
        self.binary, self.files, self.dirs, self.cache = binary, files, dirs, {}

    def rows(self, point):
        key = tuple(sorted(point.items()))
        if key in self.cache:
            return self.cache[key]
        with tempfile.TemporaryDirectory() as tmp:
            cal = os.path.join(tmp, "cal.csv")
            out = os.path.join(tmp, "rows.csv")
            with open(cal, "w") as f:
                f.write("key,value,unit,source,date,notes\n")
                for k, v in point.items():
                    f.write(f"{k},{v!r},s,fit_serving grid point,{datetime.date.today()},\n")
            cmd = [self.binary, "validate", *self.files, "--calibration", cal, "--serving-csv", out]
            for d in self.dirs:
                cmd += ["--model-configs", d]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"gpuplan validate failed ({p.returncode}): {p.stderr.strip()}")
            with open(out) as f:
                rows = list(csv.DictReader(f))
        for r in rows:
            r["error"] = float(r["error"])
        self.cache[key] = rows
        return rows


def family(r):
    if r["family"] == "TTFT" and r["low_concurrency"] == "yes":
        return "TTFT low"
    return r["family"]


def medians(rows):
    out = {}
    for fam in FAMILIES:
        errs = [abs(r["error"]) for r in rows if family(r) == fam]
        out[fam] = (statistics.median(errs), len(errs)) if errs else (None, 0)
    return out


def score(rows, folds):
    m = medians([r for r in rows if r["fold"] in folds])
    vals = [v for v, n in m.values() if v is not None]
    return sum(vals) / len(vals) if vals else 0.0


def descend(ev, start, folds, passes):
    point = dict(start)
    best = score(ev.rows(point), folds)
    for _ in range(passes):
        moved = False
        for key, values in GRID.items():
            for v in values:
                trial = dict(point, **{key: v})
                s = score(ev.rows(trial), folds)
                if s < best - MIN_GAIN:
                    point, best, moved = trial, s, True
        if not moved:
            break
    return point, best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "gpuplan"))
    ap.add_argument("--model-configs", action="append", default=[])
    ap.add_argument("--loso", help="write the per-fold constants here")
    ap.add_argument("--passes", type=int, default=3)
    a = ap.parse_args()
    t0 = time.time()
    ev = Evaluator(a.binary, a.files, a.model_configs)
    start = shipped()
    base = ev.rows(start)
    folds = sorted({r["fold"] for r in base})
    fits = {ALL: descend(ev, start, set(folds), a.passes)[0]}
    for f in folds:
        fits[f] = descend(ev, start, set(folds) - {f}, a.passes)[0]
    # Report: in-sample (all rows at the in-sample point) and leave-one-source-out (each fold's rows
    # at its own point), medians per family.
    insample = ev.rows(fits[ALL])
    loso = [r for f in folds for r in ev.rows(fits[f]) if r["fold"] == f]
    print("shipped   ", {k: (None if v[0] is None else round(v[0], 3), v[1]) for k, v in medians(base).items()})
    print("in-sample ", {k: (None if v[0] is None else round(v[0], 3), v[1]) for k, v in medians(insample).items()})
    print("LOSO      ", {k: (None if v[0] is None else round(v[0], 3), v[1]) for k, v in medians(loso).items()})
    for f in [ALL] + folds:
        print(f"  {f}: {fits[f]}")
    if a.loso:
        cmd = "python3 tools/fit_serving.py " + " ".join(os.path.basename(x) for x in a.files) + " --loso " + a.loso
        secs = time.time() - t0
        with open(a.loso, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["fold", "key", "value", "rows", "model_fingerprint", "source", "date"])
            for f, point in fits.items():
                n = len(base) if f == ALL else sum(1 for r in base if r["fold"] != f)
                src = ("in-sample fit on every source (for comparison; not used to predict any row)" if f == ALL
                       else "fit on every serving source but this one")
                for k in sorted(point):
                    w.writerow([f, k, repr(point[k]), n, "serving", f"{src}; generated by `{cmd}` in {secs:.0f} s",
                                datetime.date.today().isoformat()])
        print("wrote", a.loso)


if __name__ == "__main__":
    main()
