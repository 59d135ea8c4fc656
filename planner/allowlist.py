"""Deny by default: a statement may name only what our catalogs list.

Every function, operator and type a statement names is looked up in the
function and operator catalogs (`planner.functions`, `planner.operators`) and
the type registry before anything reaches Spark; a name that is not there gets
PostgreSQL's own error (42883 `function f(integer) does not exist`, 42704
`type "t" does not exist`). A function in FROM must be a catalogued table
function. Relations are checked when the coordinator resolves each name
against its catalog (42P01). PostgreSQL syntax that sparkwire does not carry out
(TABLESAMPLE, FOR UPDATE, XMLTABLE, ...) and Spark's own DDL clauses are 0A000.

The check reads PostgreSQL's own parse tree (`planner.pg_parse`), so it sees
exactly the names PostgreSQL would resolve - `trim(x)` is `btrim`, `x LIKE y`
the operator `~~` - whatever sqlglot later makes of the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from planner import functions, operators, pg_parse
from planner.errors import (
    FEATURE_NOT_SUPPORTED,
    SYNTAX_ERROR,
    UNDEFINED_FUNCTION,
    UNDEFINED_OBJECT,
    SqlError,
)
from planner.pg_parse import Node
from planner.sequences import SERIALS
from planner.types import lookup

# Schemas a function may be qualified with.
_FUNCTION_SCHEMAS = ("pg_catalog", "information_schema")

# Types that exist for the system catalogs' sake, beyond the column types of planner.types.
_CATALOG_TYPES = frozenset((
    "oid", "regclass", "regtype", "regnamespace", "regproc", "regprocedure", "regrole", "name",
    "char", "xid", "int2vector", "oidvector", "aclitem", "pg_node_tree", "_oid", "_text", "_int2",
    "_int4", "_int8", "_name", "_char", "_float4", "_float8", "_bool", "_varchar", "_regtype",
    "_aclitem", "anyarray", "unknown", "record", "regoper", "regoperator", "regconfig",
))

# Spellings planner.types accepts for its own use that PostgreSQL does not have.
_NOT_POSTGRES_TYPES = frozenset(("string", "double"))

# Spark's CREATE TABLE clauses: PostgreSQL's grammar stops at them with a syntax error,
# which we turn into "not supported" naming the clause (tables live in our storage only).
_SPARK_DDL_CLAUSES = frozenset((
    "LOCATION", "OPTIONS", "TBLPROPERTIES", "PARTITIONED", "CLUSTERED", "SORTED", "STORED",
    "ROW", "COMMENT", "SKEWED", "LIFECYCLE",
))

# Nodes of PostgreSQL's grammar for features sparkwire does not carry out, by what to call them.
_UNSUPPORTED_NODES = {
    "RangeTableSample": "TABLESAMPLE",
    "RangeTableFunc": "XMLTABLE",
    "XmlExpr": "XML functions",
    "XmlSerialize": "XMLSERIALIZE",
    "IntoClause": "SELECT ... INTO",
    "CurrentOfExpr": "WHERE CURRENT OF",
    "MultiAssignRef": "UPDATE ... SET (columns) = ...",
    "CTESearchClause": "WITH ... SEARCH",
    "CTECycleClause": "WITH ... CYCLE",
}

# A_Expr kinds that name their operator through `name`.
_OPERATOR_KINDS = ("AEXPR_OP", "AEXPR_OP_ANY", "AEXPR_OP_ALL", "AEXPR_LIKE", "AEXPR_ILIKE")


def check(text: str) -> None:
    """Parse `text` with PostgreSQL's grammar and refuse anything it names that our
    catalogs do not list. Raises SqlError with PostgreSQL's SQLSTATE and position."""
    try:
        statements = pg_parse.parse(text)
    except SqlError as err:
        raise _spark_clause(text, err) or err from None
    for statement in statements:
        check_tree(statement)


def check_tree(tree: Node) -> None:
    for kind, node in pg_parse.walk(tree):
        checker = _CHECKS.get(kind)
        if checker is not None:
            checker(node)
        elif kind in _UNSUPPORTED_NODES:
            raise _unsupported(_UNSUPPORTED_NODES[kind], node)


def _unsupported(what: str, node: Node) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not supported", position=_position(node))


