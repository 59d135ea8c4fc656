"""The connection's protocol states without a socket: the COPY FROM STDIN sub-protocol, which
messages an extended-query error skips, one handler per state, and results put in batches."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from planner.codecs.datarow import EncodedRows, column_formats, encode_table
from planner.errors import PROTOCOL_VIOLATION, QUERY_CANCELED, SqlError
from planner.types import BY_NAME, SqlType
from server.connection import _STATE_HANDLERS
from server.copy_format import CopyOptions
from server.copy_out import CopyOut as CopyEncoder
from server.protocol import messages as m
from server.protocol.states import EXTENDED, ClientGone, CopyInCollector, State
from server.results import ROWS_PER_WRITE, ResultWriter, fields, format_of

INT = SqlType(BY_NAME["integer"])
TEXT = SqlType(BY_NAME["text"])


def test_copy_in_collects_data_until_copy_done_ignoring_flush_and_sync():
    copy = CopyInCollector()
    assert not copy.feed(m.CopyData(b"1\ta\n"))
    assert not copy.feed(m.Flush())
    assert not copy.feed(m.Sync())
    assert not copy.feed(m.CopyData(b"2\tb\n"))
    assert copy.feed(m.CopyDone())
    assert copy.data == b"1\ta\n2\tb\n"


def test_copy_fail_cancels_the_copy_with_the_clients_message():
    with pytest.raises(SqlError) as err:
        CopyInCollector().feed(m.CopyFail("no more"))
    assert err.value.sqlstate == QUERY_CANCELED
    assert err.value.message == "COPY from stdin failed: no more"


def test_any_other_message_during_copy_in_is_a_protocol_violation():
    with pytest.raises(SqlError) as err:
        CopyInCollector().feed(m.Query("SELECT 1"))
    assert err.value.sqlstate == PROTOCOL_VIOLATION
    assert err.value.message == "unexpected message type Query during COPY from stdin"


@pytest.mark.parametrize("gone", [None, m.ProtocolViolation("invalid frontend message type 0")])
def test_a_client_gone_during_copy_in_is_a_connection_error(gone):
    with pytest.raises(ConnectionError):
        CopyInCollector().feed(gone)
    assert issubclass(ClientGone, ConnectionError)


def test_an_extended_error_skips_extended_messages_but_not_sync_or_query():
    assert {m.Parse, m.Bind, m.Describe, m.Execute, m.Close, m.Flush} == set(EXTENDED)
    assert m.Sync not in EXTENDED and m.Query not in EXTENDED


def test_every_state_but_closed_has_one_handler():
    assert set(_STATE_HANDLERS) == set(State) - {State.CLOSED}


def test_fields_and_formats():
    assert format_of((), 3) == 0
    assert format_of((1,), 3) == 1
    assert format_of((0, 1), 1) == 1
    described = fields(["n", "s"], [INT, TEXT], (1,))
    assert [(f.name, f.type_oid, f.type_size, f.format_code) for f in described] == [
        ("n", 23, 4, 1), ("s", 25, -1, 1)]


def _writer() -> tuple[ResultWriter, list[bytes], list[int]]:
    sent: list[bytes] = []
    flushes: list[int] = []

    async def flush() -> None:
        flushes.append(len(sent))

    async def no_rows(sub) -> None:
        raise AssertionError("no subscription here")

    return ResultWriter(sent.append, flush, no_rows), sent, flushes


def test_copy_table_sends_the_copy_out_stream_of_a_table():
    writer, sent, _ = _writer()
    table = pa.table({"c0": pa.array([1, None], pa.int32()), "c1": ["a", "b"]})
    count = asyncio.run(writer.copy_table(["n", "s"], [INT, TEXT], CopyOptions(), table))
    encoder = CopyEncoder(CopyOptions(), [INT, TEXT])
    assert count == 2
    assert b"".join(sent) == (m.copy_out_response(0, [0, 0]) + encoder.header(["n", "s"])
                              + encoder.messages(table) + encoder.trailer() + m.copy_done())
    assert b"".join(sent).count(m.copy_data(b"1\ta\n")) == 1


def test_rows_are_flushed_a_batch_at_a_time():
    writer, sent, flushes = _writer()
    n = ROWS_PER_WRITE + 5
    table = pa.table({"c0": pa.array(range(n), pa.int32())})
    asyncio.run(writer.rows(table, [INT], (), 0, n))
    assert len(sent) == 2 and flushes == [1]  # a full batch is flushed; the rest waits for the caller
    assert b"".join(sent).count(b"D") >= n


def test_rows_encoded_ahead_go_out_as_they_are_and_the_rest_is_encoded():
    """A FETCH's table with some pieces encoded ahead (server/fetch_ahead): those pieces are
    sent as they are, the others encoded then, and the bytes are those of encoding it all;
    other formats, or part of the table, ignore what was encoded ahead."""
    table = pa.table({"c0": pa.array(range(10), pa.int32()), "c1": [f"r{i}" for i in range(10)]})
    types = [INT, TEXT]
    whole = encode_table(table, types, (0, 0))
    ahead = b"<ahead>"  # a stand-in, to see which pieces were taken as they were
    encoded = EncodedRows((0, 0), ((4, ahead), (6, None)))
    writer, sent, flushes = _writer()
    asyncio.run(writer.rows(table, types, (), 0, 10, encoded))
    assert sent == [ahead, encode_table(table.slice(4), types, (0, 0))] and flushes == [1, 2]
    real = EncodedRows((0, 0), ((4, encode_table(table.slice(0, 4), types, (0, 0))), (6, None)))
    writer, sent, _ = _writer()
    asyncio.run(writer.rows(table, types, (0,), 0, 10, real))
    assert b"".join(sent) == whole
    for formats, start in (((1,), 0), ((), 2)):  # binary results; a portal's second Execute
        writer, sent, _ = _writer()
        asyncio.run(writer.rows(table, types, formats, start, 10, encoded))
        assert ahead not in sent
        assert b"".join(sent) == encode_table(table.slice(start), types, column_formats(formats, 2))


def test_column_formats_as_a_bind_gives_them():
    assert column_formats((), 3) == (0, 0, 0)
    assert column_formats((1,), 2) == (1, 1)
    assert column_formats((0, 1, 7), 3) == (0, 1, 0)  # a code other than 1 is text
