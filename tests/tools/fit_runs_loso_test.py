#!/usr/bin/env python3
"""tools/fit_runs.py leave-one-source-out bookkeeping, with a fake `gpuplan validate`: two sources whose
rows each prefer another value of one constant. The fold of a source must be fitted on the OTHER
source's rows only (so it gets the other's value), a key with rows in the left-out source only takes
its prior, and the written file names each fold with its own constants."""
import concurrent.futures as cf
import csv
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import fit_runs  # noqa: E402

BEST = {"A": 1.0, "B": 1.3}  # the framework_overhead each source's rows fit best


class FakeEvaluator:
    def __init__(self):
        self.calls = 0

    def submit(self, point):
        self.calls += 1
        f = cf.Future()
        f.set_result(self.rows(point))
        return f

    def rows(self, point):
        rows = []
        for src in ("A", "B"):
            for i in range(6):
                err = point["framework_overhead"] / BEST[src] - 1 + 0.001 * i
                rows.append({"source": src, "framework": "megatron", "memory": False, "err": err})
        # Memory rows in source A only: allocator_fragmentation acts on A alone.
        rows += [{"source": "A", "framework": "megatron", "memory": True, "err": point["allocator_fragmentation"] - 0.1}] * 6
        return rows


def main():
    grid = {"framework_overhead": ("throughput", 1.0, [1.0, 1.1, 1.2, 1.3]),
            "allocator_fragmentation": ("memory", 0.05, [0.05, 0.1, 0.15])}
    start = {"framework_overhead": 1.2, "allocator_fragmentation": 0.15}
    ev = FakeEvaluator()
    fits = {fit_runs.ALL: fit_runs.descend(ev, grid, {"A", "B"}, start, 3)}
    for fold in ("A", "B"):
        fits[fold] = fit_runs.descend(ev, grid, {"A", "B"} - {fold}, start, 3)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # Fold A is fitted on B's rows: it takes B's value, never A's own, and the reverse.
    check(fits["A"][0]["framework_overhead"] == BEST["B"], f"fold A: {fits['A'][0]}")
    check(fits["B"][0]["framework_overhead"] == BEST["A"], f"fold B: {fits['B'][0]}")
    # allocator_fragmentation has rows in A only: fold A leaves it at the prior; fold B fits it on A.
    check(fits["A"][0]["allocator_fragmentation"] == 0.05 and "allocator_fragmentation" in fits["A"][1], f"fold A prior: {fits['A']}")
    check(fits["B"][0]["allocator_fragmentation"] == 0.1 and not fits["B"][1], f"fold B: {fits['B']}")
    check(fits["A"][2] and fits["B"][2], "descents converged")
    # The LOSO rows: each source's rows come from its own fold's point.
    loso = fit_runs.loso_rows(ev, fits)
    for r in loso:
        want = fits[r["source"]][0]["framework_overhead"] / BEST[r["source"]] - 1
        if not r["memory"]:
            check(abs(r["err"] - want) < 0.01, f"row of {r['source']}: {r['err']} vs {want}")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "loso.csv")
        fit_runs.write_loso(path, fits, {"A": 18, "B": 12, fit_runs.ALL: 30}, "abc", "cmd", 1.0)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        by = {(r["fold"], r["key"]): r for r in rows}
        check(float(by[("A", "framework_overhead")]["value"]) == 1.3, "file: fold A value")
        check(by[("A", "allocator_fragmentation")]["source"].startswith("prior"), "file: prior named")
        check(by[("B", "framework_overhead")]["rows"] == "12", "file: rows")
        check(all(r["model_fingerprint"] == "abc" for r in rows), "file: fingerprint")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"ok ({ev.calls} fake validate calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
