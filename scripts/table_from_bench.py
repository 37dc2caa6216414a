#!/usr/bin/env python3
"""Write the shipped default tuning tables from `make bench` results.

pcoll-tune picks the fastest algorithm per cell; for the built-in table we want a margin:
a pcoll algorithm is chosen only where it beat native by at least MARGIN in the interleaved
benchmark, otherwise the cell stays `native` (so the default is never much slower than the
MPI's own collective). Input: results/bench.<mpi>.p<p>.csv; output: tuning.toml (Open MPI 4.1),
tuning.mpich.toml (MPICH 4.0) and tables/tuning.<mpi>.toml (openmpi5, mpich5, impi), for each
MPI that has results. The [model] section is copied from results/tuning.<mpi>.toml (pcoll-tune's
fit) when present, else from the table of the same ABI (the shared-memory fit of this machine).

Validation: where results/auto.<mpi>.p<p>.csv (scripts/check-default.sh: the table's own
choice against native, 400 interleaved iterations, no other algorithm in between; for the three
collectives above results/family/auto.<mpi>.p<p>.csv, pcoll-bench --algorithms auto) measured the
chosen algorithm at a cell and found it not at least CONFIRM faster than native, the cell goes
back to `native` (the all-algorithms benchmark can flatter an algorithm: e.g. Open MPI p = 2
chunked ring allgatherv at 64 KiB measured 0.76 there and 1.22-1.30 alone). Procedure: make
bench; this script; make build; scripts/check-default.sh; this script again; make build;
scripts/check-default.sh.

Measurements of MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block may also come from
results/family/bench.<mpi>.p<p>.csv (pcoll-bench over those three alone). Each collective's
rules cover the p it was measured at.

--only LIST (comma-separated collectives): rewrite only those collectives' rules in the
existing tables (their blocks are removed, the new ones appended; the other collectives'
rules and the [model] section stay as they are).

--mpis LIST (comma-separated): write only these MPIs' tables (default: every MPI with results).

Usage: scripts/table_from_bench.py [--margin 0.92] [--only bcast,allgather,reduce_scatter_block]
       [--mpis openmpi5,mpich5,impi] [--evidence results/shm]
"""
import csv, glob, os, re, sys

MARGIN = 0.85
# Below this size calls are latency-bound and pcoll's per-call work is a visible share of
# the time (and oversubscribed measurements are mostly scheduler noise): native.
MIN_BYTES = 4096
# A chosen algorithm must also have measured at most this ratio in check-default (if it ran).
CONFIRM = 0.95
# ... and the default must not have measured above this ratio in any run of the independent
# A/B (verify/ab.c via scripts/ab-default.sh: results/ab.<mpi>.p<p>.txt and earlier runs kept in
# results/ab-runs/): a cell the A/B saw slower goes native (on a shared 2-core machine the two
# benchmarks can disagree by 2x minutes apart; a pick must survive both).
AB_VETO = 1.05
# --evidence DIR: check-default's and the A/B's runs are read from DIR alone (DIR/auto.<mpi>.p<p>.csv,
# DIR/ab.<mpi>.p<p>*.txt): after a new algorithm was benchmarked (results/shm/ for `shm` in the
# collectives other than reduce and allreduce), the earlier runs measured another default and
# neither confirm nor veto the new picks. A first pass with an empty DIR proposes; check-default
# and the A/B of the built proposal, written to DIR, then confirm or veto in the second pass.
EVIDENCE = None
if "--evidence" in sys.argv:
    EVIDENCE = sys.argv[sys.argv.index("--evidence") + 1]
if "--margin" in sys.argv:
    MARGIN = float(sys.argv[sys.argv.index("--margin") + 1])
NAMES = {"openmpi": "Open MPI 4.1", "mpich": "MPICH 4.0", "openmpi5": "Open MPI 5.0",
         "mpich5": "MPICH 5.0", "impi": "Intel MPI 2021"}
OUT = {"openmpi": "tuning.toml", "mpich": "tuning.mpich.toml", "openmpi5": "tables/tuning.openmpi5.toml",
       "mpich5": "tables/tuning.mpich5.toml", "impi": "tables/tuning.impi.toml"}
FAMILY_TABLE = {"openmpi": "tuning.toml", "mpich": "tuning.mpich.toml", "openmpi5": "tuning.toml",
                "mpich5": "tuning.mpich.toml", "impi": "tuning.mpich.toml"}
# MPIs whose native is priced as the best textbook algorithm (pcoll::mpi::Mpi::rules).
TEXTBOOK = {"mpich5", "impi"}
COLLS = ["reduce", "allreduce", "reduce_scatter", "allgatherv", "bcast", "allgather", "reduce_scatter_block"]
ONLY = None
if "--only" in sys.argv:
    ONLY = sys.argv[sys.argv.index("--only") + 1].split(",")
    assert all(c in COLLS for c in ONLY), f"--only: collectives are {COLLS}"
    COLLS = [c for c in COLLS if c in ONLY]
