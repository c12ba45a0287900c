#!/usr/bin/env python3
"""Runs every Rust test binary of the workspace beside busy processes, to find
tests whose verdict depends on a quiet machine before CI's noise does.

    scripts/test-under-load.py [--hogs 2] [--rounds 1] [--only SUBSTRING]

Each binary runs from its crate's directory as `cargo test` would run it,
with the netns/BPF/promtool tests required (as scripts/test.sh does as
root), while `--hogs` processes spin at nice 0. Prints one line per binary
and the failing tests' output; exits 1 if any binary failed. This is what
found the XDP cpumap thread's starvation (docs/xdp.md, "One CPU").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def spin() -> None:
    while True:
        pass


def test_binaries() -> list[tuple[Path, str, str]]:
    """(crate directory, executable, target name) of every test binary."""
    out = subprocess.run(
        ["cargo", "test", "--workspace", "--no-run", "--message-format=json"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        crate = Path(message["manifest_path"]).parent
        found.append((crate, message["executable"], message["target"]["name"]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2, help="busy processes (default 2)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="", help="binaries whose name contains this")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per binary")
    args = parser.parse_args()
    if args.hogs < 0 or args.rounds < 1:
        parser.error("--hogs must be >= 0 and --rounds >= 1")
    binaries = [b for b in test_binaries() if args.only in b[2]]
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("NETSCHED_REQUIRE_NETNS", "1")
        env.setdefault("NETSCHED_REQUIRE_BPF", "1")
    env.setdefault("NETSCHED_REQUIRE_PROMTOOL", "1")
    hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    failed = []
    try:
        for round_ in range(1, args.rounds + 1):
            for crate, exe, name in binaries:
                start = time.monotonic()
                try:
                    run = subprocess.run(
                        [exe, "-q"],
                        cwd=crate,
                        env={**env, "CARGO_MANIFEST_DIR": str(crate)},
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                        timeout=args.timeout,
                    )
                    code, output = run.returncode, run.stdout
                except subprocess.TimeoutExpired as e:
                    code, output = "timeout", (e.stdout or b"").decode(errors="replace")
                took = time.monotonic() - start
                print(f"round {round_} {crate.name}/{name}: {'ok' if code == 0 else code} ({took:.0f} s)", flush=True)
                if code != 0:
                    failed.append((round_, name, output))
    finally:
        for h in hogs:
            h.terminate()
    for round_, name, output in failed:
        print(f"\n=== round {round_} {name} ===")
        print("\n".join(line for line in output.splitlines() if line.strip(".")))
    print(f"\n{len(failed)} failing binary runs of {len(binaries) * args.rounds}, {args.hogs} hogs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
