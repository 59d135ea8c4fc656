"""json has no equality or ordering operator in PostgreSQL: sorting, grouping or comparing
json values is 42883 (planner/sql/json_checks.py), checked over bound plans without Spark.
The messages are PostgreSQL 15's (tests/slt/own/records.test runs them side by side)."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, json_checks
from planner.sql import plan as p
from planner.types import column_type


class _Catalog:
    def relation(self, schema, name):
        if name != "d":
            return None
        return bind.Relation(name, (p.Column("id", column_type("integer")), p.Column("j", column_type("json")),
                                    p.Column("b", column_type("jsonb"))))


def _checked(sql: str) -> None:
    json_checks.check(bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql)))


@pytest.mark.parametrize(("sql", "operator"), [
    ("SELECT j FROM d ORDER BY j", "ordering"),
    ("SELECT j FROM d ORDER BY 1 LIMIT 1", "ordering"),
    ("SELECT DISTINCT j FROM d", "equality"),
    ("SELECT j, count(*) FROM d GROUP BY j", "equality"),
    ("SELECT j FROM d UNION SELECT j FROM d", "equality"),
    ("SELECT j FROM d INTERSECT ALL SELECT j FROM d", "equality"),
    ("SELECT count(DISTINCT j) FROM d", "equality"),
    ("SELECT json_agg(id ORDER BY j) FROM d", "ordering"),
    ("SELECT row_number() OVER (PARTITION BY j) FROM d", "equality"),
    ("SELECT id FROM d WHERE EXISTS (SELECT DISTINCT j FROM d)", "equality"),
    ("SELECT DISTINCT row_to_json(d) FROM d", "equality"),
])
def test_comparing_or_sorting_json_is_42883(sql, operator):
    with pytest.raises(SqlError) as err:
        _checked(sql)
    assert (err.value.sqlstate, err.value.message) == ("42883", f"could not identify an {operator} operator for type json")


@pytest.mark.parametrize("sql", [
    "SELECT j FROM d UNION ALL SELECT j FROM d",  # no comparison
    "SELECT DISTINCT b FROM d ORDER BY b",  # jsonb compares
    "SELECT json_agg(j ORDER BY id) FROM d",
    "SELECT j::text FROM d ORDER BY 1",
])
def test_what_compares_no_json_is_fine(sql):
    _checked(sql)
