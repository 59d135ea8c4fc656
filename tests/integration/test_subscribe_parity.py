"""SUBSCRIBE as Materialize shapes it, and exact results (issue 18, parts 4 and 5).

Materialize's documented behaviour: with PROGRESS the first row is a progress row at the
AS OF; WITHIN TIMESTAMP ORDER BY takes ordinals of its output columns (1 is mz_diff);
dropping a relation a SUBSCRIBE reads ends it with an error naming the relation; and its
error texts. Then results that must be exact: CTEs, numeric sums and averages at the
column's scale, float sums that retract exactly, NaN grouping and joining as NaN = NaN,
overflow as PostgreSQL's 22003.
"""

from __future__ import annotations

import decimal
import math
import time

import psycopg
import pytest

from tests.support import Subscriber, connect, error_of, fresh

pytestmark = pytest.mark.slow







class Cursor(Subscriber):
    """A SUBSCRIBE that keeps every row it fetched, in order."""

    def __init__(self, server, sql: str) -> None:
        super().__init__(server, sql)
        self.rows: list[tuple] = []

    def fetch(self, timeout: str = "1s") -> list[tuple]:
        rows = [tuple(r) for r in self.fetch_rows(timeout)]
        self.rows += rows
        return rows

    def until(self, predicate, timeout: float = 90, what: str = "rows") -> list[tuple]:
        self.fetch_until(lambda: predicate(self.rows), timeout,
                         lambda: f"timed out waiting for {what}; got {self.rows[-10:]}")
        return self.rows


def state(rows: list[tuple], skip: int = 1) -> dict:
    """Accumulated (row → count) of diff rows (mz_timestamp, [mz_progressed,] mz_diff, ...)."""
    out: dict = {}
    for r in rows:
        if skip == 2 and r[1]:
            continue
        key = tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r[skip + 1:])
        out[key] = out.get(key, 0) + r[skip]
    return {k: v for k, v in out.items() if v}


# =========================================================================== Materialize parity


def test_first_row_is_a_progress_row_at_the_as_of(server):
    t = fresh("first")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        c.execute(f"INSERT INTO {t} VALUES (1), (2)")
    for options in ("PROGRESS", "PROGRESS, SNAPSHOT = false"):
        cur = Cursor(server, f"SUBSCRIBE {t} WITH ({options})")
        rows = cur.until(lambda r: len([x for x in r if x[1]]) >= 2, what="two progress rows")
        first = rows[0]
        assert first[1] is True and first[2:] == (None, None), first
        data = [r for r in rows if not r[1]]
        if "SNAPSHOT = false" in options:
            assert data == []
        else:
            assert sorted(r[3] for r in data) == [1, 2] and {r[0] for r in data} == {first[0]}
        cur.close()


def test_up_to_flow_reads_the_as_of_from_the_first_row(server):
    """A client learns the AS OF from the first row, then asks for exactly that state."""
    t = fresh("upto")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        c.execute(f"INSERT INTO {t} VALUES (7)")
        with c.cursor().copy(f"COPY (SUBSCRIBE {t} WITH (PROGRESS, SNAPSHOT = false) "
                             f"UP TO {int(time.time() * 1000) + 500}) TO STDOUT") as copy:
            rows = [tuple(r) for r in copy.rows()]
        as_of = int(rows[0][0])
        assert rows[0][1] == "t"
        with c.cursor().copy(f"COPY (SUBSCRIBE {t} AS OF {as_of} UP TO {as_of + 1}) TO STDOUT") as copy:
            again = [tuple(r) for r in copy.rows()]
        assert again == [(str(as_of), "1", "7")]


