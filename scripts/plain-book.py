#!/usr/bin/env python3
"""make docs without mdbook: build/book/index.html, the chapters of the staged book's
SUMMARY.md (build/book-src, scripts/stage-book.py) in order, each as its Markdown text in a
page of its own (no converter needed, nothing fetched)."""
import html
import os
import re

os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = "build/book"
os.makedirs(out, exist_ok=True)
items = re.findall(r"\[([^\]]+)\]\(([^)]+\.md)\)", open("build/book-src/SUMMARY.md").read())
page = '<!doctype html><meta charset="utf-8"><title>{t}</title><body style="max-width:60em;margin:auto">{b}</body>'
links = []
for title, md in items:
    name = md[:-3] + ".html"
    text = html.escape(open(os.path.join("build/book-src", md)).read())
    text = re.sub(r"\(([\w-]+)\.md(#[\w-]*)?\)", r"(<a href='\1.html\2'>\1</a>)", text)
    with open(os.path.join(out, name), "w") as f:
        f.write(page.format(t=html.escape(title), b="<pre style='white-space:pre-wrap'>" + text + "</pre>"))
    links.append(f'<li><a href="{name}">{html.escape(title)}</a></li>')
with open(os.path.join(out, "index.html"), "w") as f:
    f.write(page.format(t="pcoll", b="<h1>pcoll</h1><ul>" + "".join(links) + "</ul>"))
