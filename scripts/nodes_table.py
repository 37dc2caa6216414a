#!/usr/bin/env python3
"""Markdown table of `pcoll-sim choose --format json` lines for a node layout (stdin):
per collective and size, hier, hier_ml, the best flat pcoll algorithm, native, the decision.
Modelled times, not measurements."""
import json, sys

def ms(t):
    return "-" if t is None else f"{t * 1e3:.3g}"

def size(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"

print("| collective | size | hier ms | hier_ml ms | best flat ms (algorithm) | native ms (its algorithm) | decision | decision / best flat |")
print("|---|---|---|---|---|---|---|---|")
for line in sys.stdin:
    c = json.loads(line)
    pr = c["predicted_s"]
    flat = {a: t for a, t in pr.items() if a not in ("hier", "hier_ml", "native")}
    fa = min(flat, key=flat.get)
    dec = pr.get(c["algorithm"], pr["native"])
    print(f"| {c['collective']} | {size(c['bytes'])} | {ms(pr.get('hier'))} | {ms(pr.get('hier_ml'))} | "
          f"{ms(flat[fa])} ({fa}) | {ms(pr['native'])} ({c['native_algorithm']}) | {c['algorithm']} | {dec / flat[fa]:.2f} |")
