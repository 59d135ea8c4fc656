"""The sqllogictest parser (tests/slt/records.py) and sampling, on text, without sockets."""

from __future__ import annotations

import pytest

from tests.slt.records import FormatError, Query, Statement, parse, sample

TEXT = """\
hash-threshold 8

# a comment
statement ok
CREATE TABLE t1(a INTEGER,
  b INTEGER)

statement error
SELECT 1,

statement error 21000
SELECT (SELECT 1 UNION SELECT 2)

query IT rowsort label-1
SELECT a, b
  FROM t1
----
1
x

query R nosort
SELECT 1.5
----

skipif postgresql # not for us
query I nosort
SELECT 'skipped'
----
1

onlyif mysql # MySQL only
statement ok
SELECT 'mysql'

onlyif postgresql
query I valuesort
SELECT 2
----
30 values hashing to 3c13dee48d9356ae19af2515e05e6b54

query T
SELECT 'no results checked'
"""


def test_records_in_order_with_lines_and_bodies() -> None:
    records = parse(TEXT)
    assert [type(r).__name__ for r in records] == ["Statement", "Statement", "Statement", "Query", "Query",
                                                   "Query", "Query"]
    create = records[0]
    assert create == Statement(4, "CREATE TABLE t1(a INTEGER,\n  b INTEGER)", False)
    assert records[1] == Statement(8, "SELECT 1,", True, None)
    assert records[2].error_pattern == "21000"
    query = records[3]
    assert isinstance(query, Query)
    assert (query.line, query.types, query.sort, query.label) == (14, "IT", "rowsort", "label-1")
    assert query.sql == "SELECT a, b\n  FROM t1"
    assert query.expected == ("1", "x")
    assert query.hash_threshold == 8


def test_empty_result_and_missing_dashes_differ() -> None:
    records = parse(TEXT)
    assert records[4].expected == ()  # `----` followed by nothing: no rows
    assert records[6].expected is None  # no `----`: only has to run
    assert records[6].sort == "nosort"


def test_skipif_and_onlyif_resolve_for_postgresql() -> None:
    sqls = [r.sql for r in parse(TEXT)]
    assert "SELECT 'skipped'" not in sqls
    assert "SELECT 'mysql'" not in sqls
    assert "SELECT 2" in sqls
    assert "SELECT 'mysql'" in [r.sql for r in parse(TEXT, engine="mysql")]


def test_halt_stops_the_file() -> None:
    records = parse("statement ok\nSELECT 1\n\nhalt\n\nstatement ok\nSELECT 2\n")
    assert [r.sql for r in records] == ["SELECT 1"]
    guarded = parse("statement ok\nSELECT 1\n\nonlyif mysql\nhalt\n\nstatement ok\nSELECT 2\n")
    assert [r.sql for r in guarded] == ["SELECT 1", "SELECT 2"]


def test_hash_threshold_applies_from_where_it_is_set() -> None:
    records = parse("query I\nSELECT 1\n----\n1\n\nhash-threshold 3\n\nquery I\nSELECT 1\n----\n1\n")
    assert [r.hash_threshold for r in records] == [0, 3]


@pytest.mark.parametrize("text", [
    "query X\nSELECT 1\n",
    "query I sideways\nSELECT 1\n",
    "statement maybe\nSELECT 1\n",
    "statement ok\n",
    "frobnicate\n",
    "hash-threshold many\n",
])
def test_malformed_files_are_rejected(text: str) -> None:
    with pytest.raises(FormatError):
        parse(text)


def test_sample_keeps_every_statement_and_every_nth_query() -> None:
    text = "\n".join(f"statement ok\nS{i}\n\nquery I\nQ{i}\n----\n1\n" for i in range(10))
    kept = [r.sql for r in sample(parse(text), 4)]
    assert [s for s in kept if s.startswith("S")] == [f"S{i}" for i in range(10)]
    assert [s for s in kept if s.startswith("Q")] == ["Q0", "Q4", "Q8"]
    assert len(sample(parse(text), 1)) == 20