def test_within_timestamp_order_by_takes_ordinals(server):
    t = fresh("ords")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (a int, b text)")
        c.execute(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y'), (3, 'x')")
    by_diff = Cursor(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY 1 DESC, 2 DESC")
    by_b = Cursor(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY 3, 2")
    assert [r[2:] for r in by_diff.until(lambda r: len(r) >= 3)] == [(3, "x"), (2, "y"), (1, "x")]
    assert [r[2:] for r in by_b.until(lambda r: len(r) >= 3)] == [(1, "x"), (3, "x"), (2, "y")]
    with connect(server) as c:
        c.execute("BEGIN")
        c.execute(f"UPDATE {t} SET a = a + 10 WHERE b = 'x'")
        c.execute(f"INSERT INTO {t} VALUES (0, 'z')")
        c.execute("COMMIT")
    rows = by_diff.until(lambda r: len(r) >= 8)[3:]
    assert [r[1] for r in rows] == [1, 1, 1, -1, -1]  # mz_diff descending first
    assert [r[2] for r in rows[:3]] == [13, 11, 0]
    by_diff.close()
    by_b.close()


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY a + 1", "42P10",
     "invalid ORDER BY in SUBSCRIBE WITHIN TIMESTAMP ORDER BY"),
    ("SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY 4", "42P10", "ORDER BY position 4 is not in select list"),
    ("SUBSCRIBE {t} ENVELOPE UPSERT (KEY (a)) WITHIN TIMESTAMP ORDER BY a", "42601",
     "Expected end of statement, found WITHIN"),
    ("SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY a WITH (PROGRESS) ENVELOPE DEBEZIUM (KEY (a))", "42601",
     "Expected end of statement, found ENVELOPE"),
    ("SUBSCRIBE {t} ENVELOPE SOMETHING (KEY (a))", "42601",
     'Expected one of UPSERT or DEBEZIUM, found identifier "something"'),
    ("SUBSCRIBE no_such_thing", "42P01", "unknown catalog item 'no_such_thing'"),
    ("SUBSCRIBE (SELECT * FROM no_such_thing)", "42P01", "unknown catalog item 'no_such_thing'"),
    ("SUBSCRIBE {t} AS OF {now} UP TO {before}", "22023",
     'subscription lower ("as of") bound is beyond its upper ("up to") bound: {before} < {now}'),
])
def test_materialize_error_texts(server, sql, sqlstate, message):
    t = fresh("errs")
    now = int(time.time() * 1000) - 1000
    before = now - 5000
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (a int, b text)")
        err = error_of(c, sql.format(t=t, now=now, before=before))
        assert err.sqlstate == sqlstate, err
        assert err.diag.message_primary == message.format(now=now, before=before)
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_as_of_before_history_says_timestamp_not_valid(server):
    t = fresh("since")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        for i in range(4):
            c.execute(f"INSERT INTO {t} VALUES ({i})")
        old = int(time.time() * 1000) - 60_000

        def refused():
            c.execute(f"INSERT INTO {t} VALUES (9)")  # compaction runs after commits
            try:
                c.execute(f"COPY (SUBSCRIBE {t} AS OF {old} UP TO {old + 1}) TO STDOUT").fetchall()
            except psycopg.Error as err:
                return err
            return None

        deadline = time.monotonic() + 30
        err = refused()
        while err is None and time.monotonic() < deadline:
            time.sleep(0.5)
            err = refused()
        assert err is not None and err.sqlstate == "22000", err
        assert err.diag.message_primary.startswith(f"Timestamp ({old}) is not valid for all inputs: ")


@pytest.mark.parametrize("what", ["table", "view"])
def test_dropping_what_a_subscribe_reads_ends_it_with_an_error(server, what):
    t = fresh("dropped")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        c.execute(f"INSERT INTO {t} VALUES (1)")
        target = t
        if what == "view":
            target = fresh("dropped_view")
            c.execute(f"CREATE VIEW {target} AS SELECT k FROM {t} WHERE k > 0")
    cur = Cursor(server, f"SUBSCRIBE (SELECT k * 2 AS k2 FROM {target})")
    cur.until(lambda r: len(r) >= 1)
    with connect(server) as c:
        c.execute(f"DROP {what.upper()} {target}")
    deadline = time.monotonic() + 60
    with pytest.raises(psycopg.Error) as info:
        while time.monotonic() < deadline:
            cur.fetch("0.5s")
    err = info.value
    assert err.sqlstate == "42P01", err
    assert err.diag.message_primary == (f"subscribe has been terminated because underlying relation "
                                        f'"materialize.public.{target}" was dropped')
    cur.conn.execute("ROLLBACK")
    assert cur.conn.execute("SELECT 1").fetchone() == (1,)
    cur.close()


# =========================================================================== exact results


