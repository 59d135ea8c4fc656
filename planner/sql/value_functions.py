"""PostgreSQL's SQL value functions (`current_date`, `current_timestamp`, `localtimestamp`,
`current_catalog`, `current_schema`): keywords that PostgreSQL's grammar turns into a
SQLValueFunction node, bound here as the catalogued functions that compute them.

`current_timestamp` is `now()`, the transaction's start; `current_date` and `localtimestamp`
are it cast as PostgreSQL casts a timestamptz (in the session's time zone, UTC here). The
forms with a precision (`current_timestamp(3)`), `current_time`/`localtime` (sparkwire has
no time type) and the role names are not covered by this front end yet: the query takes the
sqlglot path, which knows them.
"""

from __future__ import annotations

from planner import functions
from planner.sql import coerce
from planner.sql import plan as p

_NOW = ("SVFOP_CURRENT_TIMESTAMP", "SVFOP_CURRENT_DATE", "SVFOP_LOCALTIMESTAMP")
_NAMED = {"SVFOP_CURRENT_CATALOG": "current_database", "SVFOP_CURRENT_SCHEMA": "current_schema"}


def bind(n: dict) -> p.Expr:
    """The expression of a SQLValueFunction node."""
    op = n["op"]
    if op in _NOW:
        now = _call("now")
        if op == "SVFOP_CURRENT_DATE":
            return coerce.explicit_cast(now, coerce.named("date"))
        if op == "SVFOP_LOCALTIMESTAMP":
            return coerce.explicit_cast(now, coerce.named("timestamp without time zone"))
        return now
    if op in _NAMED:
        return _call(_NAMED[op])
    raise p.NotYet(f"{op.removeprefix('SVFOP_').lower()} is not covered by this front end yet")


def _call(name: str) -> p.Call:
    (func,) = functions.overloads(name)
    return p.Call(func, (), coerce.named(func.result))
