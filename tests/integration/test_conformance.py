"""Conformance with PostgreSQL 15 on sqllogictest files (issue 20, item 5): the fast subset of
`make conformance`.

Our own files (tests/slt/own, tests/slt/pg_regress) run whole; the third-party SQLite files run
every N-th query (N from tests/slt/floor.json) with all their statements. The same records run
on a real PostgreSQL 15, the oracle: only records it passes count. On those, sparkwire must not
answer differently from the expected result (a silent wrong answer) nor hang, except for the
records listed in tests/slt/known_wrong.txt with their reason; a listed record that no longer
answers wrongly fails the test as well, so that the list shrinks as the bugs are fixed. Each
file's rate must stay at or above the floor in tests/slt/floor.json (the figures measured when it
was written: `python -m tests.slt --sample N --write-floor` records new ones).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slt.corpus import discover, is_third_party, key, load_floor, load_known
from tests.slt.executor import PASS
from tests.slt.runner import FileResult, run_file
from tests.slt.targets import PostgresTarget, SparkwireTarget

TIMEOUT = 180.0  # seconds per statement before it counts as a hang (generous: CI machines get loaded)
FLOOR = load_floor()
KNOWN = load_known()
FILES = discover()


@pytest.fixture(scope="module")
def targets(server):
    try:
        postgres = PostgresTarget(TIMEOUT)
    except RuntimeError as e:  # the PostgreSQL 15 binaries are missing
        pytest.skip(str(e))
    try:
        yield postgres, SparkwireTarget(TIMEOUT, dsn=server.dsn)
    finally:
        postgres.stop()


@pytest.mark.parametrize("path", FILES, ids=key)
def test_conformance(targets, path: Path) -> None:
    postgres, sparkwire = targets
    every = FLOOR.get("sample_every", 100) if is_third_party(path) else 1
    result = run_file(path, postgres, sparkwire, every)
    problems = _unexpected_wrong(result) + _listed_but_fixed(result) + _below_floor(result)
    assert not problems, "\n".join(problems)


def _unexpected_wrong(result: FileResult) -> list[str]:
    return [f"new {sw.status} at {name}: {sw.detail}\n    {' '.join(record.sql.split())[:200]}"
            for name, record, sw in result.silent_wrong() if name not in KNOWN]


def _listed_but_fixed(result: FileResult) -> list[str]:
    out = []
    for record, pg, sw in result.pairs():
        name = f"{result.name}:{record.line}"
        if name in KNOWN and pg.status == PASS and sw is not None and sw.status not in ("wrong", "hang"):
            out.append(f"{name} is listed in tests/slt/known_wrong.txt but now gives "
                       f"{'the right answer' if sw.status == PASS else 'an error'}: remove it from the list")
    return out


def _below_floor(result: FileResult) -> list[str]:
    floor = FLOOR["files"].get(result.name)
    if not floor or not floor["postgres"] or not result.pg_passed:
        return []
    want, got = floor["sparkwire"] / floor["postgres"], result.both_passed / result.pg_passed
    if got + 1e-9 >= want:
        return []
    return [(f"{result.name}: sparkwire passes {result.both_passed} of {result.pg_passed} records PostgreSQL "
             f"passes ({got:.1%}), below the floor of {want:.1%} in tests/slt/floor.json")]