def _position(node: Node) -> int | None:
    location = node.get("location", -1)
    return location + 1 if isinstance(location, int) and location >= 0 else None


# -- functions -----------------------------------------------------------------------------

def _function_call(node: Node, in_from: bool = False) -> None:
    parts = pg_parse.names(node.get("funcname"))
    name, schema = parts[-1], (parts[-2] if len(parts) > 1 else None)
    args = node.get("args") or []
    if node.get("agg_within_group"):  # an ordered-set aggregate takes its ORDER BY's value last
        args = [*args, *(item["SortBy"]["node"] for item in node.get("agg_order") or ())]
    if node.get("func_variadic") and name in ("jsonb_build_object", "jsonb_build_array"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{name}(VARIADIC array) is not supported; list the arguments",
                       position=_position(node))
    if schema is None or schema in _FUNCTION_SCHEMAS:
        # f(*) is f() to the lookup, as PostgreSQL's (42809 for a function that is not an aggregate)
        found = functions.lookup(name, len(args), in_from=in_from,
                                 schema=None if schema == "pg_catalog" else schema) is not None
        if found:
            return
    shown = f"{schema}.{name}" if schema is not None else name
    raise SqlError(UNDEFINED_FUNCTION, f"function {shown}({', '.join(_type_of(a) for a in args)}) does not exist",
                   hint="No function matches the given name and argument types. "
                        "You might need to add explicit type casts.",
                   position=_position(node))


def _range_function(node: Node) -> None:
    if node.get("is_rowsfrom"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "ROWS FROM (...) is not supported")
    for item in node.get("functions") or ():
        call = item["List"]["items"][0] if "List" in item else item
        if "FuncCall" not in call:
            raise SqlError(FEATURE_NOT_SUPPORTED, "only a function call can stand in FROM as a function")
        # Marked so that the walk's own visit of this FuncCall checks it as a table function.
        call["FuncCall"]["__in_from"] = True


def _func_call(node: Node) -> None:
    _function_call(node, in_from=bool(node.get("__in_from")))


# -- operators -----------------------------------------------------------------------------

def _operator(node: Node) -> None:
    kind = node.get("kind")
    if kind not in _OPERATOR_KINDS:
        return  # IN, BETWEEN, IS DISTINCT FROM, NULLIF: built from =, <= and >=
    parts = pg_parse.names(node.get("name"))
    name, schema = parts[-1], (parts[-2] if len(parts) > 1 else None)
    if name in operators.NAMES and schema in (None, "pg_catalog"):
        return
    if name in _JSONPATH_OPERATORS and schema in (None, "pg_catalog"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"operator {name} is not supported: sparkwire has no jsonpath "
                                              "(nor text search) type", position=_position(node))
    left, right = node.get("lexpr"), node.get("rexpr")
    shown = f"OPERATOR({schema}.{name})" if schema else name
    where = f"{_type_of(left)} {shown} {_type_of(right)}" if left is not None else f"{shown} {_type_of(right)}"
    raise SqlError(UNDEFINED_FUNCTION, f"operator does not exist: {where}",
                   hint="No operator matches the given name and argument types. "
                        "You might need to add explicit type casts.",
                   position=_position(node))


# jsonb's jsonpath operators (and text search's @@), which sparkwire does not have.
_JSONPATH_OPERATORS = frozenset(("@?", "@@"))


# -- types ---------------------------------------------------------------------------------

def _type_name(node: Node) -> None:
    parts = pg_parse.names(node.get("names"))
    if not parts:
        return  # %TYPE and the like are refused by the statements that allow them
    name, schema = parts[-1], (parts[-2] if len(parts) > 1 else None)
    if schema is None and name in SERIALS and not node.get("arrayBounds"):
        return  # a column's serial type (planner.table_sequences); elsewhere the binder's 42704
    if schema not in (None, "pg_catalog") or not known_type(name):
        shown = ".".join(parts)
        raise SqlError(UNDEFINED_OBJECT, f'type "{shown}" does not exist', position=_position(node))


def known_type(name: str) -> bool:
    """Whether `name` (as the grammar gives it: int4, bpchar, numeric, ...) is a type we have."""
    name = name.lower()
    if name in _NOT_POSTGRES_TYPES:
        return False
    return name in _CATALOG_TYPES or lookup(name) is not None or (
        name.startswith("_") and lookup(name[1:]) is not None)


