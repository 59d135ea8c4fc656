"""SUBSCRIBE output shaping: the seed's example sessions, errors, ordering, envelopes.

Expected outputs follow /work/shared/seeds/subscribe-outputs.md, corrected to the
shipped Materialize product where the two differ: the state is `key_violation`,
`mz_progressed` precedes `mz_state`, and DEBEZIUM reports a lone insertion as
`insert`.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import SqlError
from planner.subscribe_syntax import OrderKey, OutputMode
from planner.types import BY_NAME, SqlType
from server.subscribe_format import (
    OutputPlan,
    format_timestamp,
    plan_output,
    progress_row,
    subscription_label,
)

INT = SqlType(BY_NAME["integer"])
TEXT = SqlType(BY_NAME["text"])
NUMERIC = SqlType(BY_NAME["numeric"])
BOOL = SqlType(BY_NAME["boolean"])
BIGINT = SqlType(BY_NAME["bigint"])


def upsert(*keys: str) -> OutputMode:
    return OutputMode("upsert", keys=keys)


def debezium(*keys: str) -> OutputMode:
    return OutputMode("debezium", keys=keys)


def order_by(*keys: OrderKey) -> OutputMode:
    return OutputMode("order_by", order_by=keys)


def shuffled(updates: list, seed: int = 7) -> list:
    # The formatter must not depend on the order Spark returns a timestamp's rows in.
    copy = list(updates)
    random.Random(seed).shuffle(copy)
    return copy


# ----------------------------------------------------------------- the seed's sessions


def test_seed_within_timestamp_order_by():
    plan = plan_output(order_by(OrderKey("c1"), OrderKey("c2", True, False), OrderKey("mz_diff")),
                       ["c1", "c2", "c3"], [INT, INT, TEXT], progress=False)
    assert plan.names == ("mz_timestamp", "mz_diff", "c1", "c2", "c3")
    updates = [
        ((1, 20, "foo"), 1),
        ((1, 2, "bar"), -1),
        ((1, 2, "boo"), 1),
        ((1, 0, "data"), 1),
        ((2, 0, "old"), -1),
        ((2, 0, "new"), 1),
    ]
    expected = [
        (100, 1, 1, 20, "foo"),
        (100, -1, 1, 2, "bar"),
        (100, 1, 1, 2, "boo"),
        (100, 1, 1, 0, "data"),
        (100, -1, 2, 0, "old"),
        (100, 1, 2, 0, "new"),
    ]
    for seed in range(5):
        assert format_timestamp(plan, 100, shuffled(updates, seed)) == expected


# The kv_store session shared by the UPSERT and DEBEZIUM examples: one entry per
# timestamp, holding that timestamp's consolidated updates.
KV_SESSION = {
    100: [((1, 2), 1), ((2, 4), 1)],
    200: [((1, 2), -1), ((1, 10), 1)],
    300: [((3, 6), 1)],
    400: [((1, 10), -1), ((2, 4), -1), ((3, 6), -1)],
    500: [((1, 7), 1), ((1, 8), 1)],  # two live values for key 1
}


@pytest.fixture
def kv_upsert() -> OutputPlan:
    return plan_output(upsert("key"), ["key", "value"], [INT, INT], progress=False)


@pytest.fixture
def kv_debezium() -> OutputPlan:
    return plan_output(debezium("key"), ["key", "value"], [INT, INT], progress=False)


def test_seed_envelope_upsert_columns(kv_upsert):
    assert kv_upsert.names == ("mz_timestamp", "mz_state", "key", "value")
    assert kv_upsert.types == (NUMERIC, TEXT, INT, INT)


def test_seed_envelope_upsert_t100_snapshot(kv_upsert):
    assert format_timestamp(kv_upsert, 100, shuffled(KV_SESSION[100])) == [
        (100, "upsert", 1, 2),
        (100, "upsert", 2, 4),
    ]


@pytest.mark.parametrize("order", [0, 1])
def test_seed_envelope_upsert_t200_update(kv_upsert, order):
    updates = KV_SESSION[200] if order == 0 else KV_SESSION[200][::-1]
    assert format_timestamp(kv_upsert, 200, updates) == [(200, "upsert", 1, 10)]


def test_seed_envelope_upsert_t300_insert(kv_upsert):
    assert format_timestamp(kv_upsert, 300, KV_SESSION[300]) == [(300, "upsert", 3, 6)]


def test_seed_envelope_upsert_t400_delete_all(kv_upsert):
    assert format_timestamp(kv_upsert, 400, shuffled(KV_SESSION[400])) == [
        (400, "delete", 1, None),
        (400, "delete", 2, None),
        (400, "delete", 3, None),
    ]


def test_seed_envelope_upsert_t500_key_violation(kv_upsert):
    assert format_timestamp(kv_upsert, 500, KV_SESSION[500]) == [(500, "key_violation", 1, None)]


def test_seed_envelope_debezium_columns(kv_debezium):
    assert kv_debezium.names == ("mz_timestamp", "mz_state", "key", "before_value", "after_value")
    assert kv_debezium.types == (NUMERIC, TEXT, INT, INT, INT)


def test_seed_envelope_debezium_t100_snapshot(kv_debezium):
    assert format_timestamp(kv_debezium, 100, shuffled(KV_SESSION[100])) == [
        (100, "insert", 1, None, 2),
        (100, "insert", 2, None, 4),
    ]


@pytest.mark.parametrize("order", [0, 1])
def test_seed_envelope_debezium_t200_update(kv_debezium, order):
    updates = KV_SESSION[200] if order == 0 else KV_SESSION[200][::-1]
    assert format_timestamp(kv_debezium, 200, updates) == [(200, "upsert", 1, 2, 10)]


def test_seed_envelope_debezium_t300_insert(kv_debezium):
    assert format_timestamp(kv_debezium, 300, KV_SESSION[300]) == [(300, "insert", 3, None, 6)]


def test_seed_envelope_debezium_t400_delete_all(kv_debezium):
    assert format_timestamp(kv_debezium, 400, shuffled(KV_SESSION[400])) == [
        (400, "delete", 1, 10, None),
        (400, "delete", 2, 4, None),
        (400, "delete", 3, 6, None),
    ]


def test_seed_envelope_debezium_t500_key_violation(kv_debezium):
    assert format_timestamp(kv_debezium, 500, KV_SESSION[500]) == [(500, "key_violation", 1, None, None)]


# ----------------------------------------------------------------- output columns


def test_plain_diffs_columns_and_rows():
    plan = plan_output(OutputMode(), ["a", "b"], [INT, TEXT], progress=False)
    assert plan.names == ("mz_timestamp", "mz_diff", "a", "b")
    assert plan.types == (NUMERIC, BIGINT, INT, TEXT)
    # Input order is kept, and a row with multiplicity keeps its net diff.
    updates = [((2, "x"), 3), ((1, "y"), -1), ((5, None), -2)]
    assert format_timestamp(plan, 9, updates) == [(9, 3, 2, "x"), (9, -1, 1, "y"), (9, -2, 5, None)]


def test_plain_diffs_with_progress():
    plan = plan_output(OutputMode(), ["a"], [INT], progress=True)
    assert plan.names == ("mz_timestamp", "mz_progressed", "mz_diff", "a")
    assert plan.types == (NUMERIC, BOOL, BIGINT, INT)
    assert format_timestamp(plan, 4, [((1,), 1)]) == [(4, False, 1, 1)]
    assert progress_row(plan, 5) == (5, True, None, None)


def test_order_by_columns_same_as_diffs():
    plan = plan_output(order_by(OrderKey("a")), ["a", "b"], [INT, TEXT], progress=True)
    assert plan.names == ("mz_timestamp", "mz_progressed", "mz_diff", "a", "b")
    assert plan.types == (NUMERIC, BOOL, BIGINT, INT, TEXT)
    assert format_timestamp(plan, 3, [((2, "q"), 1), ((1, "p"), -1)]) == [
        (3, False, -1, 1, "p"),
        (3, False, 1, 2, "q"),
    ]
    assert progress_row(plan, 4) == (4, True, None, None, None)


def test_upsert_with_progress():
    plan = plan_output(upsert("k"), ["k", "v"], [INT, TEXT], progress=True)
    assert plan.names == ("mz_timestamp", "mz_progressed", "mz_state", "k", "v")
    assert plan.types == (NUMERIC, BOOL, TEXT, INT, TEXT)
    assert format_timestamp(plan, 7, [((1, "a"), 1)]) == [(7, False, "upsert", 1, "a")]
    assert progress_row(plan, 8) == (8, True, None, None, None)


def test_debezium_with_progress():
    plan = plan_output(debezium("k"), ["k", "v"], [INT, TEXT], progress=True)
    assert plan.names == ("mz_timestamp", "mz_progressed", "mz_state", "k", "before_v", "after_v")
    assert format_timestamp(plan, 7, [((1, "a"), -1)]) == [(7, False, "delete", 1, "a", None)]
    assert progress_row(plan, 8) == (8, True, None, None, None, None)


def test_progress_row_requires_progress():
    plan = plan_output(OutputMode(), ["a"], [INT], progress=False)
    with pytest.raises(ValueError):
        progress_row(plan, 1)


def test_key_columns_follow_key_clause_order():
    # Materialize's subscribe_outputs.slt: t2(a, b, c) with KEY (c, b).
    types = [INT, TEXT, BOOL]
    up = plan_output(upsert("c", "b"), ["a", "b", "c"], types, progress=False)
    assert up.names == ("mz_timestamp", "mz_state", "c", "b", "a")
    assert up.types == (NUMERIC, TEXT, BOOL, TEXT, INT)
    dbz = plan_output(debezium("b"), ["a", "b", "c"], types, progress=False)
    assert dbz.names == ("mz_timestamp", "mz_state", "b", "before_a", "before_c", "after_a", "after_c")
    assert dbz.types == (NUMERIC, TEXT, TEXT, INT, BOOL, INT, BOOL)


def test_multi_column_key_in_different_order_than_relation():
    plan = plan_output(debezium("c", "a"), ["a", "b", "c", "d"], [INT, TEXT, INT, TEXT], progress=False)
    assert plan.key_indexes == (2, 0)
    assert plan.value_indexes == (1, 3)
    assert plan.names == ("mz_timestamp", "mz_state", "c", "a", "before_b", "before_d", "after_b", "after_d")
    updates = [
        ((1, "old", 9, "x"), -1),
        ((1, "new", 9, "y"), 1),
        ((2, "n", 1, "z"), 1),  # a lone insertion; smallest c, so first
        ((1, "gone", 8, "w"), -1),
    ]
    # Groups are ordered by (c, a): (1, 2), (8, 1), (9, 1).
    assert format_timestamp(plan, 5, shuffled(updates)) == [
        (5, "insert", 1, 2, None, None, "n", "z"),
        (5, "delete", 8, 1, "gone", "w", None, None),
        (5, "upsert", 9, 1, "old", "x", "new", "y"),
    ]


def test_all_columns_as_key_leaves_no_values():
    plan = plan_output(upsert("a"), ["a"], [INT], progress=False)
    assert plan.names == ("mz_timestamp", "mz_state", "a")
    assert format_timestamp(plan, 1, [((1,), 1), ((2,), -1)]) == [(1, "upsert", 1), (1, "delete", 2)]


def test_subscription_label():
    assert subscription_label(OutputMode()) == "diffs"
    assert subscription_label(order_by(OrderKey("a"))) == "within_timestamp_order_by"
    assert subscription_label(upsert("a")) == "envelope_upsert"
    assert subscription_label(debezium("a")) == "envelope_debezium"
    plan = plan_output(debezium("a"), ["a"], [INT], progress=False)
    assert plan.label == "envelope_debezium"


# ----------------------------------------------------------------- envelope cases


@pytest.mark.parametrize("kind", ["upsert", "debezium"])
@pytest.mark.parametrize("updates", [
    [((1, "a"), 2)],  # one row inserted twice
    [((1, "a"), -2)],  # one row retracted twice
    [((1, "a"), 1), ((1, "b"), 1)],
    [((1, "a"), -1), ((1, "b"), -1)],
    [((1, "a"), -1), ((1, "b"), 1), ((1, "c"), 1)],
    [((1, "a"), -1), ((1, "b"), 2)],
    [((1, "a"), -2), ((1, "b"), 1)],
])
def test_everything_else_is_a_key_violation(kind, updates):
    plan = plan_output(OutputMode(kind, keys=("k",)), ["k", "v"], [INT, TEXT], progress=False)
    nulls = (None,) * (2 if kind == "debezium" else 1)
    assert format_timestamp(plan, 1, updates) == [(1, "key_violation", 1) + nulls]


def test_null_keys_group_together():
    plan = plan_output(debezium("k1", "k2"), ["k1", "k2", "v"], [INT, INT, TEXT], progress=False)
    updates = [
        ((None, None, "old"), -1),
        ((None, 1, "lone"), 1),
        ((None, None, "new"), 1),
        ((1, None, "gone"), -1),
        ((None, 2, "x"), 1),
        ((None, 2, "y"), 1),
    ]
    # Keys sort NULLS LAST: (1, NULL) < (NULL, 1) < (NULL, 2) < (NULL, NULL).
    assert format_timestamp(plan, 3, shuffled(updates)) == [
        (3, "delete", 1, None, "gone", None),
        (3, "insert", None, 1, None, "lone"),
        (3, "key_violation", None, 2, None, None),
        (3, "upsert", None, None, "old", "new"),
    ]


def test_nan_keys_group_together():
    plan = plan_output(upsert("k"), ["k", "v"], [SqlType(BY_NAME["double precision"]), INT], progress=False)
    out = format_timestamp(plan, 1, [((float("nan"), 1), -1), ((float("nan"), 2), 1), ((1.5, 3), 1)])
    assert [r[1] for r in out] == ["upsert", "upsert"]
    assert out[0][2:] == (1.5, 3)
    assert out[1][3] == 2


def test_array_keys_group_together():
    plan = plan_output(upsert("k"), ["k", "v"], [SqlType(BY_NAME["integer"], is_array=True), INT],
                       progress=False)
    out = format_timestamp(plan, 1, [(([1, None], 1), -1), (([1, None], 2), 1), (([1], 5), 1)])
    assert out == [(1, "upsert", [1], 5), (1, "upsert", [1, None], 2)]


def test_empty_timestamp_yields_no_rows():
    for mode in (OutputMode(), order_by(OrderKey("a")), upsert("a"), debezium("a")):
        plan = plan_output(mode, ["a", "b"], [INT, INT], progress=True)
        assert format_timestamp(plan, 1, []) == []


# ----------------------------------------------------------------- ORDER BY semantics

NULLABLE = [((3,), 1), ((None,), 1), ((1,), -1), ((2,), 1)]


@pytest.mark.parametrize("key, expected", [
    (OrderKey("x"), [1, 2, 3, None]),  # ASC defaults to NULLS LAST
    (OrderKey("x", descending=True), [None, 3, 2, 1]),  # DESC defaults to NULLS FIRST
    (OrderKey("x", nulls_first=True), [None, 1, 2, 3]),
    (OrderKey("x", descending=True, nulls_first=False), [3, 2, 1, None]),
])
def test_order_by_direction_and_nulls(key, expected):
    plan = plan_output(order_by(key), ["x"], [INT], progress=False)
    for seed in range(3):
        assert [r[2] for r in format_timestamp(plan, 1, shuffled(NULLABLE, seed))] == expected


def test_order_by_mz_diff_desc_then_column():
    plan = plan_output(order_by(OrderKey("mz_diff", descending=True), OrderKey("x")), ["x"], [INT],
                       progress=False)
    updates = [((1,), -1), ((2,), 3), ((3,), 1), ((4,), -2), ((5,), 1)]
    assert format_timestamp(plan, 1, shuffled(updates)) == [
        (1, 3, 2), (1, 1, 3), (1, 1, 5), (1, -1, 1), (1, -2, 4),
    ]


def test_order_by_ties_are_broken_deterministically():
    plan = plan_output(order_by(OrderKey("g")), ["g", "v"], [INT, TEXT], progress=False)
    updates = [((1, "b"), 1), ((1, None), 1), ((1, "a"), -1), ((0, "z"), 1)]
    outputs = {tuple(format_timestamp(plan, 1, shuffled(updates, s))) for s in range(10)}
    assert len(outputs) == 1
    assert [r[2:] for r in outputs.pop()] == [(0, "z"), (1, "a"), (1, "b"), (1, None)]


def test_order_by_nan_sorts_above_numbers():
    plan = plan_output(order_by(OrderKey("f", descending=True)), ["f"],
                       [SqlType(BY_NAME["double precision"])], progress=False)
    out = format_timestamp(plan, 1, [((1.0,), 1), ((None,), 1), ((float("nan"),), 1), ((-3.0,), 1)])
    values = [r[2] for r in out]
    assert values[0] is None and values[1] != values[1] and values[2:] == [1.0, -3.0]


def test_order_by_decimal_text_bytes_and_arrays():
    plan = plan_output(order_by(OrderKey("n"), OrderKey("t", descending=True)),
                       ["n", "t", "b", "arr"], [NUMERIC, TEXT, SqlType(BY_NAME["bytea"]), INT],
                       progress=False)
    updates = [
        ((Decimal("1.5"), "a", b"\x01", [1, None]), 1),
        ((Decimal("NaN"), "b", b"\x00", [1, 2]), 1),
        ((Decimal("1.5"), "c", b"\x02", None), 1),
        ((Decimal(-2), "d", b"\x03", [None]), 1),
    ]
    assert [r[3] for r in format_timestamp(plan, 1, shuffled(updates))] == ["d", "c", "a", "b"]
    arr_plan = plan_output(order_by(OrderKey("arr")), ["n", "t", "b", "arr"], [NUMERIC, TEXT, TEXT, INT],
                           progress=False)
    # Arrays compare element by element, NULL elements after values, NULL arrays last.
    assert [r[5] for r in format_timestamp(arr_plan, 1, shuffled(updates))] == [[1, 2], [1, None], [None], None]


def test_order_by_may_repeat_a_column():
    plan = plan_output(order_by(OrderKey("x"), OrderKey("x", descending=True)), ["x"], [INT], progress=False)
    assert [r[2] for r in format_timestamp(plan, 1, [((2,), 1), ((1,), 1)])] == [1, 2]


# ----------------------------------------------------------------- errors


def raises(mode: OutputMode, names: list[str], progress: bool = False) -> SqlError:
    with pytest.raises(SqlError) as info:
        plan_output(mode, names, [INT] * len(names), progress)
    return info.value


@pytest.mark.parametrize("make, envelope", [(upsert, "UPSERT"), (debezium, "DEBEZIUM")])
def test_unknown_key_column(make, envelope):
    err = raises(make("a", "nope"), ["a", "b"])
    assert err.sqlstate == "42703"
    assert err.message == 'column "nope" does not exist'
    assert err.hint == "All keys must be columns on the underlying relation."


@pytest.mark.parametrize("make, envelope", [(upsert, "UPSERT"), (debezium, "DEBEZIUM")])
def test_duplicate_key_column(make, envelope):
    err = raises(make("a", "b", "a"), ["a", "b", "c"])
    assert err.sqlstate == "42701"
    assert err.message == f'column "a" specified more than once in SUBSCRIBE ENVELOPE {envelope} (KEY (..))'
    assert err.hint == "List each KEY column at most once."


@pytest.mark.parametrize("make, envelope", [(upsert, "UPSERT"), (debezium, "DEBEZIUM")])
def test_empty_key_list(make, envelope):
    err = raises(make(), ["a"])
    assert err.sqlstate == "42601"
    assert err.message == f"ENVELOPE {envelope} needs at least one KEY column"


@pytest.mark.parametrize("make, envelope", [(upsert, "UPSERT"), (debezium, "DEBEZIUM")])
def test_mz_diff_as_key(make, envelope):
    err = raises(make("a", "mz_diff"), ["a", "b"])
    assert err.sqlstate == "42703"
    assert err.message == 'column "mz_diff" does not exist'
    assert err.detail == f"ENVELOPE {envelope} output has no mz_diff column."


def test_relation_column_named_mz_diff_may_be_a_key():
    # Materialize resolves KEY columns against the relation: a real column named
    # mz_diff is an ordinary key, and the envelope output has no diff to clash with.
    plan = plan_output(upsert("mz_diff"), ["mz_diff", "v"], [INT, INT], progress=False)
    assert plan.names == ("mz_timestamp", "mz_state", "mz_diff", "v")


@pytest.mark.parametrize("kind, envelope", [("upsert", "UPSERT"), ("debezium", "DEBEZIUM")])
def test_mz_diff_in_order_by_with_envelope(kind, envelope):
    mode = OutputMode(kind, keys=("a",), order_by=(OrderKey("a"), OrderKey("mz_diff")))
    err = raises(mode, ["a", "b"])
    assert err.sqlstate == "42601"
    assert err.message == ('invalid ORDER BY in SUBSCRIBE WITHIN TIMESTAMP ORDER BY: column "mz_diff" '
                           f"is not an output column of ENVELOPE {envelope}")
    assert err.hint == "All order bys must be output columns."


@pytest.mark.parametrize("kind, envelope", [("upsert", "UPSERT"), ("debezium", "DEBEZIUM")])
def test_order_by_with_envelope(kind, envelope):
    err = raises(OutputMode(kind, keys=("a",), order_by=(OrderKey("b"),)), ["a", "b"])
    assert err.sqlstate == "42601"
    assert err.message == f"WITHIN TIMESTAMP ORDER BY cannot be combined with ENVELOPE {envelope}"


def test_order_by_ordinals_count_mz_diff_first():
    """As Materialize plans WITHIN TIMESTAMP ORDER BY: ordinal 1 is mz_diff, 2 the first column."""
    plan = plan_output(order_by(OrderKey("1", True, ordinal=1), OrderKey("3", ordinal=3)), ["a", "b"], [INT, INT],
                       progress=True)
    assert [(k.column, k.descending) for k in plan.sort] == [(None, True), (1, False)]
    rows = format_timestamp(plan, 5, [((1, 9), 1), ((2, 3), -1), ((3, 1), 1)])
    assert [r[2:] for r in rows] == [(1, 3, 1), (1, 1, 9), (-1, 2, 3)]
    err = raises(order_by(OrderKey("4", ordinal=4)), ["a", "b"])
    assert err.sqlstate == "42P10" and err.message == "ORDER BY position 4 is not in select list"


def test_order_by_expression_is_refused():
    err = raises(order_by(OrderKey("a + 1", expression=True)), ["a", "b"])
    assert err.sqlstate == "42P10"
    assert err.message == "invalid ORDER BY in SUBSCRIBE WITHIN TIMESTAMP ORDER BY"


def test_order_by_unknown_column():
    err = raises(order_by(OrderKey("a"), OrderKey("zz", descending=True)), ["a", "b"])
    assert err.sqlstate == "42703"
    assert err.message == 'column "zz" does not exist'


def test_ambiguous_column():
    err = raises(upsert("a"), ["a", "a"])
    assert err.sqlstate == "42702"
    assert err.message == 'column reference "a" is ambiguous'
    err = raises(order_by(OrderKey("a")), ["a", "a"])
    assert err.sqlstate == "42702"


# ----------------------------------------------------------------- property: replaying envelopes

KEY_VALUES = st.one_of(st.none(), st.integers(0, 3))
VALUE_VALUES = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["p", "q"]))
# Relation columns: v1, k2, k1, v2 with KEY (k1, k2): keys out of relation order.
NAMES = ["v1", "k2", "k1", "v2"]
TYPES = [INT, INT, INT, TEXT]
KEY = ("k1", "k2")

states = st.dictionaries(st.tuples(KEY_VALUES, KEY_VALUES), st.tuples(VALUE_VALUES, VALUE_VALUES), max_size=8)


def as_row(key: tuple, value: tuple) -> tuple:
    (k1, k2), (v1, v2) = key, value
    return (v1, k2, k1, v2)


def consolidated_diff(before: dict, after: dict) -> list[tuple[tuple, int]]:
    old = {as_row(k, v) for k, v in before.items()}
    new = {as_row(k, v) for k, v in after.items()}
    return [(row, -1) for row in old - new] + [(row, 1) for row in new - old]


@settings(max_examples=200, deadline=None)
@given(st.lists(states, min_size=1, max_size=6), st.randoms(use_true_random=False), st.booleans())
def test_replaying_envelopes_reconstructs_the_relation(history, rnd, progress):
    up = plan_output(upsert(*KEY), NAMES, TYPES, progress)
    dbz = plan_output(debezium(*KEY), NAMES, TYPES, progress)
    skip = 2 if progress else 1  # mz_timestamp [, mz_progressed]
    relation: dict = {}
    up_view: dict = {}
    dbz_view: dict = {}
    for ts, state in enumerate(history, start=1):
        updates = consolidated_diff(relation, state)
        rnd.shuffle(updates)
        relation = state

        for row in format_timestamp(up, ts, updates):
            assert row[0] == ts and (not progress or row[1] is False)
            status, key, value = row[skip], row[skip + 1:skip + 3], row[skip + 3:]
            if status == "upsert":
                up_view[key] = value
            else:
                assert status == "delete" and value == (None, None)
                del up_view[key]

        for row in format_timestamp(dbz, ts, updates):
            status, key = row[skip], row[skip + 1:skip + 3]
            before, after = row[skip + 3:skip + 5], row[skip + 5:]
            if status == "insert":
                assert key not in dbz_view and before == (None, None)
                dbz_view[key] = after
            elif status == "upsert":
                assert dbz_view[key] == before
                dbz_view[key] = after
            else:
                assert status == "delete" and dbz_view[key] == before and after == (None, None)
                del dbz_view[key]

        assert up_view == relation
        assert dbz_view == relation
