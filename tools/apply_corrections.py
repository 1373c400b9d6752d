#!/usr/bin/env python3
"""Apply audited catalog cell corrections to data/*.csv and record each cell's source.

Usage (from the repository root):
    python3 tools/apply_corrections.py [CORRECTIONS.csv] [--data data] [--check]

CORRECTIONS.csv (default ../shared/reference/catalog-corrections.csv) has the columns
file,row_id,column,current_value,correct_value,source,source_date,confidence.

For each correction:
  * correct_value may carry a remark: "88.49 (us-central1)", "10 (up to)",
    "2026-07-28 (on-demand only; spot 33.431 stays undated)". The cell gets the clean leading
    value ("88.49"); the remark goes to the row's notes.
  * A `notes` correction replaces the current_value text inside the notes cell; its
    cell_sources value is the corrected text, which the notes cell contains.
  * The cell must hold current_value (or already hold the corrected value: the script is
    idempotent). Anything else is a conflict: reported, not applied.
  * Consequences that follow from a corrected price are applied and recorded as derived:
    a corrected on-demand price without its own price_date correction dates price_date with the
    correction's date; a price remark that names a region sets `region`; a corrected spot price
    dates spot_price_date; a price_date correction leaves the spot price's date as it was.
Every applied cell (and every derived one) gets a row in data/cell_sources.csv
(file,row_id,column,value,source,date,confidence). Existing rows of cell_sources.csv for other
cells are kept. With --check nothing is written; the exit code is 1 if any correction is not
applied yet or conflicts.

Also adds the instances.csv columns spot_price_date, price_currency, on_demand_local_per_hour,
fx_usd_per_unit, fx_date and the gpus.csv column p2p to every existing row if they are missing.
Python 3 standard library only.
"""
import argparse
import csv
import io
import os
import re
import sys

CELL_SOURCES_HEADER = ["file", "row_id", "column", "value", "source", "date", "confidence"]
INSTANCE_NEW_COLUMNS = [  # (name, after, default for existing rows)
    ("spot_price_date", "price_date", None),  # filled from price_date where a spot price exists
    ("price_currency", "spot_price_date", "USD"),
    ("on_demand_local_per_hour", "price_currency", "unknown"),
    ("fx_usd_per_unit", "on_demand_local_per_hour", "unknown"),
    ("fx_date", "fx_usd_per_unit", "unknown"),
]
GPU_NEW_COLUMNS = [("p2p", "pcie_lanes", "unknown")]
REGION_RE = re.compile(r"^[a-z]+-[a-z]+\d+$")
DATE_RE = re.compile(r"^(\d{4}-\d{2}(?:-\d{2})?)\b")


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def write_csv(path, header, rows):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([r.get(c, "") for c in header])
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(out.getvalue())


def split_value(text):
    """'88.49 (us-central1)' -> ('88.49', 'us-central1'); '10 (up to)' -> ('10', 'up to')."""
    text = text.strip()
    m = re.match(r"^([^\s(]+)\s*(.*)$", text)
    if not m:
        return text, ""
    value, rest = m.group(1), m.group(2).strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1].strip()
    return value, rest


def clean_date(text):
    """Leading YYYY-MM-DD or YYYY-MM of a source_date, else 'undated'."""
    m = DATE_RE.match(text.strip())
    return m.group(1) if m else "undated"


def source_text(c):
    """The correction's source, plus its source_date when that is not a clean date."""
    if clean_date(c["source_date"]) == c["source_date"].strip():
        return c["source"]
    return c["source"] + " (source date: " + c["source_date"].strip() + ")"


def add_columns(header, rows, new_columns):
    changed = False
    for name, after, default in new_columns:
        if name in header:
            continue
        header.insert(header.index(after) + 1, name)
        for r in rows:
            if default is not None:
                r[name] = default
            elif name == "spot_price_date":
                has_spot = r.get("spot_usd_per_hour", "unknown") not in ("unknown", "none", "")
                r[name] = r.get("price_date", "undated") if has_spot else "unknown"
        changed = True
    return changed


def append_note(row, text):
    notes = row.get("notes", "")
    if text in notes:
        return
    row["notes"] = (notes + "; " if notes else "") + text


