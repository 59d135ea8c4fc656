"""Talking to an upstream PostgreSQL: introspection, snapshots, and the replication stream.

Everything here blocks (psycopg2 is the one driver that can stream logical
replication), so the server runs it on threads. The snapshot follows the
postgres-sources design: a replication slot created with USE_SNAPSHOT as the
first statement of a REPEATABLE READ transaction, COPY in that transaction,
then START_REPLICATION from the slot, so there is no gap and no overlap.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import psycopg2
import psycopg2.extras
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

    def connect(self, replication: bool = False, timeout: int = 10):
        kwargs: dict[str, object] = {
            "host": self.host, "port": self.port, "user": self.user, "dbname": self.database,
            "connect_timeout": timeout, "application_name": "sparkwire",
            "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
        if self.password is not None:
            kwargs["password"] = self.password
        if replication:
            kwargs["connection_factory"] = psycopg2.extras.LogicalReplicationConnection
        return psycopg2.connect(**kwargs)


@contextlib.contextmanager
def _cursor(params: Params, timeout: int = 5) -> Iterator:
    """An autocommit cursor on a fresh connection, closed afterwards."""
    conn = params.connect(timeout=timeout)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


def upstream_error(exc: BaseException) -> SqlError:
    """An upstream failure as an error for the user, without secrets."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return SqlError("08006" if isinstance(exc, psycopg2.OperationalError) else "XX000",
                    f"upstream PostgreSQL: {text}")


def check_connection(params: Params) -> None:
    try:
        with _cursor(params) as cur:
            cur.execute("SHOW wal_level")
            level = cur.fetchone()[0]
    except psycopg2.Error as exc:
        raise upstream_error(exc) from exc
    if level != "logical":
        raise SqlError("55000", f"upstream PostgreSQL has wal_level = {level}; logical replication needs "
                                "wal_level = logical",
                       hint="Set wal_level = logical in postgresql.conf and restart the upstream server.")


def check_publication(params: Params, publication: str) -> list[str]:
    """The tables a publication publishes; an error if it does not exist."""
    try:
        with _cursor(params) as cur:
            cur.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,))
            if cur.fetchone() is None:
                raise SqlError("42704", f'publication "{publication}" does not exist upstream')
            cur.execute("SELECT schemaname || '.' || tablename FROM pg_publication_tables "
                        "WHERE pubname = %s ORDER BY 1", (publication,))
            return [r[0] for r in cur.fetchall()]
    except psycopg2.Error as exc:
        raise upstream_error(exc) from exc


def describe_table(params: Params, reference: str, publication: str) -> UpstreamTable:
    schema, _, name = reference.rpartition(".")
    schema = schema or "public"
    try:
        with _cursor(params) as cur:
            cur.execute("SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n "
                        "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
                        "AND c.relkind IN ('r', 'p')", (schema, name))
            row = cur.fetchone()
            if row is None:
                raise SqlError("42P01", f'upstream table "{schema}.{name}" does not exist')
            oid, replident = row
            cur.execute("SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s "
                        "AND tablename = %s", (publication, schema, name))
            if cur.fetchone() is None:
                raise SqlError("55000", f'upstream table "{schema}.{name}" is not in publication '
                                        f'"{publication}"',
                               hint=f"ALTER PUBLICATION {publication} ADD TABLE {schema}.{name};")
            cur.execute(
                "SELECT a.attname, a.atttypid, a.atttypmod, format_type(a.atttypid, a.atttypmod), "
                # Only a true array type (its element's typarray) counts as an array:
                # point, box, name, int2vector ... have a typelem too.
                "CASE WHEN e.typarray = t.oid THEN t.typelem ELSE 0 END, a.attnotnull "
                "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "LEFT JOIN pg_type e ON e.oid = t.typelem "
                "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (oid,))
            cols = tuple(UpstreamColumn(n, t, m, f, e if e else 0, nn) for n, t, m, f, e, nn in cur.fetchall())
    except psycopg2.Error as exc:
        raise upstream_error(exc) from exc
    return UpstreamTable(oid, schema, name, replident, cols)


def drop_slot(params: Params, slot: str, attempts: int = 20) -> bool:
    """Drop a replication slot upstream, waiting for its walsender to let go; False if it is still there."""
    for _ in range(attempts):
        try:
            with _cursor(params) as cur:
                cur.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,))
                row = cur.fetchone()
                if row is None:
                    return True
                if row[0] is not None:
                    cur.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                    time.sleep(0.2)
                    continue
                cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            return True
        except psycopg2.Error as exc:
            log.warning("dropping slot %s failed: %s", slot, exc)
            time.sleep(0.5)
    return False


# -- snapshots -------------------------------------------------------------------

def _copy_fields(line: bytes) -> list[bytes | None]:
    """One line of COPY's text format as raw field values (None for \\N)."""
    out: list[bytes | None] = []
    for raw in line.rstrip(b"\n").split(b"\t"):
        if raw == b"\\N":
            out.append(None)
        elif b"\\" in raw:
            out.append(_unescape(raw))
        else:
            out.append(raw)
    return out


_ESCAPES = {ord("b"): b"\b", ord("f"): b"\f", ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t",
            ord("v"): b"\v", ord("\\"): b"\\"}


