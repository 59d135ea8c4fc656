"""One client connection: the pgwire state machine between the codec and a Session.

States follow the protocol: awaiting SSL/startup → authenticating → ready.
Messages are read by a separate task, so a client that goes away while a
statement runs is noticed at once and the statement (and its Spark jobs) is
cancelled. Results leave in batches of DataRows, one socket write per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from planner import statements as st
from planner.codecs.binary_in import decode_binary
from planner.codecs.datarow import encode_rows
from planner.codecs.registry import BINARY, TEXT, codec
from planner.codecs.text_in import decode_text
from planner.errors import (
    ADMIN_SHUTDOWN,
    DUPLICATE_PREPARED_STATEMENT,
    FEATURE_NOT_SUPPORTED,
    INVALID_AUTHORIZATION,
    INVALID_CATALOG_NAME,
    INVALID_CURSOR_NAME,
    INVALID_PASSWORD,
    INVALID_PREPARED_STATEMENT,
    PROTOCOL_VIOLATION,
    QUERY_CANCELED,
    SqlError,
)
from planner.params import infer_types
from planner.parser import parse, parse_one
from planner.types import SqlType
from server import metrics
from server.activity import Activity
from server.copy_format import CopyOptions
from server.copy_out import CopyOut
from server.protocol import messages as m
from server.protocol.frontend import FrontendDecoder, parse_sasl_initial_response
from server.protocol.scram import ScramError, ScramServer
from server.session import Outcome, Session
from server.settings import Settings

log = logging.getLogger("sparkwire.connection")

ROWS_PER_WRITE = 8192
# A streaming SUBSCRIBE takes at most about this much of its buffer per socket write, and
# waits for the socket to drain before taking more: the encoded copy stays small.
BYTES_PER_WRITE = 1 << 20


@dataclass
class Prepared:
    parsed: st.Parsed
    param_types: dict[int, SqlType]

    @property
    def param_list(self) -> list[SqlType]:
        count = max(self.param_types, default=0)
        from planner.params import TEXT

        return [self.param_types.get(i, TEXT) for i in range(1, count + 1)]


@dataclass
class Portal:
    prepared: Prepared
    params: dict[int, object]
    result_formats: tuple[int, ...]
    outcome: Outcome | None = None
    sent: int = 0
    described: list[SqlType] | None = field(default=None)


class Connection:
    def __init__(self, server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.decoder = FrontendDecoder()
        self.session: Session | None = None
        self.pid = server.next_pid()
        self.secret = secrets.randbits(31)
        self.prepared: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.skip_until_sync = False
        self.out: list[bytes] = []
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.closing = False
        self._work: asyncio.Task | None = None
        self.peer = writer.get_extra_info("peername")
        self.tls = False
        self.activity: Activity | None = None  # pg_stat_activity's line, once logged in

    # -- I/O ------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        self.out.append(data)

    def notification(self, pid: int, channel: str, payload: str) -> None:
        """Send a NOTIFY now: PostgreSQL's clients take a NotificationResponse at any time."""
        self.send(m.notification_response(pid, channel, payload))
        task = asyncio.get_running_loop().create_task(self.flush())
        task.add_done_callback(lambda t: t.exception())  # a client gone meanwhile: nothing to do

    async def flush(self) -> None:
        if self.out:
            self.writer.write(b"".join(self.out))
            self.out.clear()
        await self.writer.drain()

    async def _read_loop(self) -> None:
        """Decode messages into the inbox; on EOF stop whatever is running."""
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                for msg in self.decoder.feed(data):
                    await self.inbox.put(msg)
        except m.ProtocolError as err:
            await self.inbox.put(err)
            return
        except (ConnectionError, asyncio.CancelledError):
            pass
        await self.inbox.put(None)
        if self._work is not None and not self._work.done() and not self.closing:
            self._work.cancel()

    async def run(self) -> None:
        reader_task = asyncio.create_task(self._read_loop())
        try:
            if not await self._startup():
                return
            while True:
                msg = await self.inbox.get()
                if msg is None or isinstance(msg, m.Terminate):
                    return
                if isinstance(msg, m.ProtocolError):
                    await self._fatal(msg.sqlstate, msg.message)
                    return
                self._work = asyncio.current_task()
                await self._dispatch(msg)
                self._work = None  # idle again: a disconnect now is no mid-statement one
        except asyncio.CancelledError:
            log.info("client went away mid-statement", extra={"event": "client_gone", "pid": self.pid})
        except (ConnectionError, BrokenPipeError):
            pass
        finally:
            self.closing = True
            reader_task.cancel()
            if self.session is not None:
                metrics.SESSIONS.dec()
                self.server.sessions.pop(self.pid, None)
                await self.session.close()
            with contextlib.suppress(Exception):  # the socket may already be gone
                self.writer.close()

    async def _next(self):
        msg = await self.inbox.get()
        if isinstance(msg, m.ProtocolError):
            await self._fatal(msg.sqlstate, msg.message)
            return None
        return msg

    async def _fatal(self, code: str, message: str) -> None:
        self.send(m.error_response(m.error_fields("FATAL", code, message)))
        try:
            await self.flush()
        except ConnectionError:
            pass

    # -- start-up --------------------------------------------------------------------
    async def _startup(self) -> bool:
        while True:
            msg = await self._next()
            if msg is None:
                return False
            if isinstance(msg, m.SSLRequest) and self.server.tls is not None and not self.tls:
                # Answer 'S' and upgrade in place; nothing is read in between, so the
                # client's TLS handshake reaches the TLS layer, not the decoder.
                self.writer.write(b"S")
                await self.writer.start_tls(self.server.tls)
                self.tls = True
                self.decoder.expect_startup()
                continue
            if isinstance(msg, (m.SSLRequest, m.GSSENCRequest)):
                self.writer.write(m.ssl_refused())
                await self.writer.drain()
                self.decoder.expect_startup()
                continue
            if isinstance(msg, m.CancelRequest):
                self.server.cancel(msg.pid, msg.secret_key)
                return False
            if isinstance(msg, m.StartupMessage):
                return await self._authenticate(msg)
            await self._fatal(PROTOCOL_VIOLATION, f"unexpected {type(msg).__name__} during start-up")
            return False

    async def _authenticate(self, msg: m.StartupMessage) -> bool:
        if msg.needs_negotiation:
            self.send(m.negotiate_protocol_version(0, msg.protocol_options))
        user = msg.params.get("user")
        if not user:
            await self._fatal(INVALID_AUTHORIZATION, "no PostgreSQL user name specified in startup packet")
            return False
        database = msg.params.get("database") or user
        if self.server.config.require_tls and not self.tls:
            await self._fatal(INVALID_AUTHORIZATION, "this server requires TLS: connect with sslmode=require")
            return False
        verifier = self.server.verifier_for(user)
        if self.server.password_required and not await self._scram(user, verifier):
            return False
        if database != "materialize":
            await self._fatal(INVALID_CATALOG_NAME, f'database "{database}" does not exist')
            return False
        settings = Settings(msg.params)
        self.session = Session(self.server.coordinator, user, database, settings, self.pid)
        self.session.on_overflow = self._overflow
        self.session.subscribe_limits = self.server.subscribe_limits
        self.session.deallocate = self._deallocate_statement
        self.session.notify = lambda channel, payload: self.server.notify(self.pid, channel, payload)
        self.session.signal = lambda pid, terminate: self.server.signal(user, pid, terminate)
        peer = self.peer if isinstance(self.peer, tuple) else (None, None)
        local = self.writer.get_extra_info("sockname")
        local = local if isinstance(local, tuple) else (None, None)
        self.session.endpoints = (local[0], local[1], peer[0], peer[1])
        self.activity = Activity(self.pid, user, settings.values.get("application_name", ""),
                                 peer[0], peer[1])
        self.session.server_sources = self.server.sources
        self.server.sessions[self.pid] = self
        metrics.SESSIONS.inc()
        self.send(m.authentication_ok())
        for name, value in settings.reported():
            self.send(m.parameter_status(name, value))
        self.send(m.backend_key_data(self.pid, self.secret))
        for err in settings.startup_errors:
            self._send_error(err, severity="WARNING", notice=True)
        self.send(m.ready_for_query("I"))
        await self.flush()
        return True

    async def _scram(self, user: str, verifier: str | None) -> bool:
        scram = ScramServer(verifier) if verifier else ScramServer.mock(user, self.server.mock_secret)
        self.send(m.authentication_sasl(["SCRAM-SHA-256"]))
        await self.flush()
        try:
            first = await self._next()
            if not isinstance(first, m.PasswordMessage):
                raise ScramError("expected SASL response", PROTOCOL_VIOLATION)
            mechanism, initial = parse_sasl_initial_response(first.data)
            if mechanism != "SCRAM-SHA-256":
                raise ScramError(f"unsupported SASL mechanism {mechanism}", PROTOCOL_VIOLATION)
            self.send(m.authentication_sasl_continue(scram.handle_client_first(initial)))
            await self.flush()
            final = await self._next()
            if not isinstance(final, m.PasswordMessage):
                raise ScramError("expected SASL response", PROTOCOL_VIOLATION)
            self.send(m.authentication_sasl_final(scram.handle_client_final(final.data)))
            return True
        except (ScramError, m.ProtocolError) as err:
            code = getattr(err, "sqlstate", INVALID_PASSWORD)
            message = (f'password authentication failed for user "{user}"'
                       if code == INVALID_PASSWORD else err.message)
            await self._fatal(code, message)
            return False

    # -- dispatch -------------------------------------------------------------------
    async def _dispatch(self, msg) -> None:
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            await self._fatal(PROTOCOL_VIOLATION, f"unexpected message {type(msg).__name__}")
            raise ConnectionError("protocol violation")
        extended = type(msg) in _EXTENDED
        if extended and self.skip_until_sync:
            return
        statement = self._statement_text(msg)
        if statement is not None and self.activity is not None:
            self.activity.start(statement)
        try:
            await handler(self, msg)
        except SqlError as err:
            self._send_error(err)
            await self.session.fail()
            if extended:
                self.skip_until_sync = True
            else:
                self.send(m.ready_for_query(self.session.status))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("internal error")
            self._send_error(SqlError("XX000", f"internal error: {exc}"))
            await self.session.fail()
            if extended:
                self.skip_until_sync = True
            else:
                self.send(m.ready_for_query(self.session.status))
        finally:
            if statement is not None and self.activity is not None:
                self.activity.finish()
        # PostgreSQL flushes every ErrorResponse at once: a client that sent
        # Parse/Describe/Flush (asyncpg) waits for it before sending Sync.
        if not extended or isinstance(msg, m.Flush) or self.skip_until_sync:
            await self.flush()

    def _statement_text(self, msg) -> str | None:
        """The statement a message runs, for pg_stat_activity (None for the others)."""
        if isinstance(msg, m.Query):
            return msg.sql
        if isinstance(msg, m.Execute):
            portal = self.portals.get(msg.portal)
            return portal.prepared.parsed.text if portal is not None else None
        return None

    def _send_error(self, err: SqlError, severity: str | None = None, notice: bool = False) -> None:
        fields = m.error_fields(severity or err.severity, err.sqlstate, err.message,
                                detail=err.detail, hint=err.hint, position=err.position,
                                where=getattr(err, "where", None))
        self.send(m.notice_response(fields) if notice else m.error_response(fields))
        if not notice:
            self.server.metrics_error(err.sqlstate)

    def _send_notices(self, outcome: Outcome) -> None:
        for severity, text in outcome.notices:
            self.send(m.notice_response(m.error_fields(severity, "00000" if severity == "NOTICE" else "01000", text)))
        for name, value in outcome.parameter_changes:
            self.send(m.parameter_status(name, value))

    # -- simple query --------------------------------------------------------------
    async def _query(self, msg: m.Query) -> None:
        session = self.session
        statements = parse(msg.sql)
        if not statements:
            self.send(m.empty_query_response())
            self.send(m.ready_for_query(session.status))
            return
        implicit = len(statements) > 1 and session.txn is None
        if implicit:
            session.begin_implicit()
        for parsed in statements:
            outcome = await session.execute(parsed)
            self._send_notices(outcome)
            if outcome.copy:
                await self._send_copy(outcome)
                continue
            if outcome.copy_in is not None:
                copy_in = outcome.copy_in
                binary = 1 if copy_in.options.format == "binary" else 0
                count = await session.copy_in(copy_in, await self._receive_copy(len(copy_in.positions), binary))
                self.send(m.command_complete(f"COPY {count}"))
                continue
            if outcome.returns_rows:
                self.send(m.row_description(_fields(outcome, ())))
                await self._send_rows(outcome.table, outcome.types, (), 0, outcome.table.num_rows)
            if not isinstance(parsed.statement, st.Empty):
                self.send(m.command_complete(outcome.tag))
            else:
                self.send(m.empty_query_response())
        if implicit:
            await session.end_implicit(success=True)
        self._drop_portals_outside_transaction()
        self.send(m.ready_for_query(session.status))

    async def _receive_copy(self, columns: int, fmt: int = 0) -> bytes:
        """COPY ... FROM STDIN: the client's CopyData until CopyDone, all of it.

        Flush and Sync are ignored in copy-in mode, as PostgreSQL does; CopyFail, or any other
        message, ends the COPY with an error (that message is not run)."""
        self.send(m.copy_in_response(fmt, [fmt] * columns))
        await self.flush()
        chunks: list[bytes] = []
        while True:
            msg = await self.inbox.get()
            if msg is None or isinstance(msg, m.ProtocolError):
                raise ConnectionError("client went away during COPY FROM STDIN")
            if isinstance(msg, m.CopyData):
                chunks.append(msg.data)
            elif isinstance(msg, m.CopyDone):
                return b"".join(chunks)
            elif isinstance(msg, m.CopyFail):
                raise SqlError(QUERY_CANCELED, f"COPY from stdin failed: {msg.message}")
            elif not isinstance(msg, (m.Flush, m.Sync)):
                raise SqlError(PROTOCOL_VIOLATION, f"unexpected message type {type(msg).__name__} during COPY from stdin")

    async def _send_copy(self, outcome: Outcome) -> None:
        """COPY ... TO STDOUT, and a bare SUBSCRIBE: a CopyOut stream of text rows."""
        types = outcome.types
        encoder = CopyOut(outcome.copy_options or CopyOptions(), types)
        fmt = encoder.overall_format
        self.send(m.copy_out_response(fmt, [fmt] * len(types)))
        self.send(encoder.header(outcome.names))
        count = 0
        if outcome.stream is None:
            table = outcome.table
            for start in range(0, table.num_rows, ROWS_PER_WRITE):
                self.send(encoder.messages(table.slice(start, ROWS_PER_WRITE)))
                await self.flush()
            count = table.num_rows
        else:
            sub = outcome.stream
            try:
                while True:
                    await self.session._wait_for_rows(sub, None)
                    tables = sub.take(None, BYTES_PER_WRITE)
                    if tables:
                        for table in tables:
                            self.send(encoder.messages(table))
                            count += table.num_rows
                        await self.flush()
                    if sub.error is not None and not sub.buffered:
                        raise sub.error
                    if sub.drained:
                        break
            finally:
                sub.close()
        self.send(encoder.trailer())
        self.send(m.copy_done())
        self.send(m.command_complete(f"COPY {count}" if outcome.tag == "COPY" else "SUBSCRIBE"))

    async def _send_stream_rows(self, portal: Portal, max_rows: int) -> bool:
        """Execute on a SUBSCRIBE portal; True when the subscription ended.

        Without a row limit, DataRows stream for as long as the subscription runs. With
        one, Execute returns as soon as any rows are ready (up to the limit) and the
        portal is suspended, as Materialize does: a driver's cursor.fetch(5) gets what
        there is rather than waiting for five rows that may never come."""
        sub = portal.outcome.stream
        types = portal.outcome.types
        while True:
            await self.session._wait_for_rows(sub, None)
            tables = sub.take(None if max_rows <= 0 else max_rows, BYTES_PER_WRITE)
            for table in tables:
                await self._send_rows(table, types, portal.result_formats, 0, table.num_rows)
                portal.sent += table.num_rows
            if tables:
                await self.flush()
            if sub.error is not None and not sub.buffered:
                raise sub.error
            if sub.drained:
                return True
            if max_rows > 0 and tables:
                return False

    def _overflow(self) -> None:
        """A subscriber stopped reading: tell it, if the socket still takes data, and hang up."""
        log.warning("subscription buffer full; disconnecting", extra={"event": "overflow", "pid": self.pid})
        transport = self.writer.transport
        with contextlib.suppress(Exception):
            if transport.get_write_buffer_size() < 1 << 20:
                transport.write(m.error_response(m.error_fields(
                    "FATAL", "53400", "subscription buffer full: the client is not reading fast enough")))
        transport.abort()

    async def _send_rows(self, table: pa.Table, types: list[SqlType], formats: tuple[int, ...],
                         start: int, stop: int) -> None:
        for lo in range(start, stop, ROWS_PER_WRITE):
            hi = min(stop, lo + ROWS_PER_WRITE)
            columns = []
            for i, t in enumerate(types):
                arr = table.column(i).slice(lo, hi - lo)
                fmt = BINARY if _format(formats, i) == 1 else TEXT  # any other code: text, as before
                columns.append(codec(t.oid, fmt).encode_column(t, arr))
            self.send(encode_rows(columns, hi - lo))
            if hi - lo == ROWS_PER_WRITE:
                await self.flush()

    # -- extended query ------------------------------------------------------------
    async def _parse(self, msg: m.Parse) -> None:
        if msg.name and msg.name in self.prepared:
            raise SqlError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{msg.name}" already exists')
        parsed = parse_one(msg.sql)
        declared = {i + 1: oid for i, oid in enumerate(msg.param_oids)}
        catalog = self.server.coordinator.catalog

        def columns_of(name: str):
            item = catalog.get(name)
            return [(c.name, c.type) for c in item.columns] if item else None

        types = infer_types(parsed.statement, parsed.params, declared, columns_of)
        self.prepared[msg.name] = Prepared(parsed, types)
        self.send(m.parse_complete())

    def _deallocate_statement(self, name: str | None) -> bool:
        """SQL DEALLOCATE: drop one prepared statement (None: every one)."""
        if name is None:
            self.prepared.clear()
            return True
        return self.prepared.pop(name, None) is not None

    async def _bind(self, msg: m.Bind) -> None:
        prepared = self.prepared.get(msg.statement)
        if prepared is None:
            raise SqlError(INVALID_PREPARED_STATEMENT, f'prepared statement "{msg.statement}" does not exist')
        types = prepared.param_list
        if len(msg.params) != len(types):
            raise SqlError(PROTOCOL_VIOLATION, f"bind message supplies {len(msg.params)} parameters, "
                                               f"but prepared statement \"{msg.statement}\" requires {len(types)}")
        formats = msg.param_formats
        if len(formats) not in (0, 1, len(types)):
            raise SqlError(PROTOCOL_VIOLATION, f"bind message has {len(formats)} parameter formats "
                                               f"but {len(types)} parameters")
        params: dict[int, object] = {}
        for i, (t, raw) in enumerate(zip(types, msg.params)):
            if raw is None:
                params[i + 1] = None
            elif _format(formats, i) == 1:
                params[i + 1] = decode_binary(t, raw, param=i + 1)
            else:
                params[i + 1] = decode_text(t, raw)
        if msg.portal and msg.portal in self.portals:
            raise SqlError("42P03", f'portal "{msg.portal}" already exists')
        self.portals[msg.portal] = Portal(prepared, params, msg.result_formats)
        self.send(m.bind_complete())

    async def _describe(self, msg: m.Describe) -> None:
        if msg.kind == "S":
            prepared = self.prepared.get(msg.name)
            if prepared is None:
                raise SqlError(INVALID_PREPARED_STATEMENT, f'prepared statement "{msg.name}" does not exist')
            self.send(m.parameter_description([t.oid for t in prepared.param_list]))
            shape = await self.session.describe(prepared.parsed, prepared.param_types)
            formats: tuple[int, ...] = ()
        else:
            portal = self.portals.get(msg.name)
            cursor = self.session.cursors.get(msg.name) if portal is None else None
            if cursor is not None:
                # A cursor DECLAREd in SQL is a portal too, as in PostgreSQL: psycopg's
                # server-side cursors describe it after DECLARE.
                shape, formats = (cursor.names, cursor.types), ()
            elif portal is None:
                raise SqlError(INVALID_CURSOR_NAME, f'portal "{msg.name}" does not exist')
            else:
                shape = await self.session.describe(portal.prepared.parsed, portal.prepared.param_types)
                formats = portal.result_formats
        if shape is None:
            self.send(m.no_data())
        else:
            names, types = shape
            self.send(m.row_description(_fields(Outcome("", names, types), formats)))

    async def _execute(self, msg: m.Execute) -> None:
        portal = self.portals.get(msg.portal)
        if portal is None:
            raise SqlError(INVALID_CURSOR_NAME, f'portal "{msg.portal}" does not exist')
        parsed = portal.prepared.parsed
        if isinstance(parsed.statement, st.Empty):
            self.send(m.empty_query_response())
            return
        if portal.outcome is None:
            if self.session.txn is None and isinstance(parsed.statement, (st.Insert, st.Update, st.Delete)):
                # As in PostgreSQL, writes up to Sync are one implicit transaction: a failed
                # statement in a pipeline (psycopg executemany, asyncpg executemany) undoes
                # the writes before it. Sync commits it.
                self.session.begin_implicit()
            portal.outcome = await self.session.execute(parsed, portal.params, portal.prepared.param_types)
            self._send_notices(portal.outcome)
        outcome = portal.outcome
        if outcome.stream is not None:
            try:
                ended = await self._send_stream_rows(portal, msg.max_rows)
            except BaseException:
                outcome.stream.close()
                raise
            if ended:
                outcome.stream.close()
                self.send(m.command_complete("SUBSCRIBE"))
            else:
                self.send(m.portal_suspended())
            return
        if outcome.copy:
            raise SqlError(FEATURE_NOT_SUPPORTED, "COPY TO STDOUT needs the simple query protocol")
        if outcome.copy_in is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "COPY FROM STDIN needs the simple query protocol")
        if not outcome.returns_rows:
            self.send(m.command_complete(outcome.tag))
            return
        total = outcome.table.num_rows
        stop = total if msg.max_rows <= 0 else min(total, portal.sent + msg.max_rows)
        await self._send_rows(outcome.table, outcome.types, portal.result_formats, portal.sent, stop)
        count = stop - portal.sent
        portal.sent = stop
        if stop < total:
            self.send(m.portal_suspended())
        else:
            tag = outcome.tag if outcome.tag.split()[0] != "SELECT" else f"SELECT {count}"
            self.send(m.command_complete(tag))

    async def _close(self, msg: m.Close) -> None:
        if msg.kind == "S":
            self.prepared.pop(msg.name, None)
        else:
            _close_portal(self.portals.pop(msg.name, None))
        self.send(m.close_complete())

    async def _sync(self, msg: m.Sync) -> None:
        self.skip_until_sync = False
        _close_portal(self.portals.pop("", None))
        if self.session.txn is not None and not self.session.txn.explicit:
            await self.session.end_implicit(success=True)
        self._drop_portals_outside_transaction()
        self.send(m.ready_for_query(self.session.status))
        await self.flush()

    def _drop_portals_outside_transaction(self) -> None:
        """Portals end with their transaction, as in PostgreSQL (and their results are freed)."""
        if self.session.txn is None and self.portals:
            for portal in self.portals.values():
                _close_portal(portal)
            self.portals.clear()

    async def _flush(self, msg: m.Flush) -> None:
        await self.flush()

    async def _function_call(self, msg) -> None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "the function call subprotocol is not supported")

    async def _ignore(self, msg) -> None:
        return

    def cancel(self) -> None:
        if self.session is not None:
            self.session.cancel()

    def terminate(self) -> None:
        """pg_terminate_backend: stop what runs, tell the client, close the session."""
        self.cancel()

        async def close() -> None:
            with contextlib.suppress(Exception):  # the client may be gone already
                await self._fatal(ADMIN_SHUTDOWN, "terminating connection due to administrator command")
            await self.inbox.put(None)
            if self._work is not None and not self._work.done():
                self._work.cancel()

        asyncio.get_running_loop().create_task(close())

    async def shutdown(self) -> None:
        await self._fatal(ADMIN_SHUTDOWN, "terminating connection due to administrator command")


def _close_portal(portal: Portal | None) -> None:
    if portal is not None and portal.outcome is not None and portal.outcome.stream is not None:
        portal.outcome.stream.close()


def _format(formats: tuple[int, ...], i: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


def _fields(outcome: Outcome, formats: tuple[int, ...]) -> list[m.FieldDescription]:
    out = []
    for i, (name, t) in enumerate(zip(outcome.names, outcome.types)):
        size = -1 if t.is_array else t.base.typlen
        out.append(m.FieldDescription(name, t.oid, size, t.typmod, _format(formats, i)))
    return out


_HANDLERS: dict[type, Callable] = {
    m.Query: Connection._query,
    m.Parse: Connection._parse,
    m.Bind: Connection._bind,
    m.Describe: Connection._describe,
    m.Execute: Connection._execute,
    m.Close: Connection._close,
    m.Sync: Connection._sync,
    m.Flush: Connection._flush,
    m.FunctionCall: Connection._function_call,
    m.CopyData: Connection._ignore,
    m.CopyDone: Connection._ignore,
    m.CopyFail: Connection._ignore,
}
_EXTENDED = {m.Parse, m.Bind, m.Describe, m.Execute, m.Close, m.Flush}