def test_ctes_in_subscribe_and_in_views(server):
    t = fresh("cte")
    v = fresh("cte_view")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (k int, g text)")
        c.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
        c.execute(f"CREATE VIEW {v} AS WITH big AS (SELECT k, g FROM {t} WHERE k > 1) SELECT g, count(*) AS n "
                  f"FROM big GROUP BY g")
    linear = Cursor(server, f"SUBSCRIBE (WITH c AS (SELECT k FROM {t}), d AS (SELECT k FROM c WHERE k < 3) "
                            f"SELECT k FROM d)")
    grouped = Cursor(server, f"SUBSCRIBE {v}")
    with connect(server) as c:
        plan = [r[0] for r in c.execute(f"EXPLAIN SUBSCRIBE (WITH c AS (SELECT k FROM {t}) SELECT k FROM c)")]
        assert plan[0] == "strategy: linear"
        c.execute(f"INSERT INTO {t} VALUES (0, 'b'), (5, 'a')")
    assert state(linear.until(lambda r: len(r) >= 3)) == {(0,): 1, (1,): 1, (2,): 1}
    assert state(grouped.until(lambda r: state(r) == {("a", 2): 1, ("b", 1): 1}, what="a=2, b=1")) \
        == {("a", 2): 1, ("b", 1): 1}
    linear.close()
    grouped.close()


def test_with_recursive_under_subscribe_follows_the_table(server):
    # everyone under the top of an org chart with their depth: recomputed, as PostgreSQL reads it
    t = fresh("chart")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (id int, boss int)")
        c.execute(f"INSERT INTO {t} VALUES (1, NULL), (2, 1), (3, 2)")
        query = (f"WITH RECURSIVE r(id, depth) AS (SELECT id, 0 FROM {t} WHERE boss IS NULL UNION ALL "
                 f"SELECT s.id, r.depth + 1 FROM {t} s JOIN r ON s.boss = r.id) SELECT id, depth FROM r")
        plan = [r[0] for r in c.execute(f"EXPLAIN SUBSCRIBE ({query})")]
        assert plan[0] == "strategy: recompute"
    cur = Cursor(server, f"SUBSCRIBE ({query})")
    assert state(cur.until(lambda r: len(state(r)) == 3)) == {(1, 0): 1, (2, 1): 1, (3, 2): 1}
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES (4, 3), (5, 1)")
        c.execute(f"DELETE FROM {t} WHERE id = 2")  # 3 and 4 are no longer under 1
    want = {(1, 0): 1, (5, 1): 1}
    assert state(cur.until(lambda r: state(r) == want, what=str(want))) == want
    cur.close()


def test_numeric_sums_and_averages_keep_their_scale(server):
    t = fresh("num")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (g int, v numeric(20,8))")
        c.execute(f"INSERT INTO {t} VALUES (1, 0.12345678), (1, 99999999999.99999999), (2, -0.00000001)")
    cur = Cursor(server, f"SUBSCRIBE (SELECT g, sum(v) AS s, avg(v) AS a FROM {t} GROUP BY g)")
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES (2, 0.00000003)")
        c.execute(f"DELETE FROM {t} WHERE v > 1000")
        want = {tuple(r) for r in c.execute(f"SELECT g, sum(v), avg(v) FROM {t} GROUP BY g")}
    got = cur.until(lambda r: set(state(r)) == want, what=f"{want}")
    assert state(got)[(1, decimal.Decimal("0.12345678"), decimal.Decimal("0.123456780000"))] == 1
    cur.close()


def test_aggregate_filter_and_order_by_under_subscribe(server):
    # FILTER keeps the per-group strategy (its arguments NULL where the condition is not
    # true); an ORDER BY inside array_agg/string_agg is recomputed. Each state is SELECT's.
    t = fresh("aggf")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (g int, v numeric(8,2), s text)")
        c.execute(f"INSERT INTO {t} VALUES (1, 1.50, 'b'), (1, 20.00, 'a'), (2, 3.25, NULL)")
    query = (f"SELECT g, count(*) FILTER (WHERE v > 2) AS n, sum(v) FILTER (WHERE s IS NOT NULL) AS total, "
             f"array_agg(v ORDER BY v DESC) AS vs, string_agg(s, ',' ORDER BY s) AS ss FROM {t} GROUP BY g")
    cur = Cursor(server, f"SUBSCRIBE ({query})")
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES (2, 7.00, 'c'), (1, 0.25, 'c')")
        c.execute(f"DELETE FROM {t} WHERE v = 20.00")
        want = {tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in c.execute(query)}
    assert want == {(1, 0, decimal.Decimal("1.75"), (decimal.Decimal("1.50"), decimal.Decimal("0.25")), "b,c"),
                    (2, 2, decimal.Decimal("7.00"), (decimal.Decimal("7.00"), decimal.Decimal("3.25")), "c")}

    def current(rows):  # state() of rows whose arrays arrive as lists
        return set(state([tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in rows]))

    cur.until(lambda r: current(r) == want, what=str(want))
    cur.close()


