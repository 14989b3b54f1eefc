"""The list's cost curve: the addendum mix of bench/addendums.py at several table sizes.

PostgreSQL only. For each size (``--sizes``, addendums; the document's accounts are
size // 100, at least 200: bench/gen_addendums.py's shape scaled):

1. runs ``bench/addendums.py --only postgresql --raw none --obvious plain --no-check``
   as a subprocess, with this interpreter and this environment (so ``PYTHONPATH``
   selects the ``cloudadmin`` under test, as bench/addendums.py describes), at
   ``--rows SIZE --accounts SIZE//100``, or on a database kept by an earlier run
   (``--database SIZE=URL``, passed on as ``--database-url``); its output is streamed
   here as it comes, and its figures are read back from its ``--json`` file;
2. then prints one Markdown table, a row per query and connection count, and per size
   the service's req/s, p50 and p99, its throughput as a share of the obvious SQL's
   (÷ obvious = service req/s / obvious req/s) and the query's count: what grows with
   the table shows as a column that moves; then the load time per size it loaded.

``--seconds``, ``--warmup``, ``--rounds`` and ``--connections`` (default 8,64) are
passed on to bench/addendums.py; ``--keep`` too, and the lines naming the kept
databases are printed again at the end, for ``--database`` next time.

    .venv/bin/python bench/cost_curve.py                 # 100k, 1M and 10M addendums
    .venv/bin/python bench/cost_curve.py --sizes 100000,1000000 --seconds 2 --keep
    .venv/bin/python bench/cost_curve.py --seconds 3 --rounds 3 \\
        --database 10000000=postgresql+asyncpg://.../cloudadmin_test_...  # no reload
    PYTHONPATH=<another tree>/src .venv/bin/python bench/cost_curve.py --sizes 100000
    .venv/bin/python bench/cost_curve.py --smoke         # seconds; used by CI

Flags: --sizes N,N,...; --database SIZE=URL (repeatable), --keep; --seconds, --warmup,
--rounds, --connections (passed on); --smoke (2,000 and 5,000 addendums over 200
accounts, 0.1 s per measurement, no warm-up, one round, 8 connections).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
from addendums import _fmt  # noqa: E402

KEPT = "kept; measure it again with --database-url"


def size_label(n: int) -> str:
    for unit, word in ((1_000_000, "M"), (1_000, "k")):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{word}"
    return f"{n:,}"


def command(size: int, url: str | None, json_file: Path, args: argparse.Namespace) -> list[str]:
    """The bench/addendums.py run of one size."""
    argv = [sys.executable, str(BENCH / "addendums.py"), "--only", "postgresql"]
    argv += ["--raw", "none", "--obvious", "plain", "--no-check"]
    argv += ["--connections", args.connections, "--json", str(json_file)]
    for flag in ("seconds", "warmup", "rounds"):
        if getattr(args, flag) is not None:
            argv += [f"--{flag}", f"{getattr(args, flag):g}"]
    if url is not None:
        argv += ["--database-url", url]
    else:
        argv += ["--rows", str(size), "--accounts", str(max(200, size // 100))]
        if args.keep:
            argv.append("--keep")
    return argv


def run_size(argv: list[str], size: int, kept: list[str]) -> None:
    """Runs bench/addendums.py, its output streamed to ours; a kept database is added to
    ``kept`` as this script's ``--database SIZE=URL``."""
    print(f"$ {' '.join(argv[1:])}", flush=True)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if KEPT in line:
                kept.append(f"{line.rstrip()}; here: --database {size}={line.split()[-1]}")
    if proc.returncode != 0:
        raise SystemExit(f"bench/addendums.py exited {proc.returncode}")


def postgresql_run(json_file: Path, size: int) -> dict[str, Any]:
    runs = json.loads(json_file.read_text(encoding="utf-8"))["databases"]
    for run in runs:
        if run["database"] == "postgresql":
            return dict(run)
    raise SystemExit(f"{size_label(size)}: bench/addendums.py measured no PostgreSQL database")


def row_key(label: str) -> str:
    """The deep offset's label names its offset, which grows with the table (a tenth of
    the rows, at most 100,000): one row for all sizes."""
    return "deep offset" if label.startswith("deep offset ") else label


