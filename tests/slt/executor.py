"""Running parsed records over a DB-API connection, one statement at a time, each with a
timeout: a statement that outlives it is cancelled, counted as a hang, and, if it still does
not return, its connection is abandoned for a new one. Driver-agnostic apart from
`connection.cancel()` and the error's `sqlstate` (psycopg 3) or `pgcode` (psycopg2).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests.slt.records import Record, Statement
from tests.slt.results import compare

PASS, WRONG, ERROR, HANG = "pass", "wrong", "error", "hang"


@dataclass(frozen=True)
class Outcome:
    line: int
    status: str  # PASS, WRONG (an answer other than the expected one), ERROR or HANG
    detail: str = ""  # the error message or the difference
    sqlstate: str | None = None
    seconds: float = 0.0


class Hang(Exception):
    """A statement ran past its timeout."""


class Session:
    """One connection that runs statements with a timeout and replaces itself when lost."""

    def __init__(self, connect: Callable[[], Any], timeout: float) -> None:
        self._connect = connect
        self.timeout = timeout
        self.conn = connect()

    def run(self, sql: str) -> list[tuple] | None:
        """The rows of `sql` (None for a statement without a result), or raise its error or Hang."""
        box: dict[str, Any] = {}
        conn = self.conn

        def work() -> None:
            try:
                cur = conn.cursor()
                cur.execute(sql)
                box["rows"] = cur.fetchall() if cur.description is not None else None
                cur.close()
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = e

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            self._abandon_if_stuck(worker)
            raise Hang(f"no answer in {self.timeout:g}s")
        if "error" in box:
            if _is_closed(conn):
                self.conn = self._connect()
            raise box["error"]
        return box.get("rows")

    def _abandon_if_stuck(self, worker: threading.Thread) -> None:
        with contextlib.suppress(Exception):  # best effort; the connection may be gone
            self.conn.cancel()
        worker.join(10)
        if worker.is_alive() or _is_closed(self.conn):
            self.conn = self._connect()  # the old one is left to its thread

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken connection
            self.conn.close()


def _is_closed(conn: Any) -> bool:
    closed = getattr(conn, "closed", False)
    return bool(closed)


def sqlstate_of(error: BaseException) -> str | None:
    return getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)


def _message(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def run_record(session: Session, record: Record) -> Outcome:
    started = time.monotonic()
    try:
        rows = session.run(record.sql)
    except Hang as e:
        return Outcome(record.line, HANG, str(e), None, time.monotonic() - started)
    except Exception as e:  # noqa: BLE001 - any driver error is the statement's answer
        return _on_error(record, e, time.monotonic() - started)
    took = time.monotonic() - started
    if isinstance(record, Statement):
        if record.expect_error:
            return Outcome(record.line, WRONG, "succeeded, expected an error", None, took)
        return Outcome(record.line, PASS, "", None, took)
    difference = compare(record, rows or [])
    return Outcome(record.line, WRONG if difference else PASS, difference or "", None, took)


def _on_error(record: Record, error: BaseException, took: float) -> Outcome:
    state, message = sqlstate_of(error), _message(error)
    if isinstance(record, Statement) and record.expect_error:
        if _error_matches(record.error_pattern, state, str(error)):
            return Outcome(record.line, PASS, message, state, took)
        return Outcome(record.line, ERROR, f"expected error {record.error_pattern}, got {state}: {message}",
                       state, took)
    return Outcome(record.line, ERROR, message, state, took)


def _error_matches(pattern: str | None, state: str | None, message: str) -> bool:
    if pattern is None:
        return True
    if re.fullmatch(r"[0-9A-Z]{5}", pattern):
        return state == pattern
    return re.search(pattern, message) is not None


def run_records(session: Session, records: Iterable[Record],
                progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    outcomes = []
    for record in records:
        outcome = run_record(session, record)
        outcomes.append(outcome)
        if progress:
            progress(outcome)
    return outcomes
