"""INSERT … SELECT, UPDATE and DELETE as the SELECT that computes their rows, built from
PostgreSQL's parse tree of the statement, so that the front end binds them as it binds a
query: PostgreSQL's names, types, operators and functions, and error positions in the
statement as written (the nodes keep their locations).

- INSERT … SELECT: the query, its columns cast to the target columns' types once bound;
- UPDATE: `SELECT <every column>, <every column's new value> FROM t [AS a] WHERE …`: the
  old rows and the new ones in one pass, the new values cast to the columns' types once bound;
  with FROM, one row per row of t however many rows of the FROM list it joins
  (`_joined_update`);
- DELETE: `SELECT <every column> FROM t [AS a] WHERE …`.

A value is converted as PostgreSQL's assignment does: a cast where PostgreSQL has an
implicit or assignment cast (or into a string column), 42804 `column "a" is of type integer
but expression is of type text` where it has none; an untyped literal takes the column's
type. The cast is to the column's type without a length (a too-long value is refused with
22001 where the row is stored, never cut). A value written as text to a type Spark cannot
read text as PostgreSQL does (bytea, arrays) is left as text: the write reads it with the
type's input function.

INSERT … VALUES is not a query: as PostgreSQL's transformInsertStmt does, each value is
assigned to its own column, row by row (`values_rel`), so `VALUES (ARRAY[1, NULL]), ('{}')`
or `('NaN'), (1.5 * 2)` for a float column take no common type across rows. VALUES with
ORDER BY, LIMIT, OFFSET or WITH is a query like any other (PostgreSQL's "general select").

Pure: parse-tree dicts in, parse-tree dicts (or plans) out. None where the statement has a
shape this does not cover (DEFAULT VALUES, UPDATE … SET (a, b) = …, a subscripted target),
which then takes the older path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner import pg_parse
from planner.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.pg_parse import Node, leftmost_position, node_type, position_of
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.scope import UNDEFINED_COLUMN
from planner.types import SqlType, lookup

DATATYPE_MISMATCH = "42804"


@dataclass(frozen=True)
class Target:
    """A column the statement writes: its name, its type, and whether the value is cast to it
    here (False: left as it comes, for the write to read text with the type's input)."""

    name: str
    type: SqlType
    cast: bool = True
    default: str | None = None  # the column's DEFAULT, as SQL text (None: NULL)
    from_sequence: bool = False  # a serial or identity column: its DEFAULT is nextval
    in_key: bool = False  # a column of the table's PRIMARY KEY


def rows_query(stmt: Node, table: str, targets: Sequence[Target]) -> tuple[Node, int | None] | None:
    """The query computing the rows of INSERT, UPDATE or DELETE `stmt` on `table`, and the
    first of its columns `cast_columns` casts to the targets once bound (None: none)."""
    match node_type(stmt):
        case "InsertStmt":
            query = insert_query(stmt)
            return (query, 0) if query is not None else None
        case "UpdateStmt":
            query = update_select(stmt, table, targets)
            # the new values
            return (_reading(query, stmt["UpdateStmt"]), len(targets)) if query is not None else None
        case "DeleteStmt":
            return _reading(delete_select(stmt, targets), stmt["DeleteStmt"]), None
    return None


def _reading(query: Node, statement: dict) -> Node:
    """`query` with the WITH list of the statement it computes (`WITH s AS (…) UPDATE …`)."""
    with_clause = statement.get("withClause")
    if with_clause is None:
        return query
    inner = query["SelectStmt"].get("withClause")
    if inner is not None:  # WITH a … INSERT INTO t WITH b … SELECT: one list, when no name is in both
        names = [c["CommonTableExpr"]["ctename"] for c in with_clause["ctes"] + inner["ctes"]]
        if len(set(names)) < len(names) or bool(inner.get("recursive")) != bool(with_clause.get("recursive")):
            raise SqlError(FEATURE_NOT_SUPPORTED, "WITH before INSERT and again in its query is not supported "
                           "when they name the same query or only one is RECURSIVE")
        with_clause = {**with_clause, "ctes": with_clause["ctes"] + inner["ctes"]}
    return {"SelectStmt": {**query["SelectStmt"], "withClause": with_clause}}


def insert_query(stmt: Node) -> Node | None:
    """INSERT's query or VALUES (a query's columns are cast to the targets by
    `cast_columns`, once bound; VALUES rows are bound by `values_rel`)."""
    query = stmt["InsertStmt"].get("selectStmt")
    if query is None or node_type(query) != "SelectStmt":
        return None
    return _reading(query, stmt["InsertStmt"])


_GENERAL = ("sortClause", "limitCount", "limitOffset", "lockingClause", "withClause")


def insert_values(stmt: Node) -> list[list[Node]] | None:
    """The rows of INSERT … VALUES, whose values are assigned one by one (`values_rel`);
    None for INSERT … SELECT and for VALUES with ORDER BY, LIMIT, OFFSET or WITH."""
    query = insert_query(stmt)
    if query is None or not query["SelectStmt"].get("valuesLists"):
        return None
    if any(query["SelectStmt"].get(k) for k in _GENERAL):
        return None
    return [item["List"]["items"] for item in query["SelectStmt"]["valuesLists"]]


def values_rel(stmt: Node, rows: list[list[Node]], targets: Sequence[Target],
               bind_value: Callable[[Node], p.Expr]) -> p.Rel:
    """INSERT … VALUES `rows` (of `stmt`) as constant rows, each value bound by `bind_value`
    and assigned to its target column (`assigned`); the write refuses a NULL or too long
    value. A column PostgreSQL's input reads from text here (arrays, bytea, `cast` False)
    whose rows differ in type is sent as text: each value in its type's output form."""
    explicit_columns = stmt["InsertStmt"].get("cols") or []
    width = len(rows[0])
    for row in rows:
        if len(row) != width:
            raise SqlError(SYNTAX_ERROR, "VALUES lists must all be the same length",
                           position=leftmost_position(row[0]))
        if len(row) > len(targets):
            raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns",
                           position=leftmost_position(row[len(targets)]))
        if len(row) < len(explicit_columns):
            raise SqlError(SYNTAX_ERROR, "INSERT has more target columns than expressions",
                           position=position_of(explicit_columns[len(row)]))
    columns = []
    for i, target in enumerate(targets[:width]):
        values = [assigned(_value(row[i], target, bind_value), target, leftmost_position(row[i])) for row in rows]
        if len({v.type for v in values}) > 1 or values[0].type == coerce.UNKNOWN:
            values = [coerce.to_type(v, coerce.TEXT) if v.type == coerce.UNKNOWN
                      else p.Cast(v, coerce.TEXT) if v.type != coerce.TEXT else v for v in values]
        columns.append(values)
    out = tuple(zip(*columns, strict=True))
    return p.Constant(out, tuple(p.Column(t.name, c[0].type) for t, c in zip(targets, columns, strict=False)))


