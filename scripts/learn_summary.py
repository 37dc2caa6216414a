#!/usr/bin/env python3
"""scripts/learn_summary.py DIR: the summary of a scripts/learn-ab.sh run (DIR =
build/learn-ab/<mpi>-p<p>): per collective and size the plain run's ratio (pcoll with its
built-in table / native), the replay's (the learned table / native) and the learned winner
with the agreed ratio it was learned at ("raced X": the learned rule races X against native
in the replay); then the geometric mean and the worst cell of each run over every collective,
and the cells where the plain run's pcoll algorithm measured 1.25x or more faster than native
(ratio <= 0.8) but the learned table chose native ("missed"), or took it raced (or another
algorithm) and the replay measured above 0.9 ("not kept")."""
import math
import re
import sys
from pathlib import Path

UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(s):
    m = re.fullmatch(r"(\d+)(KiB|MiB|GiB|)", s.strip())
    return int(m.group(1)) * UNITS[m.group(2)]


def ab(path):
    out = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if f and f[0] == "ab":
            out[int(f[3])] = float(f[6])
    return out


def learned(path):
    """(lo, hi, winner, ratio) per learned cell of the table's comments: the exploration's
    winner, or the confirmation's verdict where a "confirmed over" line follows."""
    cells = []
    if not path.exists():
        return cells
    for line in path.read_text().splitlines():
        m = re.match(r"# \S+ p=\d+ \[([^,]+), ([^)]+)\).*: (\S+(?: \(segment \S+\))?) \(([\d.]+)x native\)$", line)
        if m:
            cells.append([size(m.group(1)), size(m.group(2)), m.group(3), float(m.group(4))])
            continue
        m = re.match(r"# confirmed over .*: (\S+(?: \(segment \S+\))?) \(([\d.]+)x native\)$", line)
        if m and cells:
            cells[-1][2:] = [m.group(1), float(m.group(2))]
        # A raced rule (race = true) replays that algorithm raced against native.
        # Also a native winner whose best candidate came close ("native won, X measured ...").
        m = re.match(r"# (?:the table this run used races the cell: |native won, .*: )?replayed raced, (\S+(?: \(segment \S+\))?) against native", line)
        if m and cells:
            cells[-1][2] = f"raced {m.group(1)}"
    return cells


def main():
    d = Path(sys.argv[1])
    colls = sorted({p.name.split(".")[0] for p in d.glob("*.plain.txt")})
    runs = {"plain": [], "replay": []}
    misses, lost = [], []
    print(f"{'collective':22} {'bytes':>9} {'plain':>6} {'replay':>6}  learned (ratio in the exploration)")
    for c in colls:
        plain, replay = ab(d / f"{c}.plain.txt"), ab(d / f"{c}.replay.txt")
        cells = learned(d / f"{c}.toml")
        for b in sorted(plain):
            if b not in replay:
                continue
            w = next(((n, r) for lo, hi, n, r in cells if lo <= b < hi), ("-", 0))
            print(f"{c:22} {b:>9} {plain[b]:6.3f} {replay[b]:6.3f}  {w[0]} ({w[1]:.2f})")
            runs["plain"].append((plain[b], c, b))
            runs["replay"].append((replay[b], c, b))
            if plain[b] <= 0.8 and w[0] == "native":
                misses.append((c, b, plain[b], replay[b]))
            elif plain[b] <= 0.8 and replay[b] > 0.9:
                lost.append((c, b, plain[b], replay[b], w[0]))
    for name, v in runs.items():
        if v:
            g = math.exp(sum(math.log(r) for r, _, _ in v) / len(v))
            worst = max(v)
            print(f"{name}: geomean {g:.3f} over {len(v)} cells, worst {worst[0]:.3f} ({worst[1]} {worst[2]} B)")
    for c, b, p, r in misses:
        print(f"missed: {c} {b} B: the built-in table's pcoll algorithm {p:.3f}, learned native, replay {r:.3f}")
    for c, b, p, r, w in lost:
        print(f"not kept: {c} {b} B: the built-in table's pcoll algorithm {p:.3f}, learned {w}, replay {r:.3f}")
    if not misses:
        print("missed: none (every cell the plain run served 1.25x faster than native was learned by a pcoll algorithm)")


if __name__ == "__main__":
    main()
