"""The json type has no equality and no ordering operator in PostgreSQL (jsonb has both), so
whatever must compare or sort json values is PostgreSQL's 42883: ORDER BY, DISTINCT, GROUP
BY, UNION/INTERSECT/EXCEPT, PARTITION BY and ORDER BY in a window, count(DISTINCT …) and
ORDER BY inside an aggregate. Spark would compare the text; PostgreSQL refuses, and so do we,
over a bound plan (subquery plans included).

A row value (`record`) has both in PostgreSQL, field by field; here it is its text
(planner.sql.spark_records), which neither sorts nor compares as the fields do, so where one
must, the statement is not covered by this front end (plan.NotYet).
"""

from __future__ import annotations

from planner.errors import SqlError
from planner.sql import plan as p
from planner.types import SqlType

UNDEFINED_FUNCTION = "42883"


def check(rel: p.Rel) -> None:
    """42883 where `rel` compares or sorts a json value."""
    for node in p.nodes(rel):
        match node:
            case p.TopK(input=inner, order=order):
                columns = p.columns(inner)
                _no_json([columns[k.index].type for k in order], "ordering")
            case p.Distinct(input=inner):
                _no_json([c.type for c in p.columns(inner)], "equality")
            case p.Reduce(keys=keys):
                _no_json([k.type for k in keys], "equality")
            case p.SetOp(kind=kind, all=every, left=left) if kind is not p.SetKind.UNION or not every:
                _no_json([c.type for c in p.columns(left)], "equality")
            case p.AggCall(args=args, distinct=distinct, order=order):
                _no_json([a.type for a in args] if distinct else [], "equality")
                _no_json([k.expr.type for k in order], "ordering")
            case p.WindowCall(partition=partition, order=order):
                _no_json([e.type for e in partition], "equality")
                _no_json([k.expr.type for k in order], "ordering")


def _no_json(types: list[SqlType], operator: str) -> None:
    for t in types:
        if t.base.name == "record":
            raise p.NotYet(f"{operator} of row values is not covered by this front end yet")
        if t.base.name == "json":
            raise SqlError(UNDEFINED_FUNCTION, f"could not identify an {operator} operator for type {t.display()}")
