"""GROUP BY's grouping sets (ROLLUP, CUBE, GROUPING SETS) expanded, as PostgreSQL's
expand_grouping_sets does, on PostgreSQL's parse tree: each item of the clause stands for
a list of sets of expressions, and the clause for their cross product, duplicates kept.

Pure: parse-tree nodes in, lists of them out; the binder binds each expression once."""

from __future__ import annotations

import itertools

from planner.pg_parse import Node, node_type


def expand(items: list[Node]) -> list[list[Node]] | None:
    """The grouping sets of a GROUP BY clause, each a list of expression nodes (None when the
    clause has no ROLLUP, CUBE or GROUPING SETS: one set, every item)."""
    if not any(node_type(item) == "GroupingSet" for item in items):
        return None
    sets: list[list[Node]] = [[]]
    for item in items:
        sets = [left + right for left in sets for right in _sets_of(item)]
    return sets


def _sets_of(item: Node) -> list[list[Node]]:
    if node_type(item) != "GroupingSet":
        return [[item]]
    g = item["GroupingSet"]
    kind, content = g["kind"], g.get("content") or []
    if kind == "GROUPING_SET_EMPTY":
        return [[]]
    if kind == "GROUPING_SET_SIMPLE":  # a parenthesized list inside GROUPING SETS
        return [[x for c in content for x in _unit(c)]]
    units = [_unit(c) for c in content]
    if kind == "GROUPING_SET_ROLLUP":  # every prefix, longest first
        return [[x for u in units[:k] for x in u] for k in range(len(units), -1, -1)]
    if kind == "GROUPING_SET_CUBE":  # every subset
        return [[x for u, keep in zip(units, mask) if keep for x in u]
                for mask in itertools.product((True, False), repeat=len(units))]
    # GROUPING SETS (...): each one's sets, a parenthesized list (a row here) being one set
    return [s for c in content for s in ([_unit(c)] if node_type(c) == "RowExpr" else _sets_of(c))]


def _unit(node: Node) -> list[Node]:
    """One column of ROLLUP/CUBE: an expression, or a parenthesized list of them (a row)."""
    if node_type(node) == "RowExpr":
        return list(node["RowExpr"].get("args") or [])
    if node_type(node) == "GroupingSet" and node["GroupingSet"]["kind"] == "GROUPING_SET_SIMPLE":
        return list(node["GroupingSet"].get("content") or [])
    return [node]
