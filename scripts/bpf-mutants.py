#!/usr/bin/env python3
"""Flip each comparison in the XDP schedulers' C, one at a time, and check
that the differential tests catch it.

A mutant negates one relational or equality operator (`<` -> `>=`, `==` ->
`!=`, ...) in one of the C sources of the Horus leaf, the Horus spine or the
Draconis queue (crates/xdp/bpf). The programs that include the mutated file
are rebuilt with clang, as crates/xdp/build.rs builds them, into a directory
of their own; the test binaries of netsched-xdp, built once, then load them
from there (`NETSCHED_XDP_OBJECT_DIR`, crates/xdp/src/object.rs) and compare
them, decision for decision, with the sans-IO data planes of crates/core.

Outcomes per mutant:
  killed       a test failed (or the kernel's verifier refused the program,
               which the tests report as a failure to load);
  survived     every test passed: no test tells the mutant from the C;
  stillborn    clang refused the mutant (-Werror), so it cannot ship;
  timeout      the tests ran past --timeout (counted as killed).

Needs root (loading BPF programs) and clang. Prints one line per mutant and
a summary; writes every outcome to --out (JSON lines). Exits 1 if a mutant
survived that --allow does not list (file:line:operator, one per line, each
with the reason it cannot be told apart; docs/xdp.md lists them).

    python3 scripts/bpf-mutants.py                 # every mutant (~20 min)
    python3 scripts/bpf-mutants.py --files conn.h  # one file's
    python3 scripts/bpf-mutants.py --list          # the mutants, not run
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BPF = ROOT / "crates" / "xdp" / "bpf"

# The scheduler programs and the test binaries that compare each with its
# sans-IO data plane. The generator (traffic.bpf.c) is not a scheduler.
PROGRAMS = {
    "horus_leaf": ["differential", "task_seal", "reply_routes", "every_cpu", "fuzz_parsers"],
    "horus_spine": ["spine_differential", "every_cpu"],
    "draconis_queue": ["draconis_differential", "fuzz_parsers"],
}

# The clang invocation of crates/xdp/build.rs.
CLANG_FLAGS = ["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
               "-I/usr/include/x86_64-linux-gnu"]

NEGATION = {"<": ">=", ">": "<=", "<=": ">", ">=": "<", "==": "!=", "!=": "=="}

# Preprocessor lines whose `<`, `>` are not comparisons.
DIRECTIVE = re.compile(r"^\s*#\s*(include|if|ifdef|ifndef|elif|else|endif|pragma|error|undef)\b")


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    column: int
    offset: int
    op: str

    @property
    def flipped(self) -> str:
        return NEGATION[self.op]

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}:{self.op}"


# A comment, a string or a character literal (C: comments do not nest).
NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def code_only(text: str) -> str:
    """`text` with comments and string/char literals blanked (offsets kept)."""
    return NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def comparisons(name: str, text: str) -> list[Mutant]:
    """Every relational or equality operator of `text`'s code: not a shift,
    an arrow, or the brackets of an #include."""
    code = code_only(text)
    found = []
    offset = 0
    for number, line in enumerate(code.split("\n"), start=1):
        if not DIRECTIVE.match(line):
            i = 0
            while i < len(line):
                two = line[i:i + 2]
                if two in ("<<", ">>", "->"):
                    i += 3 if line[i + 2:i + 3] == "=" else 2
                    continue
                if two in ("<=", ">=", "==", "!="):
                    found.append(Mutant(name, number, i + 1, offset + i, two))
                    i += 2
                    continue
                if line[i] in "<>":
                    found.append(Mutant(name, number, i + 1, offset + i, line[i]))
                i += 1
        offset += len(line) + 1
    return found


def includes(program: str) -> set[str]:
    """The files `program`'s source includes, itself among them."""
    seen, todo = set(), [f"{program}.bpf.c"]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo += re.findall(r'#include "([^"]+)"', (BPF / f).read_text())
    return seen


def build(program: str, source_dir: Path, out_dir: Path, clang: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [clang, *CLANG_FLAGS, "-c", str(source_dir / f"{program}.bpf.c"),
         "-o", str(out_dir / f"{program}.bpf.o")],
        capture_output=True, text=True)


def test_binaries() -> dict[str, Path]:
    """Builds netsched-xdp's tests once; their executables by target name."""
    wanted = {t for tests in PROGRAMS.values() for t in tests}
    proc = subprocess.run(
        ["cargo", "test", "-p", "netsched-xdp", "--no-run", "--message-format=json"],
        cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"building the tests failed:\n{proc.stderr[-4000:]}")
    found = {}
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        target = msg.get("target", {})
        if (msg.get("reason") == "compiler-artifact" and msg.get("executable")
                and "test" in target.get("kind", []) and target.get("name") in wanted):
            found[target["name"]] = Path(msg["executable"])
    missing = wanted - found.keys()
    if missing:
        sys.exit(f"no test binary for {sorted(missing)}")
    return found


