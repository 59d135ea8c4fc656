"""Decoding what a PostgreSQL client sends: bytes in, frontend messages out, free of I/O.

:class:`FrontendDecoder` is incremental: it takes bytes as they arrive and yields whole
messages (server.protocol.messages' values), knowing which framing applies in each phase
of a connection (the untyped startup packet, then typed messages) and refusing what
PostgreSQL refuses (oversized or malformed messages) with a ProtocolViolation. The
'p' message's payload depends on the authentication under way, so the connection parses
it with :func:`parse_password` or :func:`parse_sasl_initial_response`.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import NamedTuple, NoReturn

from server.protocol.messages import (
    AUTH_MESSAGE_LIMIT,
    CANCEL_REQUEST_CODE,
    CHARACTER_NOT_IN_REPERTOIRE_SQLSTATE,
    DEFAULT_MAX_MESSAGE_SIZE,
    GSSENC_REQUEST_CODE,
    MAX_STARTUP_PACKET_SIZE,
    PROTOCOL_MAJOR,
    SMALL_MESSAGE_LIMIT,
    SSL_REQUEST_CODE,
    Bind,
    CancelRequest,
    Close,
    CopyData,
    CopyDone,
    CopyFail,
    Describe,
    Execute,
    Flush,
    FrontendMessage,
    FunctionCall,
    GSSENCRequest,
    Parse,
    PasswordMessage,
    ProtocolViolation,
    Query,
    SSLRequest,
    StartupMessage,
    Sync,
    Terminate,
    UnsupportedProtocol,
)

_I16 = struct.Struct("!h")
_U16 = struct.Struct("!H")
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")


# --------------------------------------------------------------------------
# Body parsing
# --------------------------------------------------------------------------


class _Reader:
    """Cursor over one message body that turns every shortfall into a ProtocolViolation."""

    __slots__ = ("_data", "_pos", "_what")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._pos = 0
        self._what = what

    def fail(self, detail: str) -> NoReturn:
        raise ProtocolViolation(f"invalid {self._what} message: {detail}")

    def _need(self, n: int, field: str) -> int:
        pos = self._pos
        if len(self._data) - pos < n:
            self.fail(f"truncated while reading {field}")
        self._pos = pos + n
        return pos

    def cstring(self, field: str) -> str:
        data = self._data
        end = data.find(b"\0", self._pos)
        if end < 0:
            self.fail(f"missing NUL terminator in {field}")
        raw = data[self._pos : end]
        self._pos = end + 1
        return _decode_text(raw, f"{self._what} {field}")

    def int16(self, field: str) -> int:
        return _I16.unpack_from(self._data, self._need(2, field))[0]

    def uint16(self, field: str) -> int:
        return _U16.unpack_from(self._data, self._need(2, field))[0]

    def int32(self, field: str) -> int:
        return _I32.unpack_from(self._data, self._need(4, field))[0]

    def uint32(self, field: str) -> int:
        return _U32.unpack_from(self._data, self._need(4, field))[0]

    def int16_array(self, count: int, field: str) -> tuple[int, ...]:
        pos = self._need(2 * count, field)
        return struct.unpack_from(f"!{count}h", self._data, pos)

    def uint32_array(self, count: int, field: str) -> tuple[int, ...]:
        pos = self._need(4 * count, field)
        return struct.unpack_from(f"!{count}I", self._data, pos)

    def take(self, n: int, field: str) -> bytes:
        pos = self._need(n, field)
        return self._data[pos : pos + n]

    def kind(self, field: str) -> str:
        """Read the one-byte 'S'/'P' selector used by Describe and Close."""
        value = chr(self._data[self._need(1, field)])
        if value not in ("S", "P"):
            self.fail(f"{field} must be 'S' or 'P', got {value!r}")
        return value

    def finish(self) -> None:
        """Reject trailing bytes: they mean the client and we disagree on framing."""
        extra = len(self._data) - self._pos
        if extra:
            self.fail(f"{extra} unexpected trailing byte(s)")


def _decode_text(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation(
            f'invalid byte sequence for encoding "UTF8" in {where}',
            CHARACTER_NOT_IN_REPERTOIRE_SQLSTATE,
        ) from exc


def _decode_query(body: bytes) -> Query:
    r = _Reader(body, "Query")
    sql = r.cstring("query string")
    r.finish()
    return Query(sql)


def _decode_parse(body: bytes) -> Parse:
    r = _Reader(body, "Parse")
    name = r.cstring("statement name")
    sql = r.cstring("query string")
    count = r.uint16("parameter type count")
    oids = r.uint32_array(count, "parameter types")
    r.finish()
    return Parse(name, sql, oids)


def _decode_bind(body: bytes) -> Bind:
    r = _Reader(body, "Bind")
    portal = r.cstring("portal name")
    statement = r.cstring("statement name")
    param_formats = r.int16_array(
        r.uint16("parameter format count"), "parameter formats"
    )
    nparams = r.uint16("parameter count")
    if len(param_formats) > 1 and len(param_formats) != nparams:
        r.fail(f"{len(param_formats)} parameter formats but {nparams} parameters")
    params: list[bytes | None] = []
    append = params.append
    for i in range(nparams):
        size = r.int32(f"length of parameter {i + 1}")
        if size == -1:
            append(None)
        elif size < 0:
            r.fail(f"invalid length {size} for parameter {i + 1}")
        else:
            append(r.take(size, f"value of parameter {i + 1}"))
    result_formats = r.int16_array(r.uint16("result format count"), "result formats")
    r.finish()
    return Bind(portal, statement, param_formats, tuple(params), result_formats)


def _decode_describe(body: bytes) -> Describe:
    r = _Reader(body, "Describe")
    kind = r.kind("describe target")
    name = r.cstring("name")
    r.finish()
    return Describe(kind, name)


def _decode_execute(body: bytes) -> Execute:
    r = _Reader(body, "Execute")
    portal = r.cstring("portal name")
    max_rows = r.int32("row limit")
    r.finish()
    return Execute(portal, max_rows)


def _decode_close(body: bytes) -> Close:
    r = _Reader(body, "Close")
    kind = r.kind("close target")
    name = r.cstring("name")
    r.finish()
    return Close(kind, name)


def _decode_copy_fail(body: bytes) -> CopyFail:
    r = _Reader(body, "CopyFail")
    message = r.cstring("error message")
    r.finish()
    return CopyFail(message)


def _decode_function_call(body: bytes) -> FunctionCall:
    return FunctionCall(_Reader(body, "FunctionCall").uint32("function OID"))


def _empty(cls: type, what: str) -> Callable[[bytes], FrontendMessage]:
    """Build a decoder for a body-less message; one shared instance suffices."""
    instance = cls()

    def decode(body: bytes) -> FrontendMessage:
        if body:
            raise ProtocolViolation(
                f"invalid {what} message: {len(body)} unexpected byte(s)"
            )
        return instance

    return decode


class _Spec(NamedTuple):
    name: str
    decode: Callable[[bytes], FrontendMessage]
    cap: int | None  # None: only the decoder's configurable maximum applies


class _BoundSpec(NamedTuple):
    """A _Spec with its cap resolved against one decoder's max_message_size."""

    name: str
    decode: Callable[[bytes], FrontendMessage]
    limit: int