def _value(node: Node, target: Target, bind_value: Callable[[Node], p.Expr]) -> p.Expr:
    """A VALUES item bound: DEFAULT is the column's default expression (or NULL)."""
    if node_type(node) != "SetToDefault":
        return bind_value(node)
    if target.from_sequence:
        # A row's sequence value is drawn after Spark computes the rows, for a whole column.
        raise SqlError(FEATURE_NOT_SUPPORTED, f'DEFAULT for column "{target.name}" among VALUES computed by Spark '
                       "is not supported", hint=f'Leave "{target.name}" out of the column list to take its '
                       "sequence's next value.", position=leftmost_position(node))
    return bind_value(_default(target))


def _default(target: Target) -> Node:
    """The column's DEFAULT expression as a parse node (NULL without one)."""
    if target.default is None:
        return {"A_Const": {"isnull": True}}
    text = f"SELECT {target.default}"
    default = pg_parse.with_integers(pg_parse.parse_one(text), text)
    return default["SelectStmt"]["targetList"][0]["ResTarget"]["val"]


def assigned(e: p.Expr, target: Target, position: int | None = None) -> p.Expr:
    """`e` as written to `target` by PostgreSQL's assignment rules: cast to `cast_type`
    (an untyped literal or parameter takes the type outright), 42804 where the column
    cannot take a value of e's type; a value for a column cast False left as it comes."""
    if e.type != coerce.UNKNOWN and not coerce.can_assign(e.type, target.type):
        raise _mismatch(target, e.type, position)
    to = cast_type(target)
    if to is None or e.type == to:
        return e
    if e.type == coerce.UNKNOWN:
        return coerce.to_type(e, to)
    return p.Cast(e, to)


