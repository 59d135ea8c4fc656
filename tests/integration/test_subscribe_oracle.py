"""A randomized oracle for every dataflow strategy over every column type (issue 18, part 4).

Random transactions of inserts, updates and deletes run against two tables whose columns
cover int, bigint, numeric, float8, text and boolean, with NULL, NaN, ±Infinity, -0.0 and
the extremes of bigint and numeric(12,4). After each commit, what each SUBSCRIBE has
emitted up to that timestamp, accumulated, must equal the one-shot `SELECT ... AS OF` of
its query there ("snapshot = history", DESIGN.md). One query per strategy: linear,
aggregate (grouped by text and by a float), join (on a float key), recompute.

Float values are chosen so that every order of summing them gives the same double (small
dyadic fractions and ±1e12), so the one-shot query's own sum is exact to compare with.
"""

from __future__ import annotations

import collections
import math

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.integration.test_subscribe import Clock, OracleRun
from tests.support import connect, fresh

pytestmark = pytest.mark.slow

INTS = st.sampled_from([0, 1, 2, 3, 4])
GROUPS = st.sampled_from(["'x'", "'y'", "NULL"])
BIGINTS = st.sampled_from(["NULL", "0", "-7", "9223372036854775807", "-9223372036854775808"])
NUMERICS = st.sampled_from(["NULL", "0", "1.5", "-2.25", "0.0001", "99999999.9999", "-99999999.9999"])
FLOATS = st.sampled_from(["NULL", "0.0", "'-0.0'", "0.5", "-2.5", "1.25", "1e12", "-1e12", "'NaN'",
                          "'Infinity'", "'-Infinity'"])
BOOLS = st.sampled_from(["NULL", "true", "false"])
WORDS = st.sampled_from(["'p'", "'q'"])

OPS = st.one_of(
    st.tuples(st.just("ins_a"), INTS, GROUPS, BIGINTS, NUMERICS, FLOATS, BOOLS),
    st.tuples(st.just("set_f"), INTS, FLOATS),
    st.tuples(st.just("add_n"), INTS),
    st.tuples(st.just("set_g"), INTS, GROUPS),
    st.tuples(st.just("del_a"), INTS),
    st.tuples(st.just("del_big"),),
    st.tuples(st.just("ins_c"), INTS, FLOATS, WORDS),
    st.tuples(st.just("del_c"), INTS),
)
TRANSACTIONS = st.lists(st.lists(OPS, min_size=1, max_size=4), min_size=2, max_size=4)
INITIAL = st.lists(st.tuples(st.just("ins_a"), INTS, GROUPS, BIGINTS, NUMERICS, FLOATS, BOOLS), max_size=6)


def sql_of(op: tuple, a: str, c: str) -> str:
    kind = op[0]
    if kind == "ins_a":
        return f"INSERT INTO {a} VALUES ({', '.join(str(v) for v in op[1:])})"
    if kind == "set_f":
        return f"UPDATE {a} SET f = {op[2]} WHERE k = {op[1]}"
    if kind == "add_n":
        return f"UPDATE {a} SET n = n + 1 WHERE k = {op[1]} AND n < 99999998"
    if kind == "set_g":
        return f"UPDATE {a} SET g = {op[2]} WHERE k = {op[1]}"
    if kind == "del_a":
        return f"DELETE FROM {a} WHERE k = {op[1]}"
    if kind == "del_big":
        # NaN and +Infinity are greater than every number (`f = 'NaN'` would find nothing:
        # Spark pushes it down to Parquet, whose statistics leave NaN out).
        return f"DELETE FROM {a} WHERE f > 1e300"
    if kind == "ins_c":
        return f"INSERT INTO {c} VALUES ({op[1]}, {op[2]}, {op[3]})"
    return f"DELETE FROM {c} WHERE k = {op[1]}"