_MESSAGE_SPECS: dict[int, _Spec] = {
    ord("Q"): _Spec("Query", _decode_query, None),
    ord("P"): _Spec("Parse", _decode_parse, None),
    ord("B"): _Spec("Bind", _decode_bind, None),
    ord("D"): _Spec("Describe", _decode_describe, SMALL_MESSAGE_LIMIT),
    ord("E"): _Spec("Execute", _decode_execute, SMALL_MESSAGE_LIMIT),
    ord("C"): _Spec("Close", _decode_close, SMALL_MESSAGE_LIMIT),
    ord("S"): _Spec("Sync", _empty(Sync, "Sync"), SMALL_MESSAGE_LIMIT),
    ord("H"): _Spec("Flush", _empty(Flush, "Flush"), SMALL_MESSAGE_LIMIT),
    ord("X"): _Spec("Terminate", _empty(Terminate, "Terminate"), SMALL_MESSAGE_LIMIT),
    ord("p"): _Spec("PasswordMessage", PasswordMessage, AUTH_MESSAGE_LIMIT),
    ord("d"): _Spec("CopyData", CopyData, None),
    ord("c"): _Spec("CopyDone", _empty(CopyDone, "CopyDone"), SMALL_MESSAGE_LIMIT),
    ord("f"): _Spec("CopyFail", _decode_copy_fail, None),
    ord("F"): _Spec("FunctionCall", _decode_function_call, None),
}


