"""How a relation's columns are laid out in Arrow, Parquet and Spark.

Stored files name columns by position (c0, c1, ...) so that any user column
name, quoted or not, is safe on disk; every file also carries the update's
`mz_timestamp` and `mz_diff`.
"""

from __future__ import annotations

import json

import pyarrow as pa

from planner.types import BY_NAME, SqlType

TS = "mz_timestamp"
DIFF = "mz_diff"

_ARROW = {
    "boolean": pa.bool_(),
    "bytea": pa.binary(),
    "bigint": pa.int64(),
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "real": pa.float32(),
    "double precision": pa.float64(),
    "date": pa.date32(),
    "time without time zone": pa.time64("us"),
    "timestamp without time zone": pa.timestamp("us"),
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),
    "oid": pa.int64(),
}


def arrow_type(t: SqlType) -> pa.DataType:
    """The Arrow type a column of SQL type `t` is stored and moved as."""
    if t.base.name == "numeric":
        p, s = t.stored_precision_scale or (38, 10)
        inner = pa.decimal128(p, s)
    else:
        inner = _ARROW.get(t.base.name, pa.string())
    return pa.list_(inner) if t.is_array else inner


def physical(i: int) -> str:
    return f"c{i}"


def storage_arrow_schema(types: list[SqlType]) -> pa.Schema:
    fields = [pa.field(physical(i), arrow_type(t)) for i, t in enumerate(types)]
    return pa.schema([*fields, pa.field(TS, pa.int64()), pa.field(DIFF, pa.int64())])


def storage_spark_ddl(types: list[SqlType]) -> str:
    cols = [f"{physical(i)} {t.spark}" for i, t in enumerate(types)]
    return ", ".join([*cols, f"{TS} BIGINT", f"{DIFF} BIGINT"])


def pg_metadata(t: SqlType) -> dict:
    """Spark column metadata that keeps the PostgreSQL type through projections."""
    return {"pg_type": json.dumps(t.to_json())}


def sql_type_from_metadata(metadata: dict | None) -> SqlType | None:
    raw = (metadata or {}).get("pg_type")
    return SqlType.from_json(json.loads(raw)) if raw else None


def sql_type_of_spark(field) -> SqlType:
    """The PostgreSQL type of a Spark result column."""
    kept = sql_type_from_metadata(field.metadata)
    if kept is not None:
        return kept
    return _sql_type_of_datatype(field.dataType)


def _sql_type_of_datatype(dt) -> SqlType:
    from pyspark.sql import types as T

    if isinstance(dt, T.ArrayType):
        inner = _sql_type_of_datatype(dt.elementType)
        return SqlType(inner.base, inner.typmod, True)
    if isinstance(dt, T.DecimalType):
        if (dt.precision, dt.scale) == (38, 10):  # how an unconstrained numeric is kept
            return SqlType(BY_NAME["numeric"])
        return SqlType(BY_NAME["numeric"], ((dt.precision << 16) | dt.scale) + 4)
    name = {
        T.BooleanType: "boolean", T.ByteType: "smallint", T.ShortType: "smallint",
        T.IntegerType: "integer", T.LongType: "bigint", T.FloatType: "real",
        T.DoubleType: "double precision", T.StringType: "text", T.BinaryType: "bytea",
        T.DateType: "date", T.TimestampType: "timestamp with time zone",
        T.TimestampNTZType: "timestamp without time zone",
        T.DayTimeIntervalType: "interval", T.YearMonthIntervalType: "interval",
    }.get(type(dt))
    if name is None and type(dt).__name__ == "TimeType":
        name = "time without time zone"
    return SqlType(BY_NAME[name or "text"])
