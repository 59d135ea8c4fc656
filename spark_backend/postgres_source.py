"""Talking to an upstream PostgreSQL: snapshots and the replication stream.

Everything here blocks (psycopg2 is the one driver that can stream logical
replication), so the server runs it on threads; the plain queries (validation,
publications, table introspection, dropping slots) are pg_upstream's, on asyncpg.
The snapshot follows the postgres-sources design: a replication slot created with
USE_SNAPSHOT as the first statement of a REPEATABLE READ transaction, COPY in that
transaction, then START_REPLICATION from the slot, so there is no gap and no overlap.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import psycopg2
import psycopg2.extras
import pyarrow as pa
import pyarrow.csv as pa_csv
from psycopg2 import sql as pgsql

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.types import BY_OID, SqlType
from spark_backend import pgoutput

log = logging.getLogger("sparkwire.postgres")

# Upstream types ingested natively; anything else needs TEXT COLUMNS.
SUPPORTED_OIDS = {16, 17, 20, 21, 23, 25, 114, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1700,
                  2950, 3802}


@dataclass(frozen=True)
class UpstreamColumn:
    name: str
    type_oid: int
    typmod: int
    type_name: str  # as format_type prints it
    elem_oid: int  # element type of an array type, else 0
    not_null: bool


@dataclass(frozen=True)
class UpstreamTable:
    oid: int
    schema: str
    name: str
    replica_identity: str  # d, n, f, i
    columns: tuple[UpstreamColumn, ...]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def sql_type_for(col: UpstreamColumn, as_text: bool) -> SqlType:
    """Our type for an upstream column, or an error naming the column and its type."""
    if as_text:
        return SqlType(BY_OID[25])
    if col.type_oid in SUPPORTED_OIDS:
        return SqlType(BY_OID[col.type_oid], col.typmod if col.type_oid in (1700, 1042, 1043) else -1)
    if col.elem_oid in SUPPORTED_OIDS:
        return SqlType(BY_OID[col.elem_oid], -1, is_array=True)
    raise SqlError(FEATURE_NOT_SUPPORTED,
                   f'column "{col.name}" has unsupported type {col.type_name}',
                   hint=f"Ingest it as text with WITH (TEXT COLUMNS ({col.name})).")


@dataclass
class Params:
    host: str
    port: int
    user: str
    password: str | None
    database: str

    def connect(self, replication: bool = False, timeout: int = 10, options: str | None = None):
        kwargs: dict[str, object] = {
            "host": self.host, "port": self.port, "user": self.user, "dbname": self.database,
            "connect_timeout": timeout, "application_name": "sparkwire",
            "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
        if options is not None:
            kwargs["options"] = options
        if self.password is not None:
            kwargs["password"] = self.password
        if replication:
            kwargs["connection_factory"] = psycopg2.extras.LogicalReplicationConnection
        return psycopg2.connect(**kwargs)


def upstream_error(exc: BaseException) -> SqlError:
    """A psycopg2 failure (the snapshot's, the stream's) as an error for the user, without secrets."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return SqlError("08006" if isinstance(exc, psycopg2.OperationalError) else "XX000",
                    f"upstream PostgreSQL: {text}")


# -- snapshots -------------------------------------------------------------------

# Output settings for our sessions upstream (the snapshot's and the walsender's): the text
# of every value is then in the one form the column-at-a-time reader takes whole (ISO
# dates, UTC offsets, hex bytea, shortest exact floats, UTF-8). Any other form still reads
# right, value by value; these only decide how fast.
OUTPUT_SETTINGS = ("-c DateStyle=ISO,MDY -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=1 "
                   "-c bytea_output=hex -c client_encoding=UTF8")

COPY_BLOCK = 4 << 20  # bytes of COPY output parsed at a time: what a snapshot holds unconverted

OnBatch = Callable[["UpstreamTable", list[pa.Array], int], None]


