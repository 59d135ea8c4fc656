"""Decoder for PostgreSQL's pgoutput logical replication messages.

Pure: bytes in, frozen dataclasses out, no I/O. The caller (the replication
ingester) receives XLogData payloads from the walsender and hands each one to
`decode`. The layouts follow PostgreSQL's "Logical Replication Message Formats"
(protocol versions 1 to 3, as PostgreSQL 15 sends them):

* version 1: Begin, Commit, Origin, Relation, Type, Insert, Update, Delete,
  Truncate, and Message (logical decoding messages, only with `messages 'true'`);
* version 2 (streaming of in-progress transactions): Stream Start/Stop/Commit/
  Abort, plus a leading transaction id on Relation/Type/Insert/Update/Delete/
  Truncate/Message while inside a stream. The decoder is stateless, so the
  caller says so with `decode(payload, in_stream=True)` between Stream Start and
  Stream Stop;
* version 3 (two-phase): Begin Prepare, Prepare, Commit Prepared, Rollback
  Prepared, Stream Prepare.

Column values are kept as the raw bytes the server sent (text output format for
't', binary send format for 'b'): turning them into Spark values needs the
column's type, which lives in the Relation message, so that belongs to the
caller.
"""

from __future__ import annotations

import enum
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

__all__ = [
    "PG_EPOCH", "UNCHANGED_TOAST", "Begin", "BeginPrepare", "Commit", "CommitPrepared", "Delete",
    "Insert", "Message", "Origin", "PgOutputError", "PgOutputMessage", "Prepare", "Relation",
    "RelationColumn", "RollbackPrepared", "StreamAbort", "StreamCommit", "StreamPrepare",
    "StreamStart", "StreamStop", "Truncate", "TupleData", "Type", "Update", "decode", "decode_change",
    "fill_unchanged_toast", "lsn_to_str", "pg_timestamp_to_datetime", "str_to_lsn",
]


class PgOutputError(ValueError):
    """A pgoutput payload (or an LSN string) that cannot be decoded.

    A ValueError so that callers treating any bad input alike need not know
    about this module.
    """


class _Marker(enum.Enum):
    # An enum member rather than object(): a singleton that survives pickling
    # (Spark ships Python objects between processes) and has a readable repr.
    UNCHANGED_TOAST = "u"

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"

    __str__ = __repr__


UNCHANGED_TOAST = _Marker.UNCHANGED_TOAST
"""Value of a column whose TOASTed value the UPDATE did not change ('u'): the
server does not resend it, so it has to come from the old tuple or the
caller's own copy of the row."""

Value = bytes | None | Literal[_Marker.UNCHANGED_TOAST]

# Microseconds in the protocol's timestamps count from here, not from 1970.
PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def pg_timestamp_to_datetime(us: int) -> datetime:
    """An aware UTC datetime from microseconds since 2000-01-01 (a *_time_us field)."""
    return PG_EPOCH + timedelta(microseconds=us)


# --------------------------------------------------------------------- values

_KINDS = frozenset("ntbu")


@dataclass(frozen=True, slots=True)
class TupleData:
    """One row as sent in a TupleData part.

    `values[i]` is None (SQL NULL, kind 'n'), UNCHANGED_TOAST (kind 'u') or the
    raw bytes of the value (kind 't': text output format, kind 'b': binary).
    `kinds` has one of those letters per column, so the caller knows how to
    parse the bytes.
    """

    values: tuple[Value, ...]
    kinds: str

    def __post_init__(self) -> None:
        if len(self.values) != len(self.kinds):
            raise PgOutputError(f"TupleData has {len(self.values)} values but {len(self.kinds)} kinds")
        if not _KINDS.issuperset(self.kinds):
            raise PgOutputError(f"TupleData kinds {self.kinds!r} contain an unknown kind")

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> Value:
        return self.values[index]

    def __iter__(self) -> Iterator[Value]:
        return iter(self.values)

    @property
    def has_unchanged_toast(self) -> bool:
        return "u" in self.kinds


