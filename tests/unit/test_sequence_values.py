"""SequenceValues (server/sequences.py): values handed out only under a durable mark, the
mark moved LOG_AHEAD values ahead, never a value twice — over a small in-memory committer
that applies each catalog record as the coordinator's commit does (the record's durability
itself is tests/integration/test_sequence_durability.py's)."""

from __future__ import annotations

import asyncio

import pytest

from planner import sequences as seq
from planner.errors import SqlError
from server import sequences
from server.catalog import Catalog
from server.catalog_items import Item


class _Log:
    """Commits catalog records to its catalog, one at a time, yielding in between."""

    def __init__(self, spec: seq.Spec) -> None:
        self.catalog = Catalog()
        self.write_lock = asyncio.Lock()
        self.records: list[list] = []
        item = Item("u1", "s", sequences.KIND, (), 0, details=sequences.details(spec, seq.start_state(spec)))
        for op in self.catalog.plan_create(item):
            self.catalog.apply(op)

    async def commit(self, ops: list, updates: dict) -> int:
        assert self.write_lock.locked()
        await asyncio.sleep(0)  # another caller may run while the record is written
        for op in ops:
            self.catalog.apply(op)
        self.records.append(ops)
        return len(self.records)

    @property
    def item(self) -> Item:
        return self.catalog.get("s")

    def durable(self) -> seq.State:
        return sequences.durable_state(self.item)


def _take(values: sequences.SequenceValues, log: _Log, count: int = 1) -> list[int]:
    return asyncio.run(values.take(log.item, count, None, lock_held=False))


def test_one_record_covers_the_next_log_ahead_values():
    log = _Log(seq.Spec("bigint", 1, 1, 1, 2 ** 63 - 1))
    values = sequences.SequenceValues(log)
    taken = [v for _ in range(seq.LOG_AHEAD + 1) for v in _take(values, log)]
    assert taken == list(range(1, seq.LOG_AHEAD + 2)) and len(log.records) == 1
    assert log.durable().last_value >= taken[-1]
    _take(values, log)
    assert len(log.records) == 2 and log.durable().last_value >= seq.LOG_AHEAD + 2


def test_a_big_call_moves_the_mark_past_all_of_its_values():
    log = _Log(seq.Spec("integer", 1, 5, 1, 2 ** 31 - 1))
    values = sequences.SequenceValues(log)
    taken = _take(values, log, 1000)
    assert taken == list(range(1, 5000, 5)) and log.durable().last_value >= taken[-1]


def test_after_a_crash_the_values_go_on_past_the_mark():
    log = _Log(seq.Spec("bigint", 1, 1, 1, 2 ** 63 - 1))
    before = _take(sequences.SequenceValues(log), log, 3)
    after = _take(sequences.SequenceValues(log), log, 3)  # memory lost; the catalog kept
    assert not set(before) & set(after) and min(after) > max(before)


def test_concurrent_callers_never_share_a_value():
    log = _Log(seq.Spec("bigint", 1, 1, 1, 2 ** 63 - 1))
    values = sequences.SequenceValues(log)

    async def many() -> list[int]:
        parts = await asyncio.gather(*(values.take(log.item, n, None, lock_held=False) for n in [1, 40, 3, 70] * 5))
        return [v for p in parts for v in p]

    taken = asyncio.run(many())
    assert len(taken) == len(set(taken)) == 570 and log.durable().last_value >= max(taken)


def test_after_alter_the_next_value_follows_the_last_under_a_new_mark():
    log = _Log(seq.Spec("bigint", 1, 1, 1, 2 ** 63 - 1))
    values = sequences.SequenceValues(log)
    assert _take(values, log, 2) == [1, 2]
    log.catalog.apply(sequences.SetDetails("u1", {"spec": seq.Spec("bigint", 1, 100, 1, 2 ** 63 - 1).to_json()}))
    values.options_changed("u1")
    records = len(log.records)
    assert _take(values, log, 2) == [102, 202]
    assert len(log.records) == records + 1 and log.durable().last_value >= 202


def test_the_bound_takes_nothing_and_writes_nothing():
    log = _Log(seq.Spec("integer", 1, 1, 1, 3))
    values = sequences.SequenceValues(log)
    assert _take(values, log, 2) == [1, 2]
    records = len(log.records)
    with pytest.raises(SqlError) as err:
        _take(values, log, 2)
    assert err.value.sqlstate == "2200H" and len(log.records) == records
    assert _take(values, log, 1) == [3]
