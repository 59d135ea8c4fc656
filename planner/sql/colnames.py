"""The names PostgreSQL gives a query's output columns (its parser's FigureColname), from
PostgreSQL's own parse tree: the binder's, and the older (sqlglot) path's, whose own tree
cannot tell `date_part(...)` from `extract(...)` or see that `unnest(...)` was not
`explode(...)`."""

from __future__ import annotations

from planner.errors import SqlError
from planner.pg_parse import Node, names, node_type, parse_one

# SQLValueFunction's operations, named as the keyword that calls them.
_SQL_VALUE_FUNCTIONS = {
    "SVFOP_CURRENT_DATE": "current_date", "SVFOP_CURRENT_TIME": "current_time",
    "SVFOP_CURRENT_TIME_N": "current_time", "SVFOP_CURRENT_TIMESTAMP": "current_timestamp",
    "SVFOP_CURRENT_TIMESTAMP_N": "current_timestamp", "SVFOP_LOCALTIME": "localtime",
    "SVFOP_LOCALTIME_N": "localtime", "SVFOP_LOCALTIMESTAMP": "localtimestamp",
    "SVFOP_LOCALTIMESTAMP_N": "localtimestamp", "SVFOP_CURRENT_ROLE": "current_role",
    "SVFOP_CURRENT_USER": "current_user", "SVFOP_USER": "user", "SVFOP_SESSION_USER": "session_user",
    "SVFOP_CURRENT_CATALOG": "current_catalog", "SVFOP_CURRENT_SCHEMA": "current_schema",
}


def column_name(node: Node) -> str:
    """The name PostgreSQL gives an unnamed select-list column (FigureColname)."""
    name, _strength = _figure(node)
    return name or "?column?"


def _figure(node: Node | None) -> tuple[str | None, int]:
    """FigureColnameInternal: a name and how strongly the node gives it (2: a column or
    function name, 1: a type or "case", which an enclosing cast or CASE may override)."""
    if not node:
        return None, 0
    kind = node_type(node)
    n = node[kind]
    fixed = _FIXED_NAMES.get(kind)
    if fixed is not None:
        return fixed, 2
    if kind == "ColumnRef":
        fields_ = [f["String"]["sval"] for f in n["fields"] if "String" in f]
        return (fields_[-1], 2) if fields_ else (None, 0)
    if kind == "A_Indirection":  # its last field name, else its argument's
        fields_ = [i["String"]["sval"] for i in n["indirection"] if "String" in i]
        return (fields_[-1], 2) if fields_ else _figure(n["arg"])
    if kind == "FuncCall":
        return names(n["funcname"])[-1], 2
    if kind == "A_Expr":
        return ("nullif", 2) if n["kind"] == "AEXPR_NULLIF" else (None, 0)
    if kind == "TypeCast":
        name, strength = _figure(n["arg"])
        if strength <= 1:  # as the grammar spells the type: int4, float8, varchar
            return names(n["typeName"]["names"])[-1], 1
        return name, strength
    if kind == "CollateClause":
        return _figure(n["arg"])
    if kind == "CaseExpr":  # the ELSE's own name, if it has a strong one
        name, strength = _figure(n.get("defresult"))
        return (name, strength) if strength > 1 else ("case", 1)
    if kind == "MinMaxExpr":
        return ("greatest" if n.get("op") == "IS_GREATEST" else "least"), 2
    if kind == "SQLValueFunction":
        return _SQL_VALUE_FUNCTIONS.get(n.get("op", "")), 2
    if kind == "SubLink":
        link = n["subLinkType"]
        if link == "EXISTS_SUBLINK":
            return "exists", 2
        if link == "ARRAY_SUBLINK":
            return "array", 2
        if link == "EXPR_SUBLINK":
            targets = n["subselect"]["SelectStmt"].get("targetList") or []
            if targets:
                rt = targets[0]["ResTarget"]
                return rt.get("name") or column_name(rt["val"]), 2
    return None, 0


# Nodes named by what they are, whatever their arguments.
_FIXED_NAMES = {"A_ArrayExpr": "array", "RowExpr": "row", "CoalesceExpr": "coalesce", "GroupingFunc": "grouping"}


def select_list_names(text: str) -> list[str] | None:
    """The output column names of the query `text`, as PostgreSQL names them; None when
    PostgreSQL's grammar does not read it, it is not a query, or its select list has a `*`
    (whose names are the relations')."""
    try:
        node = parse_one(text)
    except SqlError:
        return None
    if node_type(node) != "SelectStmt":
        return None
    s = node["SelectStmt"]
    while s.get("op", "SETOP_NONE") != "SETOP_NONE":  # a set operation: its first query's names
        s = s["larg"]
    if s.get("valuesLists"):
        return [f"column{i + 1}" for i in range(len(s["valuesLists"][0]["List"]["items"]))]
    out = []
    for t in s.get("targetList") or ():
        rt = t["ResTarget"]
        val = rt["val"]
        if node_type(val) == "ColumnRef" and "A_Star" in val["ColumnRef"]["fields"][-1]:
            return None
        out.append(rt.get("name") or column_name(val))
    return out
