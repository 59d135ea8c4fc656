"""interval's operators and functions as Spark SQL: calls of the Python UDFs over
`planner.pg_interval` that spark_backend.interval_udfs registers.

An interval is kept as PostgreSQL's text of it (interval_out, IntervalStyle postgres), which
Spark can neither add to a timestamp nor compare as PostgreSQL does ('1 day' equals
'24:00:00'; '1 mon' is 30 days). So every operation is PostgreSQL's own, in Python: a
timestamp or date reaches the UDF as Spark's text of it (the session's TimeZone is UTC, so
timestamptz arithmetic is timestamp arithmetic) and comes back as text cast to Spark's type;
comparisons and ORDER BY use the interval's span (interval_cmp_value: a month is 30 days)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sqlglot import exp

from planner import pg_interval

UDF_NAMES: dict[str, str] = {op: f"sparkwire_interval_{op}" for op in (
    "in", "plus", "minus", "date_plus", "date_minus", "add", "sub", "negate", "mul", "div", "span", "diff",
    "age", "justify_hours", "justify_days", "justify_interval", "part", "date_part", "total", "mean", "make",
    "series", "time_plus", "time_minus", "time_diff", "trunc")}

# Spark types of the timestamp types (planner.types)
_SPARK = {"timestamp without time zone": "timestamp_ntz", "timestamp with time zone": "timestamp"}


def call(op: str, *args: str) -> str:
    """A UDF call in a catalog template ({0}, {1} … for the operands)."""
    return f"{UDF_NAMES[op]}({', '.join(args)})"


def _text(i: int) -> str:
    return f"cast({{{i}}} as string)"


def shifted(timestamp_type: str, sign: str, timestamp_first: bool = True) -> str:
    """timestamp ± interval (or interval + timestamp): the template."""
    ts, iv = (0, 1) if timestamp_first else (1, 0)
    op = "plus" if sign == "+" else "minus"
    return f"cast({call(op, _text(ts), f'{{{iv}}}')} as {_SPARK[timestamp_type]})"


def date_shifted(sign: str, date_first: bool = True) -> str:
    """date ± interval (or interval + date): a timestamp, the date at midnight shifted."""
    d, iv = (0, 1) if date_first else (1, 0)
    op = "date_plus" if sign == "+" else "date_minus"
    return f"cast({call(op, _text(d), f'{{{iv}}}')} as timestamp_ntz)"


def time_shifted(sign: str, time_first: bool = True) -> str:
    """time ± interval (or interval + time): a time, wrapped around midnight."""
    t, iv = (0, 1) if time_first else (1, 0)
    op = "time_plus" if sign == "+" else "time_minus"
    return f"cast({call(op, _text(t), f'{{{iv}}}')} as time(6))"


def compared(op: str) -> str:
    """interval `op` interval, by span."""
    return f"{call('span', '{0}')} {op} {call('span', '{1}')}"


def difference() -> str:
    """timestamp - timestamp: an interval of days and time (justify_hours)."""
    return call("diff", _text(0), _text(1))


def age() -> str:
    return call("age", _text(0), _text(1))


SPAN = UDF_NAMES["span"]  # the sort key ORDER BY and min/max use
IN = UDF_NAMES["in"]  # text → interval: read by interval_in, written by interval_out


# Operators over constants computed while planning, as PostgreSQL folds them: a filter such as
# `ts > now() - interval '7 days'` then compares with a constant Spark can push down, not with
# a UDF's value per row. oid → (the computation over the operands' text, Spark's result type;
# None: an interval's text).
_FOLDS: dict[int, tuple[Callable[..., object], str | None]] = {
    2066: (pg_interval.plus, "TIMESTAMP_NTZ"), 2068: (pg_interval.minus, "TIMESTAMP_NTZ"),
    2553: (lambda iv, ts: pg_interval.plus(ts, iv), "TIMESTAMP_NTZ"),
    1327: (pg_interval.plus, "TIMESTAMP"), 1329: (pg_interval.minus, "TIMESTAMP"),
    2554: (lambda iv, ts: pg_interval.plus(ts, iv), "TIMESTAMP"),
    1076: (pg_interval.date_plus, "TIMESTAMP_NTZ"), 1077: (pg_interval.date_minus, "TIMESTAMP_NTZ"),
    2551: (lambda iv, d: pg_interval.date_plus(d, iv), "TIMESTAMP_NTZ"),
    1337: (pg_interval.add, None), 1338: (pg_interval.sub, None), 1336: (pg_interval.negate, None),
}
# Spark's text of a timestamp or date constant, as the UDFs read it
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{1,6})?)?", re.ASCII)


def folded(oid: int, operands: Sequence[exp.Expression]) -> exp.Expression | None:
    """The value of interval operator `oid` over constant operands (a string literal, or one
    cast to a timestamp or date), or None when it is not one of _FOLDS or an operand is not
    constant. PostgreSQL's errors are raised now, as its planner's folding raises them."""
    fold = _FOLDS.get(oid)
    texts = [_constant_text(o) for o in operands]
    if fold is None or any(t is None for t in texts):
        return None
    compute, spark_type = fold
    value = compute(*texts)
    if value is None:
        return None
    literal = exp.Literal.string(str(value))
    return literal if spark_type is None else exp.Cast(this=literal, to=exp.DataType.build(spark_type, dialect="spark"))


def _constant_text(e: exp.Expression) -> str | None:
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Cast) and e.to.is_type("timestamp", "timestamptz", "timestampntz", "timestampltz", "date"):
        e = e.this
        while isinstance(e, exp.Paren):
            e = e.this
        if not (isinstance(e, exp.Literal) and e.is_string):
            return None
        text = e.this.removesuffix("+00:00").removesuffix("+00")  # a timestamptz's, in UTC as every session's
        return text if _DATETIME.fullmatch(text) else None
    return e.this if isinstance(e, exp.Literal) and e.is_string else None
