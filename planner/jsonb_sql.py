"""jsonb's operators on the sqlglot path: sqlglot's nodes for `@>`, `<@`, `?`, `?|`, `?&`,
`#>`, and `-`/`||` with a jsonb operand, as the calls `planner.operators` catalogues.

The sqlglot path has no PostgreSQL types: `@>` and `<@` are taken as jsonb's (an array
written as one is refused, 0A000, rather than given Spark's array semantics), and `-` and
`||` as jsonb's only where an operand is visibly jsonb (a `::jsonb` cast, a jsonb
operator's result); other operands keep the text and number meanings they had.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from planner import jsonb, jsonb_calls, jsonb_typed, operators
from planner.codecs.text_in import decode_text
from planner.errors import SqlError
from planner.types import SqlType, column_type

_FEATURE_NOT_SUPPORTED = "0A000"

# sqlglot node -> (operator name, right operand type)
_NODES: dict[type, tuple[str, str]] = {
    exp.ArrayContainsAll: ("@>", "jsonb"),
    exp.ArrayContainedBy: ("<@", "jsonb"),
    exp.JSONBContainsTopKey: ("?", "text"),
    exp.JSONBContainsAnyTopKeys: ("?|", "text[]"),
    exp.JSONBContainsAllTopKeys: ("?&", "text[]"),
    exp.JSONBExtract: ("#>", "text[]"),
    exp.JSONBDeleteAtPath: ("#-", "text[]"),
}


def _template(name: str, right: str) -> str:
    return next(o.spark for o in operators.overloads(name) if o.left == "jsonb" and o.right == right)


def _call(name: str, right: str, args: list[exp.Expression]) -> exp.Expression:
    """The catalogued Spark SQL of `jsonb <name> <right>` with these operands."""
    text = _template(name, right)
    for i in range(len(args)):
        text = text.replace(f"{{{i}}}", f"__arg{i}__")
    tree = sqlglot.parse_one(text, read="spark")

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name.startswith("__arg") and node.name.endswith("__"):
            return exp.Paren(this=args[int(node.name[5:-2])].copy())
        return node

    return exp.Paren(this=tree.transform(fill))


def _is_array(node: exp.Expression) -> bool:
    return isinstance(node, exp.Array) or (isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.ARRAY))


def _is_jsonb(node: exp.Expression) -> bool:
    """Visibly jsonb before any rewrite: a cast to jsonb, or a jsonb operator's result."""
    node = node.unnest()
    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.JSONB)
    if isinstance(node, exp.Anonymous) and (node.name.lower() in jsonb_typed.JSONB_RESULTS
                                            or node.name in _MARKED or node.name == jsonb_typed.MARKER):
        return True  # to_jsonb(...), jsonb_set(...), ...
    return isinstance(node, (exp.JSONBExtract, exp.JSONExtract, exp.JSONBDeleteAtPath, exp.JSONBObjectAgg)) or (
        isinstance(node, (exp.DPipe, exp.Sub)) and (_is_jsonb(node.this) or _is_jsonb(node.expression)))


def _text_array(node: exp.Expression) -> exp.Expression:
    """A text[] operand: `'{a,b}'` (an array's text form) as an ARRAY of strings."""
    if isinstance(node, exp.Literal) and node.is_string:
        items = decode_text(column_type("text", is_array=True), node.this.encode())
        return exp.Array(expressions=[exp.Null() if i is None else exp.Literal.string(i) for i in items])
    return node


# `-` and `||` found to be jsonb's by `mark`, before the casts that show it are rewritten.
_MARKED = {"__sparkwire_jsonb_concat": ("||", "jsonb"), "__sparkwire_jsonb_delete": ("-", "text")}


def mark(tree: exp.Expression) -> None:
    """Outermost first, before the innermost-first rewrite: `-` and `||` with a visibly
    jsonb operand become marked calls that `rewrite` turns into the jsonb operators."""
    for node in list(tree.find_all(exp.DPipe, exp.Sub)):
        if isinstance(node, exp.DPipe) and (_is_jsonb(node.this) or _is_jsonb(node.expression)):
            name = "__sparkwire_jsonb_concat"
        elif isinstance(node, exp.Sub) and _is_jsonb(node.this):
            name = "__sparkwire_jsonb_delete"
        else:
            continue
        node.replace(exp.Anonymous(this=name, expressions=[node.this, node.expression]))
    jsonb_typed.mark(tree)


_INTEGERS = (exp.DataType.Type.INT, exp.DataType.Type.SMALLINT, exp.DataType.Type.TINYINT)


def _delete_right(node: exp.Expression) -> str:
    """Which `jsonb - x` this is, by x: an integer (a constant or a cast), a text[] (an
    array or a cast to one), else text (PostgreSQL resolves an untyped string so)."""
    node = node.unnest()
    if _is_array(node):
        return "text[]"
    number = node.this if isinstance(node, exp.Neg) else node
    if isinstance(number, exp.Literal) and not number.is_string and number.this.lstrip("-").isdigit():
        return "integer"
    if isinstance(node, exp.Cast) and node.to.this in _INTEGERS:
        return "integer"
    return "text"


def _jsonb_operand(node: exp.Expression) -> exp.Expression:
    """A jsonb operand: a string constant through jsonb's input function (22P02 if it is
    not JSON), so the UDF only ever sees jsonb's text."""
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.Literal.string(jsonb.normalize(node.this))
    return node


