"""Arrays in the binder: `ARRAY[...]`, subscripts and slices, `x op ANY/ALL (array)`.

PostgreSQL's parse_expr.c (transformArrayExpr, transformAExprOpAny/All through
make_scalar_array_op) and arraysubs.c (array_subscript_transform), for sparkwire's
one-dimensional arrays: a multidimensional constructor is refused (0A000), as the
sqlglot path refuses it. `Binder` (planner.sql.bind) takes these methods from
`ArrayBinding`; they use its `expr` and `_operator`.
"""

from __future__ import annotations

from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node, node_type
from planner.pg_parse import position as _pos
from planner.pg_parse import position_of as _location
from planner.sql import coerce
from planner.sql import plan as p
from planner.types import SqlType

INDETERMINATE_DATATYPE = "42P18"
WRONG_OBJECT_TYPE = "42809"


class ArrayBinding:
    """The array expressions of `planner.sql.bind.Binder`."""

    expr: Any  # Binder.expr: a parse node → a bound expression
    _operator: Any  # Binder._operator: an operator by PostgreSQL's overload rules

    def _array_expr(self, n: dict, target: SqlType | None = None) -> p.Expr:
        """`ARRAY[...]`; with `target` (`ARRAY[...]::int[]`), each element cast to its element type."""
        nodes = n.get("elements") or []
        where = _pos(n)
        if any(node_type(e) == "A_ArrayExpr" for e in nodes):
            raise _multidimensional(where)
        elements = [self.expr(e) for e in nodes]
        if any(e.type.is_array for e in elements):
            raise _multidimensional(where)
        if target is not None:
            element = SqlType(target.base, target.typmod)
            elements = [coerce.explicit_cast(e, element) for e in elements]
        elif not elements:
            raise SqlError(INDETERMINATE_DATATYPE, "cannot determine type of empty array", position=where,
                           hint="Explicitly cast to the desired type, for example ARRAY[]::integer[].")
        else:
            types = [e.type for e in elements]
            element = coerce.common_type(types, "ARRAY")
            element = coerce.common_typmod(element, [t for t in types if t != coerce.UNKNOWN])
            elements = [coerce.to_type(e, element) for e in elements]
        if element == coerce.RECORD:
            raise SqlError(FEATURE_NOT_SUPPORTED, "arrays of row values are not supported", position=where)
        if element.base.name == "numeric" and element.typmod < 0:
            # Each element keeps the scale it was written with in PostgreSQL ({1.50,2});
            # sparkwire's numeric arrays have one scale
            raise p.NotYet("arrays of unconstrained numeric are not covered by this front end yet", where)
        return p.ArrayExpr(tuple(elements), SqlType(element.base, element.typmod, True))

    def _indirection(self, n: dict) -> p.Expr:
        """`a[i]` and `a[i:j]` (one subscript); field selection and a[i][j] are not covered yet."""
        items = n.get("indirection") or []
        if len(items) != 1 or "A_Indices" not in items[0]:
            raise p.NotYet("this form of subscript or field selection is not supported yet",
                           position=_location(n["arg"]))
        array = self.expr(n["arg"])
        if not array.type.is_array:
            if array.type == coerce.UNKNOWN or array.type.base.name in ("jsonb", "json"):
                raise p.NotYet(f"subscripts of {array.type.display()} are not supported yet",
                               position=_location(n["arg"]))
            raise SqlError("42804", f"cannot subscript type {array.type.display()} because it does not support "
                                    "subscripting", position=_location(n["arg"]))
        indices = items[0]["A_Indices"]
        if indices.get("is_slice"):
            lower, upper = (self._subscript(indices.get(k)) for k in ("lidx", "uidx"))
            return p.Slice(array, lower, upper, array.type)
        index = self._subscript(indices.get("uidx"))
        assert index is not None
        return p.Subscript(array, index, SqlType(array.type.base, array.type.typmod))

    def _subscript(self, node: Node | None) -> p.Expr | None:
        """A subscript as an integer, by an assignment cast as PostgreSQL's (`a['2']`, `a[1.6]`)."""
        if node is None:
            return None
        e = self.expr(node)
        if e.type == coerce.INTEGER:
            return e
        if not coerce.can_assign(e.type, coerce.INTEGER) or e.type.is_array:
            raise SqlError("42804", "array subscript must have type integer", position=_location(node))
        if isinstance(e, p.Literal) and e.type == coerce.UNKNOWN:
            return coerce.typed_literal(e, coerce.INTEGER)
        if isinstance(e, p.Param) and e.type == coerce.UNKNOWN:
            return p.Param(e.number, coerce.INTEGER)
        return p.Cast(e, coerce.INTEGER)

    def _array_compare(self, n: dict, op: str, every: bool, where: int | None) -> p.Expr:
        """`x op ANY (array)` / `x op ALL (array)`: the operator is chosen for x and the
        array's element type (an unknown literal array: by x's type, then read as that array)."""
        lhs, array = self.expr(n["lexpr"]), self.expr(n["rexpr"])
        if array.type != coerce.UNKNOWN and not array.type.is_array:
            raise SqlError(WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires array on right side", position=where)
        element = coerce.UNKNOWN if array.type == coerce.UNKNOWN else SqlType(array.type.base, array.type.typmod)
        probe = self._operator(op, [lhs, p.Literal(None, element)], where)
        assert isinstance(probe, p.OpCall)
        if probe.type != coerce.BOOLEAN:
            raise SqlError(WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires operator to yield boolean", position=where)
        right = probe.args[1].type
        if right.is_array:
            raise _multidimensional(where)
        array = coerce.to_type(array, SqlType(right.base, right.typmod, True))
        if p.contains(probe.args[0], p.WindowCall):
            # its value is compared inside a Spark lambda, where a window function may not stand
            raise p.NotYet("a window function compared with ANY/ALL (array) is not supported yet", position=where)
        return p.ArrayCompare(probe.op, probe.args[0], array, every, coerce.BOOLEAN)


def _multidimensional(where: int | None) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "multidimensional arrays are not supported", position=where)
