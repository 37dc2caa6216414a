#!/usr/bin/env python3
"""make docs: stage the book in build/book-src/ so that it stands alone: docs/*.md with links
to ../README.md pointing at the README's copy (readme.md, the book's first page) and links to
../results/ at copies of the files they name; the README's own links to docs/ and results/
rewritten alike. mdbook (or scripts/plain-book.py) then builds build/book-src into build/book."""
import glob
import os
import re
import shutil

os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
src = "build/book-src"
shutil.rmtree(src, ignore_errors=True)
os.makedirs(src)
used = set()


def fix(text, prefix):
    def one(m):
        target = m.group(2)
        if target.startswith(prefix + "results/"):
            target = target[len(prefix):]
            used.add(target.split("#")[0])
        elif prefix and target.startswith("../README.md"):
            target = "readme.md" + target[len("../README.md"):]
        elif not prefix and target.startswith("docs/"):
            target = target[len("docs/"):]
        return m.group(1) + "(" + target + ")"
    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", one, text)


for md in glob.glob("docs/*.md"):
    name = os.path.basename(md)
    text = fix(open(md).read(), "../")
    if name == "SUMMARY.md":
        text = text.replace("[pcoll](README.md)", "[pcoll](readme.md)\n[About this book](README.md)")
    open(os.path.join(src, name), "w").write(text)
open(os.path.join(src, "readme.md"), "w").write(fix(open("README.md").read(), ""))
shutil.copy("docs/book.toml", src)
with open(os.path.join(src, "book.toml")) as f:
    toml = f.read().replace('build-dir = "../build/book"', 'build-dir = "../book"')
open(os.path.join(src, "book.toml"), "w").write(toml)
for path in sorted(used):
    os.makedirs(os.path.join(src, os.path.dirname(path)), exist_ok=True)
    shutil.copy(path, os.path.join(src, path))
print(f"book staged in {src}: {len(glob.glob(src + '/*.md'))} pages, {len(used)} pictures")