def fill_unchanged_toast(new: TupleData, old: TupleData | None) -> TupleData:
    """`new` with each UNCHANGED_TOAST replaced by `old`'s value at the same position.

    With REPLICA IDENTITY FULL the server sends the complete old row (TOASTed
    values are flattened into it), so this yields the complete new row. Raises
    PgOutputError naming the (0-based) column position when `old` cannot supply
    a value there: no old tuple (identity DEFAULT/INDEX, or an unchanged key),
    an old tuple too short, or one that is itself unchanged-TOAST there.
    """
    if not new.has_unchanged_toast:
        return new
    values = list(new.values)
    kinds = list(new.kinds)
    for i, kind in enumerate(new.kinds):
        if kind != "u":
            continue
        if old is None:
            raise PgOutputError(
                f"column position {i} is an unchanged TOAST value and there is no old tuple to take it "
                "from (is the table's REPLICA IDENTITY FULL?)")
        if i >= len(old) or old.kinds[i] == "u":
            raise PgOutputError(
                f"column position {i} is an unchanged TOAST value and the old tuple has no value for it")
        values[i] = old.values[i]
        kinds[i] = old.kinds[i]
    return TupleData(tuple(values), "".join(kinds))


# ------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int  # LSN of the commit record: equals the matching Commit.commit_lsn
    commit_time_us: int  # microseconds since 2000-01-01 UTC
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int  # the position to confirm as flushed once the transaction is applied
    commit_time_us: int


@dataclass(frozen=True, slots=True)
class Origin:
    lsn: int  # the commit's LSN on the origin server
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    flags: int
    name: str
    type_oid: int
    type_modifier: int  # atttypmod; -1 when the type has none

    @property
    def is_key(self) -> bool:
        # Part of the replica identity (every column under REPLICA IDENTITY FULL).
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Relation:
    oid: int
    namespace: str  # '' stands for pg_catalog
    name: str
    replica_identity: str  # pg_class.relreplident: 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[RelationColumn, ...]
    xid: int | None = None  # only inside a streamed transaction

    @property
    def key_columns(self) -> tuple[RelationColumn, ...]:
        return tuple(c for c in self.columns if c.is_key)


@dataclass(frozen=True, slots=True)
class Type:
    oid: int
    namespace: str  # '' stands for pg_catalog
    name: str
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Insert:
    relation_oid: int
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Update:
    relation_oid: int
    old: TupleData | None  # present with kind 'O' (identity FULL) or 'K' (key changed)
    old_kind: Literal["K", "O"] | None
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    relation_oid: int
    old: TupleData  # the whole row ('O') or only the replica identity columns ('K', others NULL)
    old_kind: Literal["K", "O"]
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Truncate:
    options: int
    relation_oids: tuple[int, ...]
    xid: int | None = None

    @property
    def cascade(self) -> bool:
        return bool(self.options & 1)

    @property
    def restart_identity(self) -> bool:
        return bool(self.options & 2)


