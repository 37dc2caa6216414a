#!/usr/bin/env python3
"""docs/emulated-cluster.md's tables from pcoll-bench CSVs measured on the emulated cluster (results/net/).

    scripts/net_table.py CSV [--rate-mbit 500] [--sizes 1048576,4194304,...] [--collectives a,b]
                         [--predicted]

One row per (collective, size): native median (ms), auto / native (and what auto ran), the best
pcoll algorithm / native, its median (ms), the link bound m*beta (the whole message once over
one link at the shaped rate), best / bound and auto / best. --predicted adds the cost model's prediction
for the best algorithm and for auto's choice as predicted / measured (the CSV's predicted_us
column, i.e. the [model] of the table pcoll-bench ran with)."""
import argparse
import csv
import sys


def fmt_size(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return f"{b // k} {unit}"
    return f"{b} B"


def load(path):
    cells = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["collective"], int(r["bytes"]))
            cells.setdefault(key, []).append(r)
    return cells


def ratio(x, y):
    return f"{x / y:.2f}" if y else "-"


def row(coll, size, rows, mbit, predicted):
    by = {r["variant"]: r for r in rows}
    nat = by.get("native")
    if nat is None:
        return None
    tn = float(nat["median_us"])
    auto = by.get("auto")
    algs = [r for v, r in by.items() if v not in ("native", "auto", "passthru")]
    if not algs:
        return None
    best = min(algs, key=lambda r: float(r["median_us"]))
    tb = float(best["median_us"])
    bound = size * 8 / (mbit * 1e6) * 1e6
    cells = [coll, fmt_size(size), f"{tn / 1e3:.1f}"]
    if auto:
        cells.append(f"{ratio(float(auto['median_us']), tn)} ({auto['algorithm']})")
    else:
        cells.append("-")
    cells += [f"{best['variant']} {ratio(tb, tn)}", f"{tb / 1e3:.1f}", f"{bound / 1e3:.1f}", ratio(tb, bound)]
    cells.append(ratio(float(auto["median_us"]), tb) if auto else "-")
    if predicted:
        for r in (best, auto):
            p = r and r.get("predicted_us")
            cells.append(ratio(float(p), float(r["median_us"])) if p else "-")
    return "| " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--rate-mbit", type=float, default=500)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--collectives", default="")
    ap.add_argument("--predicted", action="store_true")
    a = ap.parse_args()
    cells = load(a.csv)
    sizes = {int(s) for s in a.sizes.split(",") if s}
    colls = [c for c in a.collectives.split(",") if c]
    head = ["collective", "size", "native ms", "auto / native (ran)", "best algorithm / native",
            "best ms", "link bound m·β ms", "best / bound", "auto / best"]
    if a.predicted:
        head += ["best: predicted / measured", "auto: predicted / measured"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    order = ["reduce", "allreduce", "reduce_scatter", "allgatherv"]
    for (coll, size) in sorted(cells, key=lambda k: (order.index(k[0]) if k[0] in order else 9, k[1])):
        if (sizes and size not in sizes) or (colls and coll not in colls):
            continue
        line = row(coll, size, cells[(coll, size)], a.rate_mbit, a.predicted)
        if line:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
