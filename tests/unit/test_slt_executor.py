"""Outcomes of records (tests/slt/executor.py) over a stand-in DB-API connection: pass, wrong,
error, the expected SQLSTATE or message, and a hang that is cancelled and replaced."""

from __future__ import annotations

import threading

from tests.slt.executor import ERROR, HANG, PASS, WRONG, Session, run_record
from tests.slt.records import parse


class FakeError(Exception):
    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class FakeConnection:
    """Answers `ROWS`, fails `FAIL` with 21000, and blocks on `SLEEP` until cancelled."""

    def __init__(self) -> None:
        self.closed = False
        self.cancelled = threading.Event()

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self.closed = True


class FakeCursor:
    def __init__(self, conn: FakeConnection) -> None:
        self.cancelled = conn.cancelled
        self.description: list | None = None
        self.rows: list[tuple] = []

    def execute(self, sql: str) -> None:
        self.description, self.rows = None, []
        if sql == "FAIL":
            raise FakeError("21000", "more than one row returned by a subquery")
        if sql == "SLEEP":
            self.cancelled.wait(5)
            raise FakeError("57014", "canceling statement due to user request")
        if sql == "ROWS":
            self.description, self.rows = [("a",)], [(2,), (1,)]

    def fetchall(self) -> list[tuple]:
        return self.rows

    def close(self) -> None:
        pass


FILE = """\
query I rowsort
ROWS
----
1
2

query I nosort
ROWS
----
1
2

statement ok
FAIL

statement error 21000
FAIL

statement error 42601
FAIL

statement error more than one
FAIL

statement error
ROWS

query I nosort
SLEEP
----
1
"""


def test_outcomes() -> None:
    session = Session(FakeConnection, timeout=0.2)
    outcomes = [run_record(session, record) for record in parse(FILE)]
    assert [o.status for o in outcomes] == [PASS, WRONG, ERROR, PASS, ERROR, PASS, WRONG, HANG]
    assert outcomes[1].detail == "value 1: got '2', expected '1'"
    assert (outcomes[2].sqlstate, outcomes[2].detail) == ("21000", "more than one row returned by a subquery")
    assert outcomes[4].detail.startswith("expected error 42601, got 21000")


def test_a_hang_is_cancelled_and_the_session_goes_on() -> None:
    session = Session(FakeConnection, timeout=0.1)
    first = session.conn
    (sleep,) = parse("statement ok\nSLEEP\n")
    assert run_record(session, sleep).status == HANG
    assert first.cancelled.is_set()
    (rows,) = parse("query I rowsort\nROWS\n----\n1\n2\n")
    assert run_record(session, rows).status == PASS
    assert session.conn is first  # the cancel worked, so the connection stays


def test_a_lost_connection_is_replaced() -> None:
    session = Session(FakeConnection, timeout=1)
    first = session.conn
    first.closed = True
    (fail,) = parse("statement ok\nFAIL\n")
    assert run_record(session, fail).status == ERROR
    assert session.conn is not first and not session.conn.closed
