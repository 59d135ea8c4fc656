"""Decoding pgoutput logical replication messages.

Pure tests over hand-built payloads, plus one test against a real PostgreSQL 15
that checks the decoder on what the walsender actually sends.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from datetime import UTC, datetime

import pytest

from spark_backend.pgoutput import (
    PG_EPOCH,
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    Message,
    Origin,
    PgOutputError,
    Prepare,
    Relation,
    RelationColumn,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamPrepare,
    StreamStart,
    StreamStop,
    Truncate,
    TupleData,
    Type,
    Update,
    decode,
    decode_change,
    fill_unchanged_toast,
    lsn_to_str,
    pg_timestamp_to_datetime,
    str_to_lsn,
)
from tests.wire import cstr as s

# ------------------------------------------------------------------ builders


def i8(v: int) -> bytes:
    return struct.pack(">B", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def tuple_part(*cols: tuple[str, bytes | None]) -> bytes:
    out = i16(len(cols))
    for kind, value in cols:
        out += kind.encode()
        if kind in "tb":
            assert value is not None
            out += i32(len(value)) + value
    return out


ROW = tuple_part(("t", b"42"), ("n", None), ("u", None), ("b", b"\x00\x01"), ("t", b""))
ROW_DATA = TupleData((b"42", None, UNCHANGED_TOAST, b"\x00\x01", b""), "tnubt")

OLD_ROW = tuple_part(("t", b"41"), ("t", b"x"), ("t", b"big"), ("b", b"\x00\x00"), ("t", b"e"))
OLD_ROW_DATA = TupleData((b"41", b"x", b"big", b"\x00\x00", b"e"), "tttbt")


# --------------------------------------------------------------- v1 messages


def test_begin():
    msg = decode(b"B" + u64(0x16_B374D848) + i64(777_000_001) + u32(0xFFFFFFF0))
    assert msg == Begin(final_lsn=0x16_B374D848, commit_time_us=777_000_001, xid=0xFFFFFFF0)


def test_commit():
    msg = decode(b"C" + i8(0) + u64(100) + u64(180) + i64(-5))
    assert msg == Commit(flags=0, commit_lsn=100, end_lsn=180, commit_time_us=-5)


def test_origin():
    assert decode(b"O" + u64(2**64 - 1) + s("upstream")) == Origin(lsn=2**64 - 1, name="upstream")


def test_relation():
    payload = (b"R" + u32(16384) + s("public") + s("tbl") + b"f" + i16(3)
               + i8(1) + s("id") + u32(23) + i32(-1)
               + i8(0) + s("name") + u32(1043) + i32(36)
               + i8(1) + s("naïve") + u32(4_000_000_000) + i32(-1))
    msg = decode(payload)
    assert msg == Relation(
        oid=16384, namespace="public", name="tbl", replica_identity="f",
        columns=(RelationColumn(1, "id", 23, -1), RelationColumn(0, "name", 1043, 36),
                 RelationColumn(1, "naïve", 4_000_000_000, -1)))
    assert [c.is_key for c in msg.columns] == [True, False, True]
    assert [c.name for c in msg.key_columns] == ["id", "naïve"]
    assert msg.xid is None


def test_relation_without_columns_and_pg_catalog_namespace():
    msg = decode(b"R" + u32(1) + s("") + s("t") + b"d" + i16(0))
    assert msg == Relation(1, "", "t", "d", ())


def test_type():
    assert decode(b"Y" + u32(16500) + s("public") + s("mood")) == Type(16500, "public", "mood")


def test_insert():
    msg = decode(b"I" + u32(16384) + b"N" + ROW)
    assert msg == Insert(relation_oid=16384, new=ROW_DATA)
    assert msg.new.values == (b"42", None, UNCHANGED_TOAST, b"\x00\x01", b"")
    assert msg.new.kinds == "tnubt"
    assert len(msg.new) == 5 and msg.new[0] == b"42" and list(msg.new)[1] is None
    assert msg.new.has_unchanged_toast


def test_insert_empty_tuple():
    assert decode(b"I" + u32(7) + b"N" + i16(0)) == Insert(7, TupleData((), ""))


def test_update_without_old():
    msg = decode(b"U" + u32(5) + b"N" + ROW)
    assert msg == Update(relation_oid=5, old=None, old_kind=None, new=ROW_DATA)


@pytest.mark.parametrize("kind", ["K", "O"])
def test_update_with_old(kind):
    msg = decode(b"U" + u32(5) + kind.encode() + OLD_ROW + b"N" + ROW)
    assert msg == Update(5, OLD_ROW_DATA, kind, ROW_DATA)


@pytest.mark.parametrize("kind", ["K", "O"])
def test_delete(kind):
    msg = decode(b"D" + u32(9) + kind.encode() + OLD_ROW)
    assert msg == Delete(relation_oid=9, old=OLD_ROW_DATA, old_kind=kind)


def test_truncate():
    msg = decode(b"T" + i32(2) + i8(3) + u32(16384) + u32(16390))
    assert msg == Truncate(options=3, relation_oids=(16384, 16390))
    assert msg.cascade and msg.restart_identity
    plain = decode(b"T" + i32(1) + i8(0) + u32(1))
    assert not plain.cascade and not plain.restart_identity


def test_message():
    msg = decode(b"M" + i8(1) + u64(99) + s("sw") + i32(3) + b"a\0b")
    assert msg == Message(flags=1, lsn=99, prefix="sw", content=b"a\0b")
    assert msg.transactional
    assert not decode(b"M" + i8(0) + u64(1) + s("") + i32(0)).transactional


def test_accepts_bytearray_and_memoryview():
    raw = b"B" + u64(1) + i64(2) + u32(3)
    assert decode(bytearray(raw)) == decode(memoryview(raw)) == Begin(1, 2, 3)


# ------------------------------------------------------ v2 streaming, v3 2PC


def test_streamed_data_messages_carry_xid():
    xid = u32(1234)
    assert decode(b"I" + xid + u32(5) + b"N" + ROW, in_stream=True) == Insert(5, ROW_DATA, xid=1234)
    assert decode(b"U" + xid + u32(5) + b"O" + OLD_ROW + b"N" + ROW, in_stream=True) == \
        Update(5, OLD_ROW_DATA, "O", ROW_DATA, xid=1234)
    assert decode(b"D" + xid + u32(5) + b"K" + OLD_ROW, in_stream=True) == \
        Delete(5, OLD_ROW_DATA, "K", xid=1234)
    assert decode(b"T" + xid + i32(1) + i8(0) + u32(5), in_stream=True) == Truncate(0, (5,), xid=1234)
    assert decode(b"R" + xid + u32(5) + s("s") + s("t") + b"d" + i16(0), in_stream=True) == \
        Relation(5, "s", "t", "d", (), xid=1234)
    assert decode(b"Y" + xid + u32(6) + s("s") + s("ty"), in_stream=True) == Type(6, "s", "ty", xid=1234)
    assert decode(b"M" + xid + i8(1) + u64(7) + s("p") + i32(1) + b"x", in_stream=True) == \
        Message(1, 7, "p", b"x", xid=1234)
    # Transaction-control messages never carry the extra xid.
    assert decode(b"B" + u64(1) + i64(2) + u32(3), in_stream=True) == Begin(1, 2, 3)


def test_streamed_message_decoded_without_in_stream_is_rejected():
    # The xid shifts every field: the strict trailing-bytes check catches it.
    with pytest.raises(PgOutputError):
        decode(b"T" + u32(1234) + i32(1) + i8(0) + u32(5))


def test_stream_control_messages():
    assert decode(b"S" + u32(10) + i8(1)) == StreamStart(xid=10, first_segment=True)
    assert decode(b"S" + u32(10) + i8(0)) == StreamStart(xid=10, first_segment=False)
    assert decode(b"E") == StreamStop()
    assert decode(b"c" + u32(10) + i8(0) + u64(50) + u64(60) + i64(70)) == StreamCommit(10, 0, 50, 60, 70)
    assert decode(b"A" + u32(10) + u32(11)) == StreamAbort(10, 11)
    assert decode(b"A" + u32(10) + u32(11) + u64(80) + i64(90)) == StreamAbort(10, 11, 80, 90)


def test_two_phase_messages():
    assert decode(b"b" + u64(1) + u64(2) + i64(3) + u32(4) + s("g1")) == BeginPrepare(1, 2, 3, 4, "g1")
    assert decode(b"P" + i8(0) + u64(1) + u64(2) + i64(3) + u32(4) + s("g1")) == Prepare(0, 1, 2, 3, 4, "g1")
    assert decode(b"K" + i8(0) + u64(5) + u64(6) + i64(7) + u32(4) + s("g1")) == \
        CommitPrepared(0, 5, 6, 7, 4, "g1")
    assert decode(b"r" + i8(0) + u64(2) + u64(9) + i64(3) + i64(8) + u32(4) + s("g1")) == \
        RollbackPrepared(0, 2, 9, 3, 8, 4, "g1")
    assert decode(b"p" + i8(0) + u64(1) + u64(2) + i64(3) + u32(4) + s("g1")) == \
        StreamPrepare(0, 1, 2, 3, 4, "g1")


# ----------------------------------------------------------------- malformed


@pytest.mark.parametrize(("payload", "needle"), [
    (b"", "empty"),
    (b"Z", "unknown pgoutput message type 'Z'"),
    (b"\x00", "0x00"),
    (b"B" + u64(1), "truncated commit time"),
    (b"B" + u64(1) + i64(2) + u32(3) + b"\0", "trailing"),
    (b"C" + i8(0) + u64(1) + u64(2) + b"\0\0", "truncated commit time"),
    (b"O" + u64(1) + b"name-without-nul", "unterminated string origin name"),
    (b"R" + u32(1) + s("public") + s("t") + b"d" + i16(2) + i8(0) + s("a") + u32(23) + i32(-1),
     "truncated flags of column 1"),
    (b"R" + u32(1) + s("public") + s("t") + b"d" + i16(-1), "negative column count"),
    (b"R" + u32(1) + b"\xff\xfe\0" + s("t") + b"d" + i16(0), "not UTF-8"),
    (b"I" + u32(1) + b"X" + ROW, "expected 'N'"),
    (b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(10) + b"short", "truncated value of column 0"),
    (b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(-1), "negative length -1 of column 0"),
    (b"I" + u32(1) + b"N" + i16(2) + b"n" + b"q", "unknown TupleData kind 'q' for column 1"),
    (b"I" + u32(1) + b"N" + i16(2) + b"n", "truncated kind of column 1"),
    (b"I" + u32(1) + b"N" + i16(-3), "negative TupleData column count"),
    (b"U" + u32(1) + b"O" + OLD_ROW, "truncated new tuple marker"),
    (b"U" + u32(1) + b"O" + OLD_ROW + b"O" + ROW, "expected 'K', 'O' or 'N'"),
    (b"U" + u32(1) + b"Q" + ROW, "expected 'K', 'O' or 'N'"),
    (b"D" + u32(1) + b"N" + ROW, "expected 'K' or 'O'"),
    (b"T" + i32(2) + i8(0) + u32(1), "truncated relation OID 1"),
    (b"T" + i32(-2) + i8(0), "negative relation count"),
    (b"M" + i8(1) + u64(1) + s("p") + i32(5) + b"abc", "truncated content"),
    (b"S" + u32(1), "truncated first segment flag"),
    (b"A" + u32(1) + u32(2) + u64(3), "truncated abort time"),
    (b"E\0", "trailing"),
])
def test_malformed(payload, needle):
    with pytest.raises(PgOutputError) as info:
        decode(payload)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_error_names_message_type_and_offset():
    with pytest.raises(PgOutputError) as info:
        decode(b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(4) + b"ab")
    assert str(info.value).startswith("malformed pgoutput Insert message: truncated value of column 0")
    assert "at byte 13" in str(info.value)


def test_tuple_data_validates_itself():
    with pytest.raises(PgOutputError):
        TupleData((b"a",), "tt")
    with pytest.raises(PgOutputError):
        TupleData((b"a",), "x")


# --------------------------------------------------------------------- TOAST


def test_fill_unchanged_toast_takes_old_values():
    new = TupleData((b"1", UNCHANGED_TOAST, None, UNCHANGED_TOAST), "tunu")
    old = TupleData((b"0", b"big", b"z", b"\x01"), "tttb")
    assert fill_unchanged_toast(new, old) == TupleData((b"1", b"big", None, b"\x01"), "ttnb")


def test_fill_unchanged_toast_without_markers_is_identity():
    new = TupleData((b"1", None), "tn")
    assert fill_unchanged_toast(new, None) is new


@pytest.mark.parametrize("old", [
    None,
    TupleData((b"0",), "t"),
    TupleData((b"0", UNCHANGED_TOAST), "tu"),
])
def test_fill_unchanged_toast_missing_old_value(old):
    new = TupleData((b"1", UNCHANGED_TOAST), "tu")
    with pytest.raises(PgOutputError, match="column position 1"):
        fill_unchanged_toast(new, old)


def test_unchanged_toast_sentinel_survives_pickle():
    assert pickle.loads(pickle.dumps(UNCHANGED_TOAST)) is UNCHANGED_TOAST
    assert repr(UNCHANGED_TOAST) == "UNCHANGED_TOAST"
    data = pickle.loads(pickle.dumps(ROW_DATA))
    assert data == ROW_DATA and data.values[2] is UNCHANGED_TOAST


# ------------------------------------------------------- decode_change (the fast path)

PLAIN_ROW = tuple_part(("t", b"42"), ("n", None), ("t", "ünï".encode()), ("b", b"\x00\x01"), ("t", b""))
PLAIN_VALUES = [b"42", None, "ünï".encode(), b"\x00\x01", b""]
OLD_VALUES = [b"41", b"x", b"big", b"\x00\x00", b"e"]

ROW_PAYLOADS = [
    b"I" + u32(16384) + b"N" + PLAIN_ROW,
    b"I" + u32(7) + b"N" + i16(0),
    b"U" + u32(5) + b"N" + PLAIN_ROW,
    b"U" + u32(5) + b"O" + OLD_ROW + b"N" + PLAIN_ROW,
    b"U" + u32(5) + b"K" + OLD_ROW + b"N" + PLAIN_ROW,
    b"U" + u32(5) + b"O" + OLD_ROW + b"N" + ROW,  # unchanged TOAST, filled from the old row
    b"D" + u32(9) + b"O" + OLD_ROW,
    b"D" + u32(9) + b"K" + OLD_ROW,
    b"D" + u32(2**32 - 1) + b"O" + PLAIN_ROW,
]


def _expected_change(payload: bytes):
    m = decode(payload)
    if isinstance(m, Insert):
        return m.relation_oid, None, list(m.new.values)
    if isinstance(m, Update):
        return (m.relation_oid, None if m.old is None else list(m.old.values),
                list(fill_unchanged_toast(m.new, m.old).values))
    return m.relation_oid, list(m.old.values), None


def test_decode_change_rows():
    assert decode_change(ROW_PAYLOADS[0]) == (16384, None, PLAIN_VALUES)
    assert decode_change(ROW_PAYLOADS[3]) == (5, OLD_VALUES, PLAIN_VALUES)
    assert decode_change(ROW_PAYLOADS[5]) == (5, OLD_VALUES, [b"42", None, b"big", b"\x00\x01", b""])
    assert decode_change(ROW_PAYLOADS[6]) == (9, OLD_VALUES, None)
    for payload in ROW_PAYLOADS:
        assert decode_change(payload) == _expected_change(payload), payload
        assert decode_change(bytearray(payload)) == _expected_change(payload)
        assert decode_change(memoryview(payload)) == _expected_change(payload)
        _oid, old, new = decode_change(payload)
        assert all(type(v) is bytes for v in (old or []) + (new or []) if v is not None)


def test_decode_change_leaves_other_messages_to_decode():
    for payload in (b"B" + u64(1) + i64(2) + u32(3), b"C" + i8(0) + u64(100) + u64(180) + i64(-5),
                    b"R" + u32(1) + s("") + s("t") + b"d" + i16(0), b"T" + i32(1) + i8(0) + u32(1), b""):
        assert decode_change(payload) is None


def test_begin_and_commit_of_the_wrong_length_are_refused():
    """Begin and Commit of exactly their length take a shortcut; any other length does not."""
    for payload in (b"B" + u64(1) + i64(2) + u32(3), b"C" + i8(0) + u64(100) + u64(180) + i64(-5)):
        assert decode(payload) == decode(bytearray(payload))
        for bad in [payload[:n] for n in range(1, len(payload))] + [payload + b"\0"]:
            with pytest.raises(PgOutputError):
                decode(bad)


def test_decode_change_raises_what_decode_raises():
    """Every truncation and every single-byte corruption of every row payload: the same
    PgOutputError as decode, or the same result where the bytes still make sense."""
    cases = []
    for payload in ROW_PAYLOADS:
        cases += [payload[:n] for n in range(1, len(payload))]
        cases += [payload + b"\0"]
        for i in range(1, len(payload)):
            for byte in (0x00, 0xFF, ord("u"), ord("t"), ord("n")):
                cases.append(payload[:i] + bytes([byte]) + payload[i + 1:])
    for bad in cases:
        try:
            want = _expected_change(bad)
        except PgOutputError as exc:
            with pytest.raises(PgOutputError) as info:
                decode_change(bad)
            assert str(info.value) == str(exc), bad
        else:
            assert decode_change(bad) == want, bad


# ---------------------------------------------------------------- LSN, time


@pytest.mark.parametrize(("lsn", "text"), [
    (0, "0/0"),
    (0x16_B374D848, "16/B374D848"),
    (0x1_00000000, "1/0"),
    (2**64 - 1, "FFFFFFFF/FFFFFFFF"),
])
def test_lsn_round_trip(lsn, text):
    assert lsn_to_str(lsn) == text
    assert str_to_lsn(text) == lsn
    assert str_to_lsn(text.lower()) == lsn


@pytest.mark.parametrize("text", ["", "16", "16/", "/1", "G/1", "1/2/3", "123456789/0", "1 /2"])
def test_str_to_lsn_rejects(text):
    with pytest.raises(PgOutputError, match="invalid LSN"):
        str_to_lsn(text)


@pytest.mark.parametrize("lsn", [-1, 2**64])
def test_lsn_to_str_rejects(lsn):
    with pytest.raises(PgOutputError):
        lsn_to_str(lsn)


def test_pg_timestamp():
    assert pg_timestamp_to_datetime(0) == PG_EPOCH == datetime(2000, 1, 1, tzinfo=UTC)
    assert pg_timestamp_to_datetime(86_400_000_001) == datetime(2000, 1, 2, 0, 0, 0, 1, tzinfo=UTC)


# ------------------------------------------------------ real PostgreSQL 15

PG_POSTGRES = "/usr/lib/postgresql/15/bin/postgres"

COLUMNS = [("id", 23), ("name", 25), ("amount", 1700), ("big", 25), ("flag", 16),
           ("ts", 1184), ("arr", 1007), ("doc", 3802)]


def _read_slot(dsn: str, stop, timeout: float = 30.0) -> list:
    """Decoded messages from the slot until `stop(messages)` holds."""
    import psycopg2
    import psycopg2.extras

    conn = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    try:
        cur = conn.cursor()
        cur.start_replication(slot_name="sw_slot", decode=False,
                              options={"proto_version": "1", "publication_names": "pub",
                                       "messages": "true"})
        messages: list = []
        deadline = time.monotonic() + timeout
        while not stop(messages):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; got {[type(m).__name__ for m in messages]}")
            msg = cur.read_message()
            if msg is None:
                select.select([cur], [], [], 0.5)
                continue
            messages.append(decode(msg.payload))
            cur.send_feedback(flush_lsn=msg.data_start)
        return messages
    finally:
        conn.close()


def _transactions(messages: list) -> list[list]:
    """Split the stream into Begin..Commit groups, checking the framing on the way."""
    txns: list[list] = []
    current: list | None = None
    for m in messages:
        if isinstance(m, Begin):
            assert current is None, "Begin inside a transaction"
            current = [m]
        else:
            assert current is not None, f"{m} outside a transaction"
            current.append(m)
            if isinstance(m, Commit):
                txns.append(current)
                current = None
    assert current is None
    return txns


@pytest.mark.skipif(not os.path.exists(PG_POSTGRES), reason="PostgreSQL 15 is not installed")
def test_decodes_a_real_pgoutput_stream():
    import psycopg2

    from tests.pgserver import PostgresServer

    # Made of distinct hex chunks so that, even uncompressed, it is well over
    # the ~2 kB TOAST threshold; STORAGE EXTERNAL keeps it out of line.
    big = "".join(f"{i:08x}" for i in range(2000))
    assert len(big) > 8192

    pg = PostgresServer().start()
    try:
        # Not `with connect(...)`: psycopg2 2.9 opens a transaction there even in
        # autocommit mode, and a slot cannot be created in one that has written.
        setup = psycopg2.connect(pg.dsn)
        setup.autocommit = True
        try:
            c = setup.cursor()
            c.execute("""
                CREATE TABLE t (id int PRIMARY KEY, name text, amount numeric(12, 2), big text,
                                flag bool, ts timestamptz, arr int[], doc jsonb);
                ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL;
                ALTER TABLE t REPLICA IDENTITY FULL;
                CREATE PUBLICATION pub FOR TABLE t;
            """)
            c.execute("SELECT pg_create_logical_replication_slot('sw_slot', 'pgoutput')")
            c.execute("SELECT oid FROM pg_class WHERE relname = 't'")
            table_oid = c.fetchone()[0]

            c.execute("BEGIN")
            c.execute("INSERT INTO t VALUES (1, 'one', 12.5, %s, true, '2024-01-02 03:04:05+00', "
                      "'{1,2,3}', '{\"a\": 1}')", (big,))
            c.execute("INSERT INTO t (id, name) VALUES (2, 'two')")
            c.execute("COMMIT")
            # Leaves `big` alone: the new tuple says 'u' for it.
            c.execute("UPDATE t SET amount = 13.75, flag = false WHERE id = 1")
            c.execute("BEGIN")
            c.execute("DELETE FROM t WHERE id = 2")
            c.execute("SELECT pg_logical_emit_message(true, 'sw', 'hello')")
            c.execute("COMMIT")
            c.execute("TRUNCATE t RESTART IDENTITY")
        finally:
            setup.close()

        dsn = pg.dsn + " options='-c TimeZone=UTC'"
        messages = _read_slot(dsn, lambda ms: any(isinstance(m, Truncate) for m in ms)
                              and isinstance(ms[-1], Commit))
    finally:
        pg.stop()

    txns = _transactions(messages)
    assert len(txns) == 4

    # Every transaction is framed consistently, and LSNs only move forward.
    previous_end = 0
    for txn in txns:
        begin, commit = txn[0], txn[-1]
        assert begin.final_lsn == commit.commit_lsn
        assert begin.commit_time_us == commit.commit_time_us
        assert commit.flags == 0
        assert previous_end < commit.commit_lsn < commit.end_lsn
        previous_end = commit.end_lsn
        assert str_to_lsn(lsn_to_str(commit.end_lsn)) == commit.end_lsn
        assert abs((pg_timestamp_to_datetime(commit.commit_time_us)
                    - datetime.now(UTC)).total_seconds()) < 300
    assert len({txn[0].xid for txn in txns}) == 4

    # 1: Relation (sent before the table's first change), then the inserts.
    ins_txn = txns[0]
    rel = ins_txn[1]
    assert isinstance(rel, Relation)
    assert (rel.oid, rel.namespace, rel.name, rel.replica_identity) == (table_oid, "public", "t", "f")
    assert [(col.name, col.type_oid) for col in rel.columns] == COLUMNS
    assert all(col.is_key for col in rel.columns)  # FULL: the whole row is the identity
    assert rel.columns[2].type_modifier == ((12 << 16) | 2) + 4
    assert rel.columns[0].type_modifier == -1

    def changes(txn: list) -> list:
        # The server re-sends the Relation whenever its cache entry for the table
        # is invalidated (TRUNCATE does that): it must describe the same table.
        assert all(m == rel for m in txn[1:-1] if isinstance(m, Relation))
        return [m for m in txn[1:-1] if not isinstance(m, Relation)]

    row1 = (b"1", b"one", b"12.50", big.encode(), b"t", b"2024-01-02 03:04:05+00", b"{1,2,3}",
            b'{"a": 1}')
    row2 = (b"2", b"two", None, None, None, None, None, None)
    assert ins_txn[2:-1] == [Insert(table_oid, TupleData(row1, "tttttttt")),
                             Insert(table_oid, TupleData(row2, "ttnnnnnn"))]

    # 2: the update carries the complete old row, and 'u' for the TOASTed column.
    (upd,) = changes(txns[1])
    assert isinstance(upd, Update) and upd.relation_oid == table_oid
    assert upd.old_kind == "O"
    assert upd.old == TupleData(row1, "tttttttt")
    assert upd.new.kinds == "tttutttt"
    assert upd.new.values[3] is UNCHANGED_TOAST
    row1_updated = (b"1", b"one", b"13.75", big.encode(), b"f", b"2024-01-02 03:04:05+00", b"{1,2,3}",
                    b'{"a": 1}')
    assert fill_unchanged_toast(upd.new, upd.old) == TupleData(row1_updated, "tttttttt")
    with pytest.raises(PgOutputError, match="column position 3"):
        fill_unchanged_toast(upd.new, None)

    # 3: delete with the whole old row, and the transactional logical message.
    dele, note = changes(txns[2])
    assert dele == Delete(table_oid, TupleData(row2, "ttnnnnnn"), "O")
    assert isinstance(note, Message)
    assert (note.transactional, note.prefix, note.content) == (True, "sw", b"hello")
    assert txns[1][-1].end_lsn <= note.lsn <= txns[2][0].final_lsn

    # 4: truncate.
    (trunc,) = changes(txns[3])
    assert trunc == Truncate(options=2, relation_oids=(table_oid,))
    assert trunc.restart_identity and not trunc.cascade
