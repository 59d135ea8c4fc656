"""PostgreSQL → Spark SQL translation: identifiers Spark's lexer would reject unquoted."""

from __future__ import annotations

import pytest

from planner.parser import parse_one
from planner.translate import SessionContext, TableSource, resolve_tree

CTX = SessionContext("materialize", "materialize", "v", "2024-01-01 00:00:00")


def spark_sql(sql: str) -> str:
    def resolve(name: str):
        return TableSource("__sw_1_u5", {"b✓": "INT", "x": "INT", "Mixed": "INT"})

    return resolve_tree(parse_one(sql).statement.ast, resolve, CTX).sql("spark")


@pytest.mark.parametrize(("sql", "expected"), [
    ('SELECT * FROM "tåble✓"',
     "SELECT `tåble✓`.`b✓` AS `b✓`, `tåble✓`.x AS `x`, `tåble✓`.Mixed AS `Mixed` FROM __sw_1_u5 AS `tåble✓`"),
    ('SELECT t.* FROM "tåble✓" AS t', "SELECT t.`b✓` AS `b✓`, t.x AS `x`, t.Mixed AS `Mixed` FROM __sw_1_u5 AS t"),
    ('SELECT "b✓" + 1 AS "ünï" FROM plain', "SELECT `plain`.`b✓` + 1 AS `ünï` FROM __sw_1_u5 AS `plain`"),
])
def test_non_ascii_identifiers_are_quoted(sql: str, expected: str) -> None:
    assert spark_sql(sql) == expected
