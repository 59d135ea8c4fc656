"""`python -m tests.slt [files or suites] [--sample N] [--report CONFORMANCE.md]`: run sqllogictest
files against a PostgreSQL 15 and a sparkwire it starts, and print (or write) the figures."""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import time
from pathlib import Path

from tests.slt import report
from tests.slt.corpus import SLT_DIR, discover, floor_of, is_third_party, save_floor
from tests.slt.executor import PASS
from tests.slt.runner import FileResult, run_file
from tests.slt.targets import PostgresTarget, SparkwireTarget


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    files = discover(args.files)
    postgres = PostgresTarget(args.timeout)
    sparkwire = None
    results: list[FileResult] = []
    started = time.monotonic()
    try:
        if not args.postgres_only:
            sparkwire = SparkwireTarget(args.timeout, args.sparkwire_dsn, args.sql_frontend)
        for path in files:
            every = args.sample if is_third_party(path) else 1
            result = run_file(path, postgres, sparkwire, every)
            results.append(result)
            _print_file(result, args.verbose)
            if args.report:  # after every file, so that a long run stopped early still leaves figures
                partial = f"{len(results)} of {len(files)} files" if len(results) < len(files) else ""
                Path(args.report).write_text(_markdown(results, _argv(argv), args,
                                                       time.monotonic() - started, partial))
    finally:
        if sparkwire:
            sparkwire.stop()
        postgres.stop()
    elapsed = time.monotonic() - started
    print(report.table(results))
    if sparkwire:
        print()
        print(report.failure_kinds(results))
    if args.report:
        Path(args.report).write_text(_markdown(results, _argv(argv), args, elapsed))
    if args.write_floor:
        save_floor(floor_of(results, args.sample))
    if args.wrong_list:
        Path(args.wrong_list).write_text("\n".join(report.wrong_list(results)) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tests.slt", description=__doc__)
    p.add_argument("files", nargs="*", help="suites (sqlite, pg_regress, own), folders, files or globs")
    p.add_argument("--sample", type=int, default=1, metavar="N",
                   help="run every N-th query of the third-party files (statements always run)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a statement counts as a hang")
    p.add_argument("--sparkwire-dsn", help="use this running sparkwire instead of starting one")
    p.add_argument("--sql-frontend", choices=("sqlglot", "postgres"),
                   help="the sessions' sql_frontend (default: the server's, postgres)")
    p.add_argument("--postgres-only", action="store_true", help="check the files against PostgreSQL alone")
    p.add_argument("--report", metavar="PATH", help="write the figures as markdown (CONFORMANCE.md)")
    p.add_argument("--wrong-list", metavar="PATH", help="write every silent wrong answer and hang, one a line")
    p.add_argument("--write-floor", action="store_true",
                   help="record this run's per-file rates as the floor the fast subset (make test) keeps to")
    p.add_argument("-v", "--verbose", action="store_true", help="print every record that fails")
    return p


def _print_file(result: FileResult, verbose: bool) -> None:
    print(f"{result.name}: {len(result.records)} records, PostgreSQL {result.pg_passed}, sparkwire "
          f"{result.both_passed} of those, wrong {result.wrong}, errors {result.errors}, hangs {result.hangs} "
          f"({result.seconds:.0f}s)", file=sys.stderr, flush=True)
    if not verbose:
        return
    for record, pg, sw in result.pairs():
        if pg.status != PASS:
            print(f"  {result.name}:{record.line} postgresql {pg.status}: {pg.detail}", file=sys.stderr)
        elif sw is not None and sw.status != PASS:
            print(f"  {result.name}:{record.line} sparkwire {sw.status}: {sw.detail}", file=sys.stderr)


def _argv(argv: list[str] | None) -> list[str]:
    return argv if argv is not None else sys.argv[1:]


def _markdown(results: list[FileResult], argv: list[str], args: argparse.Namespace, elapsed: float,
              partial: str = "") -> str:
    commit = subprocess.run(["git", "-C", str(SLT_DIR), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "?"
    t = report.totals(results)
    rate = f"{100.0 * t['both_passed'] / t['pg_passed']:.1f}%" if t["pg_passed"] else "–"
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    sampled = (f"every {args.sample}th query of the third-party files (all their statements), our own files whole"
               if args.sample > 1 else "every record")
    return "\n".join([
        "# Conformance: sparkwire against PostgreSQL 15 on sqllogictest files",
        "",
        ("Written by `make conformance` (tests/slt/, issue 20 item 5). A record counts only if PostgreSQL 15 "
         "passes it; sparkwire's rate is on those records. *Wrong answers* are records where sparkwire "
         "answers something other than the expected result (silent wrong results); *errors* are clear "
         "failures; *hangs* ran past the per-statement timeout."),
        "",
        f"- command: `python -m tests.slt {' '.join(argv)}`",
        f"- date: {when}; commit: {commit}; run time: {elapsed / 60:.0f} min",
        f"- records run: {sampled}; timeout {args.timeout:g}s per statement",
        *([f"- **partial: the run was stopped after {partial}**"] if partial else []),
        (f"- **sparkwire passes {t['both_passed']} of the {t['pg_passed']} records PostgreSQL passes ({rate}); "
         f"wrong answers {t['wrong']}, errors {t['errors']}, hangs {t['hangs']}**"),
        "",
        report.table(results),
        "",
        report.failure_kinds(results),
        "",
    ])


if __name__ == "__main__":
    sys.exit(main())
