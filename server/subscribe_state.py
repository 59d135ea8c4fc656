"""The state a SUBSCRIBE keeps between micro-batches, and its delta rules in Python.

Everything here is plain Python over Arrow tables Spark returned; none of it touches
the event loop (server.subscribe runs it on a worker thread). Each `apply`-style
method takes one batch's Spark output and returns the changes of the query's result as
`{timestamp: [(row, diff), ...]}`, each timestamp consolidated.

Values are grouped as PostgreSQL groups them (`planner.types.group_key`): NaN equals
NaN, so two NaN keys are one group and a retracted NaN row cancels its insertion.

Sums are exact. Integers and numerics add up exactly in Python; a float sum keeps the
exact sum of its finite values as an integer count of 2**-1074 (the smallest double),
plus counts of NaN, +Infinity and -Infinity, so that retracting a value undoes exactly
what inserting it did (inserting 1e20 and 1.0 and deleting 1e20 leaves 1.0, where a
running float sum would leave 0.0). A result outside its column's type is an error
with PostgreSQL's SQLSTATE (22003), as the one-shot query gives.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field

import pyarrow as pa

from planner import pg_numeric
from planner.dataflow import DELTA_DIFF, DELTA_TS, AggregatePlan, JoinPlan
from planner.errors import SqlError
from planner.types import SqlType, group_key, row_key
from spark_backend import pylist

UNCONSTRAINED_SCALE = 10  # an unconstrained numeric is stored as DECIMAL(38, 10) (planner.translate)

NUMERIC_VALUE_OUT_OF_RANGE = "22003"

Changes = dict[int, list[tuple[tuple, int]]]

_EXACT = decimal.Context(prec=200, Emax=999_999, Emin=-999_999)  # sums of numeric(38, s) stay exact
_FLOAT_SCALE = 1074  # every finite double is a whole multiple of 2**-1074
_INT_RANGES = {"smallint": 16, "integer": 32, "bigint": 64}


def column_values(column: pa.ChunkedArray | pa.Array) -> list:
    """A column's Python values, arrays as tuples: rows are counted in dicts, so hashable."""
    values = pylist.values(column)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return [None if v is None else tuple(v) for v in values]
    return values


def table_rows(table: pa.Table) -> list[tuple]:
    return pylist.rows([column_values(c) for c in table.columns])


class Multiset:
    """Rows with multiplicities, rows equal as SQL groups them being one entry.

    Two flat dicts rather than a [row, count] list per row: a list is a container the
    cyclic garbage collector tracks, and a full collection walks every tracked object while
    holding the GIL, which for a million-row state stalled the event loop for a second."""

    __slots__ = ("counts", "rows")

    def __init__(self) -> None:
        self.rows: dict[tuple, tuple] = {}  # row_key → a row
        self.counts: dict[tuple, int] = {}  # row_key → multiplicity

    def add(self, row: tuple, n: int) -> None:
        key = row_key(row)
        count = self.counts.get(key, 0) + n
        if count:
            if key not in self.rows:
                self.rows[key] = row
            self.counts[key] = count
        else:
            self.counts.pop(key, None)
            self.rows.pop(key, None)

    def items(self) -> list[tuple[tuple, int]]:
        rows = self.rows
        return [(rows[key], n) for key, n in self.counts.items()]

    def __bool__(self) -> bool:
        return bool(self.counts)

    def __len__(self) -> int:
        return len(self.counts)


def consolidate(table: pa.Table) -> Changes:
    """Delta SQL output (columns, __mz_ts, __mz_diff) as consolidated updates per timestamp."""
    if table.num_rows == 0:
        return {}
    names = table.column_names
    ts_i, diff_i = names.index(DELTA_TS), names.index(DELTA_DIFF)
    data = [i for i in range(len(names)) if i not in (ts_i, diff_i)]
    columns = [column_values(table.column(i)) for i in range(len(names))]
    per_ts: dict[int, Multiset] = {}
    ts_col, diff_col = columns[ts_i], columns[diff_i]
    data_cols = [columns[i] for i in data]
    for r in range(table.num_rows):
        per_ts.setdefault(ts_col[r], Multiset()).add(tuple(c[r] for c in data_cols), diff_col[r])
    return {ts: m.items() for ts, m in sorted(per_ts.items())}