def _fixed_size(
    cls: type, what: str, size: int
) -> Callable[[int, bytes], FrontendMessage]:
    instance = cls()

    def decode(code: int, body: bytes) -> FrontendMessage:
        if len(body) != size:
            raise ProtocolViolation(f"invalid length of {what} packet")
        return instance

    return decode


def _decode_cancel(code: int, body: bytes) -> CancelRequest:
    if len(body) != 8:
        raise ProtocolViolation("invalid length of CancelRequest packet")
    pid, key = struct.unpack("!ii", body)
    return CancelRequest(pid, key)


def _decode_startup_message(code: int, body: bytes) -> StartupMessage:
    if code >> 16 != PROTOCOL_MAJOR:
        raise UnsupportedProtocol(code)
    if not body.endswith(b"\0"):
        raise ProtocolViolation(
            "invalid startup packet layout: expected terminator as last byte"
        )
    content = body[:-1]
    params: dict[str, str] = {}
    if content:
        if not content.endswith(b"\0"):
            raise ProtocolViolation(
                "invalid startup packet layout: expected terminator as last byte"
            )
        items = content[:-1].split(b"\0")
        if len(items) % 2:
            raise ProtocolViolation(
                "invalid startup packet layout: parameter without a value"
            )
        for i in range(0, len(items), 2):
            if not items[i]:
                raise ProtocolViolation(
                    "invalid startup packet layout: empty parameter name"
                )
            name = _decode_text(items[i], "startup packet")
            params[name] = _decode_text(items[i + 1], "startup packet")
    return StartupMessage(code, params)


_STARTUP_DECODERS: dict[int, Callable[[int, bytes], FrontendMessage]] = {
    SSL_REQUEST_CODE: _fixed_size(SSLRequest, "SSLRequest", 0),
    GSSENC_REQUEST_CODE: _fixed_size(GSSENCRequest, "GSSENCRequest", 0),
    CANCEL_REQUEST_CODE: _decode_cancel,
}


# --------------------------------------------------------------------------
# Incremental decoder
# --------------------------------------------------------------------------


class DecoderPhase(enum.Enum):
    STARTUP = "startup"  # untyped packets: StartupMessage / SSL / GSS / Cancel
    AWAITING_NEGOTIATION = (
        "awaiting_negotiation"  # after SSL/GSS request, until expect_startup()
    )
    MESSAGES = "messages"  # typed messages
    CLOSED = "closed"  # after Terminate or CancelRequest: input is ignored


_PHASE_AFTER_STARTUP_PACKET: dict[type, DecoderPhase] = {
    StartupMessage: DecoderPhase.MESSAGES,
    SSLRequest: DecoderPhase.AWAITING_NEGOTIATION,
    GSSENCRequest: DecoderPhase.AWAITING_NEGOTIATION,
    CancelRequest: DecoderPhase.CLOSED,
}


def _describe_byte(value: int) -> str:
    if 0x20 < value < 0x7F:
        return f"{value} ({chr(value)!r})"
    return f"{value} (0x{value:02x})"


