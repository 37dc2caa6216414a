#!/usr/bin/env python3
"""pcoll time / native time against message size, one SVG, no dependencies.

  ratio_plot.py headline -o results/headline.svg
      the README's picture, from recorded runs only: the emulated cluster
      (results/net/auto.mpich.4x1.csv) beside this machine at p = 2
      (results/auto.{mpich,openmpi}.p2.csv)
  ratio_plot.py demo -o results/demo.svg [--panel TITLE CSV ...] [--net]
      make demo's picture: one panel per pcoll-bench CSV, per collective pcoll's
      choice (`auto`) and the best forced algorithm; --net adds the emulated cluster's
      recorded run (results/net/auto.mpich.4x1.csv) as a panel of its own

Every point is a median ratio from pcoll-bench's CSV (variant `auto`, or the best of the
forced algorithms). A cell whose decision is native (the `auto` row's algorithm is
`native`: the same MPI call on both sides) is drawn hollow on the 1.0 line's side it fell:
its distance from 1.0 is noise, not pcoll.
"""
import csv
import math
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
FORCED_OUT = {"native", "auto", "passthru"}


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def series_from_csv(path, collectives=None, best=True):
    """[(label, [(bytes, ratio, native_decision)], dashed)] per collective of a run."""
    rows = read_rows(path)
    colls = []
    for r in rows:
        if r["collective"] not in colls and (collectives is None or r["collective"] in collectives):
            colls.append(r["collective"])
    out = []
    for c in colls:
        auto, bestpts = [], {}
        for r in rows:
            if r["collective"] != c:
                continue
            b, ratio = int(r["bytes"]), float(r["ratio"])
            if r["variant"] == "auto":
                auto.append((b, ratio, r["algorithm"] == "native"))
            elif r["variant"] not in FORCED_OUT and "@" not in r["variant"]:
                if b not in bestpts or ratio < bestpts[b]:
                    bestpts[b] = ratio
        out.append((f"{c}: pcoll's choice", sorted(auto), False))
        if best and bestpts:
            out.append((f"{c}: best forced algorithm", sorted((b, v, False) for b, v in bestpts.items()), True))
    return out