def take_snapshot(params: Params, slot: str, tables: list[UpstreamTable], temporary: bool,
                  on_batch: OnBatch, progress: Callable[[UpstreamTable, int, int], None] | None = None) -> int:
    """Create `slot` with USE_SNAPSHOT and COPY `tables` in that snapshot's transaction; the
    slot's consistent point (commits before it are in the rows) is returned.

    Each table's rows arrive as `on_batch(table, columns, rows)`: one binary array of text
    output per upstream column, null for NULL, a few MB of COPY output at a time, called
    on a parsing thread while the next block is being received. `progress(table, copied,
    expected)` follows each table, `expected` being its row count in the snapshot."""
    conn = params.connect(replication=True, options=OUTPUT_SETTINGS)
    try:
        cur = conn.cursor()
        cur.execute("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")
        kind = "TEMPORARY LOGICAL" if temporary else "LOGICAL"
        cur.execute(f"CREATE_REPLICATION_SLOT {pgsql.Identifier(slot).as_string(conn)} {kind} pgoutput "
                    "USE_SNAPSHOT")
        _, consistent_point, _, _ = cur.fetchone()
        for table in tables:
            name = pgsql.SQL("{}.{}").format(pgsql.Identifier(table.schema), pgsql.Identifier(table.name))
            cur.execute(pgsql.SQL("SELECT count(*) FROM {}").format(name).as_string(conn))
            expected = cur.fetchone()[0]
            report = _Progress(table, expected, progress) if progress else None
            if report is not None:
                report(0)
            if not table.columns:  # nothing to COPY: rows without values
                on_batch(table, [], expected)
                copied = expected
            else:
                cols = pgsql.SQL(", ").join(pgsql.Identifier(c.name) for c in table.columns)
                query = pgsql.SQL("COPY (SELECT {} FROM {}) TO STDOUT (FORMAT csv)").format(cols, name)
                copied = _copy_csv(cur, query.as_string(conn), len(table.columns),
                                   lambda columns, rows, t=table: on_batch(t, columns, rows), report)
            if report is not None:
                report(copied)
        cur.execute("COMMIT")
        return pgoutput.str_to_lsn(consistent_point)
    finally:
        conn.close()


class _Progress:
    """progress(table, copied, expected), once per new count."""

    def __init__(self, table: UpstreamTable, expected: int, progress: Callable[[UpstreamTable, int, int], None]):
        self.table, self.expected, self.progress, self.last = table, expected, progress, None

    def __call__(self, copied: int) -> None:
        if copied != self.last:
            self.last = copied
            self.progress(self.table, copied, self.expected)


def _copy_csv(cur, query: str, width: int, on_batch: Callable[[list[pa.Array], int], None],
              report: Callable[[int], None] | None) -> int:
    """Run COPY ... (FORMAT csv) and hand its rows over in blocks; the number of rows.

    psycopg2 writes COPY output row by row into a pipe; a second thread parses the other end
    with Arrow's CSV reader (which does the work in C++, without the GIL), so receiving and
    parsing overlap and at most a few blocks are in memory. In PostgreSQL's CSV a NULL is an
    unquoted empty field and an empty string a quoted one, which is what Arrow distinguishes
    with quoted_strings_can_be_null=False."""
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):  # a bigger pipe means fewer thread switches; optional
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    names = [f"c{i}" for i in range(width)]
    state: dict = {"rows": 0, "error": None}

    def parse() -> None:
        try:
            with open(read_fd, "rb") as source:  # closing it turns a stuck write into EPIPE
                if not source.peek(1):  # no rows: Arrow calls an empty file an error
                    return
                reader = pa_csv.open_csv(
                    source,
                    read_options=pa_csv.ReadOptions(column_names=names, block_size=COPY_BLOCK),
                    parse_options=pa_csv.ParseOptions(delimiter=",", quote_char='"', double_quote=True,
                                                      escape_char=False, newlines_in_values=True),
                    convert_options=pa_csv.ConvertOptions(
                        column_types={n: pa.binary() for n in names}, null_values=[""],
                        strings_can_be_null=True, quoted_strings_can_be_null=False, check_utf8=False))
                for batch in reader:
                    on_batch(batch.columns, batch.num_rows)
                    state["rows"] += batch.num_rows
                    if report is not None:
                        report(state["rows"])
        except BaseException as exc:  # noqa: BLE001 - raised on the COPY's thread below
            state["error"] = exc

    thread = threading.Thread(target=parse, name="snapshot-parse", daemon=True)
    thread.start()
    try:
        with open(write_fd, "wb", buffering=1 << 20) as sink:
            cur.copy_expert(query, sink)
    except OSError as exc:
        thread.join()
        if state["error"] is not None:  # the parser stopped first: its error is the cause
            raise state["error"] from exc
        raise
    finally:
        thread.join()  # it ends at the end of the pipe, closed above whatever happened
    if state["error"] is not None:
        raise state["error"]
    return state["rows"]


# -- the stream -----------------------------------------------------------------------

@dataclass(slots=True)
class Change:
    relation: pgoutput.Relation
    old: list | None  # raw values, UNCHANGED_TOAST filled
    new: list | None


@dataclass(slots=True)
class Transaction:
    commit_lsn: int
    end_lsn: int
    commit_time_us: int
    changes: list[Change]
    truncated: list[int] = field(default_factory=list)  # relation oids


# The most row changes handed over at once when transactions are waiting: several
# transactions then become one write (never part of one), which is what makes a backlog
# cheap to catch up on; the bound keeps the memory and each write's size in check.
BATCH_CHANGES = 100_000
MAX_IN_FLIGHT = 1  # batches handed over and not yet durable, besides the one being converted


