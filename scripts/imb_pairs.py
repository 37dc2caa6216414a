#!/usr/bin/env python3
"""scripts/imb_pairs.py RAWDIR... : the paired ratio of `scripts/imb.sh --raw` runs pooled over
several invocations (IMB-MPI1 output files native.N and pcoll.N in each RAWDIR: run N of
each side, alternated ABBA): per benchmark and size, the number of pairs and the median
over all pairs of pcoll's t_avg / native's, then the worst size per benchmark from 4 KiB."""
import re
import statistics
import sys
from pathlib import Path


def parse(path):
    """{(benchmark, bytes): t_avg} of one IMB-MPI1 output (blocking collectives' tables)."""
    out, cur = {}, None
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"# Benchmarking (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        f = line.split()
        if cur and len(f) == 5 and f[0].isdigit():
            out[(cur, int(f[0]))] = float(f[4])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pairs = {}
    for d in map(Path, sys.argv[1:]):
        for n in sorted(d.glob("native.*")):
            p = d / n.name.replace("native", "pcoll", 1)
            if not p.exists():
                continue
            a, b = parse(n), parse(p)
            for k, t in a.items():
                if k in b and t > 0:
                    pairs.setdefault(k, []).append(b[k] / t)
    worst = {}
    print(f"{'benchmark':14} {'bytes':>9} {'pairs':>5} {'paired':>7}")
    for k in sorted(pairs):
        r = statistics.median(pairs[k])
        print(f"{k[0]:14} {k[1]:>9} {len(pairs[k]):>5} {r:7.3f}")
        if k[1] >= 4096 and r > worst.get(k[0], (0, 0))[0]:
            worst[k[0]] = (r, k[1])
    for name, (r, b) in sorted(worst.items()):
        print(f"# {name}: worst paired ratio from 4 KiB {r:.3f} at {b} B")


if __name__ == "__main__":
    main()
