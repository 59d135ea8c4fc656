"""Row values in `planner.sql.bind.Binder`: a whole-row reference (`t` or `t.*` naming a FROM
item, where no column of that name is in scope, as PostgreSQL's transformColumnRef tries
the column first) and `ROW(…)`, both `plan.Record`.

A row value is taken only where it becomes JSON: to_json, row_to_json, to_jsonb, json_agg,
jsonb_agg and the json/jsonb build functions write it as an object of its fields
(`{"a":1,"b":"x"}` for json, as composite_to_json does). Anywhere else (a comparison,
another function, the select list: PostgreSQL's record output) it is not covered yet and
the statement takes the older path. The row of an outer join's nullable side is refused
(0A000): PostgreSQL makes it NULL as a whole where only its fields would be NULL here.
"""

from __future__ import annotations

from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import position as _pos
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.scope import ScopeColumn

# The functions that take a row value as an argument.
TAKERS = frozenset(("to_json", "row_to_json", "to_jsonb", "json_agg", "jsonb_agg", "json_build_object",
                    "jsonb_build_object", "json_build_array", "jsonb_build_array"))


class RecordBinding:
    """Whole-row references and ROW constructors of `planner.sql.bind.Binder`."""

    expr: Any  # Binder.expr: a parse node → a bound expression
    _levels: list[Any]  # Binder._levels: each with its .scope

    def _whole_row(self, table: str, schema: str | None, n: dict) -> p.Record | None:
        """`table` (or `schema.table`) as a row value, at the nearest level with a FROM item of
        that name; None where none has."""
        for depth, level in enumerate(reversed(self._levels)):
            if not level.scope.has_table(table, schema):
                continue
            columns: list[ScopeColumn] = level.scope.star(table, schema)
            if any(c.nullable for c in columns):
                raise SqlError(FEATURE_NOT_SUPPORTED, f'the row of "{table}" as a value is not supported on the '
                                                      "nullable side of an outer join", position=_pos(n),
                               hint="Name its columns instead, as in json_build_object('a', t.a).")
            if len(columns) == 1 and columns[0].whole_row:  # a function's one value: itself
                return None
            return p.Record(tuple(p.ColRef(depth, c.index, c.type) for c in columns),
                            tuple(c.name for c in columns), coerce.RECORD)
        return None

    def _row_expr(self, n: dict) -> p.Record:
        """`ROW(a, b)` or `(a, b)`: fields f1, f2, … (an untyped literal is text, as in
        PostgreSQL's row of unknowns)."""
        fields = tuple(coerce.to_type(e, coerce.TEXT) if e.type == coerce.UNKNOWN else e
                       for e in (self.expr(a) for a in n.get("args") or ()))
        return p.Record(fields, tuple(f"f{i + 1}" for i in range(len(fields))), coerce.RECORD)


def check_arguments(name: str, args: list[p.Expr], where: int | None) -> None:
    """A row value passed to a function that does not take one is not covered yet."""
    if name not in TAKERS and any(isinstance(a, p.Record) for a in args):
        raise p.NotYet(f"a row value as an argument of {name} is not covered yet", position=where)
