#!/usr/bin/env python3
"""Fit report for the calibration constants (data/efficiency.csv, data/frameworks.csv, data/calibration.csv).

Leave-one-source-out (docs/validation.md "Leave-one-source-out"): the constants of the GRID are fitted
once on every source (the in-sample fit) and once per source on all the OTHER sources' rows (one fold
per source: the "source" column of `gpuplan validate`, a repository or a paper). The values chosen
without a source are the ones its rows are predicted with in the report, so a constant that only
helps its own source shows as an in-sample gain that does not hold when that source is left out.

Search: coordinate descent over a grid. Starting from the constants in force, each key in turn is
set to each of its candidate values (the shipped value is always a candidate; the others at their
best so far) by running `gpuplan validate FILES --calibration OVERRIDE`; the value with the lowest
score on the training rows is kept. Passes repeat until no key changes (at most --passes). A key is
scored on the rows it acts on: a global throughput (memory) key on the throughput (memory) rows,
framework.<name>.* on that framework's rows; the score is the mean over training sources (each with 5
or more rows in scope counted once, so the source with most rows does not decide alone) of

    score = median |error| + 0.5 x p90 |error| + 0.5 x |mean signed error|

A key with no training row in scope (only the left-out source has such rows) is not fitted in that
fold: it takes its PRIOR (the grid's physical default), never a value fitted on the left-out source.
Every grid point is run once for every row and cached, so the folds share their evaluations.

usage: python3 tools/fit_runs.py [--binary build/gpuplan] [FILE...] [--loso data/loso_fits.csv]
                                 [--grid GRID.csv] [--passes N] [--jobs N]
  FILE...: the validation CSVs (default: ../shared/validation/{runs,memory,runs_vtrain,peft_runs}.csv)
  --loso PATH: write the per-fold constants there (`gpuplan validate --loso PATH` reads them)
  GRID.csv: key,scope,prior,values   (scope: throughput | memory | throughput:<framework> | memory:<framework>;
                                      values separated by ';'). Without --grid the GRID below is used;
                                      keys the calibration does not have are reported and skipped.
  e.g. python3 tools/fit_runs.py --loso data/loso_fits.csv      (about 3 minutes on 2 cores)
"""
import argparse
import concurrent.futures as cf
import csv
import datetime
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

