"""interval's arithmetic (planner.pg_interval) as Python UDFs registered in a Spark session
under the names the planner writes (planner.interval_calls.UDF_NAMES).

Intervals come and go as PostgreSQL's text of them, timestamps and dates as Spark's text;
the span (the comparison value) as a DECIMAL(38, 0) and extract's numeric as text, which the
planner casts to the field's scale. PostgreSQL's errors leave the worker as jsonb_udfs' do."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from planner import pg_interval
from planner.codecs.interval import interval_parse_cached, interval_text
from planner.interval_calls import UDF_NAMES
from spark_backend.jsonb_udfs import carrying_sqlstate


def _normalized(text: str | None) -> str | None:
    """text → interval: read by interval_in, written by interval_out."""
    return None if text is None else interval_text(*interval_parse_cached(text))


def _span(text: str | None) -> Decimal | None:
    value = pg_interval.span(text)
    return None if value is None else Decimal(value)


def _part(field: str | None, text: str | None) -> str | None:
    value = pg_interval.part(field, text)
    return None if value is None else str(value)


def _over_group(f: Callable[[list[str | None]], str | None]) -> Callable[[Iterable[str | None] | None], str | None]:
    """An aggregate over the group's collected values (an array; Arrow may hand it over as
    any sequence)."""
    def call(values: Iterable[str | None] | None) -> str | None:
        return None if values is None else f(list(values))
    return call


# operation → (the Python function, Spark's return type)
_OPERATIONS: dict[str, tuple[Callable[..., Any], str]] = {
    "in": (_normalized, "string"),
    "plus": (pg_interval.plus, "string"),
    "minus": (pg_interval.minus, "string"),
    "date_plus": (pg_interval.date_plus, "string"),
    "date_minus": (pg_interval.date_minus, "string"),
    "time_plus": (pg_interval.time_plus, "string"),
    "time_minus": (pg_interval.time_minus, "string"),
    "time_diff": (pg_interval.time_diff, "string"),
    "trunc": (pg_interval.trunc, "string"),
    "add": (pg_interval.add, "string"),
    "sub": (pg_interval.sub, "string"),
    "negate": (pg_interval.negate, "string"),
    "mul": (pg_interval.mul, "string"),
    "div": (pg_interval.div, "string"),
    "span": (_span, "decimal(38,0)"),
    "diff": (pg_interval.diff, "string"),
    "age": (pg_interval.age, "string"),
    "justify_hours": (pg_interval.justify_hours, "string"),
    "justify_days": (pg_interval.justify_days, "string"),
    "justify_interval": (pg_interval.justify_interval, "string"),
    "part": (_part, "string"),
    "date_part": (pg_interval.date_part, "double"),
    "total": (_over_group(pg_interval.total), "string"),
    "mean": (_over_group(pg_interval.mean), "string"),
    "make": (pg_interval.make_interval, "string"),
    "series": (pg_interval.series, "array<string>"),
}


def register(spark: Any) -> None:
    """Register every interval UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for operation, name in UDF_NAMES.items():
        function, returns = _OPERATIONS[operation]
        spark.udf.register(name, udf(carrying_sqlstate(function), returns, useArrow=True))
