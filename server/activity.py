"""What each session is doing, for pg_stat_activity; statements with secrets redacted.

PostgreSQL shows a session's current (or last) statement, its state and when it
started. Here the statement text of CREATE SECRET and of roles' passwords is
shown with its string constants masked: pg_stat_activity is readable by every
logged-in client, and secret values must reach no one.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

_SECRET_STATEMENT = re.compile(r"(?is)^\s*(create|alter)\s+(secret|role|user)\b")
_STRING = re.compile(r"(?s)'(?:[^']|'')*'")


def redacted(sql: str) -> str:
    """The statement as pg_stat_activity may show it."""
    if _SECRET_STATEMENT.match(sql):
        return _STRING.sub("'********'", sql)
    return sql


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class Activity:
    """One session's line of pg_stat_activity."""

    pid: int
    user: str
    application_name: str = ""
    client_addr: str | None = None
    client_port: int | None = None
    backend_start: datetime.datetime = field(default_factory=_now)
    query: str = ""
    query_start: datetime.datetime | None = None
    state_change: datetime.datetime | None = None
    active: bool = False

    def start(self, sql: str) -> None:
        self.query = redacted(sql)
        self.query_start = self.state_change = _now()
        self.active = True

    def finish(self) -> None:
        self.active = False
        self.state_change = _now()

    def row(self, database_oid: int, database: str, status: str, xact_start: datetime.datetime | None) -> tuple:
        """The pg_stat_activity row; `status` is the session's transaction status (I, T, E)."""
        if self.active:
            state = "active"
        else:
            state = {"I": "idle", "T": "idle in transaction", "E": "idle in transaction (aborted)"}[status]
        return (database_oid, database, self.pid, None, 10, self.user, self.application_name,
                self.client_addr, None, self.client_port, self.backend_start, xact_start, self.query_start,
                self.state_change, "Client" if state == "idle" else None,
                "ClientRead" if state == "idle" else None, state, None, None, None, self.query,
                "client backend")