class FrontendDecoder:
    """Turns arbitrary chunks of client bytes into complete frontend messages.

    Lengths are validated as soon as a header is visible, so an absurd length
    fails fast instead of making us buffer up to it.  Any error is fatal for
    the connection (messages decoded earlier in the same ``feed`` are dropped
    with it).

    After an SSLRequest/GSSENCRequest the decoder refuses further bytes until
    :meth:`expect_startup` is called: the client must wait for the server's
    one-byte answer, so bytes already sent are either a broken client or a
    man-in-the-middle injecting plaintext ahead of the TLS handshake
    (CVE-2021-23214).
    """

    def __init__(
        self,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        *,
        max_startup_size: int = MAX_STARTUP_PACKET_SIZE,
        phase: DecoderPhase = DecoderPhase.STARTUP,
    ) -> None:
        if max_message_size < 4:
            raise ValueError("max_message_size must be at least 4")
        self._buf = bytearray()
        self._phase = phase
        self._max_startup = max_startup_size
        self._specs = {
            code: _BoundSpec(
                spec.name,
                spec.decode,
                min(spec.cap or max_message_size, max_message_size),
            )
            for code, spec in _MESSAGE_SPECS.items()
        }

    @property
    def phase(self) -> DecoderPhase:
        return self._phase

    @property
    def in_startup(self) -> bool:
        """True until a StartupMessage has been decoded."""
        return self._phase in (DecoderPhase.STARTUP, DecoderPhase.AWAITING_NEGOTIATION)

    @property
    def buffered(self) -> int:
        """Bytes held back waiting for the rest of a message."""
        return len(self._buf)

    def expect_startup(self) -> None:
        """Go back to reading an untyped startup packet.

        Call after answering an SSLRequest/GSSENCRequest (with ``b'N'`` or
        after switching to TLS).
        """
        if self._buf:
            raise ProtocolViolation("received unencrypted data after SSL request")
        self._phase = DecoderPhase.STARTUP

    def feed(self, data: bytes) -> list[FrontendMessage]:
        """Buffer ``data`` and return every message it completes, in order."""
        phase = self._phase
        if phase is DecoderPhase.CLOSED:
            return []
        if phase is DecoderPhase.AWAITING_NEGOTIATION and data:
            raise ProtocolViolation("received unencrypted data after SSL request")
        buf = self._buf
        buf += data
        out: list[FrontendMessage] = []
        pos = 0
        while pos < len(buf):
            phase = self._phase
            if phase is DecoderPhase.MESSAGES:
                pos = self._decode_messages(pos, out)
                if self._phase is DecoderPhase.MESSAGES:
                    break  # incomplete message
            elif phase is DecoderPhase.STARTUP:
                end = self._decode_startup(pos, out)
                if end is None:
                    break
                pos = end
            elif phase is DecoderPhase.AWAITING_NEGOTIATION:
                raise ProtocolViolation("received unencrypted data after SSL request")
            else:  # CLOSED: the peer said goodbye; whatever follows is noise
                pos = len(buf)
        del buf[:pos]
        return out

    def _decode_startup(self, pos: int, out: list[FrontendMessage]) -> int | None:
        buf = self._buf
        if len(buf) - pos < 4:
            return None
        length = _I32.unpack_from(buf, pos)[0]
        if length < 8 or length > self._max_startup:
            raise ProtocolViolation(f"invalid length of startup packet: {length}")
        end = pos + length
        if len(buf) < end:
            return None
        code = _U32.unpack_from(buf, pos + 4)[0]
        body = bytes(buf[pos + 8 : end])
        msg = _STARTUP_DECODERS.get(code, _decode_startup_message)(code, body)
        out.append(msg)
        self._phase = _PHASE_AFTER_STARTUP_PACKET[type(msg)]
        return end

    def _decode_messages(self, pos: int, out: list[FrontendMessage]) -> int:
        buf = self._buf
        n = len(buf)
        specs = self._specs
        append = out.append
        terminate = ord("X")
        with memoryview(buf) as view:
            while pos < n:
                code = buf[pos]
                spec = specs.get(code)
                if spec is None:
                    raise ProtocolViolation(
                        f"invalid frontend message type {_describe_byte(code)}"
                    )
                if n - pos < 5:
                    break
                length = _I32.unpack_from(buf, pos + 1)[0]
                if length < 4:
                    raise ProtocolViolation(
                        f"invalid {spec.name} message length {length}"
                    )
                if length > spec.limit:
                    raise ProtocolViolation(
                        f"{spec.name} message length {length} exceeds the limit of {spec.limit} bytes"
                    )
                end = pos + 1 + length
                if end > n:
                    break
                append(spec.decode(view[pos + 5 : end].tobytes()))
                pos = end
                if code == terminate:
                    self._phase = DecoderPhase.CLOSED
                    break
        return pos


# --------------------------------------------------------------------------
# Payload helpers for the polymorphic 'p' message
# --------------------------------------------------------------------------


def parse_password(data: bytes) -> str:
    """Decode a cleartext PasswordMessage payload (NUL-terminated string)."""
    r = _Reader(data, "PasswordMessage")
    password = r.cstring("password")
    r.finish()
    return password


def parse_sasl_initial_response(data: bytes) -> tuple[str, bytes]:
    """Split a SASLInitialResponse payload into (mechanism, initial client response).

    A length of -1 (no initial response) yields ``b""``.
    """
    r = _Reader(data, "SASLInitialResponse")
    mechanism = r.cstring("mechanism name")
    size = r.int32("response length")
    if size == -1:
        initial = b""
    elif size < 0:
        r.fail(f"invalid response length {size}")
    else:
        initial = r.take(size, "initial response")
    r.finish()
    return mechanism, initial
