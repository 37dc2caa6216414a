#!/usr/bin/env python3
"""make demo's table from a pcoll-bench CSV: per collective and size, native's median, what
pcoll chose (`auto`: the table's decision through MPI_*) and the best forced algorithm.

  demo_table.py CSV [CSV ...]

A cell whose decision is native runs the same MPI call on both sides: it is printed as
`native (same call)`, with the measured ratio in brackets marked as noise, and is never
counted as a speed-up. Ratios are pcoll median / native median (below 1: pcoll faster).
"""
import csv
import sys

from net_table import fmt_size as fmt_bytes

FORCED_OUT = {"native", "auto", "passthru"}


def fmt_us(us):
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


def table(path):
    rows = list(csv.DictReader(open(path, newline="")))
    if not rows:
        return 0, 0
    mpi, p = rows[0]["mpi"], rows[0]["p"]
    cells = {}
    for r in rows:
        cells.setdefault((r["collective"], int(r["bytes"])), []).append(r)
    print(f"{'collective':<11} {'size':>8} {'native':>10}   {'pcoll chose':<34} {'best forced algorithm'}")
    native_cells = faster = 0
    for (coll, b), rs in cells.items():
        nat = next((r for r in rs if r["variant"] == "native"), None)
        auto = next((r for r in rs if r["variant"] == "auto"), None)
        forced = [r for r in rs if r["variant"] not in FORCED_OUT and "@" not in r["variant"]]
        best = min(forced, key=lambda r: float(r["ratio"])) if forced else None
        if nat is None or auto is None:
            continue
        ratio = float(auto["ratio"])
        if auto["algorithm"] == "native":
            native_cells += 1
            chose = f"native (same call) [{ratio:.2f}: noise]"
        else:
            faster += ratio < 0.95
            chose = f"{auto['algorithm']} {ratio:.2f}x"
        bf = f"{best['variant']} {float(best['ratio']):.2f}x" if best else "-"
        print(f"{coll:<11} {fmt_bytes(b):>8} {fmt_us(float(nat['median_us'])):>10}   {chose:<34} {bf}")
    return native_cells, faster


def main(argv):
    if not argv:
        sys.exit(__doc__)
    for path in argv:
        n, f = table(path)
        print(f"({n} cells decided native: the same MPI call on both sides, their ratio is noise, "
              f"not pcoll; {f} cells where pcoll's choice measured below 0.95x native)")


if __name__ == "__main__":
    main(sys.argv[1:])
