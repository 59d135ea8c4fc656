"""Prepared statements: the extended protocol's Parse and SQL's PREPARE share one namespace
per session, as in PostgreSQL (DEALLOCATE and Close drop either kind).

PREPARE parses the statement once and keeps the parsed form; EXECUTE evaluates its
arguments, coerces each to its parameter's type by PostgreSQL's assignment rules, and
runs the kept statement with them - no parsing again.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlglot import exp

from planner import statements as st
from planner.codecs.text_in import decode_text
from planner.codecs.text_out import encode_text
from planner.errors import (
    DATATYPE_MISMATCH,
    DUPLICATE_PREPARED_STATEMENT,
    INVALID_PREPARED_STATEMENT,
    NUMERIC_VALUE_OUT_OF_RANGE,
    SYNTAX_ERROR,
    SqlError,
)
from planner.params import TEXT, literal
from planner.parser import param_numbers, sql_type
from planner.translate import SessionContext
from planner.types import SqlType, column_type
from server import param_types
from server.catalog import Catalog
from server.coordinator import Coordinator
from server.outcome import CommandDone, Outcome
from server.settings import Settings


@dataclass
class Prepared:
    parsed: st.Parsed
    param_types: dict[int, SqlType]
    from_sql: bool = False  # made by SQL PREPARE (else by the protocol's Parse)
    sql: str = ""  # what pg_prepared_statements shows: PREPARE's whole text, or Parse's query
    prepared_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))

    @property
    def param_list(self) -> list[SqlType]:
        count = max(self.param_types, default=0)
        return [self.param_types.get(i, TEXT) for i in range(1, count + 1)]


class PreparingSession(Protocol):
    """What PREPARE and EXECUTE use of the session."""

    coord: Coordinator
    prepared: dict[str, Prepared]
    group: str | None
    settings: Settings

    @property
    def catalog(self) -> Catalog: ...

    def context(self) -> SessionContext: ...

    async def describe(self, parsed: st.Parsed, param_types: dict[int, SqlType]) -> Any: ...

    async def run_statement(self, stmt: st.Statement, params: dict[int, object],
                            param_types: dict[int, SqlType]) -> Outcome: ...


async def prepare(session: PreparingSession, stmt: st.Prepare, params, ptypes) -> Outcome:
    if stmt.name in session.prepared:
        raise SqlError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{stmt.name}" already exists')
    parsed = st.Parsed(stmt.statement, stmt.text, 0, param_numbers(stmt.statement))
    declared = {i + 1: t.oid for i, t in enumerate(stmt.param_types)}
    types = param_types.statement_param_types(stmt.statement, parsed.params, declared, session.catalog,
                                              session.settings.get("sql_frontend") == "postgres")
    types.update({i + 1: t for i, t in enumerate(stmt.param_types)})  # with their typmods
    # PostgreSQL analyses the statement at PREPARE: an unknown table fails here, not at EXECUTE.
    target = getattr(stmt.statement, "table", None)
    if isinstance(target, str):
        session.catalog.require(target)
    else:
        await session.describe(parsed, types)
    session.prepared[stmt.name] = Prepared(parsed, types, from_sql=True, sql=stmt.sql)
    return CommandDone("PREPARE")


def rows(statements: dict[str, Prepared]) -> list[tuple]:
    """pg_prepared_statements' rows (the unnamed statement is not listed, as in PostgreSQL);
    plans are Spark's, so there are no generic or custom plans to count."""
    return [(name, p.sql or p.parsed.text, p.prepared_at, [type_name(t) for t in p.param_list], p.from_sql, 0, 0)
            for name, p in sorted(statements.items()) if name]


def lookup(session: PreparingSession, name: str) -> Prepared:
    prepared = session.prepared.get(name)
    if prepared is None:
        raise SqlError(INVALID_PREPARED_STATEMENT, f'prepared statement "{name}" does not exist')
    return prepared


async def execute(session: PreparingSession, stmt: st.Execute, params, ptypes) -> Outcome:
    prepared = lookup(session, stmt.name)
    wanted = prepared.param_list
    if len(stmt.args) != len(wanted):
        raise SqlError(SYNTAX_ERROR, f'wrong number of parameters for prepared statement "{stmt.name}"',
                       detail=f"Expected {len(wanted)} parameters but got {len(stmt.args)}.")
    values = await _arguments(session, stmt.args, params, ptypes)
    bound: dict[int, object] = {}
    for n, ((value, source), target) in enumerate(zip(values, wanted, strict=True), start=1):
        bound[n] = coerce(value, source, target, n)
    return await session.run_statement(prepared.parsed.statement, bound, dict(enumerate(wanted, start=1)))