# key -> (scope, prior, candidate values). The prior is the value a fold uses when no other source
# has rows in the key's scope: the neutral or physical default, not a fitted number.
GRID = {
    "framework_overhead": ("throughput", 1.0, [1.0, 1.1, 1.2, 1.3]),
    "cpu_op_s": ("throughput", 18e-6, [10e-6, 18e-6, 25e-6]),
    "nccl_overlap_slowdown": ("throughput", 0.0, [0.0, 0.5, 1.0]),
    "flash_attention_eff.ampere": ("throughput", 0.575, [0.35, 0.45, 0.575]),
    "flash_attention_eff.hopper": ("throughput", 0.33, [0.2, 0.25, 0.33]),
    "framework.generic.step_fixed_s": ("throughput:generic", 0.0, [0.0, 0.05, 0.1]),
    "allocator_fragmentation": ("memory", 0.1, [0.05, 0.1, 0.15, 0.2]),
    "allocator_state_fragmentation": ("memory", 0.05, [0.0, 0.05, 0.1]),
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = [os.path.join(ROOT, "..", "shared", "validation", f)
                 for f in ("runs.csv", "memory.csv", "runs_vtrain.csv", "peft_runs.csv")]
ALL = "(all sources)"
# Smallest score improvement (median + 0.5 p90 + 0.5 |mean|, as fractions) that moves a key.
MIN_GAIN = 0.005
MIN_ROWS = 5  # a source counts in a score with this many rows in scope (kMinBandRows)


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
            grid[row["key"]] = (row["scope"], float(row["prior"]), [float(v) for v in row["values"].split(";") if v.strip()])
    return grid


def predicted_rows(markdown):
    """The 'Every predicted row' table of docs/validation.md-style output: one dict per row."""
    lines = markdown.splitlines()
    try:
        start = lines.index("## Every predicted row")
    except ValueError:
        return []
    header = None
    rows = []
    for l in lines[start + 1:]:
        if l.startswith("## "):
            break
        if not l.startswith("|"):
            continue
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
    return rows


def fingerprint(markdown):
    m = re.search(r"model fingerprint ([0-9a-f]+)", markdown)
    return m.group(1) if m else "unknown"


class Evaluator:
    """gpuplan validate at a grid point, once per point (cached), at most `jobs` at a time."""

    def __init__(self, binary, files, jobs):
        self.binary, self.files = binary, files
        self.pool = cf.ThreadPoolExecutor(max_workers=jobs)
        self.cache, self.lock, self.runs, self.fingerprint = {}, threading.Lock(), 0, "unknown"

    def _run(self, point):
        with tempfile.TemporaryDirectory() as d:
            cal, md = os.path.join(d, "cal.csv"), os.path.join(d, "report.md")
            with open(cal, "w") as f:
                f.write("key,value\n")
                for k, v in sorted(point):
                    f.write(f"{k},{v!r}\n")
            p = subprocess.run([self.binary, "validate", *self.files, "--write", md, "--calibration", cal],
                               capture_output=True, text=True)
            if p.returncode not in (0, 2) or not os.path.exists(md):
                sys.exit(f"gpuplan validate failed ({p.returncode}): {p.stderr.strip()}")
            with open(md) as f:
                text = f.read()
        self.fingerprint = fingerprint(text)
        self.runs += 1
        return predicted_rows(text)

    def submit(self, point):
        key = frozenset(point.items())
        with self.lock:
            if key not in self.cache:
                self.cache[key] = self.pool.submit(self._run, key)
            return self.cache[key]

    def rows(self, point):
        return self.submit(point).result()


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


def in_scope(r, scope):
    kind, _, fw = scope.partition(":")
    return r["memory"] == (kind == "memory") and (not fw or r["framework"] == fw)


def score(s):
    return float("inf") if s is None else s["median"] + 0.5 * s["p90"] + 0.5 * abs(s["mean"])


def train_score(rows, scope, train):
    """Mean over training sources with >= MIN_ROWS rows in scope of each source's score (all the
    training rows pooled when no source has that many); None when no training row is in scope."""
    by = {}
    for r in rows:
        if r["source"] in train and in_scope(r, scope):
            by.setdefault(r["source"], []).append(r["err"])
    if not by:
        return None
    per = [score(stats(e)) for e in by.values() if len(e) >= MIN_ROWS]
    if per:
        return sum(per) / len(per)
    return score(stats([e for es in by.values() for e in es]))


def descend(ev, grid, train, start, passes):
    """Coordinate descent on the `train` sources' rows. Returns (chosen point, keys left at the
    prior because no training row is in their scope, converged)."""
    best = dict(start)
    no_rows = set()
    for _ in range(passes):
        changed = False
        for key, (scope, prior, values) in grid.items():
            futures = [(v, ev.submit(dict(best, **{key: v}))) for v in values]
            scored = [(train_score(f.result(), scope, train), v) for v, f in futures]
            if scored[0][0] is None:
                no_rows.add(key)
                v = prior
            else:
                # A key moves only when the training rows determine it: the best value must beat the
                # current one by MIN_GAIN of score, else it stays (a constant the other sources barely
                # see is not refitted to their noise; docs/validation.md "Constants across the folds").
                current = next((sc for sc, val in scored if val == best[key]), None)
                top = min(scored)
                v = top[1] if current is None or top[0] < current - MIN_GAIN else best[key]
            if best[key] != v:
                changed = True
            best[key] = v
        if not changed:
            return best, no_rows, True
    return best, no_rows, False


def fmt(s):
    if s is None:
        return "no rows"
    return f"median {100 * s['median']:5.1f}%  p90 {100 * s['p90']:6.1f}%  mean {100 * s['mean']:+6.1f}%  (n={s['n']})"


def loso_rows(ev, fits):
    """Every row predicted with the constants of its own fold (fitted without its source)."""
    out = []
    for fold, (point, _, _) in fits.items():
        out += [r for r in ev.rows(point) if r["source"] == fold]
    return out


def constant_table(ev, grid, shipped, fits, insample, sources_in_scope):
    """Per key: in-sample and LOSO change of the median |error| of its scope when the fitted value
    replaces the shipped one; the spread of the fold values; keys with one source only."""
    lines = []
    head = f"{'key':32s} {'shipped':>9s} {'in-sample':>9s} {'folds min..max':>20s} {'in-sample d':>11s} {'LOSO d':>8s}  notes"
    lines.append(head)
    for key, (scope, prior, values) in grid.items():
        def median_of(point_for, folds):
            errs = []
            for fold in folds:
                errs += [r["err"] for r in ev.rows(point_for(fold)) if in_scope(r, scope) and (fold == ALL or r["source"] == fold)]
            s = stats(errs)
            return s["median"] if s else None
        ins_point = insample[0]
        ins_fit = median_of(lambda f: ins_point, [ALL])
        ins_base = median_of(lambda f: dict(ins_point, **{key: shipped[key]}), [ALL])
        folds = [f for f in fits if f != ALL]
        loso_fit = median_of(lambda f: fits[f][0], folds)
        loso_base = median_of(lambda f: dict(fits[f][0], **{key: shipped[key]}), folds)
        fold_values = [fits[f][0][key] for f in folds if key not in fits[f][1]]
        notes = []
        d_in = None if ins_fit is None else 100 * (ins_fit - ins_base)
        d_lo = None if loso_fit is None else 100 * (loso_fit - loso_base)
        if d_in is not None and d_lo is not None and d_in < -0.05 and d_lo >= 0:
            notes.append("DEFECT: helps in-sample only")
        if fold_values and len(set(fold_values)) > 1 and (max(fold_values) - min(fold_values)) > 0.25 * max(abs(max(fold_values)), 1e-12):
            notes.append("SWINGS between folds")
        n_src = len(sources_in_scope[key])
        if n_src <= 1:
            notes.append(f"fitted to one source only ({', '.join(sorted(sources_in_scope[key])) or 'none'})")
        prior_folds = [f for f in folds if key in fits[f][1]]
        if prior_folds:
            notes.append(f"prior {prior:g} in {len(prior_folds)} fold(s) with no other source in scope")
        span = f"{min(fold_values):g}..{max(fold_values):g}" if fold_values else "-"
        dfmt = lambda d: "-" if d is None else f"{d:+.2f}pt"
        lines.append(f"{key:32s} {shipped[key]:9g} {insample[0][key]:9g} {span:>20s} {dfmt(d_in):>11s} {dfmt(d_lo):>8s}  "
                     + "; ".join(notes))
    return "\n".join(lines)


def write_loso(path, fits, rows_per_fold, fp, command, seconds):
    date = datetime.date.today().isoformat()
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["fold", "key", "value", "rows", "model_fingerprint", "source", "date"])
        for fold, (point, no_rows, converged) in fits.items():
            for key in sorted(point):
                if fold == ALL:
                    src = "in-sample fit on every source (for comparison; not used to predict any row)"
                elif key in no_rows:
                    src = "prior: no other source has rows in this key's scope"
                else:
                    src = "fit on every source but this one"
                src += f"; generated by `{command}` in {seconds:.0f} s" + ("" if converged else "; descent stopped at --passes")
                w.writerow([fold, key, repr(point[key]), rows_per_fold.get(fold, 0), fp, src, date])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "gpuplan"))
    ap.add_argument("--grid", help="key,scope,prior,values CSV (default: the GRID in this file)")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--loso", help="write the per-fold constants here (e.g. data/loso_fits.csv)")
    args = ap.parse_args()
    t0 = time.time()
    files = args.files or DEFAULT_FILES
    grid = read_grid(args.grid) if args.grid else dict(GRID)
    have = current_values()
    for k in [k for k in grid if k not in have]:
        print(f"skipped {k}: not a key of data/calibration.csv, efficiency.csv or frameworks.csv")
        del grid[k]
    shipped = {k: have[k] for k in grid}
    # The shipped value is always a candidate (the per-constant table compares against it).
    grid = {k: (s, p, sorted(set(v) | {shipped[k]})) for k, (s, p, v) in grid.items()}
    ev = Evaluator(args.binary, files, args.jobs)
    base = ev.rows(shipped)
    if base and "source" not in base[0]:
        sys.exit("the binary's report has no 'source' column in 'Every predicted row': rebuild gpuplan")
    folds = sorted({r["source"] for r in base})
    rows_per_fold = {f: sum(1 for r in base if r["source"] == f) for f in folds}
    rows_per_fold[ALL] = len(base)
    sources_in_scope = {k: {r["source"] for r in base if in_scope(r, s)} for k, (s, _, _) in grid.items()}
    print(f"{len(base)} predicted rows in {len(folds)} sources (folds); grid: " +
          ", ".join(f"{k} {v}" for k, (_, _, v) in grid.items()))
    # Every fold's descent in its own thread; the evaluator runs at most --jobs validates at once.
    with cf.ThreadPoolExecutor(max_workers=len(folds) + 1) as tp:
        futures = {ALL: tp.submit(descend, ev, grid, set(folds), shipped, args.passes)}
        for f in folds:
            futures[f] = tp.submit(descend, ev, grid, set(folds) - {f}, shipped, args.passes)
        fits = {f: fu.result() for f, fu in futures.items()}
    loso = loso_rows(ev, fits)
    insample = [r for r in ev.rows(fits[ALL][0])]
    print("\nleave-one-source-out: each source's rows predicted with the constants fitted without it")
    for f in folds:
        fr = [r for r in loso if r["source"] == f]
        ir = [r for r in insample if r["source"] == f]
        for kind in ("throughput", "memory"):
            l = stats([r["err"] for r in fr if in_scope(r, kind)])
            if l is None:
                continue
            i = stats([r["err"] for r in ir if in_scope(r, kind)])
            print(f"  {f:40s} {kind:10s} LOSO: {fmt(l)} | in-sample: {fmt(i)}")
        chosen = {k: v for k, v in fits[f][0].items() if v != fits[ALL][0][k]}
        if chosen:
            print(f"  {'':40s} differs from the in-sample fit: " + ", ".join(f"{k}={v:g}" for k, v in chosen.items()))
    for kind in ("throughput", "memory"):
        print(f"  {'overall':40s} {kind:10s} LOSO: {fmt(stats([r['err'] for r in loso if in_scope(r, kind)]))}"
              f" | in-sample: {fmt(stats([r['err'] for r in insample if in_scope(r, kind)]))}")
    print("\nper constant: median |error| of its scope, fitted value minus shipped value (percentage points),\n"
          "in-sample (fitted on all sources) and LOSO (each source with the value fitted without it)")
    print(constant_table(ev, grid, shipped, fits, fits[ALL], sources_in_scope))
    seconds = time.time() - t0
    print(f"\n{ev.runs} validate runs, {seconds:.0f} s with --jobs {args.jobs}")
    print("in-sample fit: " + ", ".join(f"{k}={v:g}" for k, v in fits[ALL][0].items()) +
          " (write values into data/*.csv only with the LOSO numbers above as their source)")
    if args.loso:
        command = "python3 tools/fit_runs.py --loso " + os.path.relpath(args.loso, ROOT)
        write_loso(args.loso, fits, rows_per_fold, ev.fingerprint, command, seconds)
        print(f"wrote {args.loso}")


if __name__ == "__main__":
    main()
