"""What exploring a learned table's cells cost, from its own comments (the agreed times):
per cell, sum over candidates of (1 + timed) x (time - winner's time), against `calls`
calls of the winner. Usage: scripts/learn_cost.py <learned.toml> <calls per cell>
(scripts/learn-ab.sh: 405 interposed calls per size at 200 iterations)."""
import re
import sys

t, calls = sys.argv[1], int(sys.argv[2])
for line in open(t):
    m = re.match(r"# (\S+) p=(\d+) \[([^,]+), [^)]+\)[^:]*: (\d+) calls explored \((\d+) candidates, 1 warm-up \+ (\d+) timed.*(?:medians|lower quartiles) \(slowest rank\): (.*); margin \d+%: (\S+)", line)
    if not m: continue
    coll, p, lo, n, k, T, meds, win = m.groups()
    med = {}
    for part in meds.split(", "):
        name, val, _ = part.rsplit(" ", 2)
        med[name.split(" ")[0]] = float(val)
    mw = med[win]
    extra = sum((1 + int(T)) * (v - mw) for v in med.values())
    base = calls * mw
    print(f"{coll} p={p} {lo}: winner {win} {mw:.1f} us; exploration cost {extra:.0f} us over {calls} calls = {100*extra/base:.1f}% of the winner's time")
