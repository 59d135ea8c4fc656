"""The pieces of SUBSCRIBE's bounded streaming, without Spark or a socket: reading a spill
back consolidated, the byte-budgeted output buffer, COPY text encoding, exact state."""

from __future__ import annotations

import asyncio
import collections
import decimal
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner.dataflow import Aggregate, AggregatePlan, JoinPlan
from planner.types import BY_NAME, SqlType, group_key
from server.connection import Connection  # noqa: F401 - the module must import without Spark work
from server.copy_out import copy_text
from server.subscribe_buffer import OutputBuffer, Stalled
from server.subscribe_state import AggregateState, FloatSum, JoinState, Multiset, checked, consolidate
from spark_backend import spill

INT = SqlType(BY_NAME["integer"])
BIGINT = SqlType(BY_NAME["bigint"])
TEXT = SqlType(BY_NAME["text"])
FLOAT = SqlType(BY_NAME["double precision"])
NUMERIC = SqlType(BY_NAME["numeric"])


# ----------------------------------------------------------------- spills read back


def _spill(tmp_path: Path, rows: list[tuple], hashes: list[int], files: int = 2) -> spill.Spill:
    """A spill as Spark writes it: part files of c0, c1, __mz_diff, __h (one timestamp)."""
    path = tmp_path / "s1-1"
    path.mkdir()
    per = max(1, len(rows) // files)
    written = []
    for n, start in enumerate(range(0, len(rows), per)):
        part = rows[start:start + per]
        table = pa.table({"c0": pa.array([r[0] for r in part], pa.int64()),
                          "c1": pa.array([r[1] for r in part], pa.float64()),
                          spill.DELTA_DIFF: pa.array([r[2] for r in part], pa.int64()),
                          spill.HASH: pa.array(hashes[start:start + per], pa.int64())})
        target = path / f"part-{n:05d}.parquet"
        pq.write_table(table, target)
        written.append(str(target))
    return spill.Spill(path, 2, {7: written})


def _read(s: spill.Spill) -> dict:
    out: dict = {}
    for table in s.consolidated(7, chunk_rows=3):
        for c0, c1, d in zip(*[c.to_pylist() for c in table.columns]):
            key = (c0, "NaN" if isinstance(c1, float) and math.isnan(c1) else c1)
            assert key not in out, f"{key} twice"
            out[key] = d
    return out


def test_unique_rows_pass_through_and_shared_hashes_are_netted(tmp_path):
    rows = [(1, 1.0, 1), (2, 2.0, 1), (3, math.nan, 1), (3, math.nan, 1), (4, 4.0, 1), (4, 4.0, -1),
            (5, 0.0, 1), (5, -0.0, 1), (6, 6.0, 1), (7, 7.0, 1)]
    # Equal rows share a hash, as xxhash64 gives them; 6 and 7 collide without being equal.
    hashes = [11, 22, 33, 33, 44, 44, 55, 55, 66, 66]
    got = _read(_spill(tmp_path, rows, hashes, files=3))
    assert got == {(1, 1.0): 1, (2, 2.0): 1, (3, "NaN"): 2, (5, 0.0): 2, (6, 6.0): 1, (7, 7.0): 1}


def test_many_buckets_find_the_same_duplicates(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "HASH_BUCKET_ROWS", 2)
    rows = [(i, float(i), 1) for i in range(10)] + [(3, 3.0, 1)]
    got = _read(_spill(tmp_path, rows, [*range(100, 110), 103]))
    assert got[(3, 3.0)] == 2 and len(got) == 10


def test_repeats_count_every_row_sharing_a_hash():
    hashes = np.array([5, 3, 9, 3, 5, 3, 7], np.int32)
    found, sharing = spill.repeats(hashes)
    assert found.tolist() == [3, 5] and sharing == 5
    assert spill.repeats(np.array([1, 2, 3], np.int32))[1] == 0
    # Chance collisions of distinct rows are tolerated: about rows² / 2³² of them.
    assert spill.tolerable_repeats(0) == spill.CHUNK_ROWS
    assert spill.tolerable_repeats(10_000_000) == spill.CHUNK_ROWS + 23_283


def test_chunks_are_bounded_in_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "READ_ROWS", 10)
    monkeypatch.setattr(spill, "CHUNK_BYTES", 400)
    s = _spill(tmp_path, [(i, float(i), 1) for i in range(200)], list(range(200)), files=1)
    sizes = [t.num_rows for t in s.consolidated(7)]
    assert sum(sizes) == 200 and max(sizes) <= 20


