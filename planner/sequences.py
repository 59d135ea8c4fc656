"""Sequences as PostgreSQL defines them: their options (CREATE SEQUENCE, serial, identity
columns) and the values nextval hands out.

Pure: `options` reads PostgreSQL's parse tree (pglast's AST: the JSON form loses negative
integers) with sequence.c's defaults and checks; `advance` is nextval's arithmetic over
`State`. Where the values live and how they are made durable is the server's
(server/sequences.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from pglast import ast as pg_ast
from sqlglot import exp

from planner.errors import INVALID_PARAMETER_VALUE, SqlError
from planner.pg_format import quote_identifier

SEQUENCE_GENERATOR_LIMIT_EXCEEDED = "2200H"

# The types a sequence may have, with their ranges (sequence.c's init_params).
RANGES = {"smallint": (-(2 ** 15), 2 ** 15 - 1), "integer": (-(2 ** 31), 2 ** 31 - 1),
          "bigint": (-(2 ** 63), 2 ** 63 - 1)}
_TYPE_NAMES = {"int2": "smallint", "smallint": "smallint", "int4": "integer", "integer": "integer",
               "int": "integer", "int8": "bigint", "bigint": "bigint"}
# serial's spellings, and the integer type each stands for (parse_utilcmd.c).
SERIALS = {"smallserial": "smallint", "serial2": "smallint", "serial": "integer", "serial4": "integer",
           "bigserial": "bigint", "serial8": "bigint"}
_NEXTVAL = re.compile(r"^nextval\('((?:[^']|'')+)'::regclass\)$")
# nextval writes ahead this many values to the log, as PostgreSQL's SEQ_LOG_VALS.
LOG_AHEAD = 32


@dataclass(frozen=True)
class Spec:
    """A sequence's definition: its type and range, where it starts and how it steps."""

    type: str  # smallint | integer | bigint
    start: int
    increment: int
    minvalue: int
    maxvalue: int
    cache: int = 1
    cycle: bool = False

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Spec:
        return cls(**d)


@dataclass(frozen=True)
class State:
    """Where a sequence stands: its last value, and whether nextval has returned it yet
    (false after CREATE or RESTART: the next call returns last_value itself)."""

    last_value: int
    is_called: bool


def start_state(spec: Spec) -> State:
    return State(spec.start, False)


def options(items: list[pg_ast.DefElem] | tuple | None, *, type_name: str = "bigint",
            base: Spec | None = None) -> tuple[Spec, tuple[str, ...] | None, int | None]:
    """The Spec a list of sequence options gives (over `base` for ALTER SEQUENCE), the
    `OWNED BY` column's name parts (() for OWNED BY NONE, None when absent), and a RESTART
    value (None when absent; RESTART alone restarts at START)."""
    given: dict[str, object] = {}
    owned: tuple[str, ...] | None = None
    restart: int | None = None
    for item in items or ():
        name = item.defname
        if name in given or (name == "owned_by" and owned is not None):
            raise SqlError("42601", "conflicting or redundant options")
        arg = item.arg
        if name == "as":
            given["as"] = _type_name(arg)
        elif name in ("start", "increment", "minvalue", "maxvalue", "cache", "restart"):
            given[name] = None if arg is None else _integer(arg, name)
        elif name == "cycle":
            given["cycle"] = bool(arg.boolval)
        elif name == "owned_by":
            owned = tuple(s.sval for s in arg)
            if owned == ("none",):
                owned = ()
        elif name == "sequence_name":
            continue  # an identity column's: read by `sequence_name`
        else:
            raise SqlError("42601", f'option "{name}" not recognized')
    if "restart" in given:
        restart = given.pop("restart")  # type: ignore[assignment]
        if restart is None:
            restart = (base.start if base else None)
    spec = _spec(given, given.get("as") or (base.type if base else type_name), base)  # type: ignore[arg-type]
    if restart is not None:
        _in_range("RESTART", restart, spec)
    return spec, owned, restart


def sequence_name(items: list[pg_ast.DefElem] | tuple | None) -> str | None:
    """An identity column's `SEQUENCE NAME [public.]name` option (None when absent)."""
    for item in items or ():
        if item.defname == "sequence_name":
            parts = [s.sval for s in item.arg]
            if len(parts) > 1 and parts[-2] != "public":
                raise SqlError("3F000", f'schema "{parts[-2]}" does not exist')
            return parts[-1]
    return None


def _spec(given: dict, type_name: str, base: Spec | None) -> Spec:
    lowest, highest = RANGES[type_name]
    increment = given.get("increment", base.increment if base else 1)
    if increment is None or increment == 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "INCREMENT must not be zero")
    ascending = increment > 0

    def bound(key: str, default: int) -> int:
        if key in given:
            return default if given[key] is None else given[key]  # NO MINVALUE / NO MAXVALUE
        if base is not None and not ("as" in given and _at_type_limit(base, key)):
            return getattr(base, key)
        return default

    maxvalue = bound("maxvalue", highest if ascending else -1)
    minvalue = bound("minvalue", 1 if ascending else lowest)
    for label, value in (("MAXVALUE", maxvalue), ("MINVALUE", minvalue)):
        if not lowest <= value <= highest:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"{label} ({value}) is out of range for sequence data type {type_name}")
    if minvalue >= maxvalue:
        raise SqlError(INVALID_PARAMETER_VALUE, f"MINVALUE ({minvalue}) must be less than MAXVALUE ({maxvalue})")
    if "start" in given and given["start"] is not None:
        start = given["start"]
    elif base is not None:
        start = base.start
    else:
        start = minvalue if ascending else maxvalue
    cache = given.get("cache", base.cache if base else 1)
    if cache is None or cache < 1:
        raise SqlError(INVALID_PARAMETER_VALUE, f"CACHE ({cache}) must be greater than zero")
    spec = Spec(type_name, start, increment, minvalue, maxvalue, cache,
                bool(given.get("cycle", base.cycle if base else False)))
    _in_range("START", start, spec)
    return spec


