"""`python3 -m netsched` (and `netsched experiment|report`, which delegate here).

    python3 -m netsched experiment list
    python3 -m netsched experiment run horus-fig11 [--scale reduced|paper|published]
            [--seeds N] [--ablations auto|all|none] [--out DIR]
            [--scheduler tcp://HOST:8786 | --workers N | --serial] [--cache DIR]
    python3 -m netsched experiment run horus-fig11 --ablation ID [--scale S] [--seeds N]
    python3 -m netsched experiment run all --scale reduced --seeds 2
    python3 -m netsched experiment claims [--results DIR] [--format markdown|json]
            [--into docs/fidelity.md] [--out docs/claims.json]
    python3 -m netsched report [--results DIR] [--out DIR]
    python3 -m netsched readme-counts [--claims docs/claims.json] [--into README.md]
    python3 -m netsched cache prune [--cache DIR] [--all] [--dry-run]
    python3 -m netsched plot sim|pull|nginx CSV OUT_PNG
"""
from __future__ import annotations

import argparse
import os
import sys

from .plots import FIGURES, plot


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="netsched", description="netsched experiment catalog and plots")
    sub = p.add_subparsers(dest="cmd", required=True)
    exp = sub.add_parser("experiment", help="list or run catalog entries")
    esub = exp.add_subparsers(dest="action", required=True)
    esub.add_parser("list", help="the catalog")
    run = esub.add_parser("run", help="run entries (or `all`)")
    run.add_argument("names", nargs="+", help="catalog entries, or `all`")
    run.add_argument("--scale", default="reduced", choices=["reduced", "paper", "published"],
                     help="published: the paper's scale where it fits this machine, else the "
                          "entry's stated largest (its published_note)")
    run.add_argument("--seeds", type=int, default=None,
                     help="replicate every point over N seeds (default 5 at published scale, "
                          "else 2); verdicts use the 95 %% interval over seeds")
    run.add_argument("--ablations", default="auto", choices=["auto", "all", "none"],
                     help="auto: run the ablations of claims that differ")
    run.add_argument("--ablation", default=None, metavar="ID",
                     help="run only this ablation of one entry and print its claims")
    run.add_argument("--out", default=None, help="output directory (default results/experiments/SCALE)")
    run.add_argument("--cache", default=None, help="result cache (default ~/.cache/netsched or $NETSCHED_CACHE)")
    run.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler")
    run.add_argument("--workers", type=int, default=None, help="LocalCluster worker processes (default: cores)")
    run.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    cl = esub.add_parser("claims", help="every entry's claims: markdown tables or JSON records")
    cl.add_argument("--results", default="results/experiments/reduced",
                    help="a directory `experiment run` wrote")
    cl.add_argument("--format", default="markdown", choices=["markdown", "json"])
    cl.add_argument("--out", default=None, help="write to this file instead of printing")
    cl.add_argument("--into", default=None,
                    help="rewrite the marked section of this markdown file (docs/fidelity.md) "
                         "instead of printing")
    cache = sub.add_parser("cache", help="the sweep result cache")
    csub = cache.add_subparsers(dest="action", required=True)
    pr = csub.add_parser("prune", help="remove entries of other simulator builds (rebuilds "
                                       "orphan them) and unfinished ones")
    pr.add_argument("--cache", default=None, help="cache directory (default ~/.cache/netsched or "
                                                  "$NETSCHED_CACHE)")
    pr.add_argument("--all", action="store_true", help="remove every entry")
    pr.add_argument("--dry-run", action="store_true", help="only report what would go")
    rep = sub.add_parser("report", help="the results as a static website: an index and a page "
                                        "per entry")
    rep.add_argument("--results", default="results/experiments/reduced",
                     help="a directory `experiment run` wrote (default %(default)s)")
    rep.add_argument("--out", default=None,
                     help="site directory (default RESULTS/report); it links the PNGs in "
                          "RESULTS, so keep it beside them")
    rc = sub.add_parser("readme-counts", help="the catalog's verdicts by tier, from a claims "
                                              "JSON, as the README states them")
    rc.add_argument("--claims", default="docs/claims.json", help="default %(default)s")
    rc.add_argument("--into", default=None,
                    help="rewrite the marked block of this file (README.md) instead of printing")
    pl = sub.add_parser("plot", help="p99 against load from a CSV a Rust command wrote (netsched.plots)")
    pl.add_argument("kind", choices=list(FIGURES),
                      help="sim: `netsched sim` runs.csv; pull: `netsched pull` runs.csv; "
                           "nginx: `netsched bench nginx --csv` rows")
    pl.add_argument("csv", help="input CSV")
    pl.add_argument("out", help="output PNG")
    return p