# ----------------------------------------------------------------- the output buffer


def _table(n: int) -> pa.Table:
    return pa.table({"c0": pa.array(range(n), pa.int64())})


def test_put_waits_while_unread_bytes_are_over_budget():
    async def main() -> None:
        buf = OutputBuffer(budget=100)
        await buf.put(_table(20))  # 160 bytes: over budget, but nothing waits to go in yet
        second = asyncio.ensure_future(buf.put(_table(5)))
        await asyncio.sleep(0.05)
        assert not second.done(), "a put must wait while the budget is used up"
        assert sum(t.num_rows for t in buf.take(5)) == 5
        await asyncio.sleep(0.01)
        assert not second.done()  # 120 bytes still unread
        assert sum(t.num_rows for t in buf.take(10)) == 10
        await asyncio.wait_for(second, 1)  # 40 bytes unread: room again
        assert buf.rows == 10
        buf.discard()

    asyncio.run(main())


def test_take_respects_limits_and_byte_caps():
    async def main() -> None:
        buf = OutputBuffer(budget=1 << 20)
        for n in (3, 4, 5):
            await buf.put(_table(n))
        assert [t.num_rows for t in buf.take(5)] == [3, 2]
        assert [t.num_rows for t in buf.take(None, max_bytes=8)] == [1]  # at least one row
        assert [t.num_rows for t in buf.take(None)] == [1, 5]
        assert buf.take(None) == [] and buf.rows == 0
        buf.discard()

    asyncio.run(main())


def test_a_stalled_client_is_noticed():
    async def main() -> None:
        buf = OutputBuffer(budget=10, stall_timeout=0.1)
        await buf.put(_table(5))
        with pytest.raises(Stalled):
            await buf.put(_table(5))
        buf.discard()

    asyncio.run(main())


# ----------------------------------------------------------------- COPY text


def test_copy_text_escapes_and_nulls():
    table = pa.table({"a": pa.array([1, None], pa.int32()), "b": ["x\ty\\z\n", None],
                      "c": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(10, 2))})
    out = copy_text([INT, TEXT, NUMERIC], table)
    first, second = b"1\tx\\ty\\\\z\\n\t1.5\n", b"\\N\t\\N\t\\N\n"
    assert out == (b"d" + (len(first) + 4).to_bytes(4, "big") + first
                   + b"d" + (len(second) + 4).to_bytes(4, "big") + second)


# ----------------------------------------------------------------- exact state


def test_float_sum_retracts_exactly():
    total = FloatSum()
    total.add(1e20, 1)
    total.add(1.0, 1)
    total.add(1e20, -1)
    assert total.value() == 1.0
    total.add(math.inf, 1)
    assert total.value() == math.inf
    total.add(-math.inf, 1)
    assert math.isnan(total.value())
    total.add(-math.inf, -1)
    total.add(math.inf, -1)
    total.add(math.nan, 1)
    assert math.isnan(total.value())
    total.add(math.nan, -1)
    assert total.value() == 1.0 and total.value(4) == 0.25
    big = FloatSum()
    big.add(1.7e308, 2)
    assert big.value() == math.inf


def test_nan_rows_consolidate_and_group_as_one():
    m = Multiset()
    m.add((math.nan, "a"), 1)
    m.add((float("nan"), "a"), 1)
    m.add((-0.0, "b"), 1)
    m.add((0.0, "b"), -1)
    assert len(m) == 1 and m.items()[0][1] == 2
    assert group_key([1.0, math.nan]) == group_key((1.0, float("nan")))
    table = pa.table({"f": [math.nan, math.nan, 1.0], "__mz_ts": [5, 5, 5], "__mz_diff": [1, 1, -1]})
    [(ts, updates)] = consolidate(table).items()
    assert ts == 5 and sorted((math.isnan(r[0]), n) for r, n in updates) == [(False, -1), (True, 2)]


