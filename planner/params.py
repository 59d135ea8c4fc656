"""Statement parameters: their types, inferred as PostgreSQL would, and their values
as literals for Spark.

A client that leaves a parameter's type unspecified (OID 0) learns it from
ParameterDescription and then encodes the value accordingly, so the type must
come from the statement: the column an INSERT value goes to, the column a
parameter is compared with, an explicit cast; text otherwise.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import math
from collections.abc import Callable

from sqlglot import exp

from planner import statements as st
from planner.errors import SqlError
from planner.parser import sql_type
from planner.pg_compat import param_type
from planner.types import BY_NAME, BY_OID, SqlType

TEXT = SqlType(BY_NAME["text"])
BIGINT = SqlType(BY_NAME["bigint"])

ColumnTypes = Callable[[str], "list[tuple[str, SqlType]] | None"]  # relation → columns


def infer_types(stmt: st.Statement, numbers: list[int], declared: dict[int, int],
                columns_of: ColumnTypes, untyped: SqlType | None = TEXT) -> dict[int, SqlType]:
    """The type of each $n the statement uses: declared, or met beside a column or in a
    cast; `untyped` for the others (None: left out, for the front end to infer)."""
    out: dict[int, SqlType] = {}
    for n, oid in declared.items():
        if oid and oid in BY_OID:
            out[n] = SqlType(BY_OID[oid])
        elif oid:
            for base in BY_OID.values():
                if base.array_oid == oid:
                    out[n] = SqlType(base, is_array=True)
    target_table = getattr(stmt, "table", None)
    table_cols = dict(columns_of(target_table) or []) if isinstance(target_table, str) else {}
    if isinstance(stmt, st.Insert) and isinstance(stmt.source, exp.Values):
        names = list(stmt.columns) if stmt.columns is not None else list(table_cols)
        for tup in stmt.source.expressions:
            for name, node in zip(names, tup.expressions):
                _note(out, node, table_cols.get(name))
    if isinstance(stmt, st.Update):
        for name, node in stmt.assignments:
            _note(out, node, table_cols.get(name))
    known = dict(table_cols)
    for tree in _trees(stmt):
        for table in tree.find_all(exp.Table):
            for name, t in columns_of(table.name.lower()) or []:
                known.setdefault(name, t)
    for tree in _trees(stmt):
        for node in tree.find_all(exp.Parameter):
            n = _number(node)
            if n is None or n in out:
                continue
            parent = node.parent
            if isinstance(parent, exp.Cast):
                with contextlib.suppress(SqlError):  # an unknown cast target fails later
                    out[n] = sql_type(parent.to)
                if n not in out:
                    catalog_type = param_type(parent.to)  # $1::oid[] (asyncpg), $1::oid
                    if catalog_type is not None:
                        out[n] = catalog_type
            elif isinstance(parent, (exp.Limit, exp.Offset)):
                out[n] = BIGINT
            elif isinstance(parent, (exp.Binary, exp.In, exp.Between)):
                for other in parent.iter_expressions():
                    if isinstance(other, exp.Column) and other.name.lower() in known:
                        out[n] = known[other.name.lower()]
                        break
    if untyped is not None:
        for n in numbers:
            out.setdefault(n, untyped)
    return out


def _note(out: dict[int, SqlType], node: exp.Expression, t: SqlType | None) -> None:
    n = _number(node)
    if n is not None and t is not None and n not in out:
        out[n] = t


def _number(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
        return int(node.this.this)
    return None


def _trees(stmt: st.Statement) -> list[exp.Expression]:
    trees = []
    for value in vars(stmt).values():
        if isinstance(value, exp.Expression):
            trees.append(value)
        elif isinstance(value, tuple):
            for v in value:
                if isinstance(v, exp.Expression):
                    trees.append(v)
                elif isinstance(v, tuple):
                    trees.extend(x for x in v if isinstance(x, exp.Expression))
    return trees


def literal(value: object, t: SqlType) -> exp.Expression:
    """A Spark-ready literal for a parameter value of type `t`."""
    spark_type = exp.DataType.build(t.spark, dialect="spark")
    if value is None:
        return exp.Cast(this=exp.Null(), to=spark_type)
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Cast(this=exp.Literal.number(value), to=spark_type)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return exp.Cast(this=exp.Literal.string(text), to=spark_type)
        if value == 0 and math.copysign(1.0, value) < 0:
            return exp.Cast(this=exp.Literal.string("-0"), to=spark_type)  # the number -0.0 is Spark's decimal 0
        return exp.Cast(this=exp.Literal.number(repr(value)), to=spark_type)
    if isinstance(value, decimal.Decimal):
        return exp.Cast(this=exp.Literal.string(str(value)), to=spark_type)
    if isinstance(value, bytes):
        return exp.Anonymous(this="unhex", expressions=[exp.Literal.string(value.hex())])
    if isinstance(value, datetime.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=spark_type)
    if isinstance(value, (datetime.date, datetime.time)):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=spark_type)
    if isinstance(value, list):
        return exp.Array(expressions=[literal(v, SqlType(t.base, t.typmod)) for v in value])
    text = exp.Literal.string(str(value))
    return text if t.spark == "STRING" else exp.Cast(this=text, to=spark_type)