def test_float_sums_retract_exactly(server):
    t = fresh("flt")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (g text, f float8, id int)")
    cur = Cursor(server, f"SUBSCRIBE (SELECT g, sum(f) AS s, avg(f) AS a, count(f) AS n FROM {t} GROUP BY g)")
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES ('a', 1e20, 1), ('a', 1.0, 2)")
        c.execute(f"DELETE FROM {t} WHERE id = 1")
        c.execute(f"INSERT INTO {t} VALUES ('b', 'Infinity', 3), ('b', '-Infinity', 4), ('c', 'NaN', 5), ('c', 2, 6)")
        c.execute(f"DELETE FROM {t} WHERE id = 4")
        c.execute(f"DELETE FROM {t} WHERE id = 5")
        want = {("a", 1.0, 1.0, 1), ("b", math.inf, math.inf, 1), ("c", 2.0, 2.0, 1)}
        assert {tuple(r) for r in c.execute(f"SELECT g, sum(f), avg(f), count(f) FROM {t} GROUP BY g")} == want
    assert set(state(cur.until(lambda r: set(state(r)) == want, what=str(want)))) == want
    cur.close()


def test_nan_groups_and_joins_as_one_value(server):
    a, b = fresh("nan_a"), fresh("nan_b")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {a} (f float8, x int)")
        c.execute(f"CREATE TABLE {b} (f float8, y text)")
        c.execute(f"INSERT INTO {b} VALUES ('NaN', 'nan'), (1, 'one')")
    grouped = Cursor(server, f"SUBSCRIBE (SELECT f, count(*) AS n FROM {a} GROUP BY f)")
    joined = Cursor(server, f"SUBSCRIBE (SELECT {a}.x, {b}.y FROM {a} JOIN {b} ON {a}.f = {b}.f)")
    distinct = Cursor(server, f"SUBSCRIBE (SELECT f FROM {a})")
    with connect(server) as c:
        c.execute(f"INSERT INTO {a} VALUES ('NaN', 1), ('NaN', 2), (1, 3)")
        want = {("NaN", 2): 1, (1.0, 1): 1}
        assert state([(0, 1, *r) for r in c.execute(f"SELECT f, count(*) FROM {a} GROUP BY f")]) == want
        assert state(grouped.until(lambda r: state(r) == want, what=str(want))) == want
        joins = {(1, "nan"): 1, (2, "nan"): 1, (3, "one"): 1}
        assert state(joined.until(lambda r: state(r) == joins, what=str(joins))) == joins
        c.execute(f"DELETE FROM {a} WHERE x < 3")
    gone = {(1.0, 1): 1}
    assert state(grouped.until(lambda r: state(r) == gone, what="the NaN group gone")) == gone
    assert state(joined.until(lambda r: state(r) == {(3, "one"): 1}, what="NaN matches gone")) == {(3, "one"): 1}
    assert state(distinct.until(lambda r: state(r) == {(1.0,): 1}, what="NaN rows gone")) == {(1.0,): 1}
    for cur in (grouped, joined, distinct):
        cur.close()


def test_bigint_sum_widens_to_numeric(server):
    # PostgreSQL's sum(bigint) is numeric: past the bigint range it goes on counting, in a
    # SELECT and in a SUBSCRIBE alike (it used to be Spark's 22003 overflow).
    t = fresh("ovf")
    big = 9223372036854775807
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (g int, v bigint)")
        c.execute(f"INSERT INTO {t} VALUES (1, {big})")
    cur = Cursor(server, f"SUBSCRIBE (SELECT g, sum(v) AS s FROM {t} GROUP BY g)")
    cur.until(lambda r: len(r) >= 1)
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES (1, 1)")  # the sum no longer fits a bigint
        assert c.execute(f"SELECT g, sum(v) FROM {t} GROUP BY g").fetchall() == [(1, big + 1)]
    got = cur.until(lambda r: state(r) == {(1, big + 1): 1}, what="the sum past the bigint range")
    assert state(got) == {(1, big + 1): 1}
    cur.close()