def _at_type_limit(base: Spec, key: str) -> bool:
    """ALTER SEQUENCE ... AS: a bound that was its old type's limit follows the new type."""
    lowest, highest = RANGES[base.type]
    return getattr(base, key) == (highest if key == "maxvalue" else lowest)


def _in_range(label: str, value: int, spec: Spec) -> None:
    if value < spec.minvalue:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f"{label} value ({value}) cannot be less than MINVALUE ({spec.minvalue})")
    if value > spec.maxvalue:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f"{label} value ({value}) cannot be greater than MAXVALUE ({spec.maxvalue})")


def _integer(arg: object, option: str) -> int:
    if isinstance(arg, pg_ast.Integer):
        return arg.ival
    if isinstance(arg, pg_ast.Float):  # past int4 the grammar keeps the digits as a Float
        try:
            return int(arg.fval)
        except ValueError:
            pass
    raise SqlError("22P02", f'invalid input syntax for type bigint: "{getattr(arg, "fval", arg)}"')


def _type_name(arg: pg_ast.TypeName) -> str:
    name = arg.names[-1].sval
    known = _TYPE_NAMES.get(name)
    if known is None or arg.arrayBounds:
        raise SqlError(INVALID_PARAMETER_VALUE, "sequence type must be smallint, integer, or bigint")
    return known


def type_of(column_type: str) -> str | None:
    """The sequence type an identity column of `column_type` takes, None if it cannot be one."""
    return _TYPE_NAMES.get(column_type)


def advance(spec: Spec, state: State, count: int, name: str) -> tuple[list[int], State]:
    """The next `count` values of nextval from `state`, and the state after them; 2200H
    when the sequence reaches its bound without CYCLE (no value is taken then)."""
    values: list[int] = []
    last, called = state.last_value, state.is_called
    step = spec.increment
    if not spec.cycle and called:
        # Without CYCLE the values are an arithmetic run: check its end, then make it.
        end = last + step * count
        if not spec.minvalue <= end <= spec.maxvalue:
            raise _limit(spec, name)
        return list(range(last + step, end + (1 if step > 0 else -1), step)), State(end, True)
    for _ in range(count):
        if not called:
            value, called = last, True
        else:
            value = last + step
            if value > spec.maxvalue or value < spec.minvalue:
                if not spec.cycle:
                    raise _limit(spec, name)
                value = spec.minvalue if step > 0 else spec.maxvalue
        values.append(value)
        last = value
    return values, State(last, True)


def _limit(spec: Spec, name: str) -> SqlError:
    if spec.increment > 0:
        return SqlError(SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                        f'nextval: reached maximum value of sequence "{name}" ({spec.maxvalue})')
    return SqlError(SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                    f'nextval: reached minimum value of sequence "{name}" ({spec.minvalue})')


def ahead(spec: Spec, state: State, count: int) -> State:
    """The state `count` values past `state`, stopping at the bound (what the log records
    ahead of the values handed out: after a crash nextval resumes past every one of them)."""
    if not spec.cycle:
        if spec.increment > 0:
            return State(min(state.last_value + spec.increment * count, spec.maxvalue), True)
        return State(max(state.last_value + spec.increment * count, spec.minvalue), True)
    return advance(spec, state, count, "")[1]


def nextval_default(sequence: str) -> str:
    """A serial column's default, as PostgreSQL stores and prints it."""
    return "nextval('" + quote_identifier(sequence).replace("'", "''") + "'::regclass)"


def sequence_in_default(default: str | None) -> str | None:
    """The sequence a default of exactly `nextval('name'::regclass)` draws from."""
    if default is None:
        return None
    m = _NEXTVAL.match(default)
    return regclass_name(m.group(1).replace("''", "'")) if m else None


def regclass_name(text: str) -> str:
    """The relation name a regclass input names: folded to lower case unless quoted."""
    parts = []
    for m in re.finditer(r'\s*(?:"((?:[^"]|"")*)"|([^."]+))\s*(\.|$)', text.strip()):
        parts.append(m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2).strip().lower())
        if not m.group(3):
            break
    if len(parts) > 1 and parts[-2] not in ("public",):
        raise SqlError("3F000", f'schema "{parts[-2]}" does not exist')
    return parts[-1] if parts else text


def nextval_literal(node: exp.Expression) -> str | None:
    """The sequence name of a call `nextval('name')` (or `nextval('name'::regclass)`), as
    sqlglot reads it; None for anything else."""
    if not isinstance(node, exp.Anonymous) or str(node.this).lower() != "nextval" or len(node.expressions) != 1:
        return None
    arg = node.expressions[0]
    if isinstance(arg, exp.Cast) and arg.to.sql().lower() == "regclass":
        arg = arg.this
    if isinstance(arg, exp.Literal) and arg.is_string:
        return regclass_name(arg.this)
    return None