class Applier:
    def __init__(self, tables):
        self.tables = tables  # file -> (header, rows by id)
        self.sources = {}     # (file, row_id, column) -> cell_sources row
        self.problems = []
        self.pending = 0

    def cell(self, file, row_id):
        header, rows = self.tables[file]
        return rows.get(row_id)

    def record(self, file, row_id, column, value, source, date, confidence):
        self.sources[(file, row_id, column)] = {
            "file": file, "row_id": row_id, "column": column, "value": value,
            "source": source, "date": date, "confidence": confidence}

    def set_derived(self, file, row_id, column, value, why, c):
        row = self.cell(file, row_id)
        if column not in self.tables[file][0] or row.get(column) == value:
            return
        if row[column] != value:
            self.pending += 1
        row[column] = value
        self.record(file, row_id, column, value, "derived: " + why + "; " + source_text(c),
                    clean_date(c["source_date"]), c["confidence"])

    def apply(self, c, corrected_columns):
        file, row_id, col = c["file"], c["row_id"], c["column"]
        if file not in self.tables:
            self.problems.append(f"{file}: not a catalog file ({row_id}.{col})")
            return
        header, _ = self.tables[file]
        row = self.cell(file, row_id)
        if row is None or col not in header:
            self.problems.append(f"{file}: {row_id}.{col}: no such row/column")
            return
        current = row[col]
        if col == "notes":
            self.apply_notes(c, row)
            return
        value, remark = split_value(c["correct_value"])
        want_current, _ = split_value(c["current_value"])
        if current == value:
            pass  # already applied
        elif current in (c["current_value"].strip(), want_current):
            row[col] = value
            self.pending += 1
            if remark or current not in ("unknown", "undated", ""):  # a changed figure, or a remark
                note = f"{col} corrected {current} -> {value}"
                append_note(row, note + (f" ({remark})" if remark else "") +
                            f" [{c['confidence']}; {c['source_date'].strip()}; data/cell_sources.csv]")
        else:
            self.problems.append(f"{file}: {row_id}.{col} is '{current}', correction expects "
                                 f"'{c['current_value']}' (-> '{value}'); not applied")
            return
        self.record(file, row_id, col, value, source_text(c), clean_date(c["source_date"]),
                    c["confidence"])
        if file == "instances.csv":
            self.instance_consequences(c, row_id, col, value, remark, corrected_columns)

    def apply_notes(self, c, row):
        cur, new = c["current_value"], c["correct_value"]
        if new in row["notes"]:
            pass
        elif cur in row["notes"]:
            row["notes"] = row["notes"].replace(cur, new)
            self.pending += 1
        else:
            self.problems.append(f"{c['file']}: {c['row_id']}.notes lacks '{cur}'; not applied")
            return
        # The notes cell keeps growing (remarks of other corrections); the recorded value is the
        # corrected text, and the catalog loader checks that the cell contains it.
        self.record(c["file"], c["row_id"], "notes", new, source_text(c),
                    clean_date(c["source_date"]), c["confidence"])

    def instance_consequences(self, c, row_id, col, value, remark, corrected_columns):
        f = "instances.csv"
        if col in ("on_demand_usd_per_hour", "spot_usd_per_hour") and REGION_RE.match(remark):
            self.set_derived(f, row_id, "region", remark, f"region of the corrected {col}", c)
        if col == "on_demand_usd_per_hour" and (row_id, "price_date") not in corrected_columns:
            date = clean_date(c["source_date"])
            if date != "undated":
                self.set_derived(f, row_id, "price_date", date,
                                 "date of the corrected on_demand_usd_per_hour", c)
        if col == "spot_usd_per_hour":
            self.set_derived(f, row_id, "spot_price_date", clean_date(c["source_date"]),
                             "date of the corrected spot_usd_per_hour", c)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corrections", nargs="?",
                   default=os.path.join(root, "..", "shared", "reference", "catalog-corrections.csv"))
    p.add_argument("--data", default=os.path.join(root, "data"))
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is pending")
    a = p.parse_args()

    tables, headers = {}, {}
    for name in ("gpus.csv", "instances.csv", "storage.csv", "links.csv"):
        header, rows = read_csv(os.path.join(a.data, name))
        headers[name] = header
        tables[name] = (header, {r["id"]: r for r in rows})
    added = add_columns(headers["instances.csv"], list(tables["instances.csv"][1].values()),
                        INSTANCE_NEW_COLUMNS)
    added |= add_columns(headers["gpus.csv"], list(tables["gpus.csv"][1].values()), GPU_NEW_COLUMNS)

    _, corrections = read_csv(a.corrections)
    ap = Applier(tables)
    cs_path = os.path.join(a.data, "cell_sources.csv")
    if os.path.exists(cs_path):
        for r in read_csv(cs_path)[1]:
            ap.sources[(r["file"], r["row_id"], r["column"])] = r
    corrected = {(c["row_id"], c["column"]) for c in corrections}
    for c in corrections:
        ap.apply(c, corrected)

    for msg in ap.problems:
        print("apply_corrections: " + msg, file=sys.stderr)
    print(f"apply_corrections: {len(corrections)} corrections, {ap.pending} cells changed, "
          f"{len(ap.problems)} not applied, {len(ap.sources)} cell sources")
    if a.check:
        return 1 if ap.pending or added or ap.problems else 0
    for name, (header, rows) in tables.items():
        write_csv(os.path.join(a.data, name), header, list(rows.values()))
    write_csv(cs_path, CELL_SOURCES_HEADER,
              sorted(ap.sources.values(), key=lambda r: (r["file"], r["row_id"], r["column"])))
    return 1 if ap.problems else 0


if __name__ == "__main__":
    sys.exit(main())