def test_aggregate_groups_nan_keys_and_checks_overflow():
    plan = AggregatePlan(1, (("key", 0), ("agg", 0), ("agg", 1)),
                         (Aggregate("count_star", 0), Aggregate("sum", 1)), "partial",
                         float_sql={}, is_global=False)
    state = AggregateState(plan, [FLOAT, BIGINT, BIGINT], set())
    partial = pa.table({"__k0": [math.nan, math.nan], "__mz_ts": [1, 1], "__n": [1, 1], "__c1": [1, 1],
                        "__s1": [5, 6]})
    changes = state.apply([partial])
    [(row, n)] = changes[1]
    assert math.isnan(row[0]) and row[1:] == (2, 11) and n == 1
    overflow = pa.table({"__k0": [math.nan], "__mz_ts": [2], "__n": [1], "__c1": [1],
                         "__s1": [9223372036854775807]})
    with pytest.raises(Exception) as info:
        state.apply([overflow])
    assert getattr(info.value, "sqlstate", None) == "22003"
    with pytest.raises(Exception) as info:
        checked(decimal.Decimal("1000.5"), SqlType(BY_NAME["numeric"], ((5 << 16) | 2) + 4))
    assert info.value.sqlstate == "22003"


# ----------------------------------------------------------------- join state


def _join_side(rows: list[tuple], name: str) -> pa.Table:
    """One join input's batch: (value, key, ts, diff) rows as the side's SQL yields them."""
    return pa.table({name: pa.array([r[0] for r in rows], pa.string()),
                     "__jk0": pa.array([r[1] for r in rows], pa.int64()),
                     "__mz_ts": pa.array([r[2] for r in rows], pa.int64()),
                     "__mz_diff": pa.array([r[3] for r in rows], pa.int64())})


def _joined(table: pa.Table | None) -> collections.Counter:
    out: collections.Counter = collections.Counter()
    if table is not None:
        for l0, r0, ts, diff in zip(*(c.to_pylist() for c in table.columns)):
            out[(l0, r0, ts)] += diff
    return collections.Counter({k: n for k, n in out.items() if n})


def test_join_state_against_a_plain_nested_loop():
    """Random batches of inserts and retractions over few keys (so keys hold one row, then
    several, then one again): the joined updates equal a nested loop over the full inputs'
    before and after, and the state empties when the inputs do."""
    import random

    rng = random.Random(7)
    state = JoinState(JoinPlan("", "", ("l0",), ("r0",), 1, ""))
    inputs: list[collections.Counter] = [collections.Counter(), collections.Counter()]

    def join(left, right):
        out: collections.Counter = collections.Counter()
        for (lv, lk), ln in left.items():
            for (rv, rk), rn in right.items():
                if lk == rk and lk is not None:
                    out[(lv, rv)] += ln * rn
        return out

    for ts in range(1, 60):
        before = join(*inputs)
        batches = [[], []]
        for side in (0, 1):
            for _ in range(rng.randint(0, 4)):
                present = [row for row, n in inputs[side].items() if n > 0]
                if present and rng.random() < 0.4:
                    value, key = rng.choice(present)
                    diff = -1
                else:
                    value, key = rng.choice("abc"), rng.choice([1, 2, 3, None])
                    diff = 1
                inputs[side][(value, key)] += diff
                batches[side].append((value, key, ts, diff))
        got = _joined(state.apply([_join_side(batches[0], "l0"), _join_side(batches[1], "r0")]))
        change = join(*inputs)
        change.subtract(before)
        assert got == collections.Counter({(lv, rv, ts): n for (lv, rv), n in change.items() if n}), ts
    for side in (0, 1):
        for (value, key), n in list(inputs[side].items()):
            if n:
                state.apply([_join_side([(value, key, 99, -n)] if side == 0 else [], "l0"),
                             _join_side([(value, key, 99, -n)] if side == 1 else [], "r0")])
    assert state.sides == ({}, {})