def difference(new: Multiset, old: Multiset) -> list[tuple[tuple, int]]:
    """new - old, as updates."""
    out = Multiset()
    for row, n in new.items():
        out.add(row, n)
    for row, n in old.items():
        out.add(row, -n)
    return out.items()


def multiset(table: pa.Table) -> Multiset:
    out = Multiset()
    for row in table_rows(table):
        out.add(row, 1)
    return out


# -- aggregates ---------------------------------------------------------------------


@dataclass
class FloatSum:
    """An exact sum of doubles: finite values as a count of 2**-1074, specials counted."""

    scaled: int = 0
    nan: int = 0
    pos_inf: int = 0
    neg_inf: int = 0

    def add(self, value: float, n: int) -> None:
        if value != value:  # noqa: PLR0124 - NaN
            self.nan += n
        elif value == float("inf"):
            self.pos_inf += n
        elif value == float("-inf"):
            self.neg_inf += n
        else:
            num, den = float(value).as_integer_ratio()
            self.scaled += n * num * ((1 << _FLOAT_SCALE) // den)

    def value(self, divisor: int = 1) -> float:
        """The sum (divided by `divisor`), rounded once, as PostgreSQL's float8 result."""
        if self.nan or (self.pos_inf and self.neg_inf):
            return float("nan")
        if self.pos_inf:
            return float("inf")
        if self.neg_inf:
            return float("-inf")
        try:
            return self.scaled / ((1 << _FLOAT_SCALE) * divisor)
        except OverflowError:
            return float("inf") if self.scaled > 0 else float("-inf")


@dataclass
class GroupState:
    n: int = 0  # rows in the group
    counts: dict[int, int] = field(default_factory=dict)  # agg → non-NULL inputs
    sums: dict[int, object] = field(default_factory=dict)  # agg → exact sum (int, Decimal, FloatSum)
    values: dict[int, dict] = field(default_factory=dict)  # min/max → group_key → [value, count]


class AggregateState:
    """GROUP BY with count/sum/avg/min/max: state per group, only touched groups change."""

    def __init__(self, plan: AggregatePlan, output_types: list[SqlType], float_args: set[int]) -> None:
        self.plan = plan
        self.types = output_types
        self.float_args = float_args  # sum/avg aggregates whose argument is a float
        self.groups: dict[tuple, tuple[tuple, GroupState]] = {}  # group_key(key) → (key, state)
        self.value_aggs = [*plan.extreme_sql, *(j for j in plan.float_sql if j in float_args)]

    def sqls(self) -> list[str]:
        plan = self.plan
        return [plan.partial_sql, *plan.extreme_sql.values(),
                *(plan.float_sql[j] for j in plan.float_sql if j in self.float_args)]

    def apply(self, tables: list[pa.Table]) -> Changes:
        """Fold one batch's partials into the groups; the changed output rows per timestamp."""
        plan = self.plan
        k = plan.key_count
        events: dict[int, dict[tuple, list]] = {}

        def note(ts: int, key: tuple, item: tuple) -> None:
            slot = events.setdefault(ts, {}).setdefault(row_key(key), [key, []])
            slot[1].append(item)

        for row in pylist.dicts(tables[0]):
            note(row[DELTA_TS], tuple(row[f"__k{i}"] for i in range(k)), ("partial", row))
        for j, table in zip(self.value_aggs, tables[1:]):
            for row in pylist.dicts(table):
                note(row[DELTA_TS], tuple(row[f"__k{i}"] for i in range(k)), ("value", j, row))
        out: Changes = {}
        for ts in sorted(events):
            changes = Multiset()
            for token, (key, items) in events[ts].items():
                entry = self.groups.get(token)
                state = entry[1] if entry is not None else None
                before = self._row(key, state) if state is not None and (state.n > 0 or plan.is_global) else None
                if state is None:
                    state = GroupState()
                    self.groups[token] = (key, state)
                for item in items:
                    if item[0] == "partial":
                        self._apply_partial(state, item[1])
                    else:
                        self._apply_value(state, item[1], item[2])
                after = self._row(key, state) if state.n > 0 or plan.is_global else None
                if state.n == 0 and not plan.is_global:
                    del self.groups[token]
                if before is not None:
                    changes.add(before, -1)
                if after is not None:
                    changes.add(after, 1)
            out[ts] = changes.items()
        return out

    def empty_global(self) -> list[tuple[tuple, int]]:
        """A global aggregate over no rows still has its one row (count 0, sums NULL)."""
        if not self.plan.is_global or self.groups:
            return []
        self.groups[()] = ((), GroupState())
        return [(self._row((), GroupState()), 1)]

    def _apply_partial(self, state: GroupState, row: dict) -> None:
        state.n += row["__n"]
        for a in self.plan.aggregates:
            j = a.index
            if a.kind in ("count", "sum", "avg"):
                state.counts[j] = state.counts.get(j, 0) + row[f"__c{j}"]
            if a.kind in ("sum", "avg") and j not in self.float_args:
                s = row[f"__s{j}"]
                if s is not None:
                    prev = state.sums.get(j)
                    if prev is None:
                        state.sums[j] = s
                    elif isinstance(s, decimal.Decimal):
                        state.sums[j] = _EXACT.add(prev, s)
                    else:
                        state.sums[j] = prev + s

    def _apply_value(self, state: GroupState, j: int, row: dict) -> None:
        value, n = row["__v"], row["__n"]
        if j in self.float_args:
            total = state.sums.get(j)
            if total is None:
                total = state.sums[j] = FloatSum()
            total.add(value, n)
            return
        values = state.values.setdefault(j, {})
        token = group_key(value)
        entry = values.get(token)
        if entry is None:
            values[token] = [value, n]
        else:
            entry[1] += n
            if entry[1] == 0:
                del values[token]

    def _row(self, key: tuple, state: GroupState) -> tuple:
        out = []
        for pos, (kind, i) in enumerate(self.plan.outputs):
            if kind == "key":
                out.append(key[i])
            else:
                a = self.plan.aggregates[i]
                out.append(checked(aggregate_value(a.kind, state, i, self.types[pos]), self.types[pos]))
        return tuple(out)


def aggregate_value(kind: str, state: GroupState, i: int, t: SqlType) -> object:
    """An aggregate's value from its state, typed as Spark's one-shot result would be."""
    if kind == "count_star":
        return state.n
    if kind == "count":
        return state.counts.get(i, 0)
    if kind in ("min", "max"):
        values = [v for v, n in state.values.get(i, {}).values() if n > 0]
        if not values:
            return None
        # NaN sorts above every number, as in PostgreSQL and Spark.
        rank = (lambda v: (1, 0) if v != v else (0, v)) if isinstance(values[0], float) else (lambda v: v)  # noqa: PLR0124
        return min(values, key=rank) if kind == "min" else max(values, key=rank)
    count = state.counts.get(i, 0)
    if count == 0:
        return None
    total = state.sums.get(i)
    if isinstance(total, FloatSum):
        return total.value(1 if kind == "sum" else count)
    if kind == "sum":
        return total
    if t.per_value_scale:
        # PostgreSQL's avg: sum / count at the scale its rules pick for these values, as
        # PostgreSQL's text (how SELECT sends it too: planner.sql.value_scale). The sum's
        # display scale is its argument's: 0 for integers, a numeric(p, s)'s s; a stored
        # unconstrained numeric (kept at scale 10) has lost its values' own, and the sum's
        # digits stand in for the largest of them.
        exponent = total.as_tuple().exponent if isinstance(total, decimal.Decimal) else 0
        dscale = pg_numeric.dscale_of(total) if exponent == -UNCONSTRAINED_SCALE else -exponent
        return pg_numeric.text(pg_numeric.avg(decimal.Decimal(total), count, dscale))
    if t.base.name == "numeric":
        ps = t.precision_scale
        scale = ps[1] if ps else 6
        with decimal.localcontext() as ctx:
            ctx.prec = 120
            value = decimal.Decimal(total) / count
            return value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    return float(total) / count


def checked(value: object, t: SqlType) -> object:
    """`value` if it fits the output column's type; PostgreSQL's overflow error otherwise."""
    if value is None:
        return None
    bits = _INT_RANGES.get(t.base.name)
    if bits is not None and isinstance(value, int) and not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{t.base.name} out of range")
    if t.base.name == "numeric" and isinstance(value, decimal.Decimal) and value.is_finite():
        ps = t.precision_scale
        if ps is not None and value != 0 and value.adjusted() >= ps[0] - ps[1]:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                           detail=f"A field with precision {ps[0]}, scale {ps[1]} must round to an "
                                  f"absolute value less than 10^{ps[0] - ps[1]}.")
    return value


