#!/usr/bin/env python3
"""Fit report for the global efficiency constants in data/efficiency.csv.

Grid-searches a few global constants (the same values for every row: no per-row or per-model
terms) by running `gpuplan validate` with a calibration override file, and prints median / p90
absolute error of tokens/s per GPU for each point, best last. The chosen values go into
data/efficiency.csv with this script named as their source.

usage: tools/fit_runs.py build/gpuplan ../shared/validation/runs.csv
"""
import itertools, os, re, subprocess, sys, tempfile

GRID = {
    "framework_overhead": [1.0, 1.1, 1.2, 1.3],
    "flash_attention_eff.ampere": [0.575, 0.45, 0.35],
    "flash_attention_eff.hopper": [0.33, 0.25, 0.2],
    "matmul_fixed_s": [8e-6, 20e-6, 50e-6, 100e-6],
    "step_fixed_s": [0.0],
}


def run(binary, runs, values):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("key,value\n")
        for k, v in values.items():
            f.write(f"{k},{v}\n")
        path = f.name
    out = subprocess.run([binary, "validate", runs, "--write", "-", "--calibration", path],
                         capture_output=True, text=True).stdout
    os.unlink(path)
    m = re.search(r"^all\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+([-+\d.]+)%", out, re.M)
    return (float(m.group(2)), float(m.group(3)), float(m.group(4))) if m else (999, 999, 0)


def main():
    binary, runs = sys.argv[1], sys.argv[2]
    keys = list(GRID)
    results = []
    for combo in itertools.product(*(GRID[k] for k in keys)):
        values = dict(zip(keys, combo))
        med, p90, mean = run(binary, runs, values)
        results.append((med + 0.5 * p90, med, p90, mean, values))
    results.sort(key=lambda r: -r[0])
    for score, med, p90, mean, values in results[-10:]:
        print(f"median {med:5.1f}%  p90 {p90:5.1f}%  mean {mean:+6.1f}%  {values}")


if __name__ == "__main__":
    main()
