"""WITH RECURSIVE by PostgreSQL's rules (parse_cte.c): which WITH queries name themselves,
the order the list is bound in, where a self-reference may stand, and the column types the
non-recursive term fixes. A recursive query becomes a `plan.Recursive` whose step reads the
previous iteration's rows as a `plan.RecursiveRef`."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.pg_parse import Node, names, node_type
from planner.pg_parse import position as _pos
from planner.pg_parse import position_of as _location
from planner.sql import coerce
from planner.sql import plan as p
from planner.types import SqlType

INVALID_RECURSION = "42P19"
DATATYPE_MISMATCH = "42804"
INVALID_COLUMN_REFERENCE = "42P10"


class _Where(Enum):
    """Where a self-reference is being looked for, and the words of PostgreSQL's error when
    one is found there (None: it may stand here)."""

    OK = None
    NON_RECURSIVE_TERM = "within its non-recursive term"
    SUBQUERY = "within a subquery"
    OUTER_JOIN = "within an outer join"
    INTERSECT = "within INTERSECT"
    EXCEPT = "within EXCEPT"


def ordered(ctes: list[dict]) -> tuple[list[dict], set[str]]:
    """A WITH RECURSIVE list's queries (CommonTableExpr fields) in an order where each comes
    after the others it names, and the names of those that name themselves."""
    all_names = {c["ctename"] for c in ctes}
    depends, recursive = {}, set()
    for c in ctes:
        named = set(_named(c["ctequery"], all_names, frozenset()))
        if c["ctename"] in named:
            recursive.add(c["ctename"])
        depends[c["ctename"]] = named - {c["ctename"]}
    items, done = list(ctes), set()
    for i in range(len(items)):  # PostgreSQL's TopologicalSort, for its error's position
        j = next((j for j in range(i, len(items)) if depends[items[j]["ctename"]] <= done), None)
        if j is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "mutual recursion between WITH items is not implemented",
                           position=_pos(items[i]))
        items[i], items[j] = items[j], items[i]
        done.add(items[i]["ctename"])
    return items, recursive


def _named(node: Any, wanted: set[str] | frozenset[str], shadowed: frozenset[str]) -> Iterator[str]:
    """The names in `wanted` that unqualified table references in `node` mean (an inner
    WITH of the same name hides one)."""
    for rv, hidden in _range_vars(node, shadowed):
        if not rv.get("schemaname") and rv["relname"] in wanted and rv["relname"] not in hidden:
            yield rv["relname"]


def _range_vars(node: Any, shadowed: frozenset[str]) -> Iterator[tuple[dict, frozenset[str]]]:
    """Every RangeVar in a raw parse tree, with the WITH names hiding outer ones there."""
    if isinstance(node, list):
        for x in node:
            yield from _range_vars(x, shadowed)
        return
    if not isinstance(node, dict):
        return
    if _wrapped(node):
        kind, fields = next(iter(node.items()))
        if kind == "RangeVar":
            yield fields, shadowed
            return
        if kind == "SelectStmt":
            yield from _stmt_range_vars(fields, shadowed)
            return
        node = fields
    for key, value in node.items():
        if key in ("larg", "rarg") and isinstance(value, dict) and not _wrapped(value):
            yield from _stmt_range_vars(value, shadowed)  # a set operation's branch
        else:
            yield from _range_vars(value, shadowed)


def _stmt_range_vars(s: dict, shadowed: frozenset[str]) -> Iterator[tuple[dict, frozenset[str]]]:
    with_clause = s.get("withClause")
    if with_clause:
        ctes = [c["CommonTableExpr"] for c in with_clause["ctes"]]
        inner = shadowed | {c["ctename"] for c in ctes} if with_clause.get("recursive") else shadowed
        for c in ctes:
            yield from _range_vars(c["ctequery"], inner)
            inner = inner | {c["ctename"]}
        shadowed = inner
    yield from _range_vars({k: v for k, v in s.items() if k != "withClause"}, shadowed)


def _wrapped(value: dict) -> bool:
    """A node given as {Kind: fields} (pglast's JSON), not a node's own fields."""
    return len(value) == 1 and next(iter(value))[:1].isupper()


@dataclass
class _Check:
    """checkWellFormedRecursion's walk over one recursive query's terms."""

    name: str
    found: int = 0
    shadowed: frozenset[str] = field(default_factory=frozenset)

    def node(self, node: Any, where: _Where) -> None:
        if isinstance(node, list):
            for x in node:
                self.node(x, where)
            return
        if not isinstance(node, dict):
            return
        if not _wrapped(node):
            for value in node.values():
                self.node(value, where)
            return
        kind, n = next(iter(node.items()))
        if kind == "RangeVar":
            self.reference(n, where)
        elif kind == "SelectStmt":
            self.stmt(n, where)
        elif kind == "JoinExpr":
            outer = _Where.OUTER_JOIN if where is _Where.OK else where
            kind = n["jointype"]
            self.node(n["larg"], outer if kind in ("JOIN_FULL", "JOIN_RIGHT") else where)
            self.node(n["rarg"], outer if kind in ("JOIN_FULL", "JOIN_LEFT") else where)
            self.node(n.get("quals"), where)
        elif kind == "SubLink":
            self.node(n.get("subselect"), _Where.SUBQUERY)
            self.node(n.get("testexpr"), where)
        else:
            self.node(n, where)

    def reference(self, rv: dict, where: _Where) -> None:
        if rv.get("schemaname") or rv["relname"] != self.name or self.name in self.shadowed:
            return
        if where.value is not None:
            raise SqlError(INVALID_RECURSION, f'recursive reference to query "{self.name}" must not appear '
                                              f"{where.value}", position=_pos(rv))
        self.found += 1
        if self.found > 1:
            raise SqlError(INVALID_RECURSION, f'recursive reference to query "{self.name}" must not appear '
                                              "more than once", position=_pos(rv))

    def stmt(self, s: dict, where: _Where) -> None:
        saved = self.shadowed
        with_clause = s.get("withClause")
        if with_clause:
            ctes = [c["CommonTableExpr"] for c in with_clause["ctes"]]
            if with_clause.get("recursive"):
                self.shadowed = self.shadowed | {c["ctename"] for c in ctes}
            for c in ctes:
                self.node(c["ctequery"], where)
                self.shadowed = self.shadowed | {c["ctename"]}
        op = s.get("op", "SETOP_NONE")
        rest = {k: v for k, v in s.items() if k not in ("withClause", "larg", "rarg")}
        if where is not _Where.OK or op in ("SETOP_NONE", "SETOP_UNION"):
            left = right = where
        elif op == "SETOP_INTERSECT":
            left = right = _Where.INTERSECT if s.get("all") else where
        else:  # EXCEPT: never in its right, in its left only under EXCEPT ALL
            left, right = (_Where.EXCEPT if s.get("all") else where), _Where.EXCEPT
        if op != "SETOP_NONE":
            self.stmt(s["larg"], left)
            self.stmt(s["rarg"], right)
        self.node(rest, where)
        self.shadowed = saved


def check_well_formed(cte: dict) -> None:
    """PostgreSQL's errors for a recursive WITH query not of the form `non-recursive term
    UNION [ALL] recursive term` with one self-reference where the iteration can see it."""
    name, s = cte["ctename"], cte["ctequery"]["SelectStmt"]
    if s.get("op", "SETOP_NONE") != "SETOP_UNION":
        raise SqlError(INVALID_RECURSION, f'recursive query "{name}" does not have the form '
                                          "non-recursive-term UNION [ALL] recursive-term", position=_pos(cte))
    _Check(name).stmt(s["larg"], _Where.NON_RECURSIVE_TERM)
    _Check(name).stmt(s["rarg"], _Where.OK)
    for key, clause in (("sortClause", "ORDER BY"), ("limitOffset", "OFFSET"), ("limitCount", "LIMIT"),
                        ("lockingClause", "FOR UPDATE/SHARE")):
        if s.get(key):
            value = s[key]
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{clause} in a recursive query is not implemented",
                           position=_location(value[0] if isinstance(value, list) else value))


_ids = itertools.count()  # a RecursiveRef's name: unique across statements, so within each


class RecursiveBinding:
    """The Binder's WITH RECURSIVE: binds the non-recursive term, then the recursive term
    with the query's name meaning the previous iteration's rows."""

    def _recursive_cte(self, cte: dict, names_here: dict[str, p.Rel]) -> p.Rel:
        check_well_formed(cte)
        name, s = cte["ctename"], cte["ctequery"]["SelectStmt"]
        base = self._select(s["larg"], set_branch=True)
        base_cols = p.columns(base)
        aliases = names(cte.get("aliascolnames"))
        if len(aliases) > len(base_cols):
            raise SqlError(INVALID_COLUMN_REFERENCE, f'WITH query "{name}" has {len(base_cols)} columns available '
                                                     f"but {len(aliases)} columns specified", position=_pos(cte))
        # PostgreSQL's analyzeCTETargetList: an unknown column of the non-recursive term is text
        types = [coerce.TEXT if c.type == coerce.UNKNOWN else c.type for c in base_cols]
        cols = tuple(p.Column(aliases[i] if i < len(aliases) else c.name, t)
                     for i, (c, t) in enumerate(zip(base_cols, types, strict=True)))
        ref = p.RecursiveRef(f"r{next(_ids)}", cols)
        names_here[name] = ref
        try:
            step = self._select(s["rarg"], set_branch=True)
        finally:
            del names_here[name]
        step_cols = p.columns(step)
        if len(step_cols) != len(cols):
            raise SqlError(SYNTAX_ERROR, "each UNION query must have the same number of columns")
        for i, (b, r, t) in enumerate(zip(base_cols, step_cols, types, strict=True)):
            overall = _union_type(b.type, r.type)
            if overall != t:
                raise SqlError(DATATYPE_MISMATCH, f'recursive query "{name}" column {i + 1} has type {t.display()} '
                                                  f"in non-recursive term but type {overall.display()} overall",
                               hint="Cast the output of the non-recursive term to the correct type.",
                               position=_target_position(s["larg"], i))
            if t.base.name == "numeric" and t.typmod < 0 and (
                    r.type.display_scale != t.display_scale or r.type.per_value_scale != t.per_value_scale):
                raise SqlError(FEATURE_NOT_SUPPORTED, f'column {i + 1} of recursive query "{name}" is a numeric '
                                                      "whose digits after the point change between iterations",
                               hint="Cast it to a numeric with a scale, such as numeric(20, 4).")
        rel = p.Recursive(ref.name, coerce.cast_columns(base, types), coerce.cast_columns(step, types), cols,
                          distinct=not s.get("all"))
        if p.refers_outward(rel, 1):
            raise SqlError(FEATURE_NOT_SUPPORTED, f'recursive query "{name}" naming columns of an outer query '
                                                  "is not supported")
        return rel

    def _no_aggregates_of_iteration(self, s: dict, aggregates: list[p.AggCall]) -> None:
        """PostgreSQL refuses aggregates in a SELECT whose own FROM (not a subquery in it)
        names a recursive query's previous iteration."""
        if aggregates and any(isinstance(self._cte(rv["relname"]), p.RecursiveRef)
                              for rv in _from_range_vars(s.get("fromClause") or []) if not rv.get("schemaname")):
            raise SqlError(INVALID_RECURSION, "aggregate functions are not allowed in a recursive query's "
                                              "recursive term")


def _from_range_vars(items: list[Node]) -> Iterator[dict]:
    for item in items:
        kind = node_type(item)
        if kind == "RangeVar":
            yield item["RangeVar"]
        elif kind == "JoinExpr":
            yield from _from_range_vars([item["JoinExpr"]["larg"], item["JoinExpr"]["rarg"]])


def _union_type(left: SqlType, right: SqlType) -> SqlType:
    """The type of a UNION's column (transformSetOperationTree): the common type, with the
    typmod only where both sides have the same type and typmod."""
    common = coerce.common_type([left, right], "UNION")
    keep = left == right and left.typmod == right.typmod
    return common if keep or common.typmod < 0 else replace(common, typmod=-1)


def _target_position(s: dict, i: int) -> int | None:
    """Where the non-recursive term's i-th output is written (its leftmost SELECT's)."""
    while s.get("op", "SETOP_NONE") != "SETOP_NONE":
        s = s["larg"]
    targets = s.get("targetList") or []
    if i < len(targets):
        return _location(targets[i]["ResTarget"]["val"])
    return None
