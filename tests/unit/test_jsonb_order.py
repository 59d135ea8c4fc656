"""planner.jsonb_order: byte keys whose order is jsonb's btree order. The expected order
below is PostgreSQL 15's (`ORDER BY x::jsonb`, C.UTF-8), each inner list a group of values
that jsonb `=` finds equal."""

from __future__ import annotations

import itertools

import pytest

from planner.jsonb_order import sort_key

# Ascending, as PostgreSQL sorted them; values within a group are equal.
PG_ORDER: list[list[str]] = [
    ["[]"],  # the empty array sorts below every top-level scalar (a one-element pseudo-array)
    ["null"],
    ['""'], ['"a"'], ['"ab"'], ['"b"'], ['"é"'], ['"中"'], ['"😀"'],  # strings in code point order
    ["-1e300"], ["-100", "-1e2"], ["-99.5"], ["-1", "-1.0"], ["-0.5"], ["-0.0001"],
    ["0", "-0", "0.000"], ["1e-300"], ["0.1"], ["1", "1.00", "10e-1"], ["1.5"], ["2"], ["100", "1E+2"],
    ["123456789012345678901234567890"],
    ["false"], ["true"],
    ["[null]"], ['["a"]'], ["[1]"], ["[true]"], ["[[]]"], ["[[1, 2]]"], ["[{}]"],  # a raw scalar < [x]
    ["[1, 2]"], ["[2, 1]"], ["[1, 2, 3]"],  # longer arrays are greater, whatever they hold
    ["{}"], ['{"a": null}'], ['{"a": 1}', '{"a": 1.0}'], ['{"a": []}'], ['{"a": {}}'],
    ['{"aa": 0}'], ['{"b": 0}'],  # keys compare by collation: "aa" < "b"
    ['{"a": 2, "b": 1}', '{"b": 1, "a": 2}'],
    ['{"a": 1, "a": 5, "c": 0}'],  # the last duplicate key wins
    # Pairs compare in storage order (keys by length first): "b" before "aa".
    ['{"b": 0, "aa": 9}'], ['{"b": 1, "aa": 0}'], ['{"b": 1, "aa": 2}'],
    ['{"a": 1, "b": 2, "c": 3}'],
]


def test_keys_follow_postgres_order():
    keys = [[sort_key(v) for v in group] for group in PG_ORDER]
    for group, group_keys in zip(PG_ORDER, keys, strict=True):
        assert len(set(group_keys)) == 1, group
    for (lo, lo_keys), (hi, hi_keys) in itertools.pairwise(zip(PG_ORDER, keys)):
        assert lo_keys[0] < hi_keys[0], (lo, hi)


def test_sorting_by_key_reproduces_postgres_order():
    values = [v for group in reversed(PG_ORDER) for v in group]
    ranks = {v: i for i, group in enumerate(PG_ORDER) for v in group}
    assert [ranks[v] for v in sorted(values, key=sort_key)] == sorted(ranks[v] for v in values)


@pytest.mark.parametrize("a, b", [
    ('{"a": 1, "b": [true, null]}', '{"b": [true, null], "a": 1.0}'),
    ("1e2", "100"),
    ('[0.10, "x"]', '[1e-1, "x"]'),
    ('  {"k" : -5E-1}', '{"k": -0.5}'),
])
def test_equal_values_have_equal_keys(a, b):
    assert sort_key(a) == sort_key(b)


def test_null_is_null():
    assert sort_key(None) is None