def run_tests(binaries: list[Path], objects: Path, timeout: float) -> tuple[str, str]:
    """(outcome, the first failing binary and the end of its output)."""
    env = dict(os.environ, NETSCHED_XDP_OBJECT_DIR=str(objects),
               NETSCHED_REQUIRE_BPF="1",
               # One fixed stream of proptest cases, so that a mutant's
               # outcome does not depend on the run; no shrinking (a failure
               # is all we need to know); and no regression files written
               # into the source tree for a mutant's failures.
               PROPTEST_RNG_SEED="20261128", PROPTEST_MAX_SHRINK_ITERS="0",
               PROPTEST_DISABLE_FAILURE_PERSISTENCE="1")
    deadline = time.monotonic() + timeout
    for binary in binaries:
        left = deadline - time.monotonic()
        try:
            proc = subprocess.run([str(binary), "--test-threads", "2"], env=env,
                                  capture_output=True, text=True, timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            return "timeout", binary.name
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-6:])
            return "killed", f"{binary.name}: {tail}"
    return "survived", ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="*", help="only these sources (e.g. conn.h)")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per mutant's tests")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "bpf-mutants.jsonl")
    ap.add_argument("--allow", type=Path, default=ROOT / "crates" / "xdp" / "mutants-allowed.txt",
                    help="survivors known not to be told apart, with why")
    ap.add_argument("--clang", default=os.environ.get("CLANG", "clang"))
    args = ap.parse_args()

    users = {p: includes(p) for p in PROGRAMS}
    files = sorted({f for fs in users.values() for f in fs})
    if args.files:
        unknown = set(args.files) - set(files)
        if unknown:
            sys.exit(f"not a source of the schedulers: {sorted(unknown)} (sources: {files})")
        files = sorted(args.files)
    mutants = [m for f in files for m in comparisons(f, (BPF / f).read_text())]
    if args.list:
        for m in mutants:
            print(f"{m.file}:{m.line}:{m.column}: {m.op} -> {m.flipped}")
        print(f"{len(mutants)} mutants")
        return 0
    if os.geteuid() != 0:
        sys.exit("loading BPF programs needs root")

    allowed = set()
    if args.allow.exists():
        for line in args.allow.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
    binaries = test_binaries()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    survivors = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bpf-mutants-") as tmp, args.out.open("w") as log:
        tmp = Path(tmp)
        # The unmutated objects: every mutant dir starts from them.
        clean = tmp / "clean"
        clean.mkdir()
        for program in PROGRAMS:
            proc = build(program, BPF, clean, args.clang)
            if proc.returncode != 0:
                sys.exit(f"the unmutated {program} does not build:\n{proc.stderr}")
        outcome, detail = run_tests(sorted(set(binaries.values())), clean, args.timeout * 3)
        if outcome != "survived":
            sys.exit(f"the unmutated programs fail their tests: {detail}")
        for n, m in enumerate(mutants, start=1):
            src = tmp / "src"
            shutil.rmtree(src, ignore_errors=True)
            shutil.copytree(BPF, src)
            text = (src / m.file).read_text()
            assert text[m.offset:m.offset + len(m.op)] == m.op, m
            (src / m.file).write_text(text[:m.offset] + m.flipped + text[m.offset + len(m.op):])
            objects = tmp / "objects"
            shutil.rmtree(objects, ignore_errors=True)
            shutil.copytree(clean, objects)
            affected = [p for p in PROGRAMS if m.file in users[p]]
            outcome, detail = "", ""
            for program in affected:
                proc = build(program, src, objects, args.clang)
                if proc.returncode != 0:
                    outcome, detail = "stillborn", proc.stderr.strip().splitlines()[0]
                    break
            if not outcome:
                # In the order listed (the quickest to fail first), once each.
                tests = list(dict.fromkeys(binaries[t] for p in affected for t in PROGRAMS[p]))
                outcome, detail = run_tests(tests, objects, args.timeout)
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == "survived" and m.key not in allowed:
                survivors.append(m)
            log.write(json.dumps({"file": m.file, "line": m.line, "column": m.column,
                                  "op": m.op, "flipped": m.flipped, "outcome": outcome,
                                  "allowed": m.key in allowed, "detail": detail[-500:]}) + "\n")
            log.flush()
            mark = " (allowed)" if outcome == "survived" and m.key in allowed else ""
            print(f"[{n}/{len(mutants)} {time.monotonic() - started:.0f}s] "
                  f"{m.file}:{m.line}:{m.column} {m.op} -> {m.flipped}: {outcome}{mark}",
                  flush=True)
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f" of {len(mutants)} mutants; outcomes in {args.out}")
    if survivors:
        print("survivors no test catches:")
        for m in survivors:
            print(f"  {m.key} (column {m.column}: {m.op} -> {m.flipped})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