def _mismatch(target: Target, found: SqlType, position: int | None = None) -> SqlError:
    return SqlError(DATATYPE_MISMATCH, f'column "{target.name}" is of type {target.type.display()} '
                                       f"but expression is of type {found.display()}",
                    hint="You will need to rewrite or cast the expression.", position=position)


def returning_select(stmt: Node) -> Node | None:
    """`SELECT <RETURNING list> FROM t [AS alias]` of an INSERT, UPDATE or DELETE: run over the
    rows the statement wrote (the caller reads t as those rows). None without RETURNING."""
    kind = node_type(stmt)
    body = stmt[kind]
    if not body.get("returningList"):
        return None
    return {"SelectStmt": {"targetList": body["returningList"], "fromClause": [{"RangeVar": body["relation"]}],
                           "limitOption": "LIMIT_OPTION_DEFAULT", "op": "SETOP_NONE"}}


def returning_scope(stmt: Node) -> Node | None:
    """UPDATE … FROM's RETURNING list over the table and the FROM list, as PostgreSQL names
    them there: bound only for its errors (an ambiguous `a`), since the list is computed
    from the written rows alone (`returning_select`). None for any other statement."""
    query = returning_select(stmt)
    from_items = stmt.get("UpdateStmt", {}).get("fromClause")
    if query is None or not from_items:
        return None
    body = {**query["SelectStmt"], "fromClause": [*query["SelectStmt"]["fromClause"], *from_items]}
    return _reading({"SelectStmt": body}, stmt["UpdateStmt"])


def cast_columns(rel: p.Rel, targets: Sequence[Target], first: int = 0) -> p.Rel:
    """`rel` with its columns from `first` on cast to their targets' types (`cast_type`),
    by PostgreSQL's assignment rules (42804 for a value the column cannot take); any
    column past the targets as it is (the write refuses more expressions than targets)."""
    cols = p.columns(rel)
    exprs = []
    for i, c in enumerate(cols):
        k = i - first
        target = targets[k] if 0 <= k < len(targets) else None
        to = cast_type(target) if target is not None else None
        ref = p.ColRef(0, i, c.type)
        if to is None or to == c.type:
            exprs.append(ref)
            continue
        if not coerce.can_assign(c.type, target.type):
            raise _mismatch(target, c.type)
        exprs.append(p.Cast(ref, to))
    names = tuple(c.name for c in cols)
    return p.Project(p.Map(rel, tuple(exprs), names), tuple(range(len(cols), 2 * len(cols))), names)


def cast_type(target: Target) -> SqlType | None:
    """The type a value written to `target` is cast to; None: left as it comes."""
    if not target.cast:
        return None
    t = target.type
    # char(n) and varchar(n) are stored from text: the write pads or refuses (22001) as
    # PostgreSQL's assignment does, where a cast to the bare type would cut to one character.
    if t.base.name in ("character", "character varying"):
        return SqlType(lookup("text"), -1, t.is_array)
    return t