MPIS = list(OUT)
if "--mpis" in sys.argv:
    MPIS = sys.argv[sys.argv.index("--mpis") + 1].split(",")
    assert all(m in OUT for m in MPIS), f"--mpis: MPIs are {list(OUT)}"
root = os.path.join(os.path.dirname(__file__), "..")


def load(mpi):
    runs = {}
    files = glob.glob(os.path.join(root, f"results/bench.{mpi}.p*.csv"))
    files += glob.glob(os.path.join(root, f"results/family/bench.{mpi}.p*.csv"))
    files += glob.glob(os.path.join(root, f"results/shm/bench.{mpi}.p*.csv"))
    for f in sorted(files):
        p = int(re.search(r"\.p(\d+)\.csv$", f).group(1))
        cells = runs.setdefault(p, {})
        for r in csv.DictReader(open(f)):
            if r["variant"] in ("auto", "passthru", "native"):
                continue
            key = (r["collective"], int(r["bytes"]))
            cells.setdefault(key, []).append((float(r["ratio"]), r["algorithm"]))
    return runs


def load_auto(mpi):
    """check-default's measurements: {p: {(collective, bytes): (algorithm, ratio)}}."""
    out = {}
    files = glob.glob(os.path.join(root, f"results/auto.{mpi}.p*.csv"))
    files += glob.glob(os.path.join(root, f"results/family/auto.{mpi}.p*.csv"))
    if EVIDENCE:
        files = glob.glob(os.path.join(root, EVIDENCE, f"auto.{mpi}.p*.csv"))
    for f in files:
        p = int(re.search(r"\.p(\d+)\.csv$", f).group(1))
        out.setdefault(p, {}).update(
            {(r["collective"], int(r["bytes"])): (r["algorithm"], float(r["ratio"]))
             for r in csv.DictReader(open(f)) if r["variant"] == "auto"})
    return out


def load_ab(mpi):
    """The A/B's worst ratio per cell over its runs: {p: {(collective, bytes): ratio}}."""
    out = {}
    files = glob.glob(os.path.join(root, f"results/ab.{mpi}.p*.txt"))
    files += glob.glob(os.path.join(root, f"results/ab-runs/ab.{mpi}.p*.txt"))
    if EVIDENCE:
        files = glob.glob(os.path.join(root, EVIDENCE, f"ab.{mpi}.p*.txt"))
    for f in files:
        for line in open(f):
            x = line.split()
            # 7 fields; verify/ab.c now appends floor_us, x_floor and hot|cold: hot runs only
            # (the tables were measured hot; a cold A/B is not a veto here).
            if len(x) >= 7 and x[0] == "ab" and x[9:10] in ([], ["hot"]):
                cells = out.setdefault(int(x[2]), {})
                key = (x[1], int(x[3]))
                cells[key] = max(cells.get(key, 0.0), float(x[6]))
    return out


def p_ranges(ps):
    """Measured p -> half-open p range it stands for: midpoints between measured sizes, and
    nothing beyond the extremes (the largest measured p ends its range; the table's closing
    `model` rules decide every other p: a table never extrapolates)."""
    ps = sorted(ps)
    out = []
    for i, p in enumerate(ps):
        lo = 2 if i == 0 else (ps[i - 1] + p) // 2 + 1
        hi = p + 1 if i == len(ps) - 1 else (p + ps[i + 1]) // 2 + 1
        out.append((p, lo, hi))
    return out


def rules_for(cells, coll, auto, ab):
    sizes = sorted(b for (c, b) in cells if c == coll)
    picks = []
    for b in sizes:
        r, alg = min(cells[(coll, b)])
        alg = alg if (r <= MARGIN and b >= MIN_BYTES) else "native"
        seen = auto.get((coll, b))
        unconfirmed = None
        # Where check-default measured this size, a pcoll algorithm stays only if it measured
        # that very algorithm at most CONFIRM (a cell it measured with another choice is not
        # a confirmation: all-algorithm benchmarks flatter chunked algorithms).
        if alg != "native" and seen and not (seen[0] == alg and seen[1] <= CONFIRM):
            alg, unconfirmed = "native", (seen[0], seen[1])
        if alg != "native" and ab.get((coll, b), 0.0) > AB_VETO:
            alg, unconfirmed = "native", ("A/B", ab[(coll, b)])
        picks.append((b, alg, r, unconfirmed))
    rules = []
    if picks and picks[0][1] != "native" and picks[0][0] > 0:
        # Below the smallest measured size: native (nothing measured says otherwise).
        rules.append({"alg": "native", "lo": 0, "hi": None, "ratios": [], "sizes": [],
                      "unconfirmed": []})
    for i, (b, alg, r, unc) in enumerate(picks):
        lo = 0 if not rules else b
        if rules and rules[-1]["alg"] == alg:
            rules[-1]["ratios"].append(r)
            rules[-1]["sizes"].append(b)
            if unc:
                rules[-1]["unconfirmed"].append((b, unc))
            continue
        if rules:
            rules[-1]["hi"] = lo
        rules.append({"alg": alg, "lo": lo, "hi": None, "ratios": [r], "sizes": [b],
                      "unconfirmed": [(b, unc)] if unc else []})
    return rules


