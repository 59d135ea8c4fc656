"""Transaction blocks next to PostgreSQL 15: savepoints and transactional DDL.

Each script runs statement by statement on sparkwire and on a real PostgreSQL; every
statement's outcome - its command tag and rows, or its SQLSTATE and message - must be
the same. The scripts go where applications go wrong: an error inside a savepoint,
ROLLBACK TO twice, a savepoint name used twice, RELEASE of one that is gone, a table
created, written, read and viewed in the block that creates it, a DROP undone, a
table dropped and made again under its old name.
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from tests.pgserver import reference_postgres

DDL_IN_A_BLOCK = [
        'DROP TABLE IF EXISTS t1 CASCADE',
        'DROP TABLE IF EXISTS u1',
        'BEGIN',
        'CREATE TABLE t1 (a int)',
        'INSERT INTO t1 VALUES (1)',
        'SELECT * FROM t1',
        'CREATE VIEW v1 AS SELECT a FROM t1',
        'SELECT * FROM v1',
        "SELECT relname FROM pg_class WHERE relname IN ('t1','v1') ORDER BY 1",
        'SAVEPOINT s',
        'CREATE TABLE u1 (b int)',
        'INSERT INTO u1 VALUES (5)',
        'INSERT INTO t1 SELECT b FROM u1',
        'ROLLBACK TO s',
        'SELECT * FROM u1',
        'ROLLBACK TO s',
        'INSERT INTO t1 VALUES (2)',
        'UPDATE t1 SET a = a * 10 WHERE a = 2',
        'COMMIT',
        'SELECT * FROM t1 ORDER BY a',
        'SELECT * FROM v1 ORDER BY a',
        'SELECT * FROM u1',
        'BEGIN',
        'DROP TABLE t1 CASCADE',
        'SELECT * FROM t1',
        'ROLLBACK',
        'SELECT count(*) FROM t1',
        'BEGIN',
        'DROP VIEW v1',
        'DROP TABLE t1',
        'CREATE TABLE t1 (x text)',
        "INSERT INTO t1 VALUES ('new')",
        'SELECT * FROM t1',
        'COMMIT',
        'SELECT * FROM t1',
]

SAVEPOINTS = [
        'DROP TABLE IF EXISTS s2',
        'CREATE TABLE s2 (a int)',
        'SAVEPOINT outside',
        'RELEASE SAVEPOINT outside',
        'ROLLBACK TO SAVEPOINT outside',
        'BEGIN',
        'INSERT INTO s2 VALUES (1)',
        'SAVEPOINT a',
        'INSERT INTO s2 VALUES (2)',
        'SAVEPOINT a',
        'INSERT INTO s2 VALUES (3)',
        'ROLLBACK TO a',
        'SELECT a FROM s2 ORDER BY a',
        'RELEASE a',
        'SELECT a FROM s2 ORDER BY a',
        'ROLLBACK TO a',
        'SELECT a FROM s2 ORDER BY a',
        'RELEASE a',
        'RELEASE a',
        'SELECT 1',
        'ROLLBACK',
        'BEGIN',
        'INSERT INTO s2 VALUES (10)',
        'SAVEPOINT b',
        'SELECT 1/0',
        'SELECT 1',
        'RELEASE b',
        'ROLLBACK TO b',
        'SELECT a FROM s2',
        'SAVEPOINT c',
        "INSERT INTO s2 VALUES ('x')",
        'ROLLBACK TO c',
        'INSERT INTO s2 VALUES (11)',
        'COMMIT',
        'SELECT a FROM s2 ORDER BY a',
        'BEGIN',
        'INSERT INTO s2 VALUES (12)',
        'SELECT 1/0',
        'ROLLBACK TO nosuch',
        'COMMIT',
        'SELECT a FROM s2 ORDER BY a',
        'BEGIN',
        'SAVEPOINT x',
        'ROLLBACK TO SAVEPOINT x',
        'ROLLBACK TO SAVEPOINT x',
        'RELEASE SAVEPOINT x',
        'COMMIT',
]


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


def outcomes(dsn: str, script: list[str]) -> list[tuple]:
    """Each statement with (tag, rows) or (SQLSTATE, message)."""
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in script:
            try:
                cur = conn.execute(sql)
                out.append((sql, cur.statusmessage, cur.fetchall() if cur.description else None))
            except psycopg.Error as exc:
                out.append((sql, exc.sqlstate, exc.diag.message_primary))
    return out


TRUNCATE_IN_A_BLOCK = [
        'DROP TABLE IF EXISTS tt',
        'CREATE TABLE tt (a int PRIMARY KEY)',
        'INSERT INTO tt VALUES (1), (2)',
        'BEGIN',
        'TRUNCATE tt',
        'SELECT count(*) FROM tt',
        'INSERT INTO tt VALUES (1)',
        'SELECT * FROM tt',
        'ROLLBACK',
        'SELECT * FROM tt ORDER BY a',
        'BEGIN',
        'INSERT INTO tt VALUES (3)',
        'TRUNCATE tt',
        'INSERT INTO tt VALUES (2)',
        'COMMIT',
        'SELECT * FROM tt',
        'TRUNCATE tt, tt',
        'SELECT count(*) FROM tt',
]


LOCKING_SELECTS = [
        'DROP TABLE IF EXISTS lk',
        'CREATE TABLE lk (id int PRIMARY KEY, state text)',
        "INSERT INTO lk VALUES (1, 'new'), (2, 'new')",
        'SELECT * FROM lk ORDER BY id FOR UPDATE',
        'BEGIN',
        "SELECT id FROM lk WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
        "UPDATE lk SET state = 'done' WHERE id = 1",
        'SELECT * FROM lk WHERE id = 2 FOR NO KEY UPDATE OF lk NOWAIT',
        'SELECT * FROM lk ORDER BY id FOR SHARE',
        'SELECT * FROM lk ORDER BY id FOR KEY SHARE',
        'COMMIT',
        'SELECT * FROM lk ORDER BY id',
        'SELECT state, count(*) FROM lk GROUP BY state FOR UPDATE',
        'SELECT DISTINCT state FROM lk FOR SHARE',
        'SELECT id FROM lk UNION SELECT 3 FOR UPDATE',
        'SELECT * FROM lk l FOR UPDATE OF nosuch',
        'SELECT l.id FROM lk l JOIN lk m USING (id) ORDER BY 1 FOR SHARE OF m',
]


@pytest.mark.parametrize("script", [DDL_IN_A_BLOCK, SAVEPOINTS, TRUNCATE_IN_A_BLOCK, LOCKING_SELECTS],
                         ids=["ddl", "savepoints", "truncate", "locking"])
def test_transaction_blocks_behave_as_in_postgres(server, postgres, script):
    assert outcomes(server.dsn, script) == outcomes(postgres.dsn, script)


def test_other_sessions_ddl_during_a_block_does_not_fail_its_commit(server):
    """Objects another session creates meanwhile take ids of their own: only a clash of
    names (or an object dropped under the block) fails the COMMIT, with 40001."""
    with psycopg.connect(server.dsn, autocommit=True) as block, \
            psycopg.connect(server.dsn, autocommit=True) as other:
        block.execute("BEGIN")
        block.execute("CREATE TABLE tx_mine (a int)")
        block.execute("INSERT INTO tx_mine VALUES (1)")
        other.execute("CREATE TABLE tx_theirs (b int)")
        other.execute("INSERT INTO tx_theirs VALUES (2)")
        block.execute("COMMIT")
        assert other.execute("SELECT * FROM tx_mine").fetchall() == [(1,)]
        assert block.execute("SELECT * FROM tx_theirs").fetchall() == [(2,)]
        block.execute("BEGIN")
        block.execute("INSERT INTO tx_theirs VALUES (3)")
        block.execute("DROP TABLE tx_mine")
        other.execute("DROP TABLE tx_mine")
        with pytest.raises(psycopg.errors.SerializationFailure):
            block.execute("COMMIT")
        assert other.execute("SELECT * FROM tx_theirs").fetchall() == [(2,)]  # nothing of the block


def test_a_locking_select_holds_other_sessions_writes_until_the_block_ends(server):
    """SELECT … FOR UPDATE in a block: another session's write waits for its COMMIT; while
    it holds, NOWAIT is 55P03 and SKIP LOCKED returns no rows (server/row_locks.py)."""
    with psycopg.connect(server.dsn, autocommit=True) as a, psycopg.connect(server.dsn, autocommit=True) as b:
        a.execute("DROP TABLE IF EXISTS lk2")
        a.execute("CREATE TABLE lk2 (id int PRIMARY KEY, state text)")
        a.execute("INSERT INTO lk2 VALUES (1, 'new')")
        a.execute("BEGIN")
        assert a.execute("SELECT id FROM lk2 WHERE state = 'new' FOR UPDATE").fetchall() == [(1,)]
        b.execute("BEGIN")
        assert b.execute("SELECT id FROM lk2 WHERE state = 'new' FOR UPDATE SKIP LOCKED").fetchall() == []
        with pytest.raises(psycopg.errors.LockNotAvailable):
            b.execute("SELECT id FROM lk2 FOR UPDATE NOWAIT")
        b.execute("ROLLBACK")
        events: list[str] = []

        def steal() -> None:
            with psycopg.connect(server.dsn, autocommit=True) as c:
                c.execute("UPDATE lk2 SET state = 'stolen' WHERE state = 'new'")
                events.append("other session wrote")

        thief = threading.Thread(target=steal)
        thief.start()
        thief.join(timeout=2)  # it waits on the lock: give it the time to come through, if it could
        events.append("block commits")
        a.execute("UPDATE lk2 SET state = 'done' WHERE id = 1")
        a.execute("COMMIT")
        thief.join()
        assert events == ["block commits", "other session wrote"]
        # the other session's UPDATE ran after the COMMIT: the row was no longer 'new'
        assert a.execute("SELECT * FROM lk2").fetchall() == [(1, "done")]
