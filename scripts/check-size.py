#!/usr/bin/env python3
"""The size bar: no source file above 700 lines and no function above 80 lines, outside tests
and generated code.

Measured: the workspace's Rust (src/, cdylib/, tools/, sim/, benches/, build scripts), the
library's C (cdylib/shim/, include/) and the Python scripts (scripts/). Not measured: test code
(tests/ directories, c-tests/, verify/, `#[cfg(test)]` modules and `#[test]` functions) and
generated code (target*/, build/). A function's length runs from the line of its `fn` (C: its
name, Python: its `def`) to the line of its closing brace (Python: its last line), both counted.

    python3 scripts/check-size.py [ROOT]    exit status 1 with the list of offenders
"""
import ast
import os
import re
import sys

MAX_FILE = 700
MAX_FN = 80
SKIP_DIRS = {".git", "tests", "c-tests", "verify", "build", "results"}
RUST_DIRS = ["src", "cdylib", "tools", "sim", "benches"]
C_DIRS = ["cdylib/shim", "include"]
PY_DIRS = ["scripts"]


def source_files(root, dirs, exts):
    for d in dirs:
        top = os.path.join(root, d)
        for path, subdirs, files in os.walk(top):
            subdirs[:] = sorted(
                s for s in subdirs if s not in SKIP_DIRS and not s.startswith("target")
            )
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.join(path, f)


def blank_rust(text):
    """The text with comments, strings and char literals blanked (newlines kept), so that
    braces and keywords seen afterwards are code."""
    out = []
    i, n = 0, len(text)

    def keep_lines(s):
        out.append(re.sub(r"[^\n]", " ", s))

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            keep_lines(text[i:j])
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            keep_lines(text[i:j])
            i = j
        elif re.match(r'b?r#*"', text[i:i + 20]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            keep_lines(text[i:j])
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            keep_lines(text[i:j + 1])
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:i + 16])
            if m:
                keep_lines(m.group(0))
                i += m.end()
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def line_of(code, pos):
    return code.count("\n", 0, pos) + 1


def rust_test_spans(code):
    """Character spans of `#[cfg(test)]` items and `#[test]` functions."""
    spans = []
    for m in re.finditer(r"#\[\s*(cfg\s*\(\s*test\s*\)|test)\s*\]", code):
        k = code.find("{", m.end())
        semi = code.find(";", m.end())
        if k < 0 or (0 <= semi < k):
            continue
        spans.append((m.start(), matching_brace(code, k)))
    return spans


def rust_functions(code):
    """(name, first line, last line, start) of every function with a body."""
    fns = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        depth, j = 0, m.end()
        while j < len(code):
            ch = code[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch in "{;":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue  # a declaration without a body
        end = matching_brace(code, j)
        fns.append((m.group(1), line_of(code, m.start()), line_of(code, end), m.start()))
    return fns


def c_functions(code):
    """Function definitions in C: a name and parameter list followed by `{` at file level."""
    fns = []
    depth, i = 0, 0
    while i < len(code):
        ch = code[i]
        if ch == "{":
            if depth == 0:
                head = code[max(0, i - 400):i]
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\([^;{}]*\)\s*$", head)
                end = matching_brace(code, i)
                if m:
                    start = i - len(head) + m.start()
                    fns.append((m.group(1), line_of(code, start), line_of(code, end), start))
                i = end + 1
                continue
            depth += 1
        elif ch == "}":
            depth -= 1
        i += 1
    return fns


def blank_c(text):
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])'", "' '", text)
    return re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M)


def python_functions(text):
    fns = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fns.append((node.name, node.lineno, node.end_lineno, 0))
    return fns


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.normpath(root)
    big_files, long_fns, measured = [], [], 0
    kinds = [
        (RUST_DIRS, (".rs",), "rust"),
        (C_DIRS, (".c", ".h"), "c"),
        (PY_DIRS, (".py",), "python"),
    ]
    for dirs, exts, kind in kinds:
        for path in source_files(root, dirs, exts):
            rel = os.path.relpath(path, root)
            text = open(path, encoding="utf-8").read()
            measured += 1
            lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            if lines > MAX_FILE:
                big_files.append((lines, rel))
            if kind == "rust":
                code = blank_rust(text)
                tests = rust_test_spans(code)
                fns = [f for f in rust_functions(code) if not any(a <= f[3] <= b for a, b in tests)]
            elif kind == "c":
                fns = c_functions(blank_c(text))
            else:
                fns = python_functions(text)
            for name, first, last, _ in fns:
                if last - first + 1 > MAX_FN:
                    long_fns.append((last - first + 1, f"{rel}:{first}", name))
    for lines, rel in sorted(big_files, reverse=True):
        print(f"file above {MAX_FILE} lines: {rel} ({lines})")
    for lines, where, name in sorted(long_fns, reverse=True):
        print(f"function above {MAX_FN} lines: {name} at {where} ({lines})")
    if big_files or long_fns:
        print(f"check-size: {len(big_files)} file(s), {len(long_fns)} function(s) too long")
        return 1
    print(f"check-size: {measured} files, none above {MAX_FILE} lines, no function above {MAX_FN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
