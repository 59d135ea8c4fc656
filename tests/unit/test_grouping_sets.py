"""GROUP BY's grouping sets expanded as PostgreSQL's expand_grouping_sets (planner.sql.grouping_sets)."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.sql import grouping_sets


def _sets(group_by: str) -> list[list[str]] | None:
    items = pg_parse.parse_one(f"SELECT 1 FROM t GROUP BY {group_by}")["SelectStmt"]["groupClause"]
    sets = grouping_sets.expand(items)
    return None if sets is None else [[x["ColumnRef"]["fields"][0]["String"]["sval"] for x in s] for s in sets]


@pytest.mark.parametrize("group_by, sets", [
    ("a, b", None),
    ("ROLLUP (a, b)", [["a", "b"], ["a"], []]),
    ("a, ROLLUP (b, (c, d))", [["a", "b", "c", "d"], ["a", "b"], ["a"]]),
    ("CUBE (a, b)", [["a", "b"], ["a"], ["b"], []]),
    ("GROUPING SETS ((a, b), a, ()), c", [["a", "b", "c"], ["a", "c"], ["c"]]),
    ("GROUPING SETS (ROLLUP (a), (b)), GROUPING SETS ((c), (d))",
     [["a", "c"], ["a", "d"], ["c"], ["d"], ["b", "c"], ["b", "d"]]),
    ("GROUPING SETS ((a), (a))", [["a"], ["a"]]),  # duplicates kept, as PostgreSQL keeps them
    ("()", [[]]),
])
def test_the_cross_product_of_each_items_sets(group_by, sets):
    assert _sets(group_by) == sets
