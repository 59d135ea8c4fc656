"""Queries to an upstream PostgreSQL, on asyncpg: everything but the replication stream.

Validating a connection, checking a publication, introspecting a published table and
dropping a replication slot are plain SQL, so they run on asyncpg, on the event loop, without
holding a thread; each query is composed with buildpg (`:name` placeholders become `$n`
parameters, never text spliced into SQL). The replication stream and the snapshot (its slot
is created with USE_SNAPSHOT inside the COPY's transaction, over the replication protocol)
stay on psycopg2 in postgres_source, the one driver that can stream logical replication.

Errors keep the SQLSTATEs the psycopg2 version gave: anything that fails while connecting, a
lost connection, and server errors of the classes psycopg2 calls OperationalError are 08006;
other server errors are XX000. Messages name the host the way libpq does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator

import asyncpg
from buildpg import render

from planner.errors import SqlError
from spark_backend.postgres_source import Params, UpstreamColumn, UpstreamTable

log = logging.getLogger("sparkwire.postgres")

# What a failing upstream raises through asyncpg: server errors, a connection that broke or
# could not be made (OSError covers refused, reset and unresolvable hosts), and timeouts.
ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)

CONNECT_TIMEOUT = 5.0
# psycopg2 had TCP keepalives to notice a dead upstream mid-query; asyncpg has none, so a
# catalog query that gets no answer for this long fails instead of hanging the statement.
COMMAND_TIMEOUT = 30.0

# SQLSTATE classes psycopg2 raises as OperationalError: what used to become 08006.
_OPERATIONAL_CLASSES = frozenset(("08", "26", "27", "28", "34", "40", "53", "54", "55", "57", "58", "HV"))


def connect_error(params: Params, exc: BaseException) -> SqlError:
    """A failure to connect, worded as libpq words it (host named, no secrets)."""
    if isinstance(exc, socket.gaierror):
        text = f'could not translate host name "{params.host}" to address: {exc.strerror}'
    else:
        if isinstance(exc, TimeoutError):
            reason = "timeout expired"
        elif isinstance(exc, OSError) and exc.errno:
            reason = os.strerror(exc.errno)  # asyncio's own text is "Connect call failed (...)"
        else:
            reason = _first_line(exc)
        text = f'connection to server at "{params.host}", port {params.port} failed: {reason}'
    return SqlError("08006", f"upstream PostgreSQL: {text}")


def query_error(exc: BaseException) -> SqlError:
    """A failure after connecting: 08006 for what psycopg2 called operational, else XX000."""
    if isinstance(exc, asyncpg.PostgresError):
        code = "08006" if (exc.sqlstate or "")[:2] in _OPERATIONAL_CLASSES else "XX000"
        text = f"{getattr(exc, 'severity', None) or 'ERROR'}:  {_first_line(exc)}"
    else:  # a lost connection or no answer in time
        code = "08006"
        text = "timeout expired" if isinstance(exc, TimeoutError) else _first_line(exc)
    return SqlError(code, f"upstream PostgreSQL: {text}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextlib.asynccontextmanager
async def _session(params: Params) -> AsyncIterator[asyncpg.Connection]:
    """A fresh connection (autocommit, as asyncpg's are outside a transaction), closed afterwards."""
    try:
        conn = await asyncpg.connect(
            host=params.host, port=params.port, user=params.user, password=params.password,
            database=params.database, timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT,
            server_settings={"application_name": "sparkwire"})
    except ERRORS as exc:
        raise connect_error(params, exc) from exc
    try:
        yield conn
    finally:
        try:
            await conn.close(timeout=2)
        except ERRORS:  # already broken: drop it without the goodbye
            conn.terminate()


async def _fetch(conn: asyncpg.Connection, template: str, **values: object) -> list[asyncpg.Record]:
    query, args = render(template, **values)
    return await conn.fetch(query, *args)


async def check_connection(params: Params) -> None:
    """The upstream is reachable with these credentials and can do logical replication."""
    async with _session(params) as conn:
        try:
            level = (await _fetch(conn, "SELECT current_setting('wal_level')"))[0][0]
        except ERRORS as exc:
            raise query_error(exc) from exc
    if level != "logical":
        raise SqlError("55000", f"upstream PostgreSQL has wal_level = {level}; logical replication needs "
                                "wal_level = logical",
                       hint="Set wal_level = logical in postgresql.conf and restart the upstream server.")


async def check_publication(params: Params, publication: str) -> list[str]:
    """The tables a publication publishes; an error if it does not exist."""
    async with _session(params) as conn:
        try:
            found = await _fetch(conn, "SELECT 1 FROM pg_publication WHERE pubname = :pub", pub=publication)
            if not found:
                raise SqlError("42704", f'publication "{publication}" does not exist upstream')
            rows = await _fetch(conn, "SELECT schemaname || '.' || tablename FROM pg_publication_tables "
                                      "WHERE pubname = :pub ORDER BY 1", pub=publication)
        except ERRORS as exc:
            raise query_error(exc) from exc
    return [r[0] for r in rows]


async def describe_table(params: Params, reference: str, publication: str) -> UpstreamTable:
    """The published upstream table `reference` names ([schema.]name, public by default)."""
    schema, _, name = reference.rpartition(".")
    schema = schema or "public"
    async with _session(params) as conn:
        try:
            rows = await _fetch(
                # asyncpg reads a "char" as bytes; its text is what the table's record holds.
                conn, "SELECT c.oid, c.relreplident::text FROM pg_class c JOIN pg_namespace n "
                      "ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relname = :name "
                      "AND c.relkind IN ('r', 'p')", schema=schema, name=name)
            if not rows:
                raise SqlError("42P01", f'upstream table "{schema}.{name}" does not exist')
            oid, replident = rows[0]
            published = await _fetch(
                conn, "SELECT 1 FROM pg_publication_tables WHERE pubname = :pub AND schemaname = :schema "
                      "AND tablename = :name", pub=publication, schema=schema, name=name)
            if not published:
                raise SqlError("55000", f'upstream table "{schema}.{name}" is not in publication '
                                        f'"{publication}"',
                               hint=f"ALTER PUBLICATION {publication} ADD TABLE {schema}.{name};")
            attrs = await _fetch(
                conn, "SELECT a.attname, a.atttypid, a.atttypmod, format_type(a.atttypid, a.atttypmod), "
                      # Only a true array type (its element's typarray) counts as an array:
                      # point, box, name, int2vector ... have a typelem too.
                      "CASE WHEN e.typarray = t.oid THEN t.typelem ELSE 0 END, a.attnotnull "
                      "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                      "LEFT JOIN pg_type e ON e.oid = t.typelem "
                      "WHERE a.attrelid = :oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                oid=oid)
        except ERRORS as exc:
            raise query_error(exc) from exc
    cols = tuple(UpstreamColumn(n, t, m, f, e if e else 0, nn) for n, t, m, f, e, nn in attrs)
    return UpstreamTable(oid, schema, name, replident, cols)


async def drop_slot(params: Params, slot: str, attempts: int = 20) -> bool:
    """Drop a replication slot upstream, waiting for its walsender to let go; False if it is still there."""
    for _ in range(attempts):
        try:
            async with _session(params) as conn:
                rows = await _fetch(conn, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = :slot",
                                    slot=slot)
                if not rows:
                    return True
                if rows[0][0] is not None:
                    await _fetch(conn, "SELECT pg_terminate_backend(:pid)", pid=rows[0][0])
                    await asyncio.sleep(0.2)
                    continue
                await _fetch(conn, "SELECT pg_drop_replication_slot(:slot)", slot=slot)
            return True
        except (SqlError, *ERRORS) as exc:  # SqlError: could not connect
            log.warning("dropping slot %s failed: %s", slot, exc)
            await asyncio.sleep(0.5)
    return False