def table(sizes: list[int], runs: dict[int, dict[str, Any]], levels: list[int]) -> None:
    # (app, row key, connections) -> point, per size; the rows in the order measured.
    points: dict[int, dict[tuple[str, str, int], dict[str, Any]]] = {}
    rows: dict[str, list[str]] = {}  # row key -> the labels it stands for, per size
    counts: dict[int, dict[str, int]] = {}
    for size in sizes:
        points[size] = {}
        counts[size] = {}
        for point in runs[size]["points"]:
            key = row_key(point["query"])
            points[size][point["app"], key, point["connections"]] = point
            labels = rows.setdefault(key, [])
            if point["query"] not in labels:
                labels.append(point["query"])
        for label, count in runs[size]["counts"].items():
            counts[size][row_key(label)] = count
    cols = "".join(
        f" {s} req/s | {s} p50 ms | {s} p99 ms | {s} ÷ obvious | {s} count |"
        for s in map(size_label, sizes)
    )
    print(f"\n| query | conns |{cols}")
    print("|---|---|" + "---|" * 5 * len(sizes))
    for key, labels in rows.items():
        name = key
        if key == "deep offset":
            offsets = [label.rpartition(" ")[2] for label in labels]
            name = "deep offset " + " / ".join(offsets)
        for n in levels:
            line = f"| {name} | {n} |"
            for size in sizes:
                s = points[size].get(("service", key, n))
                o = points[size].get(("obvious", key, n))
                count = counts[size].get(key)
                if s is None or s["req_s"] is None:
                    line += " n/a | n/a | n/a |"
                else:
                    line += "".join(
                        f" {_fmt(s[k] if s[k] is not None else float('nan'))} |"
                        for k in ("req_s", "p50_ms", "p99_ms")
                    )
                if s and s["req_s"] and o and o["req_s"]:
                    line += f" {s['req_s'] / o['req_s']:.2f}× |"
                else:
                    line += " n/a |"
                line += f" {count:,} |" if count is not None else "  |"
            print(line, flush=True)
    print(
        "\nreq/s, p50 and p99 (ms): the median of the rounds; ÷ obvious = the service's "
        "req/s / the obvious SQL's "
        "(bench/obvious_addendums_app.py); count = the query's answer count at that size; "
        "deep offset = a tenth of the rows, at most 100,000 (its offsets in the row's name)",
        flush=True,
    )
    loads = [
        f"{size_label(size)} in {runs[size]['load_seconds']:.1f} s"
        for size in sizes
        if runs[size]["load_seconds"] is not None
    ]
    reused = [
        f"{size_label(size)} ({runs[size]['addendums']:,} addendums)"
        for size in sizes
        if runs[size]["load_seconds"] is None
    ]
    line = "loaded with `cloudadmin load`: " + (", ".join(loads) if loads else "none")
    if reused:
        line += "; a database loaded before: " + ", ".join(reused)
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        default="100000,1000000,10000000",
        help="addendums per run, comma-separated (default 100000,1000000,10000000)",
    )
    parser.add_argument(
        "--database",
        action="append",
        default=[],
        metavar="SIZE=URL",
        help="measure the database at URL (kept by an earlier --keep run) for SIZE "
        "instead of loading one (repeatable)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the databases loaded (bench/addendums.py --keep) and print their URLs",
    )
    parser.add_argument("--seconds", type=float, help="per measurement (addendums.py: 5)")
    parser.add_argument(
        "--warmup", type=float, help="seconds of load before each query (addendums.py: 0.5)"
    )
    parser.add_argument("--rounds", type=int, help="rounds per size, medians (addendums.py: 1)")
    parser.add_argument("--connections", default="8,64", help="comma-separated (default 8,64)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny run for CI: 2,000 and 5,000 addendums over 200 accounts, 0.1 s per "
        "measurement, no warm-up, one round, 8 connections",
    )
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.seconds, args.warmup, args.rounds = "2000,5000", 0.1, 0.0, 1
        args.connections = "8"
    try:
        sizes = [int(n) for n in args.sizes.split(",") if n]
        levels = [int(n) for n in args.connections.split(",") if n]
    except ValueError:
        parser.error("--sizes and --connections take integers, comma-separated")
    urls: dict[int, str] = {}
    for spec in args.database:
        size, sep, url = spec.partition("=")
        if not sep or not size.isdigit() or not url.startswith("postgresql"):
            parser.error(f"--database takes SIZE=URL (a PostgreSQL URL), not {spec!r}")
        urls[int(size)] = url
    if set(urls) - set(sizes):
        sizes += sorted(set(urls) - set(sizes))
    runs: dict[int, dict[str, Any]] = {}
    kept: list[str] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for size in sizes:
            json_file = Path(tmpdir) / f"{size}.json"
            run_size(command(size, urls.get(size), json_file, args), size, kept)
            runs[size] = postgresql_run(json_file, size)
    table(sizes, runs, levels)
    for line in kept:
        print(line, flush=True)


if __name__ == "__main__":
    main()
