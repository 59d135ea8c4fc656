"""One client connection: the pgwire state machine between the codec and a Session.

The connection is always in one explicit protocol state (server.protocol.states.State):
awaiting SSL/startup → authenticating (SASL) → ready, with failed-extended (skip to Sync)
and copy-in along the way; each state has one handler, and only it reads a message.
Messages are read by a separate task, so a client that goes away while a statement runs
is noticed at once and the statement (and its Spark jobs) is cancelled. What a statement
produced (an Outcome) is matched once, for the simple and the extended protocol alike;
results leave in batches (server.results), one socket write per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from planner import statements as st
from planner.codecs.binary_in import decode_binary
from planner.codecs.datarow import column_formats
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
    SqlError,
)
from planner.parser import parse, parse_one
from planner.types import SqlType
from server import metrics
from server.activity import Activity
from server.copy_format import CopyOptions
from server.outcome import CommandDone, CopyIn, CopyOut, EmptyQuery, Outcome, Rows, Stream
from server.param_types import statement_param_types
from server.prepared import Prepared
from server.protocol import messages as m
from server.protocol.frontend import FrontendDecoder, parse_sasl_initial_response
from server.protocol.scram import ScramError, ScramServer
from server.protocol.states import EXTENDED, CopyInCollector, State
from server.results import ResultWriter, fields, format_of
from server.session import Session
from server.settings import Settings

log = logging.getLogger("sparkwire.connection")


@dataclass
class Portal:
    prepared: Prepared
    params: dict[int, object]
    result_formats: tuple[int, ...]
    outcome: Outcome | None = None
    sent: int = 0
    described: list[SqlType] | None = field(default=None)


@dataclass
class _Login:
    """A start-up under way while SCRAM runs: who asked, and the exchange so far."""

    startup: m.StartupMessage
    user: str
    database: str
    scram: ScramServer


class Connection:
    def __init__(self, server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.decoder = FrontendDecoder()
        self.state = State.AWAITING_STARTUP
        self.session: Session | None = None
        self.pid = server.next_pid()
        self.secret = secrets.randbits(31)
        self.prepared: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.out: list[bytes] = []
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.closing = False
        self._work: asyncio.Task | None = None
        self._login: _Login | None = None  # SASL states: the start-up being authenticated
        self._copy_in: CopyInCollector | None = None  # IN_COPY_IN: the data so far
        self._copy_in_resume = State.READY  # IN_COPY_IN: the state to go back to
        self.peer = writer.get_extra_info("peername")
        self.tls = False
        self.activity: Activity | None = None  # pg_stat_activity's line, once logged in
        self.results = ResultWriter(self.send, self.flush,
                                    lambda sub: self.session.wait_for_rows(sub, None))

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
            while self.state is not State.CLOSED:
                await self._step()
        except asyncio.CancelledError:
            log.info("client went away mid-statement", extra={"event": "client_gone", "pid": self.pid})
        except (ConnectionError, BrokenPipeError):
            pass
        finally:
            self.state = State.CLOSED
            self.closing = True
            reader_task.cancel()
            if self.session is not None:
                metrics.SESSIONS.dec()
                self.server.sessions.pop(self.pid, None)
                await self.session.close()
            with contextlib.suppress(Exception):  # the socket may already be gone
                self.writer.close()

    async def _step(self) -> None:
        """Take the next message (None: the client went away; a ProtocolError: bytes that are
        no message) and give it to the handler of the state the connection is in."""
        msg = await self.inbox.get()
        await _STATE_HANDLERS[self.state](self, msg)

    async def _fatal(self, code: str, message: str) -> None:
        self.send(m.error_response(m.error_fields("FATAL", code, message)))
        try:
            await self.flush()
        except ConnectionError:
            pass

    async def _refuse(self, code: str, message: str) -> None:
        """End the connection with a FATAL error."""
        await self._fatal(code, message)
        self.state = State.CLOSED

    async def _close_with(self, err: m.ProtocolError) -> None:
        """Bytes that are no message: PostgreSQL ends the connection with a FATAL error."""
        await self._refuse(err.sqlstate, err.message)

    # -- start-up: AWAITING_STARTUP ----------------------------------------------------
    async def _on_awaiting_startup(self, msg) -> None:
        if msg is None:
            self.state = State.CLOSED
        elif isinstance(msg, m.ProtocolError):
            await self._close_with(msg)
        elif isinstance(msg, m.SSLRequest) and self.server.tls is not None and not self.tls:
            # Answer 'S' and upgrade in place; nothing is read in between, so the
            # client's TLS handshake reaches the TLS layer, not the decoder.
            self.writer.write(b"S")
            await self.writer.start_tls(self.server.tls)
            self.tls = True
            self.decoder.expect_startup()
        elif isinstance(msg, (m.SSLRequest, m.GSSENCRequest)):
            self.writer.write(m.ssl_refused())
            await self.writer.drain()
            self.decoder.expect_startup()
        elif isinstance(msg, m.CancelRequest):
            self.server.cancel(msg.pid, msg.secret_key)
            self.state = State.CLOSED
        elif isinstance(msg, m.StartupMessage):
            await self._startup(msg)
        else:
            await self._refuse(PROTOCOL_VIOLATION, f"unexpected {type(msg).__name__} during start-up")

    async def _startup(self, msg: m.StartupMessage) -> None:
        """Check a StartupMessage; then SCRAM (the SASL states) or straight to logging in."""
        if msg.needs_negotiation:
            self.send(m.negotiate_protocol_version(0, msg.protocol_options))
        user = msg.params.get("user")
        if not user:
            await self._refuse(INVALID_AUTHORIZATION, "no PostgreSQL user name specified in startup packet")
            return
        database = msg.params.get("database") or user
        if self.server.config.require_tls and not self.tls:
            await self._refuse(INVALID_AUTHORIZATION, "this server requires TLS: connect with sslmode=require")
            return
        verifier = self.server.verifier_for(user)
        if not self.server.password_required:
            await self._log_in(msg, user, database)
            return
        scram = ScramServer(verifier) if verifier else ScramServer.mock(user, self.server.mock_secret)
        self._login = _Login(msg, user, database, scram)
        self.send(m.authentication_sasl(["SCRAM-SHA-256"]))
        await self.flush()
        self.state = State.SASL_INITIAL

    # -- start-up: SASL_INITIAL, SASL_FINAL --------------------------------------------
    async def _on_sasl_initial(self, msg) -> None:
        login = self._login
        if isinstance(msg, m.ProtocolError):
            await self._close_with(msg)
            return
        try:
            mechanism, initial = parse_sasl_initial_response(_sasl_response(msg))
            if mechanism != "SCRAM-SHA-256":
                raise ScramError(f"unsupported SASL mechanism {mechanism}", PROTOCOL_VIOLATION)
            self.send(m.authentication_sasl_continue(login.scram.handle_client_first(initial)))
        except (ScramError, m.ProtocolError) as err:
            await self._auth_failed(err)
            return
        await self.flush()
        self.state = State.SASL_FINAL

    async def _on_sasl_final(self, msg) -> None:
        login = self._login
        if isinstance(msg, m.ProtocolError):
            await self._close_with(msg)
            return
        try:
            self.send(m.authentication_sasl_final(login.scram.handle_client_final(_sasl_response(msg))))
        except (ScramError, m.ProtocolError) as err:
            await self._auth_failed(err)
            return
        self._login = None
        await self._log_in(login.startup, login.user, login.database)

    async def _auth_failed(self, err: ScramError | m.ProtocolError) -> None:
        code = getattr(err, "sqlstate", INVALID_PASSWORD)
        message = (f'password authentication failed for user "{self._login.user}"'
                   if code == INVALID_PASSWORD else err.message)
        self._login = None
        await self._refuse(code, message)

    async def _log_in(self, msg: m.StartupMessage, user: str, database: str) -> None:
        """Authenticated: open the session, tell the client its settings, and be READY."""
        if database != "materialize":
            await self._refuse(INVALID_CATALOG_NAME, f'database "{database}" does not exist')
            return
        settings = Settings(msg.params)
        self.session = Session(self.server.coordinator, user, database, settings, self.pid)
        self.session.on_overflow = self._overflow
        self.session.subscribe_limits = self.server.subscribe_limits
        self.session.deallocate = self._deallocate_statement
        self.session.prepared = self.prepared  # SQL PREPARE's statements live with Parse's
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
        self.state = State.READY

    # -- READY, FAILED_EXTENDED --------------------------------------------------------
    async def _on_ready(self, msg) -> None:
        if msg is None or isinstance(msg, m.Terminate):
            self.state = State.CLOSED
        elif isinstance(msg, m.ProtocolError):
            await self._close_with(msg)
        else:
            self._work = asyncio.current_task()
            await self._dispatch(msg)
            self._work = None  # idle again: a disconnect now is no mid-statement one

    async def _on_failed_extended(self, msg) -> None:
        """After an extended-query message failed, PostgreSQL skips the rest up to Sync
        (which answers ReadyForQuery); other messages mean what they mean when READY."""
        if type(msg) in EXTENDED:
            return
        await self._on_ready(msg)

    async def _dispatch(self, msg) -> None:
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            await self._fatal(PROTOCOL_VIOLATION, f"unexpected message {type(msg).__name__}")
            raise ConnectionError("protocol violation")
        extended = type(msg) in EXTENDED
        statement = self._statement_text(msg)
        if statement is not None and self.activity is not None:
            self.activity.start(statement)
        try:
            await handler(self, msg)
        except SqlError as err:
            await self._failed(err, extended)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("internal error")
            await self._failed(SqlError("XX000", f"internal error: {exc}"), extended)
        finally:
            if statement is not None and self.activity is not None:
                self.activity.finish()
        # PostgreSQL flushes every ErrorResponse at once: a client that sent
        # Parse/Describe/Flush (asyncpg) waits for it before sending Sync.
        if not extended or isinstance(msg, m.Flush) or self.state is State.FAILED_EXTENDED:
            await self.flush()

    async def _failed(self, err: SqlError, extended: bool) -> None:
        """A message failed: report it; an extended one skips to Sync, a Query is over."""
        self._send_error(err)
        await self.session.fail()
        if extended:
            self.state = State.FAILED_EXTENDED
        else:
            self.send(m.ready_for_query(self.session.status))

    def _statement_text(self, msg) -> str | None:
        """The statement a message runs, for pg_stat_activity (None for the others)."""
        if isinstance(msg, m.Query):
            return msg.sql
        if isinstance(msg, m.Execute):
            portal = self.portals.get(msg.portal)
            return portal.prepared.parsed.text if portal is not None else None
        return None

    def _send_error(self, err: SqlError, severity: str | None = None, notice: bool = False) -> None:
        body = m.error_fields(severity or err.severity, err.sqlstate, err.message,
                              detail=err.detail, hint=err.hint, position=err.position,
                              where=getattr(err, "where", None))
        self.send(m.notice_response(body) if notice else m.error_response(body))
        if not notice:
            self.server.metrics_error(err.sqlstate)

    # -- IN_COPY_IN ----------------------------------------------------------------------
    async def _on_copy_in(self, msg) -> None:
        if self._copy_in.feed(msg):
            self.state = self._copy_in_resume

    async def _receive_copy(self, columns: int, fmt: int) -> bytes:
        """COPY ... FROM STDIN: the client's CopyData until CopyDone, all of it. The
        connection is IN_COPY_IN meanwhile, and returns to the state it was in."""
        self.send(m.copy_in_response(fmt, [fmt] * columns))
        await self.flush()
        self._copy_in, self._copy_in_resume = CopyInCollector(), self.state
        self.state = State.IN_COPY_IN
        try:
            while self.state is State.IN_COPY_IN:
                await self._step()
            return self._copy_in.data
        finally:
            self.state = self._copy_in_resume
            self._copy_in = None

    # -- results: every kind of Outcome, for a Query or an Execute ------------------------
    def _send_notices(self, outcome: Outcome) -> None:
        for severity, text in outcome.notices:
            self.send(m.notice_response(m.error_fields(severity, "00000" if severity == "NOTICE" else "01000", text)))
        for name, value in outcome.parameter_changes:
            self.send(m.parameter_status(name, value))

    async def _send_outcome(self, outcome: Outcome, portal: Portal | None, max_rows: int = 0) -> None:
        """Send what a statement produced: to a simple Query (portal None) or to an Execute
        on `portal` (up to max_rows rows; 0: all)."""
        match outcome, portal:
            case CommandDone(tag=tag), _:
                self.send(m.command_complete(tag))
            case EmptyQuery(), _:
                self.send(m.empty_query_response())
            case Rows(), None:
                self.send(m.row_description(fields(outcome.names, outcome.types, ())))
                await self.results.rows(outcome.table, outcome.types, (), 0, outcome.table.num_rows,
                                        outcome.encoded)
                self.send(m.command_complete(outcome.tag))
                _all_sent(outcome, ())
            case Rows(), Portal():
                await self._send_portal_rows(outcome, portal, max_rows)
            case CopyOut(), None:
                count = await self.results.copy_table(outcome.names, outcome.types, outcome.options, outcome.table)
                self.send(m.command_complete(f"COPY {count}"))
            case Stream(), None:  # a bare SUBSCRIBE, or COPY (SUBSCRIBE ...) TO STDOUT
                await self.results.copy_stream(outcome.names, outcome.types,
                                               outcome.copy_options or CopyOptions(), outcome.subscription)
                self.send(m.command_complete(outcome.tag))
            case Stream(), Portal():
                await self._send_portal_stream(outcome, portal, max_rows)
            case CopyIn(), None:
                binary = 1 if outcome.options.format == "binary" else 0
                data = await self._receive_copy(len(outcome.positions), binary)
                count = await self.session.copy_in(outcome, data)
                self.send(m.command_complete(f"COPY {count}"))
            case CopyOut(), Portal():
                raise SqlError(FEATURE_NOT_SUPPORTED, "COPY TO STDOUT needs the simple query protocol")
            case CopyIn(), Portal():
                raise SqlError(FEATURE_NOT_SUPPORTED, "COPY FROM STDIN needs the simple query protocol")
            case _:
                raise TypeError(f"unknown outcome {type(outcome).__name__}")

    async def _send_portal_rows(self, outcome: Rows, portal: Portal, max_rows: int) -> None:
        """Rows from where the portal's last Execute stopped; suspended if more are left."""
        total = outcome.table.num_rows
        stop = total if max_rows <= 0 else min(total, portal.sent + max_rows)
        await self.results.rows(outcome.table, outcome.types, portal.result_formats, portal.sent, stop,
                                outcome.encoded)
        count = stop - portal.sent
        portal.sent = stop
        if stop < total:
            self.send(m.portal_suspended())
        else:
            tag = outcome.tag if outcome.tag.split()[0] != "SELECT" else f"SELECT {count}"
            self.send(m.command_complete(tag))
            _all_sent(outcome, portal.result_formats)

    async def _send_portal_stream(self, outcome: Stream, portal: Portal, max_rows: int) -> None:
        """A SUBSCRIBE's rows as DataRows; suspended at a row limit, closed when it ends."""
        sub = outcome.subscription
        try:
            sent, ended = await self.results.stream_rows(sub, outcome.types, portal.result_formats, max_rows)
        except BaseException:
            sub.close()
            raise
        portal.sent += sent
        if ended:
            sub.close()
            self.send(m.command_complete(outcome.tag))
        else:
            self.send(m.portal_suspended())

    # -- simple query --------------------------------------------------------------------
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
            await self._send_outcome(outcome, None)
        if implicit:
            await session.end_implicit(success=True)
        self._drop_portals_outside_transaction()
        self.send(m.ready_for_query(session.status))

    def _overflow(self) -> None:
        """A subscriber stopped reading: tell it, if the socket still takes data, and hang up."""
        log.warning("subscription buffer full; disconnecting", extra={"event": "overflow", "pid": self.pid})
        transport = self.writer.transport
        with contextlib.suppress(Exception):
            if transport.get_write_buffer_size() < 1 << 20:
                transport.write(m.error_response(m.error_fields(
                    "FATAL", "53400", "subscription buffer full: the client is not reading fast enough")))
        transport.abort()

    # -- extended query ------------------------------------------------------------
    async def _parse(self, msg: m.Parse) -> None:
        if msg.name and msg.name in self.prepared:
            raise SqlError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{msg.name}" already exists')
        parsed = parse_one(msg.sql)
        declared = {i + 1: oid for i, oid in enumerate(msg.param_oids)}
        types = statement_param_types(parsed.statement, parsed.params, declared, self.session.catalog,
                                      self.session.settings.get("sql_frontend") == "postgres")
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
            elif format_of(formats, i) == 1:
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
            self.send(m.row_description(fields(names, types, formats)))

    async def _execute(self, msg: m.Execute) -> None:
        portal = self.portals.get(msg.portal)
        if portal is None:
            raise SqlError(INVALID_CURSOR_NAME, f'portal "{msg.portal}" does not exist')
        parsed = portal.prepared.parsed
        if portal.outcome is None and isinstance(parsed.statement, st.Empty):
            # Not run at all (so not refused in a failed transaction), as in PostgreSQL.
            portal.outcome = EmptyQuery()
        if portal.outcome is None:
            if self.session.txn is None and isinstance(parsed.statement, (st.Insert, st.Update, st.Delete, st.Truncate)):
                # As in PostgreSQL, writes up to Sync are one implicit transaction: a failed
                # statement in a pipeline (psycopg executemany, asyncpg executemany) undoes
                # the writes before it. Sync commits it.
                self.session.begin_implicit()
            portal.outcome = await self.session.execute(parsed, portal.params, portal.prepared.param_types)
            self._send_notices(portal.outcome)
        await self._send_outcome(portal.outcome, portal, msg.max_rows)

    async def _close(self, msg: m.Close) -> None:
        if msg.kind == "S":
            self.prepared.pop(msg.name, None)
        else:
            _close_portal(self.portals.pop(msg.name, None))
        self.send(m.close_complete())

    async def _sync(self, msg: m.Sync) -> None:
        self.state = State.READY  # the end of any skipping after a failed extended message
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


def _all_sent(outcome: Rows, formats: tuple[int, ...]) -> None:
    """A result's rows are all out, in these formats: what its producer asked to hear."""
    if outcome.then is not None:
        outcome.then(column_formats(formats, len(outcome.types)))


def _close_portal(portal: Portal | None) -> None:
    """A portal's end: a SUBSCRIBE it was reading stops."""
    if portal is not None and isinstance(portal.outcome, Stream):
        portal.outcome.subscription.close()


def _sasl_response(msg) -> bytes:
    """The payload of the client's SASL message; anything else (None: it went away) fails."""
    if not isinstance(msg, m.PasswordMessage):
        raise ScramError("expected SASL response", PROTOCOL_VIOLATION)
    return msg.data


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
# What a message means depends on the state alone: one handler per state.
_STATE_HANDLERS: dict[State, Callable] = {
    State.AWAITING_STARTUP: Connection._on_awaiting_startup,
    State.SASL_INITIAL: Connection._on_sasl_initial,
    State.SASL_FINAL: Connection._on_sasl_final,
    State.READY: Connection._on_ready,
    State.FAILED_EXTENDED: Connection._on_failed_extended,
    State.IN_COPY_IN: Connection._on_copy_in,
}
