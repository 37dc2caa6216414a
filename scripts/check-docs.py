#!/usr/bin/env python3
"""make test's documentation check (< 1 s, no network):

* every relative link and image in README.md and docs/*.md resolves: the file exists, and a
  `#anchor` into a Markdown file names one of its headings (GitHub's and mdbook's slugs);
* README.md has at most 250 lines;
* the man page pcoll(7) is generated from docs/user-guide.md (scripts/mkman.py) with its
  sections and every PCOLL_ variable of the guide's environment table.

Prints one line per problem and `docs: N links checked, ok` at the end; exit 1 on a problem.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
README_MAX_LINES = 250


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = re.match(r"^#{1,6} (.*)", line)
            if m and not fence:
                out.add(slug(m.group(1)))
    return out


def links(path):
    fence = False
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield n, m.group(1)


def main():
    os.chdir(ROOT)
    problems = []
    files = ["README.md"] + sorted(glob.glob("docs/*.md"))
    checked = 0
    for md in files:
        for n, target in links(md):
            if re.match(r"^[a-z]+:", target) or target.startswith("//"):
                continue
            checked += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(dest):
                problems.append(f"{md}:{n}: link to {target}: {dest} does not exist")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{md}:{n}: link to {target}: no heading '{anchor}' in {dest}")
    with open("README.md") as f:
        lines = sum(1 for _ in f)
    if lines > README_MAX_LINES:
        problems.append(f"README.md: {lines} lines, more than {README_MAX_LINES}")
    summary = open("docs/SUMMARY.md").read()
    for md in glob.glob("docs/*.md"):
        name = os.path.basename(md)
        if name != "SUMMARY.md" and f"({name})" not in summary:
            problems.append(f"docs/SUMMARY.md: {name} is not in the book")
    man = subprocess.run([sys.executable, "scripts/mkman.py"], capture_output=True, text=True)
    if man.returncode != 0:
        problems.append("scripts/mkman.py failed: " + man.stderr.strip())
    else:
        page = man.stdout
        for sec in ("NAME", "SYNOPSIS", "ENVIRONMENT", "C API", "FILES"):
            if f".SH {sec}\n" not in page:
                problems.append(f"man page pcoll(7): no {sec} section")
        guide_vars = set(re.findall(r"^\| `(PCOLL_[A-Z_]+)", open("docs/user-guide.md").read(), re.M))
        for var in sorted(guide_vars):
            if var not in page:
                problems.append(f"man page pcoll(7): {var} missing")
        if len(guide_vars) < 10:
            problems.append(f"docs/user-guide.md: only {len(guide_vars)} variables in the environment table")
    for p in problems:
        print("docs: " + p)
    if problems:
        print(f"docs: {len(problems)} problem(s)")
        return 1
    print(f"docs: {checked} links in {len(files)} files checked, README {lines} lines, man page ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