# -- joins -------------------------------------------------------------------------


class JoinState:
    """An inner equi-join's inputs, each kept as its rows per join key."""

    def __init__(self, plan: JoinPlan) -> None:
        self.plan = plan
        # Per side: row_key(join key) → its rows, as a `_KeyRows`. Most join keys hold one
        # distinct row, kept as a plain tuple: a tuple of plain values is not tracked by the
        # garbage collector, where a Multiset and its two dicts are three tracked objects.
        # With a million keys per side, every full collection walked six million objects
        # while holding the GIL (~0.7 s in which no session's statement was answered).
        self.sides: tuple[dict, dict] = ({}, {})
        self.schemas: list[pa.Schema | None] = [None, None]

    def sqls(self) -> list[str]:
        return [self.plan.left_sql, self.plan.right_sql]

    def apply(self, sides: list[pa.Table]) -> pa.Table | None:
        """ΔL ⋈ R + L' ⋈ ΔR for one batch against the kept state: the joined updates
        (columns l<i>, r<i>, __mz_ts, __mz_diff) for Spark to shape with `post_sql`."""
        plan = self.plan
        widths = (len(plan.left_columns), len(plan.right_columns))
        for side, table in enumerate(sides):
            if self.schemas[side] is None:
                columns = plan.left_columns if side == 0 else plan.right_columns
                self.schemas[side] = pa.schema([table.schema.field(c) for c in columns])
        deltas = [_side_updates(sides[s], widths[s], plan.key_count) for s in (0, 1)]
        # Joined rows are moved into column lists a slice at a time: a million live row
        # tuples would be a million more objects for every garbage collection to walk.
        columns: list[list] = [[] for _ in range(widths[0] + widths[1] + 2)]
        joined: list[tuple] = []
        for ts in sorted(set(deltas[0]) | set(deltas[1])):
            for mine, other in ((0, 1), (1, 0)):
                # Left first against the old right state; then the right against the new left.
                state, opposite = self.sides[mine], self.sides[other]
                for key, row, diff in deltas[mine].get(ts, []):
                    if any(v is None for v in key):
                        continue  # NULL never equals anything
                    token = row_key(key)
                    matches = opposite.get(token)
                    if matches is not None:
                        for other_row, n in _key_rows(matches):
                            pair = (row, other_row) if mine == 0 else (other_row, row)
                            joined.append((*pair[0], *pair[1], ts, diff * n))
                            if len(joined) >= pylist.SLICE:
                                pylist.extend_columns(columns, joined)
                                joined.clear()
                    rows = _add_key_row(state.get(token), row, diff)
                    if rows is None:
                        state.pop(token, None)
                    else:
                        state[token] = rows
        pylist.extend_columns(columns, joined)
        if not columns[0]:
            return None
        schema = pa.schema([*self.schemas[0], *self.schemas[1], pa.field(DELTA_TS, pa.int64()),
                            pa.field(DELTA_DIFF, pa.int64())])
        return pa.Table.from_arrays([pylist.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)


# One join key's rows: a single distinct row as (row_key(row), row, multiplicity), or a
# Multiset once the key holds two or more.
_KeyRows = tuple | Multiset


def _key_rows(rows: _KeyRows) -> list[tuple[tuple, int]]:
    if isinstance(rows, Multiset):
        return rows.items()
    return [(rows[1], rows[2])]


def _add_key_row(rows: _KeyRows | None, row: tuple, diff: int) -> _KeyRows | None:
    """`rows` with `row`'s multiplicity changed by `diff`; None when nothing is left."""
    if rows is None:
        return (row_key(row), row, diff)
    if isinstance(rows, Multiset):
        rows.add(row, diff)
        return rows if rows else None
    key, kept, n = rows
    if row_key(row) == key:
        n += diff
        return (key, kept, n) if n else None
    multiset = Multiset()
    multiset.add(kept, n)
    multiset.add(row, diff)
    return multiset


def _side_updates(table: pa.Table, width: int, keys: int) -> dict[int, list[tuple[tuple, tuple, int]]]:
    """One join input's batch as (key, row, diff) per timestamp."""
    cols = [column_values(c) for c in table.columns]
    out: dict[int, list[tuple[tuple, tuple, int]]] = {}
    ts_col, diff_col = cols[width + keys], cols[width + keys + 1]
    for r in range(table.num_rows):
        row = tuple(cols[i][r] for i in range(width))
        key = tuple(cols[width + i][r] for i in range(keys))
        out.setdefault(ts_col[r], []).append((key, row, diff_col[r]))
    return out