def fmt_bytes(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return f"{b // n} {unit}"
    return f"{b} B"


def panel(x0, y0, w, h, title, subtitle, series, parts, nleg):
    """One log-log panel at (x0, y0) of size w x h into parts (list of SVG strings)."""
    lo, hi = 0.05, 4.0
    pts = [p for _, s, _ in series for p in s]
    bmin = min(p[0] for p in pts)
    bmax = max(p[0] for p in pts)
    if bmin == bmax:
        bmin, bmax = bmin / 2, bmax * 2
    lx0, lx1 = math.log2(bmin), math.log2(bmax)

    def px(b):
        return x0 + 50 + (math.log2(b) - lx0) / (lx1 - lx0) * (w - 70)

    legend_h = 14 * nleg + 6
    ph = h - 80 - legend_h  # plot height; the legend goes below the axis

    def py(v):
        v = min(max(v, lo), hi)
        return y0 + 40 + (math.log(hi) - math.log(v)) / (math.log(hi) - math.log(lo)) * ph

    parts.append(f'<text x="{x0 + 10}" y="{y0 + 16}" font-weight="bold">{title}</text>')
    parts.append(f'<text x="{x0 + 10}" y="{y0 + 31}" font-size="11" fill="#444">{subtitle}</text>')
    parts.append(f'<rect x="{x0 + 50}" y="{y0 + 40}" width="{w - 70}" height="{ph}" fill="none" stroke="#999"/>')
    for v in (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0):
        y = py(v)
        stroke = ' stroke="#000" stroke-width="1.5"' if v == 1.0 else ' stroke="#ddd"'
        parts.append(f'<line x1="{x0 + 50}" y1="{y:.1f}" x2="{x0 + w - 20}" y2="{y:.1f}"{stroke}/>')
        parts.append(f'<text x="{x0 + 45}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{v:g}</text>')
    parts.append(f'<text x="{x0 + w - 22}" y="{py(1.0) + 12:.1f}" font-size="10" text-anchor="end">native = 1</text>')
    b = 1
    while b <= bmax:
        if b >= bmin:
            parts.append(f'<text x="{px(b):.1f}" y="{y0 + 40 + ph + 14}" font-size="10" text-anchor="middle">{fmt_bytes(b)}</text>')
        b *= 4 if (lx1 - lx0) > 8 else 2
    parts.append(f'<text x="{x0 + w / 2:.0f}" y="{y0 + 40 + ph + 28}" font-size="11" text-anchor="middle">message size</text>')
    ym = y0 + 40 + ph / 2
    parts.append(f'<text x="{x0 + 12}" y="{ym:.0f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 {x0 + 12} {ym:.0f})">pcoll time / native time</text>')
    ly = y0 + 40 + ph + 44
    for i, (label, s, dashed) in enumerate(series):
        color = COLORS[(i // 2 if any(d for _, _, d in series) else i) % len(COLORS)]
        dash = ' stroke-dasharray="5,4"' if dashed else ""
        path = " ".join(f"{px(b):.1f},{py(v):.1f}" for b, v, _ in s)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for b, v, native in s:
            fill = "#fff" if native else color
            r = 3.5 if not dashed else 2.5
            parts.append(f'<circle cx="{px(b):.1f}" cy="{py(v):.1f}" r="{r}" fill="{fill}" stroke="{color}"/>')
            if v > hi or v < lo:  # off the scale: drawn at its edge, labelled with its value
                dy = -6 if v > hi else 12
                parts.append(f'<text x="{px(b) + 4:.1f}" y="{py(v) + dy:.1f}" font-size="9" fill="{color}">{v:.2g}x</text>')
        yy = ly + 14 * i
        parts.append(f'<line x1="{x0 + 60}" y1="{yy}" x2="{x0 + 85}" y2="{yy}" stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{x0 + 90}" y="{yy + 4}" font-size="10">{label}</text>')


def write_svg(path, panels, footer):
    w = 560
    nleg = max(len(series) for _, _, series in panels)
    h = 380 + 14 * nleg
    width = w * len(panels)
    height = h + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="#fff"/>']
    for i, (title, subtitle, series) in enumerate(panels):
        panel(w * i, 0, w, h, title, subtitle, series, parts, nleg)
    for j, line in enumerate(footer):
        parts.append(f'<text x="10" y="{h + 14 + 14 * j}" font-size="11" fill="#444">{line}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


HOLLOW = "Hollow marker: pcoll decided native (the same MPI call on both sides): its distance from 1 is noise."


def headline(out):
    here = []
    for mpi, colls in (("MPICH", ("reduce", "allreduce")), ("Open MPI", ("reduce_scatter", "allreduce"))):
        f = "results/auto.%s.p2.csv" % ("mpich" if mpi == "MPICH" else "openmpi")
        for label, s, dashed in series_from_csv(f, collectives=colls, best=False):
            here.append((f"{mpi} {label.split(':')[0]}", s, dashed))
    write_svg(out, [
        net_panel("Emulated cluster (measured)"),
        ("This machine (measured)", "2 cores, shared memory, p = 2; built-in tables of 2026-11-22 (before shm)", here),
    ], ["pcoll-bench medians, native and pcoll interleaved; results/net/auto.mpich.4x1.csv, results/auto.{mpich,openmpi}.p2.csv.",
        HOLLOW])


NET_CSV = "results/net/auto.mpich.4x1.csv"


def net_panel(title):
    series = [(label.split(":")[0], s, d) for label, s, d in series_from_csv(NET_CSV, best=False)]
    return (title, "4 nodes x 1 rank, 500 Mbit/s links, MPICH 4.0.2; table tuned there", series)


def demo(out, panels_in, with_net):
    panels = [(title, "pcoll's choice (solid), best forced algorithm (dashed)", series_from_csv(path))
              for title, path in panels_in]
    footer = ["pcoll-bench medians, native and pcoll interleaved (make demo)."]
    if with_net:
        panels.append(net_panel("Emulated cluster (recorded, " + NET_CSV.split("/")[-1] + ")"))
        footer = ["pcoll-bench medians, native and pcoll interleaved: this machine now (make demo), "
                  "the emulated cluster from " + NET_CSV + "."]
    write_svg(out, panels, footer + [HOLLOW])


def main(argv):
    if len(argv) < 3 or argv[1] != "-o":
        sys.exit(__doc__)
    mode, out, rest = argv[0], argv[2], argv[3:]
    if mode == "headline" and not rest:
        headline(out)
    elif mode == "demo":
        panels, with_net, i = [], False, 0
        while i < len(rest):
            if rest[i] == "--panel" and i + 2 < len(rest):
                panels.append((rest[i + 1], rest[i + 2]))
                i += 3
            elif rest[i] == "--net":
                with_net, i = True, i + 1
            else:
                sys.exit(__doc__)
        if not panels and not with_net:
            sys.exit(__doc__)
        demo(out, panels, with_net)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