def _type_of(node: Node | None) -> str:
    """A value's type, as PostgreSQL would name it in an error, as far as the parse tree tells."""
    if node is None:
        return "unknown"
    kind = pg_parse.node_type(node)
    inner = node[kind]
    if kind == "A_Const":
        if inner.get("isnull"):
            return "unknown"
        for key, shown in (("ival", "integer"), ("fval", "numeric"), ("boolval", "boolean"),
                           ("sval", "unknown"), ("bsval", "bit")):
            if key in inner:
                return shown
    if kind == "TypeCast":
        type_name = inner.get("typeName") or {}
        parts = pg_parse.names(type_name.get("names"))
        shown = _DISPLAY.get(parts[-1], parts[-1]) if parts else "unknown"
        return shown + ("[]" if type_name.get("arrayBounds") else "")
    if kind == "FuncCall":
        parts = pg_parse.names(inner.get("funcname"))
        results = {f.result for f in functions.overloads(parts[-1])} if parts else set()
        if len(results) == 1:
            return results.pop()
    if kind == "A_ArrayExpr":
        return "integer[]" if all("A_Const" in e and "ival" in e["A_Const"]
                                  for e in inner.get("elements") or ()) else "text[]"
    return "unknown"


_DISPLAY = {"int4": "integer", "int8": "bigint", "int2": "smallint", "float8": "double precision",
            "float4": "real", "bool": "boolean", "varchar": "character varying", "bpchar": "character",
            "timestamptz": "timestamp with time zone", "timestamp": "timestamp without time zone",
            "time": "time without time zone"}


# -- statements ----------------------------------------------------------------------------

def _create_table(node: Node) -> None:
    relation = node.get("relation") or {}
    persistence = relation.get("relpersistence")
    if persistence == "t":
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TEMPORARY TABLE is not supported",
                       hint="Tables are durable; create a table and drop it when done.")
    if persistence == "u":
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE UNLOGGED TABLE is not supported")
    for field, clause in (("accessMethod", "USING"), ("options", "WITH (storage parameters)"),
                          ("tablespacename", "TABLESPACE"), ("partspec", "PARTITION BY"),
                          ("partbound", "PARTITION OF"), ("inhRelations", "INHERITS"),
                          ("ofTypename", "OF type")):
        if node.get(field):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE TABLE ... {clause} is not supported",
                           hint="sparkwire keeps every table in its own storage.")
    if node.get("oncommit") not in (None, "ONCOMMIT_NOOP"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TABLE ... ON COMMIT is not supported")


def _create_view(node: Node) -> None:
    view = node.get("view") or {}
    if view.get("relpersistence") == "t":
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TEMPORARY VIEW is not supported",
                       hint="Create a view and drop it when done.")
    if node.get("options") or node.get("withCheckOption") not in (None, "NO_CHECK_OPTION"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE VIEW ... WITH (options) is not supported")


def _spark_clause(text: str, err: SqlError) -> SqlError | None:
    """A syntax error at one of Spark's CREATE TABLE clauses, said as what it is."""
    m = re.match(r'syntax error at or near "([A-Za-z]+)"', err.message)
    if err.sqlstate != SYNTAX_ERROR or m is None or not re.match(r"(?is)\s*create\b", text):
        return None
    word = m.group(1).upper()
    if word not in _SPARK_DDL_CLAUSES:
        return None
    return SqlError(FEATURE_NOT_SUPPORTED, f"CREATE ... {word} is not supported",
                    hint="sparkwire keeps every table in its own storage.", position=err.position)


def _common_table(node: Node) -> None:
    """A WITH list's query: INSERT, UPDATE or DELETE there (PostgreSQL's data-modifying WITH,
    which runs it once and reads its RETURNING rows) is not carried out."""
    if pg_parse.node_type(node["ctequery"]) != "SelectStmt":
        raise _unsupported("a data-modifying statement in WITH", node)


_CHECKS: dict[str, Callable[[Node], None]] = {
    "CommonTableExpr": _common_table,
    "FuncCall": _func_call,
    "RangeFunction": _range_function,
    "A_Expr": _operator,
    "TypeName": _type_name,
    "CreateStmt": _create_table,
    "ViewStmt": _create_view,
}