def write(mpi, out):
    runs = load(mpi)
    autos = load_auto(mpi)
    abs_ = load_ab(mpi)
    if not runs:
        print(f"no results/bench.{mpi}.p*.csv", file=sys.stderr)
        return
    lines = [
        f"# pcoll built-in tuning table for {NAMES[mpi]} (embedded in the library).",
        "# Written by scripts/table_from_bench.py from `make bench` on the development machine",
        f"# (2 cores, shared memory): a pcoll algorithm is chosen only for messages of at least {MIN_BYTES} B where its median beat native by",
        f"# at least {round((1 - MARGIN) * 100)}% in the interleaved benchmark (measured p = {', '.join(map(str, sorted(runs)))});",
        "# every other cell is `native`. Regenerate for your machine with `make tune` (pcoll-tune).",
        "# Format: docs/user-guide.md, Tuning tables. First matching rule wins; ranges are half-open.",
        "",
    ]
    tuned = os.path.join(root, f"results/tuning.{mpi}.toml")
    if not os.path.exists(tuned):
        tuned = os.path.join(root, FAMILY_TABLE[mpi])
    if os.path.exists(tuned):
        m = re.search(r"\[model\]\n(.*?)\n\n", open(tuned).read(), re.S)
        if m:
            lines += ["# Cost model fitted by pcoll-tune on this machine.", "[model]", m.group(1).strip()]
            if mpi in TEXTBOOK:
                lines += ["# The native model of this MPI is the best textbook algorithm (its own rules are",
                          "# not modelled): beyond the measured cells, pcoll only where predicted 30% faster.",
                          "margin = 0.3"]
            lines += [""]
    lines += ["# p = 1: nothing to communicate; the MPI's own copy is cheapest."]
    for coll in COLLS:
        lines += [f"[[{coll}]]", "p = [1, 2]", 'algorithm = "native"', ""]
    for coll in COLLS:
        measured = [p for p in runs if any(c == coll for (c, _) in runs[p])]
        for p, plo, phi in p_ranges(measured):
            for r in rules_for(runs[p], coll, autos.get(p, {}), abs_.get(p, {})):
                if not r["sizes"]:
                    why = "native: below the smallest measured size"
                elif r["alg"] == "native" and all(x > MARGIN for x in r["ratios"]):
                    why = f"native: no algorithm {round((1 - MARGIN) * 100)}% faster (best ratio {min(r['ratios']):.2f})"
                else:
                    why = f"{r['alg']}: median/native {min(r['ratios']):.2f}..{max(r['ratios']):.2f}"
                if r["unconfirmed"]:
                    why += "; native where check-default or the A/B did not confirm: " + ", ".join(
                        f"{b} B {a} {x:.2f}" for b, (a, x) in r["unconfirmed"])
                lines.append(f"# measured at p = {p}, {len(r['sizes'])} sizes: {why}")
                lines.append(f"[[{coll}]]")
                lines.append(f"p = [{plo}, {phi}]")
                hi = r["hi"]
                lines.append(f"bytes = [{r['lo']}, {hi if hi is not None else chr(34) + 'inf' + chr(34)}]")
                lines.append(f'algorithm = "{r["alg"]}"')
                lines.append("")
    lines += [
        f"# Every cell not measured above (p > {max(runs)}, other MPIs' regimes, networks): the cost model",
        "# prices each eligible algorithm and native's own choice; pcoll only if predicted",
        "# [model] margin (default 0.15) faster than native.",
    ]
    for coll in COLLS:
        lines += [f"[[{coll}]]", 'algorithm = "model"', ""]
    text = "\n".join(lines)
    if ONLY:
        text = splice(open(out).read(), text)
    open(out, "w").write(text)
    print(f"wrote {out}")


def blocks(text):
    """The table's blank-line separated blocks, each with the collective it is a rule of
    (None for comments and [model])."""
    out = []
    for b in re.split(r"\n\s*\n", text.strip("\n")):
        m = re.search(r"^\[\[(\w+)\]\]", b, re.M)
        out.append((m.group(1) if m else None, b))
    return out


def splice(old, new):
    """`old` without the rules of the collectives in ONLY, then the rules of `new` for them."""
    keep = [b for c, b in blocks(old) if c not in ONLY]
    add = [b for c, b in blocks(new) if c in ONLY]
    head = [f"# {', '.join(ONLY)}: rewritten by scripts/table_from_bench.py --only (measured p and sizes in",
            "# each rule's comment; the cost model decides every other cell)."]
    # A block of only comments that announced the old rules of these collectives goes too.
    keep = [b for b in keep if not all(l.startswith("#") for l in b.splitlines())
            or not any(c in b for c in ONLY)]
    return "\n\n".join(keep + ["\n".join(head + [add[0]])] + add[1:]) + "\n"


for mpi in MPIS:
    write(mpi, os.path.join(root, OUT[mpi]))
