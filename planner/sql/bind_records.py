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

from planner.errors import (
    DATATYPE_MISMATCH,
    FEATURE_NOT_SUPPORTED,
    SYNTAX_ERROR,
    SqlError,
)
from planner.pg_parse import position as _pos
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.scope import ScopeColumn

# The functions that take a row value as an argument.
TAKERS = frozenset(("to_json", "row_to_json", "to_jsonb", "json_agg", "jsonb_agg", "json_build_object",
                    "jsonb_build_object", "json_build_array", "jsonb_build_array",
                    "concat", "concat_ws"))  # these two: its text (planner.sql.spark_records)


def order_fields(value: p.Expr, sort: dict) -> tuple[p.Expr, ...] | None:
    """The fields an ORDER BY item (`sort`) of row value `value` sorts by, in turn, each
    with the item's direction and the NULL order record_cmp gives a field (NULL above any
    value); None for a value that is not a row."""
    if not isinstance(value, p.Record):
        return None
    if sort.get("sortby_nulls", "SORTBY_NULLS_DEFAULT") != "SORTBY_NULLS_DEFAULT":
        raise p.NotYet("ORDER BY a row value with NULLS FIRST or LAST is not covered yet")
    if any(isinstance(f, p.Record) for f in value.fields):
        raise p.NotYet("ORDER BY a row value holding a row value is not covered yet")
    return value.fields


class RecordBinding:
    """Whole-row references and ROW constructors of `planner.sql.bind.Binder`."""

    expr: Any  # Binder.expr: a parse node → a bound expression
    _operator: Any  # Binder._operator: an operator's name and arguments → a bound call
    _distinct_from: Any  # Binder._distinct_from
    _levels: list[Any]  # Binder._levels: each with its .scope

    @staticmethod
    def _record_order(key: p.SortKey, value: p.Expr, sort: dict, exprs: list[p.Expr],
                      hidden: list[p.Expr]) -> list[p.SortKey]:
        """ORDER BY `value` by `key`: a row value field by field, as record_cmp compares rows
        (a NULL field above any value: last ascending, first descending), each field a
        column of the select list or of `hidden` (where it joins); any other value as it is."""
        fields = order_fields(value, sort)
        if fields is None:
            return [key]
        keys = []
        for field in fields:
            if field not in exprs + hidden:
                hidden.append(field)
            keys.append(p.SortKey((exprs + hidden).index(field), key.descending, key.descending))
        return keys

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
        raw = [self.expr(a) for a in n.get("args") or ()]
        fields = tuple(coerce.to_type(e, coerce.TEXT) if e.type == coerce.UNKNOWN else e for e in raw)
        untyped = tuple(i for i, e in enumerate(raw) if e.type == coerce.UNKNOWN and isinstance(e, p.Literal))
        return p.Record(fields, tuple(f"f{i + 1}" for i in range(len(fields))), coerce.RECORD, untyped)

    def _row_compare(self, name: str, left: p.Record, right: p.Record, where: int | None) -> p.Expr:
        """`ROW(…) op ROW(…)` as PostgreSQL's make_row_comparison_op: `=` every pair equal, `<>`
        any pair unequal, and `<`, `<=`, `>`, `>=` by the first pair that differs, NULL where
        a pair with a NULL comes first."""
        if len(left.fields) != len(right.fields):
            raise SqlError(SYNTAX_ERROR, "unequal number of entries in row expressions", position=where)
        pairs = list(zip(_compared(left), _compared(right), strict=True))
        if not pairs:
            raise SqlError(FEATURE_NOT_SUPPORTED, "cannot compare rows of zero length", position=where)
        if name not in _ROW_OPERATORS:  # what PostgreSQL says, from the first pair's operator
            result = self._operator(name, list(pairs[0]), where).type
            if result != coerce.BOOLEAN:
                raise SqlError(DATATYPE_MISMATCH, "row comparison operator must yield type boolean, not type "
                                                  f"{result.display()}", position=where)
            raise SqlError(FEATURE_NOT_SUPPORTED, f"could not determine interpretation of row comparison operator "
                                               f"{name}", position=where,
                           hint="Row comparison operators must be associated with btree operator families.")
        if name in ("=", "<>"):
            tests = tuple(self._operator(name, [a, b], where) for a, b in pairs)
            kind = p.BoolKind.AND if name == "=" else p.BoolKind.OR
            return tests[0] if len(tests) == 1 else p.BoolOp(kind, tests, coerce.BOOLEAN)
        strict, other = name[0], "<" if name[0] == ">" else ">"
        true, false, null = (p.Literal(v, coerce.BOOLEAN) for v in (True, False, None))
        whens: list[tuple[p.Expr, p.Expr]] = []
        for a, b in pairs:
            either_null = p.BoolOp(p.BoolKind.OR, (p.IsNull(a, False, coerce.BOOLEAN),
                                                   p.IsNull(b, False, coerce.BOOLEAN)), coerce.BOOLEAN)
            whens += [(either_null, null), (self._operator(strict, [a, b], where), true),
                      (self._operator(other, [a, b], where), false)]
        return p.Case(tuple(whens), true if name.endswith("=") else false, coerce.BOOLEAN)

    def _rows_distinct(self, left: p.Record, right: p.Record, distinct: bool, where: int | None) -> p.Expr:
        """`ROW(…) IS [NOT] DISTINCT FROM ROW(…)`: any pair distinct (every pair not)."""
        if len(left.fields) != len(right.fields):
            raise SqlError(SYNTAX_ERROR, "unequal number of entries in row expressions", position=where)
        tests = tuple(self._distinct_from(a, b, distinct, where)
                      for a, b in zip(_compared(left), _compared(right), strict=True))
        if not tests:
            return p.Literal(not distinct, coerce.BOOLEAN)
        kind = p.BoolKind.OR if distinct else p.BoolKind.AND
        return tests[0] if len(tests) == 1 else p.BoolOp(kind, tests, coerce.BOOLEAN)