# jsonb functions that need no argument types (those that do: planner.jsonb_typed), by the
# planner.jsonb_funcs operation of their one argument; and the build functions' empty calls.
_ONE_ARGUMENT = {"jsonb_strip_nulls": "strip_nulls", "jsonb_pretty": "pretty"}
_EMPTY = {"jsonb_build_object": "{}", "jsonb_build_array": "[]"}
_FUNCTIONS = frozenset(_ONE_ARGUMENT) | frozenset(_EMPTY) | {"jsonb_set"}


def _function(name: str, args: list[exp.Expression]) -> exp.Expression | None:
    """The Spark SQL of a call of one of _FUNCTIONS, or None (another number of arguments:
    the allowlist has refused it, or planner.jsonb_typed writes it)."""
    if name in _EMPTY and not args:
        return exp.Literal.string(_EMPTY[name])
    if name == "jsonb_set" and len(args) in (3, 4):
        return jsonb_calls.call(name, [_jsonb_operand(args[0]), _text_array(args[1]), _jsonb_operand(args[2]),
                                       *args[3:]], [])
    if name in _ONE_ARGUMENT and len(args) == 1:
        return jsonb_calls.udf(_ONE_ARGUMENT[name], _jsonb_operand(args[0]))
    return None


def rewrite(node: exp.Expression) -> exp.Expression | None:
    """The Spark SQL of a jsonb operator node, or None if `node` is not one."""
    if isinstance(node, exp.Anonymous) and node.name in _MARKED:
        name, right = _MARKED[node.name]
        left, other = node.expressions
        right = _delete_right(other) if name == "-" else right
        other = _jsonb_operand(other) if right == "jsonb" else other
        return _call(name, right, [_jsonb_operand(left), other])
    if isinstance(node, exp.Anonymous) and node.name.lower() in _FUNCTIONS:
        return _function(node.name.lower(), list(node.expressions))
    found = _NODES.get(type(node))
    if found is None:
        return None
    name, right = found
    left, other = _jsonb_operand(node.this), node.expression
    if name in ("@>", "<@"):
        if _is_array(left) or _is_array(other):
            raise SqlError(_FEATURE_NOT_SUPPORTED, f"operator {name} is supported for jsonb only")
        other = _jsonb_operand(other)
        return _call("@>", "jsonb", [left, other] if name == "@>" else [other, left])
    if right == "text[]":
        other = _text_array(other)
    return _call(name, right, [left, other])


def _kind(node: exp.Expression, column_types: dict[str, dict[str, SqlType]]) -> str:
    """What an operand next to a jsonb column is: "jsonb", "text", "literal" or "other"."""
    node = node.unnest()
    if isinstance(node, exp.Literal) and node.is_string:
        return "literal"
    if _is_jsonb(node):
        return "jsonb"
    if isinstance(node, exp.Column):
        if node.table:
            t = column_types.get(node.table, {}).get(node.name)
        else:
            found = [cols[node.name] for cols in column_types.values() if node.name in cols]
            t = found[0] if len(found) == 1 else None
        if t is not None:
            return "jsonb" if t.display() == "jsonb" else ("text" if t.display() == "text" else "other")
    return "other"


def stored_columns(tree: exp.Expression, column_types: dict[str, dict[str, SqlType]]) -> None:
    """`-` and `||` whose operand is a stored jsonb column (known once the relations are
    resolved; `column_types` maps a relation's name or alias to its columns' types): the
    jsonb operators, as PostgreSQL resolves them (`jsonb || text` concatenates text).
    Anything else next to such a column, or a query where a subquery, view or CTE could
    make the name mean another column, is refused (0A000) rather than answered wrongly."""
    one_level = sum(1 for _ in tree.find_all(exp.Select)) == 1 and tree.find(exp.CTE) is None
    jsonb_names = {name for cols in column_types.values() for name, t in cols.items() if t.display() == "jsonb"}
    for node in list(tree.find_all(exp.DPipe, exp.Sub)):
        operands = [node.this, node.expression]
        if not any(isinstance(o.unnest(), exp.Column) and o.unnest().name in jsonb_names for o in operands):
            continue
        op = "||" if isinstance(node, exp.DPipe) else "-"
        kinds = [_kind(o, column_types) for o in operands] if one_level else ["other"]
        if one_level and not any(k == "jsonb" and isinstance(o.unnest(), exp.Column)
                                 for k, o in zip(kinds, operands, strict=True)):
            continue  # the name is another relation's non-jsonb column
        if isinstance(node, exp.DPipe) and "text" in kinds and kinds.count("jsonb") == 1:
            continue  # jsonb || text: PostgreSQL's text concatenation, as it is
        if isinstance(node, exp.DPipe) and set(kinds) <= {"jsonb", "literal"} and "jsonb" in kinds:
            node.replace(_call("||", "jsonb", [_jsonb_operand(o) for o in operands]))
        elif isinstance(node, exp.Sub) and kinds[0] == "jsonb" and _delete_right(operands[1]) != "text":
            node.replace(_call("-", _delete_right(operands[1]), operands))
        elif isinstance(node, exp.Sub) and kinds[0] == "jsonb" and kinds[1] in ("text", "literal"):
            node.replace(_call("-", "text", operands))
        else:
            raise SqlError(_FEATURE_NOT_SUPPORTED, f"operator {op} with a jsonb column is supported here "
                           "between jsonb and jsonb or text in a query of stored tables only "
                           "(or with SET sql_frontend = postgres)")
    jsonb_typed.resolve(tree, column_types)