# -- arguments ------------------------------------------------------------------------------

UNKNOWN = None  # an untyped literal ('abc', NULL): its parameter's input function reads it


async def _arguments(session: PreparingSession, args: tuple[exp.Expression, ...],
                     params: dict[int, object], ptypes: dict[int, SqlType]) -> list[tuple[object, SqlType | None]]:
    """Each argument's value and type: constants here, anything else by one Spark query."""
    out: list[tuple[object, SqlType | None] | None] = [_constant(a) for a in args]
    missing = [i for i, v in enumerate(out) if v is None]
    if missing:
        select = exp.select(*(args[i].copy() for i in missing))
        bound = {n: literal(v, ptypes.get(n, TEXT)) for n, v in params.items()}
        spark_sql, views = session.coord.plan_query(select, session.context(), bound, session.catalog)
        result = await session.coord.query(spark_sql, views, session.coord.read_ts(), group=session.group)
        table = result.table  # by position: the columns may share a name (?column?)
        for k, i in enumerate(missing):
            out[i] = (table.column(k)[0].as_py() if table.num_rows else None, result.types[k])
    return out  # type: ignore[return-value]


def _constant(node: exp.Expression) -> tuple[object, SqlType | None] | None:
    if isinstance(node, exp.Null):
        return None, UNKNOWN
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this, UNKNOWN
    if isinstance(node, exp.Boolean):
        return bool(node.this), column_type("boolean")
    negative = isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string
    if negative or isinstance(node, exp.Literal):
        text = ("-" if negative else "") + (node.this.this if negative else node.this)
        if text.lstrip("-").isdigit():
            value = int(text)
            name = "integer" if -(2**31) <= value < 2**31 else "bigint" if -(2**63) <= value < 2**63 else None
            if name is not None:
                return value, column_type(name)
        return decimal.Decimal(text), column_type("numeric")
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        try:
            t = sql_type(node.to)
        except SqlError:
            return None
        return decode_text(t, node.this.this.encode()), t
    return None


# -- PostgreSQL's assignment coercion ---------------------------------------------------------

_NUMBERS = ("smallint", "integer", "bigint", "numeric", "real", "double precision")
_STRINGS = ("text", "character varying", "character", "name")
_INTEGERS = {"smallint": 2**15, "integer": 2**31, "bigint": 2**63}


def _coercible(source: SqlType, target: SqlType) -> bool:
    s, t = source.base.name, target.base.name
    if source.is_array != target.is_array:
        return t in _STRINGS and not target.is_array
    if s == t:
        return True
    if s in _NUMBERS and t in _NUMBERS:
        return True
    if t in _STRINGS or s in _STRINGS and t in _STRINGS:
        return True  # every type has an assignment cast to the string types (I/O conversion)
    return (s, t) in {("date", "timestamp without time zone"), ("date", "timestamp with time zone"),
                      ("timestamp without time zone", "timestamp with time zone"),
                      ("timestamp with time zone", "timestamp without time zone"),
                      ("timestamp without time zone", "date"), ("timestamp with time zone", "date"),
                      ("json", "jsonb"), ("jsonb", "json")}


def type_name(t: SqlType) -> str:
    """A type as PostgreSQL names it in these messages: no typmod."""
    return t.base.name + ("[]" if t.is_array else "")


def coerce(value: object, source: SqlType | None, target: SqlType, n: int) -> object:
    """An EXECUTE argument as its parameter's type, or PostgreSQL's 42804."""
    if source is UNKNOWN:
        return None if value is None else decode_text(target, str(value).encode())
    if not _coercible(source, target):
        raise SqlError(DATATYPE_MISMATCH, f"parameter ${n} of type {type_name(source)} cannot be coerced "
                                          f"to the expected type {type_name(target)}",
                       hint="You will need to rewrite or cast the expression.")
    if value is None:
        return None
    if source.base.name in _NUMBERS and target.base.name in _INTEGERS:
        exact = decimal.Decimal(str(value))
        if not exact.is_finite():
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{target.base.name} out of range")
        whole = int(exact.to_integral_value(rounding=decimal.ROUND_HALF_UP))  # ties away from zero
        limit = _INTEGERS[target.base.name]
        if not -limit <= whole < limit:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{target.base.name} out of range")
        return whole
    if source == target:
        return value
    return decode_text(target, encode_text(source, value))


HANDLERS: dict[type, Callable[..., Awaitable[Outcome]]] = {st.Prepare: prepare, st.Execute: execute}
