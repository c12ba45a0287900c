#!/usr/bin/env python3
"""Fail when the modules of a Rust crate depend on each other in a cycle.

For every crate under crates/ (or the source directories given), each file's
`use crate::...`, `use super::...`, `use self::...` trees and inline
`crate::a::b` / `super::a` paths are resolved to module paths. Two sibling
modules (children of one parent module) depend on each other when anything in
one names anything in the other; a parent's own items (mod.rs, lib.rs) are the
level above and not part of its children's graph, except that a parent's
`pub use child::Item` re-export is followed to the child that defines it.
A cycle among siblings at any level is an error. Unit-test modules (`tests`)
are left out: a test may use any module of its crate.

Usage: scripts/module-cycles.py [SRC_DIR ...]   (default: crates/*/src)
Exit status 1 and one line per cycle when any is found.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(rf"\b(crate|super|self)((?:::super)*)((?:::{IDENT})+)")


def strip_comments_and_strings(src: str) -> str:
    """Blank out comments, string and char literals (keeping offsets)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:]) and (i == 0 or not src[i - 1].isalnum()):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F}') but not a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^'\\])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use_tree(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (aliases dropped)."""
    # `x as y`: the alias is no module path.
    tree = re.sub(rf"\s+as\s+{IDENT}", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def parse(s: str, i: int, prefix: str) -> tuple[list[str], int]:
        paths: list[str] = []
        start = i
        while i < len(s) and s[i] not in "{,}":
            i += 1
        head = s[start:i]
        if i < len(s) and s[i] == "{":
            i += 1
            base = prefix + head
            while True:
                sub, i = parse(s, i, base)
                paths += sub
                if i < len(s) and s[i] == ",":
                    i += 1
                    if i < len(s) and s[i] == "}":
                        i += 1
                        break
                    continue
                if i < len(s) and s[i] == "}":
                    i += 1
                break
        else:
            full = prefix + head
            if full:
                paths.append(full.rstrip(":"))
        return paths, i

    paths, _ = parse(tree, 0, "")
    return [p[:-6] if p.endswith("::self") else p for p in paths]


class Crate:
    def __init__(self, src: Path):
        self.src = src
        self.files: dict[tuple[str, ...], Path] = {}
        self.modules: set[tuple[str, ...]] = set()
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue  # separate binary crates
            mod = tuple(parts)
            self.files[mod] = f
        # A module exists if a file defines it or an inline/declared `mod x;` names it.
        for mod, f in self.files.items():
            for i in range(len(mod) + 1):
                self.modules.add(mod[:i])
            text = strip_comments_and_strings(f.read_text())
            for m in re.finditer(rf"\bmod\s+({IDENT})\s*[;{{]", text):
                self.modules.add(mod + (m.group(1),))
        self.reexports: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        for mod, f in self.files.items():
            text = strip_comments_and_strings(f.read_text())
            table: dict[str, tuple[str, ...]] = {}
            for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
                for p in expand_use_tree(m.group(1)):
                    segs = p.split("::")
                    if segs[0] in ("crate", "super", "self"):
                        target = self.resolve(mod, segs)
                    elif (mod + (segs[0],)) in self.modules:
                        target = mod + tuple(segs)
                    else:
                        continue
                    if target is not None and segs[-1] != "*":
                        table[segs[-1]] = target
            self.reexports[mod] = table

    @staticmethod
    def resolve(mod: tuple[str, ...], segs: list[str]) -> tuple[str, ...] | None:
        base = list(mod)
        i = 0
        if segs[0] == "crate":
            base, i = [], 1
        elif segs[0] == "self":
            i = 1
        while i < len(segs) and segs[i] == "super":
            if not base:
                return None
            base.pop()
            i += 1
        return tuple(base + [s for s in segs[i:] if s != "*"])

    def inline_scopes(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, name) of each inline `mod name { ... }` in text."""
        scopes = []
        for m in re.finditer(rf"\bmod\s+({IDENT})\s*\{{", text):
            depth, j = 1, m.end()
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            scopes.append((m.end(), j, m.group(1)))
        return scopes

    def module_at(self, mod, scopes, pos) -> tuple[str, ...]:
        inner = [s for s in scopes if s[0] <= pos < s[1]]
        inner.sort()
        return mod + tuple(s[2] for s in inner)

    def references(self):
        """Yield (from_module, to_path) for every crate-relative path."""
        for mod, f in self.files.items():
            text = strip_comments_and_strings(f.read_text())
            scopes = self.inline_scopes(text)
            spans = []
            for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", text):
                spans.append((m.start(), m.end()))
                here = self.module_at(mod, scopes, m.start())
                for p in expand_use_tree(m.group(1)):
                    t = self.resolve(here, p.split("::"))
                    if t is not None:
                        yield here, t
            for m in PATH_RE.finditer(text):
                if any(a <= m.start() < b for a, b in spans):
                    continue
                here = self.module_at(mod, scopes, m.start())
                segs = [m.group(1)] + m.group(2).split("::")[1:] + m.group(3).split("::")[1:]
                t = self.resolve(here, segs)
                if t is not None:
                    yield here, t

    def follow(self, t: tuple[str, ...]) -> tuple[str, ...]:
        """Follow re-exports so `crate::Error` names `crate::error::Error`."""
        for _ in range(16):
            for k in range(len(t) - 1, -1, -1):
                parent, name = t[:k], t[k]
                if parent + (name,) in self.modules:
                    continue
                table = self.reexports.get(parent, {})
                if name in table and table[name] != t[: k + 1]:
                    t = table[name] + t[k + 1 :]
                    break
                return t
            else:
                return t
        return t

    def edges(self) -> dict[tuple[str, ...], dict[str, set[str]]]:
        """parent module -> child -> set of sibling children it depends on."""
        graph: dict[tuple[str, ...], dict[str, set[str]]] = {}
        self.witness: dict[tuple, str] = {}
        for frm, to in self.references():
            if "tests" in frm:
                continue  # unit tests may use any module of their crate
            to = self.follow(to)
            k = 0
            while k < len(frm) and k < len(to) and frm[k] == to[k]:
                k += 1
            if k >= len(frm) or k >= len(to):
                continue  # ancestor or descendant: not a sibling edge
            if to[: k + 1] not in self.modules:
                continue  # an item of the common parent itself
            graph.setdefault(frm[:k], {}).setdefault(frm[k], set()).add(to[k])
            self.witness.setdefault((frm[:k], frm[k], to[k]), "::".join(("crate",) + frm) + " uses " + "::".join(("crate",) + to))
        return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    nodes = sorted(set(graph) | {v for vs in graph.values() for v in vs})

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def check(src: Path) -> list[str]:
    crate = Crate(src)
    errors = []
    for parent, graph in sorted(crate.edges().items()):
        for comp in cycles(graph):
            where = "::".join(("crate",) + parent)
            links = "; ".join(
                crate.witness[(parent, a, b)]
                for a in comp
                for b in sorted(graph.get(a, ()))
                if b in comp
            )
            errors.append(f"{src}: cycle among modules of {where}: {' <-> '.join(comp)} ({links})")
    return errors


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    dirs = [Path(a) for a in argv] or sorted(p for p in (root / "crates").glob("*/src") if p.is_dir())
    errors = [e for d in dirs for e in check(d)]
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} module dependency cycle(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