def main(argv=None) -> int:
    a = _parser().parse_args(argv)
    try:
        rc = _run(a)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return rc
    except BrokenPipeError:
        # The reader went (`experiment list | head -1`): not an error. Later
        # writes, and the flush at exit, go to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(a: argparse.Namespace) -> int:
    try:
        if a.cmd == "experiment" and a.action == "list":
            from . import catalog

            from .catalog.walltimes import PAPER_WALL

            rows = [("name", "paper", "figure", "paper-scale wall", "title")] + [
                (e.name, e.paper, e.figure, PAPER_WALL.get(e.name, "not measured"), e.title)
                for e in catalog.ordered()]
            w = [max(len(r[i]) for r in rows) for i in range(4)]
            for r in rows:
                print("  ".join(f"{c:<{w[i]}}" for i, c in enumerate(r[:4])) + "  " + r[4])
            return 0
        if a.cmd == "experiment" and a.action == "run":
            from . import catalog
            from .claims import tally, tally_text
            from .experiment import ablate, run_experiment

            names = [e.name for e in catalog.ordered()] if a.names == ["all"] else a.names
            for n in names:
                catalog.get(n)  # fail on a typo before running anything
            if a.ablation:
                if len(names) != 1:
                    raise ValueError("--ablation: name one entry")
                from .claims import claims_table

                recs = ablate(names[0], a.ablation, scale=a.scale, seeds=a.seeds,
                              cache_dir=a.cache, scheduler=a.scheduler, n_workers=a.workers,
                              serial=a.serial, progress=not a.quiet)
                print("\n".join(claims_table(recs)))
                return 0
            client = None
            if not a.serial and len(names) > 1 and not a.scheduler:
                # One LocalCluster for all entries instead of one per entry.
                from dask.distributed import Client, LocalCluster

                client = Client(LocalCluster(n_workers=a.workers or os.cpu_count() or 1,
                                             threads_per_worker=1, dashboard_address=None))
            try:
                for n in names:
                    r = run_experiment(n, scale=a.scale, out=a.out, cache_dir=a.cache,
                                       scheduler=a.scheduler, client=client, n_workers=a.workers,
                                       serial=a.serial, progress=not a.quiet, seeds=a.seeds,
                                       ablations=a.ablations)
                    print(f"{n}: {r.wall_s:.1f} s, {r.computed} runs computed, {r.seeds} seeds; "
                          f"{tally_text(tally(r.claims))} -> {r.files[2]}")
                # The results directory's website, every entry run into it so far.
                from .report import build_site

                out_dir = a.out or f"results/experiments/{a.scale}"
                build_site(out_dir)
                page = f"{names[0]}.html" if len(names) == 1 else "index.html"
                print(f"open {out_dir}/report/{page}")
            finally:
                if client is not None:
                    cluster = client.cluster
                    client.close()
                    cluster.close()
            return 0
        if a.cmd == "experiment" and a.action == "claims":
            import json

            from .claims import collect, gather, tally, tally_text, write_into

            if a.format == "json":
                body = json.dumps(collect(a.results), indent=1, ensure_ascii=False) + "\n"
            else:
                body = gather(a.results)
            if a.into:
                if a.format != "markdown":
                    raise ValueError("--into takes the markdown format")
                write_into(a.into, body)
                print(f"{a.into}: claims from {a.results}: {tally_text(tally(collect(a.results)))}")
            elif a.out:
                from pathlib import Path

                Path(a.out).write_text(body)
                print(f"{a.out}: {a.format} claims from {a.results}: "
                      f"{tally_text(tally(collect(a.results)))}")
            else:
                print(body, end="" if body.endswith("\n") else "\n")
            return 0
        if a.cmd == "cache" and a.action == "prune":
            from .sweep import prune_cache

            st = prune_cache(a.cache, everything=a.all, dry_run=a.dry_run)
            verb = "would remove" if a.dry_run else "removed"
            print(f"{verb} {st.removed} entries ({st.freed_bytes / 1e6:.1f} MB); "
                  f"{st.entries} entries of this build kept ({st.bytes / 1e6:.1f} MB)")
            return 0
        if a.cmd == "report":
            from .report import build_site

            out = a.out or f"{a.results.rstrip('/')}/report"
            n = build_site(a.results, out)
            print(f"{out}/index.html: {n} entry pages")
            return 0
        if a.cmd == "readme-counts":
            from .readme import counts_text, write_counts

            if a.into:
                write_counts(a.into, a.claims)
                print(f"{a.into}: counts from {a.claims}")
            else:
                print(counts_text(a.claims))
            return 0
        if a.cmd == "plot":
            unit = FIGURES[a.kind].unit
            for name, pts in plot(a.kind, a.csv, a.out).items():
                print(name, " ".join(f"{x:.2f}:{y:.1f}{unit}" for x, y in pts))
            return 0
    except BrokenPipeError:
        raise
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
