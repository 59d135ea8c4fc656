"""Arrow-only consolidation of changelog updates (compaction of small files)."""

from __future__ import annotations

import datetime
import random
from collections import Counter
from decimal import Decimal

import pyarrow as pa
import pytest

from spark_backend.consolidate import consolidate
from spark_backend.schema import DIFF, TS

SCHEMA = pa.schema([pa.field("c0", pa.int32()), pa.field("c1", pa.string()), pa.field("c2", pa.decimal128(10, 2)),
                    pa.field("c3", pa.timestamp("us")), pa.field(TS, pa.int64()), pa.field(DIFF, pa.int64())])


def table(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def net(t: pa.Table) -> Counter:
    out: Counter = Counter()
    for r in t.to_pylist():
        out[(r["c0"], r["c1"], r["c2"], r["c3"])] += r[DIFF]
    return Counter({k: v for k, v in out.items() if v})


def test_insert_then_retract_cancels_and_unmatched_retraction_stays():
    at = datetime.datetime(2024, 1, 1)
    t = table([(1, "a", Decimal("1.50"), at, 10, 1), (1, "a", Decimal("1.50"), at, 11, -1),
               (2, None, None, None, 12, 1), (2, None, None, None, 13, 1),
               (3, "gone", Decimal("0.00"), at, 14, -1)])
    out = consolidate(t, 20)
    assert out.schema == SCHEMA
    assert sorted(out.to_pylist(), key=lambda r: r["c0"]) == [
        {"c0": 2, "c1": None, "c2": None, "c3": None, TS: 20, DIFF: 1},
        {"c0": 2, "c1": None, "c2": None, "c3": None, TS: 20, DIFF: 1},
        {"c0": 3, "c1": "gone", "c2": Decimal("0.00"), "c3": at, TS: 20, DIFF: -1},
    ]


def test_random_changelogs_keep_their_net_multiset():
    rng = random.Random(7)
    rows = []
    for ts in range(400):
        key = (rng.randrange(20), rng.choice(["x", "y", None]), Decimal(rng.randrange(3)), None)
        rows.append((*key, ts, rng.choice([1, 1, -1])))
    t = table(rows)
    out = consolidate(t, 999)
    assert net(out) == net(t)
    assert len(out) == sum(abs(v) for v in net(t).values())
    assert set(out.column(TS).to_pylist()) <= {999}
    assert set(out.column(DIFF).to_pylist()) <= {1, -1}


@pytest.mark.parametrize("t", [pa.list_(pa.int32()), pa.float64()])
def test_types_left_to_spark(t):
    schema = pa.schema([pa.field("c0", t), pa.field(TS, pa.int64()), pa.field(DIFF, pa.int64())])
    assert consolidate(pa.table({"c0": pa.array([], t), TS: pa.array([], pa.int64()),
                                 DIFF: pa.array([], pa.int64())}, schema=schema), 1) is None