def _linear_like_select(server, t: str, query: str, columns: str, before: list[str], after: list[str]) -> dict:
    """SUBSCRIBE to `query` over a table `t` (`columns`) after the `before` statements,
    planned linear; once the `after` statements run, its state is SELECT's, which it returns."""
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} ({columns})")
        for sql in before:
            c.execute(sql)
        assert next(r[0] for r in c.execute(f"EXPLAIN SUBSCRIBE ({query})")) == "strategy: linear"
    cur = Cursor(server, f"SUBSCRIBE ({query})")
    with connect(server) as c:
        for sql in after:
            c.execute(sql)
        want: dict = {}
        for r in c.execute(query):
            want[tuple(r)] = want.get(tuple(r), 0) + 1
    assert state(cur.until(lambda r: state(r) == want, what=str(want))) == want
    cur.close()
    return want


def test_set_returning_functions_in_the_select_list_are_linear(server):
    # Each update's rows of generate_series carry its diff: a DELETE retracts exactly the
    # rows its INSERT gave, computed over the batch alone.
    t = fresh("srf")
    want = _linear_like_select(
        server, t, f"SELECT k, generate_series(1, n) AS i, jsonb_array_elements_text(j) AS e FROM {t}",
        "k int, n int, j jsonb", [f"INSERT INTO {t} VALUES (1, 2, '[\"a\"]'), (2, 0, '[]')"],
        [f"INSERT INTO {t} VALUES (3, 3, '[\"x\", \"y\"]')", f"DELETE FROM {t} WHERE k = 1"])
    assert want == {(3, 1, "x"): 1, (3, 2, "y"): 1, (3, 3, None): 1}


def test_a_left_join_of_a_function_with_ordinality_is_linear(server):
    # LEFT JOIN unnest(…) WITH ORDINALITY ON c keeps a row whose array is NULL, empty or has
    # no element c holds for (explode_outer of the kept elements), each update's rows
    # computed over the batch alone (c reads the function's columns past the delta's own)
    t = fresh("ordl")
    want = _linear_like_select(
        server, t, f"SELECT k, u.* FROM {t} LEFT JOIN unnest(tags) WITH ORDINALITY AS u(tag, n) ON tag <> 'b'",
        "k int, tags text[]", [f"INSERT INTO {t} VALUES (1, ARRAY['a', 'b']), (2, NULL)"],
        [f"INSERT INTO {t} VALUES (3, '{{}}'), (4, ARRAY['b', 'x']), (5, ARRAY['b'])", f"DELETE FROM {t} WHERE k = 1"])
    assert want == {(2, None, None): 1, (3, None, None): 1, (4, "x", 2): 1, (5, None, None): 1}


def test_rows_as_json_under_subscribe_are_select_s(server):
    # row_to_json(t) is linear; json_agg(t) and json_agg(x) are recomputed (their UDFs were
    # missing from the guard's list: SUBSCRIBE of json_agg failed with 42883)
    t = fresh("rowjs")
    with connect(server) as c:
        c.execute(f"CREATE TABLE {t} (id int, name text)")
        c.execute(f"INSERT INTO {t} VALUES (1, 'a')")
    queries = {"row": f"SELECT row_to_json({t})::text AS j FROM {t}",
               "agg": f"SELECT json_agg({t} ORDER BY id)::text AS j, json_agg(name)::text AS n FROM {t}"}
    cursors = {k: Cursor(server, f"SUBSCRIBE ({q})") for k, q in queries.items()}
    with connect(server) as c:
        c.execute(f"INSERT INTO {t} VALUES (2, NULL)")
        c.execute(f"DELETE FROM {t} WHERE id = 1")
        wants = {k: {tuple(r): 1 for r in c.execute(q)} for k, q in queries.items()}
    assert wants["row"] == {('{"id":2,"name":null}',): 1}
    assert wants["agg"] == {('[{"id":2,"name":null}]', "[null]"): 1}
    for k, cur in cursors.items():
        assert state(cur.until(lambda r, k=k: state(r) == wants[k], what=str(wants[k]))) == wants[k]
        cur.close()