def update_select(stmt: Node, table: str, columns: Sequence[Target]) -> Node | None:
    """The old row's columns, then the new row's, of every row UPDATE changes."""
    up = stmt["UpdateStmt"]
    relation = up["relation"]
    name = _name(relation)
    by_name = {c.name: c for c in columns}
    assigned: dict[str, Node] = {}
    for item in up.get("targetList", []):
        res = item["ResTarget"]
        if res.get("indirection") or node_type(res["val"]) == "MultiAssignRef":
            return None
        if res["name"] not in by_name:
            raise SqlError(UNDEFINED_COLUMN, f'column "{res["name"]}" of relation "{table}" does not exist',
                           position=res.get("location", -1) + 1 or None)
        target, value = by_name[res["name"]], res["val"]
        if node_type(value) == "SetToDefault":
            # a serial or identity column: its old value here, each row's next value drawn
            # when the rows are known (server.sequences.fill_columns)
            value = _column(name, target.name) if target.from_sequence else _default(target)
        assigned[res["name"]] = value
    old = [_column(name, c.name) for c in columns]
    new = [assigned.get(c.name) or _column(name, c.name) for c in columns]
    from_items = up.get("fromClause", [])
    if not from_items:
        return _select(old + new, [{"RangeVar": relation}], up.get("whereClause"))
    return _joined_update(old + new, relation, name, from_items, up.get("whereClause"), columns)


_ROW = "?sw_row"  # a name no column of ours has: the target row's number in UPDATE … FROM


def _joined_update(values: list[Node], relation: Node, name: str, from_items: list[Node], where: Node | None,
                   columns: Sequence[Target]) -> Node:
    """UPDATE t … FROM u WHERE c: every row of t that c joins to some row of u, changed once
    (by the first match, as PostgreSQL takes an arbitrary one): DISTINCT ON the table's
    PRIMARY KEY, or, without one, on each row's number in a scan of t (identical rows of a
    table without a key are each changed once)."""
    for item in from_items:
        if node_type(item) == "RangeVar" and _name(item["RangeVar"]) == name:
            raise SqlError("42712", f'table name "{name}" specified more than once',
                           position=position_of(item))
    key = [_column(name, c.name) for c in columns if c.in_key]
    target: Node = {"RangeVar": relation}
    if not key:
        bare = {k: v for k, v in relation.items() if k != "alias"}
        numbered = _select([{"ColumnRef": {"fields": [{"A_Star": {}}]}}], [{"RangeVar": bare}])
        number = {"FuncCall": {"funcname": [_string("row_number")], "over": {},
                               "funcformat": "COERCE_EXPLICIT_CALL"}}
        numbered["SelectStmt"]["targetList"].append({"ResTarget": {"name": _ROW, "val": number}})
        target = {"RangeSubselect": {"subquery": numbered, "alias": {"aliasname": name}}}
        key = [_column(name, _ROW)]
    select = _select(values, [target, *from_items], where)
    select["SelectStmt"]["distinctClause"] = key
    return select


def _name(range_var: dict) -> str:
    return range_var.get("alias", {}).get("aliasname") or range_var["relname"]


def delete_select(stmt: Node, columns: Sequence[Target]) -> Node:
    """Every column of every row DELETE removes: `DELETE … USING u WHERE c` as `WHERE EXISTS
    (SELECT FROM u WHERE c)`, so a row matching several rows of u is removed once."""
    de = stmt["DeleteStmt"]
    relation = de["relation"]
    name = relation.get("alias", {}).get("aliasname") or relation["relname"]
    where = de.get("whereClause")
    if de.get("usingClause"):
        inner = _select([{"A_Const": {"ival": {"ival": 1}}}], de["usingClause"], where)
        where = {"SubLink": {"subLinkType": "EXISTS_SUBLINK", "subselect": inner}}
    return _select([_column(name, c.name) for c in columns], [{"RangeVar": relation}], where)


def _select(values: list[Node], from_: list[Node], where: Node | None = None) -> Node:
    select: dict = {"targetList": [{"ResTarget": {"val": v}} for v in values], "fromClause": from_,
                    "limitOption": "LIMIT_OPTION_DEFAULT", "op": "SETOP_NONE"}
    if where is not None:
        select["whereClause"] = where
    return {"SelectStmt": select}


def _column(table: str, name: str) -> Node:
    return {"ColumnRef": {"fields": [_string(table), _string(name)]}}


def _string(s: str) -> Node:
    return {"String": {"sval": s}}