def stream(params: Params, slot: str, publication: str, start_lsn: int,
           apply: Callable[[list[Transaction]], Future], stop: threading.Event,
           on_relation: Callable[[pgoutput.Relation], None] | None = None,
           on_idle: Callable[[int], None] | None = None,
           on_lag: Callable[[int], None] | None = None) -> None:
    """Follow the slot until `stop` is set.

    Complete transactions go to `apply(transactions)`, in commit order; it returns a future
    that completes once they are durable, and only then is the last one's end LSN confirmed
    upstream. While one batch is being made durable the next is received and decoded: every
    transaction that has arrived by then (up to BATCH_CHANGES row changes) goes in it.
    `on_lag(bytes)` reports the WAL the server has sent or announced past what is durable."""
    conn = params.connect(replication=True, options=OUTPUT_SETTINGS)
    try:
        cur = conn.cursor()
        cur.start_replication(slot_name=slot, decode=False, start_lsn=start_lsn,
                              options={"proto_version": "1", "publication_names": publication})
        _follow(cur, start_lsn, apply, stop, on_relation, on_idle, on_lag)
    finally:
        conn.close()


def _follow(cur, start_lsn: int, apply, stop: threading.Event, on_relation, on_idle, on_lag) -> None:
    relations: dict[int, pgoutput.Relation] = {}
    txn: Transaction | None = None
    pending: list[Transaction] = []
    pending_changes = 0
    inflight: collections.deque[tuple[Future, int]] = collections.deque()  # batches being written, end LSNs
    confirmed = start_lsn
    last_feedback = time.monotonic()
    received = 0

    def report_lag() -> None:
        if on_lag is not None:
            on_lag(max(0, (getattr(cur, "wal_end", 0) or 0) - confirmed))

    def settle(keep: int) -> None:
        """Confirm the batches that are durable, waiting until at most `keep` are left."""
        nonlocal confirmed, last_feedback
        done = False
        while inflight and (len(inflight) > keep or inflight[0][0].done()):
            future, end_lsn = inflight.popleft()
            _wait(future, stop)  # a failed write fails the stream: it restarts from what is durable
            confirmed = max(confirmed, end_lsn)
            done = True
        if done:
            cur.send_feedback(flush_lsn=confirmed, reply=False)
            last_feedback = time.monotonic()
            report_lag()

    def hand_over() -> None:
        # Converted (in apply, on this thread) while the batch before is being written; two
        # batches in flight at most, written in order under the coordinator's write lock.
        nonlocal pending, pending_changes
        inflight.append((apply(pending), pending[-1].end_lsn))
        pending, pending_changes = [], 0
        report_lag()  # received, not yet durable
        settle(keep=MAX_IN_FLIGHT)

    decode_change, decode = pgoutput.decode_change, pgoutput.decode
    while not stop.is_set():
        msg = cur.read_message()
        if msg is None:
            if pending:
                hand_over()
                continue
            settle(keep=len(inflight))
            if not inflight and txn is None and time.monotonic() - last_feedback > 1.0:
                # Idle: confirm what the server says it has sent, so upstream WAL does
                # not pile up while the published tables are quiet.
                confirmed = max(confirmed, getattr(cur, "wal_end", 0) or 0)
                cur.send_feedback(flush_lsn=confirmed, reply=False)
                if on_idle is not None:
                    on_idle(confirmed)
                report_lag()
                last_feedback = time.monotonic()
            select.select([cur], [], [], 0.005 if inflight else 0.2)
            continue
        payload = msg.payload
        change = decode_change(payload)
        if change is not None:
            oid, old, new = change
            txn.changes.append(Change(relations[oid], old, new))
            received += 1
            if not received & 4095:  # now and then within a big transaction
                report_lag()
            continue
        m = decode(payload)
        if isinstance(m, pgoutput.Begin):
            txn = Transaction(m.final_lsn, 0, m.commit_time_us, [])
        elif isinstance(m, pgoutput.Commit):
            txn.commit_lsn, txn.end_lsn = m.commit_lsn, m.end_lsn
            if txn.end_lsn > start_lsn:  # else durable already: a restart re-sent it
                pending.append(txn)
                pending_changes += len(txn.changes)
                if pending_changes >= BATCH_CHANGES:
                    hand_over()
            txn = None
        elif isinstance(m, pgoutput.Relation):
            # A new schema may error a table: everything before it is written first.
            if pending:
                hand_over()
            settle(keep=0)
            relations[m.oid] = m
            if on_relation is not None:
                on_relation(m)
        elif isinstance(m, pgoutput.Truncate):
            txn.truncated.extend(m.relation_oids)
    settle(keep=0)


def _wait(future: Future, stop: threading.Event, patience: float = 30.0) -> None:
    """The future's outcome; once stopping, only for so long: a server shutting down may
    never run the write, and what is durable is known without waiting for it."""
    waited = 0.0
    while True:
        try:
            future.result(timeout=0.5)
            return
        except TimeoutError:
            if stop.is_set():
                waited += 0.5
                if waited >= patience:
                    raise
