"""A slice's contenders give the same winners as all of its records, whatever the other
slices hold (no broker, no Spark): the rule of kafka_batch.upsert_batch, written plainly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_backend.kafka_contenders import Contest, contenders, record_errors
from spark_backend.kafka_read import contenders_of


def pick(records: list[tuple], by_timestamp: bool) -> dict:
    """upsert_batch's winners, by key: (winner, whether an error of the key came before it).
    A record is (key, offset, timestamp, error)."""
    out = {}
    for key in {r[0] for r in records}:
        mine = [r for r in records if r[0] == key]
        errors = [r[1] for r in mine if r[3]]
        last_error = max(errors) if errors else None
        kept = [r for r in mine if (r[3] and r[1] == last_error)
                or (not r[3] and (last_error is None or r[1] > last_error))]
        winner = max(kept, key=lambda r: (not r[3], r[2] if by_timestamp else 0, r[1]))
        out[key] = (winner, last_error is not None and not winner[3])
    return out


def kept(records: list[tuple], by_timestamp: bool) -> list[tuple]:
    if not records:
        return []
    keys = pa.array([r[0] for r in records], pa.binary())
    offsets = np.array([r[1] for r in records], np.int64)
    errors = np.array([r[3] for r in records], bool)
    timestamps = np.array([r[2] for r in records], np.int64) if by_timestamp else None
    return [records[i] for i in contenders(keys, offsets, errors, timestamps)]


record = st.tuples(st.sampled_from([b"a", b"b", b"c", None]), st.integers(-1, 5), st.booleans())


@settings(max_examples=400, deadline=None)
@given(st.lists(record, max_size=40), st.integers(1, 4), st.booleans(), st.randoms(use_true_random=False))
def test_the_winners_of_the_contenders_are_the_winners_of_all(raw, slices, by_timestamp, rnd):
    # Offsets are distinct, as within a partition; records are dealt into slices at random
    # (a slice's offsets need not be contiguous for the rule to hold).
    records = [(key, offset, ts, err) for offset, (key, ts, err) in enumerate(raw)]
    parts = [[] for _ in range(slices)]
    for r in records:
        parts[rnd.randrange(slices)].append(r)
    left = [r for part in parts for r in kept(part, by_timestamp)]
    assert pick(left, by_timestamp) == pick(records, by_timestamp)
    # A reader prunes as it goes: what it kept, pruned again with more records, still
    # gives the same winners, and pruning what was kept changes nothing.
    once = kept(records, by_timestamp)
    assert kept(once, by_timestamp) == once
    assert pick(kept([*kept(parts[0], by_timestamp), *[r for p in parts[1:] for r in p]], by_timestamp),
                by_timestamp) == pick(records, by_timestamp)


def test_by_offset_a_key_keeps_its_last_good_record_and_its_last_error():
    records = [(b"k", 0, 0, False), (b"k", 1, 0, True), (b"k", 2, 0, False), (b"k", 3, 0, False),
               (b"j", 4, 0, False), (b"k", 5, 0, True), (b"j", 6, 0, False), (None, 7, 0, False),
               (b"m", 8, 0, True), (b"m", 9, 0, False), (None, 10, 0, True)]
    assert [r[1] for r in kept(records, False)] == [5, 6, 8, 9, 10]


def test_by_timestamp_a_key_keeps_each_record_no_later_one_beats():
    # Timestamps 50, 40, 45, 10 at offsets 0..3: 50 is beaten by nothing later, 45 by
    # nothing later, 40 by 45, and 10 is the last; an equal later timestamp beats a record.
    records = [(b"k", 0, 50, False), (b"k", 1, 40, False), (b"k", 2, 45, False), (b"k", 3, 10, False),
               (b"j", 4, 7, False), (b"j", 5, 7, False)]
    assert [r[1] for r in kept(records, True)] == [0, 2, 3, 5]
    # A record before an error of its key goes, however great.
    assert [r[1] for r in kept([*records, (b"k", 6, 0, True)], True)] == [5, 6]


def test_nothing_in_nothing_out():
    assert contenders(pa.array([], pa.binary()), np.array([], np.int64), np.array([], bool)).tolist() == []


def raw(keys: list, values: list, decoded: list | None = None) -> pa.Table:
    """Raw records at offsets 0, 1, ... (RAW_SCHEMA), with the reader's `__value` when given
    (the errors of a side decoded in Python)."""
    n = len(keys)
    table = pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                      "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64()),
                      "timestamp": pa.array([1_700_000_000_000] * n, pa.int64()),
                      "headers": pa.nulls(n, pa.string())})
    if decoded is not None:
        table = table.append_column("__value", pa.StructArray.from_arrays(
            [pa.nulls(n, pa.string()), pa.array(decoded, pa.string())], names=["c0", "err"]))
    return table


def test_errors_are_those_spark_finds():
    # No key (the key is required), a key or value that is not UTF-8 in TEXT, a value the
    # reader's decoder refused; a tombstone is no error.
    table = raw([None, b"\xff", b"k", b"k", b"k"], [b"v", b"v", b"\xfe", None, b"v"])
    text = Contest(False, True, ("key", "value"))
    assert record_errors(table, text).tolist() == [True, True, True, False, False]
    assert record_errors(table, Contest(False, False, ())).tolist() == [False] * 5
    json = raw([b"k", b"k", b"\xff"], [b"{}", b"{", b"[]"], decoded=[None, "invalid JSON", None])
    assert record_errors(json, Contest(False, True, ("key",))).tolist() == [False, True, True]


def test_a_reader_drops_as_it_goes_and_keeps_what_can_win():
    # 3 keys in 8 chunks of 5: held records are dropped at 10 rows, to 3 at most.
    chunks = [raw([b"a", b"b", b"c", b"a", b"b"], [b"x"] * 5) for _ in range(8)]
    chunks = [t.set_column(3, "offset", pa.array(range(5 * i, 5 * i + 5), pa.int64())) for i, t in enumerate(chunks)]
    out = list(contenders_of(iter(chunks), Contest(False, True, ("key", "value")), rows=10))
    assert len(out) == 1
    assert sorted(zip(out[0].column("key").to_pylist(), out[0].column("offset").to_pylist())) == \
        [(b"a", 38), (b"b", 39), (b"c", 37)]
    # Keys that are all distinct: what is left is passed on, not held.
    distinct = [raw([f"{i}-{j}".encode() for j in range(5)], [b"x"] * 5) for i in range(4)]
    out = list(contenders_of(iter(distinct), Contest(False, True, ()), rows=10))
    assert [t.num_rows for t in out] == [10, 10]
    assert list(contenders_of(iter([]), Contest(False, True, ()))) == []
