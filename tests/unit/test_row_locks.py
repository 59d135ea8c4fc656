"""The locking clause of a SELECT (server/row_locks.py), read without a server; the locking
itself is tested with two sessions in tests/integration/test_transactions.py."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from server import row_locks


@pytest.mark.parametrize(("sql", "policy", "relation"), [
    ("SELECT * FROM jobs FOR UPDATE", "LockWaitBlock", "jobs"),
    ("SELECT * FROM jobs j, other FOR UPDATE OF other SKIP LOCKED", "LockWaitSkip", "other"),
    ("select id from jobs where x = 'for update' for share nowait", "LockWaitError", "jobs"),
])
def test_the_clause_its_wait_and_the_relation_an_error_names(sql, policy, relation):
    assert row_locks.clause(sql) == row_locks.Locking(policy, relation)


@pytest.mark.parametrize("sql", ["SELECT 'for update' FROM jobs", "SELECT * FROM jobs",
                                 "SELECT * FROM (SELECT * FROM jobs FOR UPDATE) s"])
def test_no_clause_of_the_query_s_own(sql):
    assert row_locks.clause(sql) is None


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT a FROM t GROUP BY a FOR UPDATE", "FOR UPDATE is not allowed with GROUP BY clause"),
    ("SELECT DISTINCT a FROM t FOR KEY SHARE", "FOR KEY SHARE is not allowed with DISTINCT clause"),
    ("SELECT a FROM t UNION SELECT 1 FOR NO KEY UPDATE",
     "FOR NO KEY UPDATE is not allowed with UNION/INTERSECT/EXCEPT"),
])
def test_what_postgresql_refuses(sql, message):
    with pytest.raises(SqlError) as err:
        row_locks.clause(sql)
    assert (err.value.sqlstate, err.value.message) == ("0A000", message)


def test_of_names_a_from_item_by_its_alias():
    assert row_locks.clause("SELECT * FROM jobs j FOR UPDATE OF j NOWAIT") == row_locks.Locking("LockWaitError",
                                                                                                "jobs")
    with pytest.raises(SqlError) as err:
        row_locks.clause("SELECT * FROM jobs j FOR UPDATE OF nosuch")
    assert (err.value.sqlstate, err.value.message) == (
        "42P01", 'relation "nosuch" in FOR UPDATE clause not found in FROM clause')


def test_of_finds_items_inside_joins_and_subqueries():
    assert row_locks.clause("SELECT * FROM a JOIN b USING (id) FOR SHARE OF b") == row_locks.Locking(
        "LockWaitBlock", "b")
    assert row_locks.clause("SELECT * FROM (SELECT 1) s FOR UPDATE OF s").relation is None