@dataclass(frozen=True, slots=True)
class Message:
    """A pg_logical_emit_message() record (sent only with the `messages` option)."""

    flags: int
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None

    @property
    def transactional(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop:
    pass


@dataclass(frozen=True, slots=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time_us: int


@dataclass(frozen=True, slots=True)
class StreamAbort:
    xid: int
    subxid: int  # equals xid when the whole top-level transaction aborted
    abort_lsn: int | None = None  # only with parallel streaming (protocol 4, PostgreSQL 16+)
    abort_time_us: int | None = None


@dataclass(frozen=True, slots=True)
class BeginPrepare:
    prepare_lsn: int
    end_lsn: int
    prepare_time_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class Prepare:
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_time_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class CommitPrepared:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class RollbackPrepared:
    flags: int
    prepare_end_lsn: int
    rollback_end_lsn: int
    prepare_time_us: int
    rollback_time_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class StreamPrepare:
    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_time_us: int
    xid: int
    gid: str


PgOutputMessage = (
    Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | Message
    | StreamStart | StreamStop | StreamCommit | StreamAbort
    | BeginPrepare | Prepare | CommitPrepared | RollbackPrepared | StreamPrepare
)


# -------------------------------------------------------------------- reading

_U8 = struct.Struct(">B")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")
_BEGIN_BODY = struct.Struct(">QqI")  # final LSN, commit time, xid
_COMMIT_BODY = struct.Struct(">BQQq")  # flags, commit LSN, end LSN, commit time


class _Reader:
    """A cursor over one payload; every short read becomes a PgOutputError."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf = buf
        self.pos = 1  # past the message type byte
        self.what = what

    def fail(self, problem: str) -> PgOutputError:
        return PgOutputError(f"malformed pgoutput {self.what} message: {problem} at byte {self.pos}")

    def _unpack(self, st: struct.Struct, field: str) -> int:
        if self.pos + st.size > len(self.buf):
            raise self.fail(f"truncated {field} (need {st.size} bytes, have {len(self.buf) - self.pos})")
        (value,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return value

    def u8(self, field: str) -> int:
        return self._unpack(_U8, field)

    def i16(self, field: str) -> int:
        return self._unpack(_I16, field)

    def i32(self, field: str) -> int:
        return self._unpack(_I32, field)

    def u32(self, field: str) -> int:  # OIDs and transaction ids are unsigned
        return self._unpack(_U32, field)

    def i64(self, field: str) -> int:  # timestamps are signed
        return self._unpack(_I64, field)

    def lsn(self, field: str) -> int:
        return self._unpack(_U64, field)

    def byte_char(self, field: str) -> str:
        return chr(self.u8(field))

    def take(self, n: int, field: str) -> bytes:
        if self.pos + n > len(self.buf):
            raise self.fail(f"truncated {field} (need {n} bytes, have {len(self.buf) - self.pos})")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def string(self, field: str) -> str:
        end = self.buf.find(b"\0", self.pos)
        if end < 0:
            raise self.fail(f"unterminated string {field}")
        raw = self.buf[self.pos:end]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"string {field} is not UTF-8 ({exc.reason})") from None
        self.pos = end + 1
        return text

    def tuple_data(self) -> TupleData:
        count = self.i16("TupleData column count")
        if count < 0:
            raise self.fail(f"negative TupleData column count {count}")
        values: list[Value] = []
        kinds: list[str] = []
        for i in range(count):
            kind = self.byte_char(f"kind of column {i}")
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind in ("t", "b"):
                length = self.i32(f"length of column {i}")
                if length < 0:
                    raise self.fail(f"negative length {length} of column {i}")
                values.append(self.take(length, f"value of column {i}"))
            else:
                self.pos -= 1
                raise self.fail(f"unknown TupleData kind {kind!r} for column {i}")
            kinds.append(kind)
        return TupleData(tuple(values), "".join(kinds))

    def finish(self) -> None:
        # Strict about leftovers: extra bytes mean we misread the layout (for
        # example a streamed message decoded without in_stream=True).
        if self.pos != len(self.buf):
            raise self.fail(f"{len(self.buf) - self.pos} unexpected trailing bytes")


def _stream_xid(r: _Reader, in_stream: bool) -> int | None:
    return r.u32("xid") if in_stream else None


def _begin(r: _Reader, in_stream: bool) -> Begin:
    return Begin(r.lsn("final LSN"), r.i64("commit time"), r.u32("xid"))


def _commit(r: _Reader, in_stream: bool) -> Commit:
    return Commit(r.u8("flags"), r.lsn("commit LSN"), r.lsn("end LSN"), r.i64("commit time"))


def _origin(r: _Reader, in_stream: bool) -> Origin:
    return Origin(r.lsn("origin LSN"), r.string("origin name"))


def _relation(r: _Reader, in_stream: bool) -> Relation:
    xid = _stream_xid(r, in_stream)
    oid = r.u32("relation OID")
    namespace = r.string("namespace")
    name = r.string("relation name")
    identity = r.byte_char("replica identity")
    count = r.i16("column count")
    if count < 0:
        raise r.fail(f"negative column count {count}")
    columns = tuple(
        RelationColumn(r.u8(f"flags of column {i}"), r.string(f"name of column {i}"),
                       r.u32(f"type OID of column {i}"), r.i32(f"type modifier of column {i}"))
        for i in range(count))
    return Relation(oid, namespace, name, identity, columns, xid)


def _type(r: _Reader, in_stream: bool) -> Type:
    xid = _stream_xid(r, in_stream)
    return Type(r.u32("type OID"), r.string("namespace"), r.string("type name"), xid)


def _expect(r: _Reader, expected: str, field: str) -> None:
    got = r.byte_char(field)
    if got != expected:
        r.pos -= 1
        raise r.fail(f"expected {expected!r} before {field}, got {got!r}")


def _insert(r: _Reader, in_stream: bool) -> Insert:
    xid = _stream_xid(r, in_stream)
    oid = r.u32("relation OID")
    _expect(r, "N", "new tuple")
    return Insert(oid, r.tuple_data(), xid)


def _update(r: _Reader, in_stream: bool) -> Update:
    xid = _stream_xid(r, in_stream)
    oid = r.u32("relation OID")
    marker = r.byte_char("tuple marker")
    old: TupleData | None = None
    old_kind: Literal["K", "O"] | None = None
    if marker == "K" or marker == "O":
        old_kind = marker
        old = r.tuple_data()
        marker = r.byte_char("new tuple marker")
    if marker != "N":
        r.pos -= 1
        raise r.fail(f"expected 'K', 'O' or 'N' tuple marker, got {marker!r}")
    return Update(oid, old, old_kind, r.tuple_data(), xid)


def _delete(r: _Reader, in_stream: bool) -> Delete:
    xid = _stream_xid(r, in_stream)
    oid = r.u32("relation OID")
    marker = r.byte_char("tuple marker")
    if marker != "K" and marker != "O":
        r.pos -= 1
        raise r.fail(f"expected 'K' or 'O' tuple marker, got {marker!r}")
    return Delete(oid, r.tuple_data(), marker, xid)


def _truncate(r: _Reader, in_stream: bool) -> Truncate:
    xid = _stream_xid(r, in_stream)
    count = r.i32("relation count")
    if count < 0:
        raise r.fail(f"negative relation count {count}")
    options = r.u8("options")
    oids = tuple(r.u32(f"relation OID {i}") for i in range(count))
    return Truncate(options, oids, xid)


def _message(r: _Reader, in_stream: bool) -> Message:
    xid = _stream_xid(r, in_stream)
    flags = r.u8("flags")
    lsn = r.lsn("message LSN")
    prefix = r.string("prefix")
    length = r.i32("content length")
    if length < 0:
        raise r.fail(f"negative content length {length}")
    return Message(flags, lsn, prefix, r.take(length, "content"), xid)


def _stream_start(r: _Reader, in_stream: bool) -> StreamStart:
    return StreamStart(r.u32("xid"), r.u8("first segment flag") == 1)


def _stream_stop(r: _Reader, in_stream: bool) -> StreamStop:
    return StreamStop()


def _stream_commit(r: _Reader, in_stream: bool) -> StreamCommit:
    return StreamCommit(r.u32("xid"), r.u8("flags"), r.lsn("commit LSN"), r.lsn("end LSN"),
                        r.i64("commit time"))


def _stream_abort(r: _Reader, in_stream: bool) -> StreamAbort:
    xid, subxid = r.u32("xid"), r.u32("subtransaction xid")
    if r.pos == len(r.buf):
        return StreamAbort(xid, subxid)
    return StreamAbort(xid, subxid, r.lsn("abort LSN"), r.i64("abort time"))


def _begin_prepare(r: _Reader, in_stream: bool) -> BeginPrepare:
    return BeginPrepare(r.lsn("prepare LSN"), r.lsn("end LSN"), r.i64("prepare time"), r.u32("xid"),
                        r.string("gid"))


def _prepare_fields(r: _Reader) -> tuple[int, int, int, int, int, str]:
    return (r.u8("flags"), r.lsn("prepare LSN"), r.lsn("end LSN"), r.i64("prepare time"), r.u32("xid"),
            r.string("gid"))


def _prepare(r: _Reader, in_stream: bool) -> Prepare:
    return Prepare(*_prepare_fields(r))


def _stream_prepare(r: _Reader, in_stream: bool) -> StreamPrepare:
    return StreamPrepare(*_prepare_fields(r))


def _commit_prepared(r: _Reader, in_stream: bool) -> CommitPrepared:
    return CommitPrepared(r.u8("flags"), r.lsn("commit LSN"), r.lsn("end LSN"), r.i64("commit time"),
                          r.u32("xid"), r.string("gid"))


def _rollback_prepared(r: _Reader, in_stream: bool) -> RollbackPrepared:
    return RollbackPrepared(r.u8("flags"), r.lsn("prepare end LSN"), r.lsn("rollback end LSN"),
                            r.i64("prepare time"), r.i64("rollback time"), r.u32("xid"), r.string("gid"))


_DECODERS: dict[int, tuple[str, Callable[[_Reader, bool], PgOutputMessage]]] = {
    ord("B"): ("Begin", _begin),
    ord("C"): ("Commit", _commit),
    ord("O"): ("Origin", _origin),
    ord("R"): ("Relation", _relation),
    ord("Y"): ("Type", _type),
    ord("I"): ("Insert", _insert),
    ord("U"): ("Update", _update),
    ord("D"): ("Delete", _delete),
    ord("T"): ("Truncate", _truncate),
    ord("M"): ("Message", _message),
    ord("S"): ("Stream Start", _stream_start),
    ord("E"): ("Stream Stop", _stream_stop),
    ord("c"): ("Stream Commit", _stream_commit),
    ord("A"): ("Stream Abort", _stream_abort),
    ord("b"): ("Begin Prepare", _begin_prepare),
    ord("P"): ("Prepare", _prepare),
    ord("K"): ("Commit Prepared", _commit_prepared),
    ord("r"): ("Rollback Prepared", _rollback_prepared),
    ord("p"): ("Stream Prepare", _stream_prepare),
}


def decode(payload: bytes | bytearray | memoryview, *, in_stream: bool = False) -> PgOutputMessage:
    """Decode one pgoutput message (the payload of one XLogData message).

    `in_stream=True` between Stream Start and Stream Stop, where the data
    messages carry a leading transaction id (protocol 2+); it is ignored by
    messages that never carry one. Raises PgOutputError on an empty payload, an
    unknown message type, or truncated, malformed or over-long data.
    """
    buf = bytes(payload)
    if not buf:
        raise PgOutputError("empty pgoutput message")
    # Every transaction's Begin and Commit: when exactly the right length, nothing can be
    # truncated or left over, and one unpack reads them.
    if buf[0] == 0x42 and len(buf) == 1 + _BEGIN_BODY.size:
        return Begin(*_BEGIN_BODY.unpack_from(buf, 1))
    if buf[0] == 0x43 and len(buf) == 1 + _COMMIT_BODY.size:
        return Commit(*_COMMIT_BODY.unpack_from(buf, 1))
    entry = _DECODERS.get(buf[0])
    if entry is None:
        shown = chr(buf[0]) if 0x20 < buf[0] < 0x7F else "?"
        raise PgOutputError(f"unknown pgoutput message type {shown!r} (0x{buf[0]:02x})")
    what, decoder = entry
    reader = _Reader(buf, what)
    message = decoder(reader, in_stream)
    reader.finish()
    return message


# ------------------------------------------------------- the rows, fast

RowChange = tuple[int, "list[Value] | None", "list[Value] | None"]


class _Slow(Exception):
    """Something decode_change leaves to decode: an error to word, or a rare shape."""


_h_from = _I16.unpack_from
_i_from = _I32.unpack_from
_I_from = _U32.unpack_from
_ROW_TAGS = {ord("I"): 0, ord("U"): 1, ord("D"): 2}


def _row_values(buf: bytes, pos: int) -> tuple[list[Value], int]:
    (count,) = _h_from(buf, pos)
    pos += 2
    if count < 0:
        raise _Slow
    values: list[Value] = [None] * count
    for i in range(count):
        kind = buf[pos]
        pos += 1
        if kind == 116 or kind == 98:  # 't', 'b'
            (length,) = _i_from(buf, pos)
            pos += 4
            if length < 0:
                raise _Slow
            end = pos + length
            values[i] = buf[pos:end]
            pos = end
        elif kind != 110:  # not 'n': an unchanged TOAST value ('u') or garbage
            raise _Slow
    return values, pos


def _fast_change(buf: bytes, tag: int) -> RowChange:
    (oid,) = _I_from(buf, 1)
    pos = 5
    old = new = None
    marker = buf[pos]
    if tag == 0:  # Insert
        if marker != 78:
            raise _Slow
        new, pos = _row_values(buf, pos + 1)
    elif tag == 1:  # Update
        if marker == 79 or marker == 75:  # 'O', 'K'
            old, pos = _row_values(buf, pos + 1)
            marker = buf[pos]
        if marker != 78:
            raise _Slow
        new, pos = _row_values(buf, pos + 1)
    else:  # Delete
        if marker != 79 and marker != 75:
            raise _Slow
        old, pos = _row_values(buf, pos + 1)
    if pos != len(buf):  # a slice ran past the end, or bytes are left over
        raise _Slow
    return oid, old, new


def decode_change(payload: bytes) -> RowChange | None:
    """The row of an Insert, Update or Delete outside a streamed transaction, quickly:
    (relation OID, old values, new values), each a list of raw values or None, with
    UNCHANGED_TOAST values filled from the old row as `fill_unchanged_toast` does. None for
    every other message (hand those to `decode`). Raises what `decode` raises on a
    malformed payload."""
    tag = _ROW_TAGS.get(payload[0]) if payload else None
    if tag is None:
        return None
    if not isinstance(payload, bytes):
        payload = bytes(payload)
    try:
        return _fast_change(payload, tag)
    except (_Slow, IndexError, struct.error):
        pass
    m = decode(payload)  # the exact error, or a value that is unchanged TOAST
    if isinstance(m, Insert):
        return m.relation_oid, None, list(m.new.values)
    if isinstance(m, Update):
        return m.relation_oid, (list(m.old.values) if m.old is not None else None), \
            list(fill_unchanged_toast(m.new, m.old).values)
    return m.relation_oid, list(m.old.values), None


# ----------------------------------------------------------------------- LSNs

_LSN_RE = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")


def lsn_to_str(lsn: int) -> str:
    """The '16/B374D848' text form PostgreSQL uses for a pg_lsn."""
    if not 0 <= lsn < 1 << 64:
        raise PgOutputError(f"LSN {lsn} is out of range")
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def str_to_lsn(text: str) -> int:
    """Parse the 'XXXXXXXX/XXXXXXXX' pg_lsn text form (either case of hex digits)."""
    m = _LSN_RE.fullmatch(text.strip())
    if m is None:
        raise PgOutputError(f"invalid LSN {text!r}: expected two hex numbers like '16/B374D848'")
    return (int(m.group(1), 16) << 32) | int(m.group(2), 16)
