"""Which records of a slice of an ENVELOPE UPSERT backlog can still decide a key's winner.

A backlog's records are read by several Spark tasks, one slice of offsets each, and a
key's winner is picked from all of them (kafka_batch.upsert_batch): an error record
overrides every record of its key before it by offset, and the winner is then the
greatest of the records after the key's last error by the ORDER BY, or that error. A
slice can drop, before anything reaches the JVM, each record that no record of another
slice could make the winner again:

- an error record before the key's last error in the slice;
- a good record before that last error (a later error elsewhere only moves the bar up);
- a good record with a later good record of the same key at least as great by the ORDER
  BY: by offset alone, every good record but the key's last one.

What is left holds, for any records of the other slices, the records the full batch
would pick and the facts the pick uses (the last error's offset, whether it exists),
so the slices' leftovers give the batch's result (tests/unit/test_kafka_contenders.py
checks this against the rule itself). Keys are told apart by their raw bytes: records
with the same bytes have the same decoded key, so grouping by bytes only splits a key's
records more finely, which the rule allows. A backlog with many records per key (the
usual upsert topic) then sends a fraction of them through Spark's decoding, aggregation
and shuffle (bench/RESULTS.md, Kafka section, session 8).

Pure: Arrow tables and NumPy arrays in and out, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_backend.kafka_decode import decode_side


@dataclass(frozen=True)
class Contest:
    """How an ENVELOPE UPSERT table picks a key's winner, as far as a reader needs it: the
    ORDER BY, and which records are errors (kafka_decode.DecodePlan.decode_sql's __err)."""

    by_timestamp: bool  # ORDER BY (timestamp, offset); else by offset alone
    key_required: bool  # a record without a key is an error
    utf8_sides: tuple[str, ...] = ()  # "key", "value": in TEXT, where invalid UTF-8 is an error


def record_errors(records: pa.Table, contest: Contest) -> np.ndarray:
    """Whether each raw record fails to decode, as Spark will decide it: records of
    RAW_SCHEMA, with a column `__<side>` (its field `err`) for each side that the reader
    has decoded in Python already (kafka_read)."""
    bad = np.zeros(records.num_rows, bool)
    if contest.key_required:
        bad |= np.asarray(pc.is_null(records.column("key")))
    for side in ("key", "value"):
        if f"__{side}" in records.column_names:
            err = pc.struct_field(records.column(f"__{side}"), "err")
            bad |= np.asarray(pc.is_valid(err))
        elif side in contest.utf8_sides:
            # TEXT's decoding is one vectorized UTF-8 check unless some record fails it.
            err = decode_side(("text", 0), 1, records.column(side).combine_chunks()).field("err")
            bad |= np.asarray(pc.is_valid(err))
    return bad


def kept(records: pa.Table, contest: Contest) -> pa.Table:
    """The records (raw, as record_errors takes them) that can still decide a key's winner."""
    by_ts = pc.fill_null(records.column("timestamp"), -1).to_numpy() if contest.by_timestamp else None
    offsets = records.column("offset").to_numpy()
    return records.take(contenders(records.column("key").combine_chunks(), offsets,
                                   record_errors(records, contest), by_ts))


def contenders(keys: pa.Array, offsets: np.ndarray, errors: np.ndarray,
               timestamps: np.ndarray | None = None) -> np.ndarray:
    """The indices, ascending, of the records that can still decide their key's winner.

    `keys`: raw keys (NULL a key of its own); `offsets`: int64; `errors`: bool, whether a
    record fails to decode; `timestamps`: int64 when the ORDER BY is (timestamp, offset),
    None when it is the offset alone."""
    n = len(keys)
    if n == 0:
        return np.empty(0, np.int64)
    codes = np.asarray(pc.dictionary_encode(keys, null_encoding="encode").indices, np.int64)
    ncodes = int(codes.max()) + 1
    last_error = np.full(ncodes, np.iinfo(np.int64).min)
    if errors.any():
        np.maximum.at(last_error, codes[errors], offsets[errors])
    bar = last_error[codes]
    kept_errors = np.flatnonzero(errors & (offsets == bar))
    good = np.flatnonzero(~errors & (offsets > bar))
    # A good record stays when it is greater by the ORDER BY than every later good record
    # of its key: walking each key's records from the last offset back, a running maximum.
    # Each key's values live in a band of their own (code × span + rank), so one running
    # maximum over all keys never carries from one key into the next.
    group = codes[good]
    by_key_last_first = np.lexsort((-offsets[good], group))
    if timestamps is None:
        rank = np.zeros(len(good), np.int64)
    else:
        rank = np.unique(timestamps[good], return_inverse=True)[1].astype(np.int64)
    span = len(good) + 1
    value = group[by_key_last_first] * span + rank[by_key_last_first]
    greatest_so_far = np.maximum.accumulate(value)
    stays = np.ones(len(value), bool)
    stays[1:] = value[1:] > greatest_so_far[:-1]
    return np.sort(np.concatenate([good[by_key_last_first[stays]], kept_errors]))