# name → (query, the strategy EXPLAIN SUBSCRIBE must report)
QUERIES = {
    "linear": ("SELECT k, g, i, n, f, b, n * 2 AS n2 FROM {a} WHERE k < 4", "linear"),
    "aggregate": (("SELECT g, count(*) AS c, count(f) AS cf, sum(n) AS sn, avg(n) AS an, sum(f) AS sf, "
                  "avg(f) AS af, min(f) AS lo, max(f) AS hi, min(i) AS mi, max(n) AS mn, max(g) AS mg "
                  "FROM {a} GROUP BY g"), "aggregate"),
    "float_key": ("SELECT f, count(*) AS c, sum(k) AS sk, min(n) AS mn FROM {a} GROUP BY f", "aggregate"),
    "join": ("SELECT {a}.k, {a}.g, {c}.w, {a}.n FROM {a} JOIN {c} ON {a}.f = {c}.f", "join"),
    # a comma join keyed by its WHERE, one side filtered before the join; FILTER and a bigint
    # sum (partials summed as decimals) under the aggregate strategy
    "join_where": (("SELECT {a}.k, {c}.w, {a}.i FROM {a}, {c} WHERE {a}.k = {c}.k AND {c}.w = 'p' "
                   "AND {a}.n < {c}.f + 1"), "join"),
    "aggregate_filter": (("SELECT b, count(*) FILTER (WHERE f > 0) AS pos, sum(i) AS si, "
                         "min(g) FILTER (WHERE k > 1) AS mg FROM {a} GROUP BY b ORDER BY b"), "aggregate"),
    "recompute": ("SELECT DISTINCT g, b FROM {a}", "recompute"),
}


def normalized(counter: collections.Counter) -> collections.Counter:
    """NaN equals NaN for the comparison (Python's float NaN equals nothing)."""
    out: collections.Counter = collections.Counter()
    for row, n in counter.items():
        out[tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)] += n
    return +out


@pytest.fixture(scope="module")
def clock(server):
    c = Clock(server)
    yield c
    c.feed.close()


# A case the random search found: an aggregate row holding NaN, retracted by a later commit.
NAN_RETRACTED = {
    "initial": [("ins_a", 2, "'y'", "9223372036854775807", "NULL", "'Infinity'", "true"),
                ("ins_a", 4, "'y'", "0", "99999999.9999", "-1e12", "false"),
                ("ins_a", 0, "'y'", "-9223372036854775808", "NULL", "-2.5", "false"),
                ("ins_a", 0, "'x'", "-7", "99999999.9999", "1.25", "true"),
                ("ins_a", 3, "'y'", "NULL", "0", "'-Infinity'", "true"),
                ("ins_a", 1, "'x'", "-9223372036854775808", "0", "'-0.0'", "NULL")],
    "transactions": [[("ins_a", 2, "'y'", "-9223372036854775808", "-99999999.9999", "-2.5", "false"),
                      ("del_big",), ("del_c", 0)],
                     [("ins_c", 0, "1.25", "'p'"), ("set_f", 4, "0.5"), ("add_n", 0), ("set_g", 4, "NULL")],
                     [("del_a", 2)],
                     [("set_f", 0, "-1e12"), ("add_n", 0), ("ins_c", 4, "-2.5", "'p'"), ("set_g", 0, "NULL")]],
}


@settings(max_examples=4, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(initial=INITIAL, transactions=TRANSACTIONS)
@example(**NAN_RETRACTED)
def test_every_strategy_equals_select_as_of(server, clock, initial, transactions):
    admin = connect(server)
    a, c = fresh("oa"), fresh("oc")
    admin.execute(f"CREATE TABLE {a} (k int, g text, i bigint, n numeric(12,4), f float8, b boolean)")
    admin.execute(f"CREATE TABLE {c} (k int, f float8, w text)")
    clock.commit(admin, [sql_of(op, a, c) for op in initial] +
                 [f"INSERT INTO {c} VALUES (0, 'NaN', 'p'), (1, 0.5, 'q'), (2, '-Infinity', 'p'), (3, 0.0, 'q')"])
    queries = {name: q.format(a=a, c=c) for name, (q, _) in QUERIES.items()}
    for name, (_, strategy) in QUERIES.items():
        plan = [r[0] for r in admin.execute(f"EXPLAIN SUBSCRIBE ({queries[name]})")]
        assert plan[0] == f"strategy: {strategy}", (name, plan)
    run = OracleRun(server, queries, normalize=normalized)
    try:
        refused = run.refused()
        assert not refused, f"SUBSCRIBE refused: {refused}"
        # Every subscription is compared at every one of their AS OFs.
        for ts in set(run.as_of("the first progress row").values()):
            run.compare(dict.fromkeys(run.feeds, ts))
        for statements in transactions:
            sqls = [sql_of(op, a, c) for op in statements]
            try:
                ts = clock.commit(admin, sqls)
            except psycopg.Error as err:  # a statement of this transaction is refused by both
                run.history.append(f"refused: {sqls}: {err}")
                continue
            run.history.append(f"{ts}: {sqls}")
            run.compare(dict.fromkeys(run.feeds, ts))
    finally:
        run.close()
        admin.close()