_ROW_OPERATORS = frozenset(("=", "<>", "<", "<=", ">", ">="))


def _compared(row: p.Record) -> list[p.Expr]:
    """A row's fields as a comparison takes them: its string literals still of no type."""
    return [p.Literal(f.value, coerce.UNKNOWN) if i in row.untyped and isinstance(f, p.Literal) else f
            for i, f in enumerate(row.fields)]


def record_null_test(row: p.Expr, negated: bool, where: int | None) -> p.Expr:
    """`row IS [NOT] NULL`: whether every field is NULL (every field is not). A field that is
    itself a row value is NULL only where it is one as a whole (as ExecEvalRowNullInt sees it).
    A row value that came out of a subquery is its text here, whose fields are not known."""
    if not isinstance(row, p.Record):
        raise SqlError(FEATURE_NOT_SUPPORTED, "IS NULL of a row value from a subquery is not supported",
                       position=where, hint="Test its fields instead.")
    tests: list[p.Expr] = []
    for f in row.fields:
        if isinstance(f, p.Record):
            tests.append(p.Literal(negated, coerce.BOOLEAN))
        else:  # a row value from a subquery too: its own NULL, or not
            tests.append(p.IsNull(f, negated, coerce.BOOLEAN))
    if not tests:  # ROW() has no field: every one of none is NULL, and not NULL
        return p.Literal(True, coerce.BOOLEAN)
    return tests[0] if len(tests) == 1 else p.BoolOp(p.BoolKind.AND, tuple(tests), coerce.BOOLEAN)


def check_arguments(name: str, args: list[p.Expr], where: int | None) -> None:
    """A row value passed to a function that does not take one is not covered yet."""
    if name not in TAKERS and any(isinstance(a, p.Record) for a in args):
        raise p.NotYet(f"a row value as an argument of {name} is not covered yet", position=where)
