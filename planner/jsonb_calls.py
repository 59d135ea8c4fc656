"""jsonb's functions as Spark SQL: calls of the UDFs of `planner.jsonb_funcs`, written from
the arguments' Spark SQL and their PostgreSQL types.

Both front ends use `call` and `aggregate`: to_jsonb, jsonb_build_object/_array,
jsonb_agg and jsonb_object_agg turn a value into jsonb by its type (a text is a JSON
string, a jsonb is itself, a numeric a number), which the front end of our own knows
for every expression. The sqlglot path knows it for literals, casts, stored columns of
a query over stored tables and functions with one result type (`planner.jsonb_typed`);
it refuses the rest (0A000) rather than guess.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from planner import pg_functions
from planner.jsonb_funcs import UDF_NAMES, type_tag
from planner.types import BY_NAME, SqlType

# Calls that need their arguments' types (or a default filled in); the others are plain
# templates in the function catalog.
TYPED = frozenset(("to_jsonb", "jsonb_build_object", "jsonb_build_array", "jsonb_set"))
AGGREGATES = frozenset(("jsonb_agg", "jsonb_object_agg"))

# Set-returning functions: (UDF operation, Spark generator, output columns; None: named after
# the function, or its alias, as PostgreSQL names a function's one unnamed column).
SET_RETURNING: dict[str, tuple[str, str, tuple[str, ...] | None]] = {
    "jsonb_object_keys": ("object_keys", "explode", None),
    "jsonb_array_elements": ("array_elements", "explode", ("value",)),
    "jsonb_array_elements_text": ("array_elements_text", "explode", ("value",)),
    "jsonb_each": ("each", "inline", ("key", "value")),
    "jsonb_each_text": ("each_text", "inline", ("key", "value")),
}
# In a select list a jsonb_each row is one value, a record, sent as its text.
RECORDS = {"jsonb_each": "each_record", "jsonb_each_text": "each_text_record"}


def udf(op: str, *args: exp.Expression) -> exp.Expression:
    """A call of the UDF of `planner.jsonb_funcs.<op>`."""
    return exp.Anonymous(this=UDF_NAMES[op], expressions=list(args))


def _spark(text: str, **args: exp.Expression) -> exp.Expression:
    """Spark SQL text with `__name` placeholders replaced by `args` (copied)."""
    tree = sqlglot.parse_one(text, read="spark")

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__") \
                and node.name[2:] in args:
            return exp.Paren(this=args[node.name[2:]].copy())
        return node

    return tree.transform(fill)


_TEXT = SqlType(BY_NAME["text"])
JSONB = SqlType(BY_NAME["jsonb"])


def known(t: SqlType) -> SqlType:
    """`t`, or text for an untyped value (a NULL or a parameter with no type), as "any" takes it."""
    return SqlType(_TEXT.base, -1, t.is_array) if t.base.name not in BY_NAME else t


def value(arg: exp.Expression, t: SqlType) -> exp.Expression:
    """The jsonb text of a value of type `t` (SQL NULL stays NULL)."""
    t = known(t)
    if t.base.name == "jsonb" and not t.is_array:
        return arg
    return udf("to_jsonb", arg, exp.Literal.string(type_tag(t)))


def _key(arg: exp.Expression, t: SqlType, position: int) -> exp.Expression:
    return udf("object_key", arg, exp.Literal.string(type_tag(known(t))), exp.Literal.number(position))


def call(name: str, args: list[exp.Expression], types: list[SqlType]) -> exp.Expression:
    """A call of one of TYPED, its arguments already Spark SQL of these PostgreSQL types."""
    if name == "to_jsonb":
        return value(args[0], types[0])
    if name == "jsonb_build_object":
        if len(args) % 2:
            return pg_functions.pg_error("22023", "argument list must have even number of elements")
        keys = [_key(args[i], types[i], i + 1) for i in range(0, len(args), 2)]
        values = [value(args[i], types[i]) for i in range(1, len(args), 2)]
        return udf("build_object", exp.Array(expressions=keys), exp.Array(expressions=values))
    if name == "jsonb_build_array":
        return udf("build_array", exp.Array(expressions=[value(a, t) for a, t in zip(args, types, strict=True)]))
    if name == "jsonb_set":
        return udf("set_path", *args[:3], args[3] if len(args) > 3 else exp.true())
    raise KeyError(name)


def record(names: tuple[str, ...], fields: list[exp.Expression], types: list[SqlType]) -> exp.Expression:
    """A row value as jsonb (composite_to_jsonb): the object of its fields by name."""
    args = [x for n, f in zip(names, fields, strict=True) for x in (exp.Literal.string(n), f)]
    kinds = [x for t in types for x in (_TEXT, t)]
    return call("jsonb_build_object", args, kinds)


def aggregate(name: str, args: list[exp.Expression], types: list[SqlType]) -> exp.Expression:
    """jsonb_agg(x) / jsonb_object_agg(k, v) over a group, in the order its rows arrive."""
    fields = aggregate_fields(name, args, types)
    row = exp.Struct(expressions=[exp.alias_(exp.Paren(this=f), f"v{i}") for i, f in enumerate(fields)])
    return aggregate_of(name, _spark("collect_list(__row)", row=row), types)


def aggregate_fields(name: str, args: list[exp.Expression], types: list[SqlType]) -> list[exp.Expression]:
    """What jsonb_agg / jsonb_object_agg collect of each row: the value (jsonb_agg), or the
    key's text and the value's jsonb (jsonb_object_agg: a NULL key is object_agg's error,
    raised only for the rows collected)."""
    if name == "jsonb_agg":
        return [args[0]]
    return [_key(args[0], types[0], 0), value(args[1], types[1])]


def aggregate_of(name: str, rows: exp.Expression, types: list[SqlType]) -> exp.Expression:
    """jsonb_agg / jsonb_object_agg of `rows`, an array of structs of `aggregate_fields` (v0,
    v1) in the order to aggregate them: NULL for no rows, a NULL value as JSON null (a
    struct keeps it where collect_list would drop a bare NULL)."""
    if name == "jsonb_agg":
        t = types[0]
        values = _spark("transform(__rows, sw_e -> sw_e.v0)", rows=rows)
        return _spark("if(size(__rows) = 0, NULL, __j)", rows=rows, j=value(values, SqlType(t.base, t.typmod, True)))
    return object_agg(_spark("transform(__rows, sw_e -> named_struct('k', sw_e.v0, 'v', sw_e.v1))", rows=rows))


def object_agg(pairs: exp.Expression) -> exp.Expression:
    return udf("object_agg", pairs)


def set_returning(name: str, arg: exp.Expression, record: bool = False) -> exp.Expression:
    """The generator of a set-returning function: explode/inline of its UDF's rows; a
    jsonb_each `record` (in a select list) as one text column."""
    op, generator, _ = SET_RETURNING[name]
    if record and name in RECORDS:
        op, generator = RECORDS[name], "explode"
    inner = udf(op, arg)
    return exp.Explode(this=inner) if generator == "explode" else exp.Anonymous(this="inline", expressions=[inner])


def columns(name: str, alias: str | None) -> tuple[str, ...]:
    """The columns PostgreSQL gives a set-returning function in FROM, without a column list."""
    fixed = SET_RETURNING[name][2]
    return fixed if fixed is not None else (alias or name,)

