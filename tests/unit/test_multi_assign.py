"""UPDATE ... SET (a, b) = (x, y) spread into single assignments (planner.multi_assign)."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.multi_assign import spread


@pytest.mark.parametrize("text, expected", [
    ("UPDATE t SET (a, b) = (1, 'x') WHERE k = 1", "UPDATE t SET a = 1, b = 'x' WHERE k = 1"),
    ("UPDATE t SET (a) = ROW(a + 1), c = 2 RETURNING *", "UPDATE t SET a = a + 1, c = 2 RETURNING *"),
    ("INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET (a, b) = (excluded.a, t.b)",
     "INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET a = excluded.a, b = t.b"),
])
def test_a_row_of_values_becomes_one_assignment_a_column(text, expected):
    assert spread(text) == expected


@pytest.mark.parametrize("text", [
    "UPDATE t SET a = 1",  # nothing to spread: the text as written
    "UPDATE t SET (a, b) = (SELECT 1, 2)",  # a subquery's row: deny by default refuses it
    "UPDATE t SET (a, b = 1",  # not PostgreSQL's grammar: the caller says where
])
def test_anything_else_is_left_as_written(text):
    assert spread(text) == text


def test_a_row_of_the_wrong_width_is_postgres_syntax_error():
    with pytest.raises(SqlError) as err:
        spread("UPDATE t SET (a, b) = (1, 2, 3)")
    assert err.value.sqlstate == "42601" and "number of columns" in str(err.value)
    assert err.value.position == 23
    with pytest.raises(SqlError) as err:
        spread("UPDATE t SET c = 'é€', (a, b) = (1, 2, 3)")
    assert err.value.position == 33  # PostgreSQL's: characters, not bytes