def _unescape(raw: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 0x5C and i + 1 < len(raw):
            n = raw[i + 1]
            if n in _ESCAPES:
                out += _ESCAPES[n]
                i += 2
                continue
            if 0x30 <= n <= 0x37:
                j = i + 1
                while j < len(raw) and j < i + 4 and 0x30 <= raw[j] <= 0x37:
                    j += 1
                out.append(int(raw[i + 1:j], 8) & 0xFF)
                i = j
                continue
            if n == ord("x"):
                j = i + 2
                while j < len(raw) and j < i + 4 and chr(raw[j]) in "0123456789abcdefABCDEF":
                    j += 1
                out.append(int(raw[i + 2:j], 16))
                i = j
                continue
            out.append(n)
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


class _Lines:
    """A write-only file that splits COPY output into lines for a callback."""

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self.on_line = on_line
        self.rest = b""

    def write(self, data) -> int:
        data = self.rest + (data.encode() if isinstance(data, str) else bytes(data))
        lines = data.split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            self.on_line(line)
        return len(data)


@dataclass
class Snapshot:
    lsn: int  # the slot's consistent point: commits before it are in the rows
    rows: dict[int, list[list[bytes | None]]] = field(default_factory=dict)  # table oid → rows


def take_snapshot(params: Params, slot: str, tables: list[UpstreamTable], temporary: bool,
                  progress: Callable[[int, int], None] | None = None) -> Snapshot:
    """Create `slot` with USE_SNAPSHOT and COPY `tables` in that snapshot's transaction."""
    conn = params.connect(replication=True)
    try:
        cur = conn.cursor()
        cur.execute("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")
        kind = "TEMPORARY LOGICAL" if temporary else "LOGICAL"
        cur.execute(f"CREATE_REPLICATION_SLOT {pgsql.Identifier(slot).as_string(conn)} {kind} pgoutput "
                    "USE_SNAPSHOT")
        _, consistent_point, _, _ = cur.fetchone()
        snap = Snapshot(pgoutput.str_to_lsn(consistent_point))
        for table in tables:
            rows: list[list[bytes | None]] = []
            snap.rows[table.oid] = rows
            cols = pgsql.SQL(", ").join(pgsql.Identifier(c.name) for c in table.columns)
            query = pgsql.SQL("COPY (SELECT {} FROM {}.{}) TO STDOUT").format(
                cols, pgsql.Identifier(table.schema), pgsql.Identifier(table.name))
            sink = _Lines(lambda line, rows=rows: rows.append(_copy_fields(line)))
            cur.copy_expert(query.as_string(conn), sink)
            if progress is not None:
                progress(table.oid, len(rows))
        cur.execute("COMMIT")
        return snap
    finally:
        conn.close()


# -- the stream -----------------------------------------------------------------------

@dataclass
class Change:
    relation: pgoutput.Relation
    old: tuple | None  # raw values, UNCHANGED_TOAST filled
    new: tuple | None


@dataclass
class Transaction:
    commit_lsn: int
    end_lsn: int
    commit_time_us: int
    changes: list[Change]
    truncated: list[int] = field(default_factory=list)  # relation oids


def stream(params: Params, slot: str, publication: str, start_lsn: int,
           on_commit: Callable[[Transaction], None], stop: threading.Event,
           on_relation: Callable[[pgoutput.Relation], None] | None = None,
           on_idle: Callable[[int], None] | None = None) -> None:
    """Follow the slot until `stop` is set; `on_commit` must return only once the
    transaction is durable, because its end LSN is confirmed upstream right after."""
    conn = params.connect(replication=True)
    try:
        cur = conn.cursor()
        cur.start_replication(slot_name=slot, decode=False, start_lsn=start_lsn,
                              options={"proto_version": "1", "publication_names": publication})
        relations: dict[int, pgoutput.Relation] = {}
        txn: Transaction | None = None
        confirmed = start_lsn
        last_feedback = time.monotonic()
        for msg in _messages(cur, stop):
            if msg is None:
                # Idle: confirm what the server says it has sent, so upstream WAL
                # does not pile up while the published tables are quiet.
                if txn is None and time.monotonic() - last_feedback > 1.0:
                    confirmed = max(confirmed, getattr(cur, "wal_end", 0) or 0)
                    cur.send_feedback(flush_lsn=confirmed, reply=False)
                    if on_idle is not None:
                        on_idle(confirmed)
                    last_feedback = time.monotonic()
                continue
            m = pgoutput.decode(msg.payload)
            if isinstance(m, pgoutput.Begin):
                txn = Transaction(m.final_lsn, 0, m.commit_time_us, [])
            elif isinstance(m, pgoutput.Relation):
                relations[m.oid] = m
                if on_relation is not None:
                    on_relation(m)
            elif isinstance(m, pgoutput.Insert):
                txn.changes.append(Change(relations[m.relation_oid], None, _values(m.new)))
            elif isinstance(m, pgoutput.Update):
                old = _values(m.old) if m.old is not None else None
                new = pgoutput.fill_unchanged_toast(m.new, m.old)
                txn.changes.append(Change(relations[m.relation_oid], old, _values(new)))
            elif isinstance(m, pgoutput.Delete):
                txn.changes.append(Change(relations[m.relation_oid], _values(m.old), None))
            elif isinstance(m, pgoutput.Truncate):
                txn.truncated.extend(m.relation_oids)
            elif isinstance(m, pgoutput.Commit):
                txn.commit_lsn, txn.end_lsn = m.commit_lsn, m.end_lsn
                if txn.end_lsn > start_lsn:
                    on_commit(txn)
                confirmed = max(confirmed, m.end_lsn)
                cur.send_feedback(flush_lsn=confirmed, reply=False)
                last_feedback = time.monotonic()
                txn = None
    finally:
        conn.close()


def _values(tuple_data) -> tuple:
    return tuple(tuple_data.values) if hasattr(tuple_data, "values") else tuple(tuple_data)


def _messages(cur, stop: threading.Event) -> Iterator:
    while not stop.is_set():
        msg = cur.read_message()
        if msg is not None:
            yield msg
            continue
        yield None
        select.select([cur], [], [], 0.2)
