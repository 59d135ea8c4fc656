"""jsonb's functions on the sqlglot path: where each call's Spark SQL is written.

In two steps, because the types that to_jsonb, jsonb_build_object/_array, jsonb_agg and
jsonb_object_agg need are known at two moments: `mark` (before PostgreSQL's constructs are
rewritten) sees each argument as written - a literal, a cast, a jsonb operator, a function
with one result type - and keeps a probe of its type beside it; `resolve` (once relations
are resolved) types the stored columns among them and writes the UDF calls
(`planner.jsonb_calls`). An argument of any other kind is refused (0A000): Spark's own
typing of it is not PostgreSQL's, and a jsonb would be taken for a text.

`mark` also writes the set-returning functions: in FROM as a (LATERAL) subquery of their
generator, in a select list as a LATERAL VIEW (or the generator itself, without a FROM).
"""

from __future__ import annotations

import re

from sqlglot import exp

from planner import functions, jsonb_calls
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.jsonb_funcs import tag_type, type_tag
from planner.types import BY_NAME, SqlType, column_type

MARKER = "__sparkwire_jsonb_call"
_TYPE_SPELLING = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*(?:\(([\d\s,]*)\))?\s*((?:\[\s*\d*\s*\])*)\s*$")
# Functions whose every signature returns jsonb: their calls are visibly jsonb.
JSONB_RESULTS = frozenset(f.name for f in functions.FUNCTIONS
                          if all(o.result == "jsonb" for o in functions.overloads(f.name)))
_ANY_ARGS = frozenset(("jsonb_build_object", "jsonb_build_array", "jsonb_object_agg"))  # "any": unknown is text


def _refuse(what: str) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not supported on this path; "
                                           "SET sql_frontend = postgres supports it")


# -- step 1: mark ----------------------------------------------------------------------------

def _literal_type(node: exp.Expression) -> SqlType | str | None:
    if isinstance(node, exp.Null) or isinstance(node, exp.Literal) and node.is_string:
        return "unknown"
    if isinstance(node, exp.Boolean):
        return SqlType(BY_NAME["boolean"])
    if isinstance(node, exp.Neg):
        return _literal_type(node.this) if isinstance(node.this, exp.Literal) else None
    if isinstance(node, exp.Literal):
        text = node.this
        if text.isdigit():
            value = int(text)
            return SqlType(BY_NAME["integer" if value < 2**31 else "bigint" if value < 2**63 else "numeric"])
        return SqlType(BY_NAME["numeric"])
    return None


def _cast_type(dt: exp.DataType) -> SqlType | None:
    if dt.is_type(exp.DataType.Type.JSONB):
        return SqlType(BY_NAME["jsonb"])
    m = _TYPE_SPELLING.match(dt.sql("postgres"))
    if m is None or m.group(3).count("[") > 1:
        return None
    mods = tuple(int(x) for x in m.group(2).split(",")) if m.group(2) else ()
    try:
        return column_type(m.group(1), mods, is_array=bool(m.group(3)))
    except SqlError:
        return None


def _syntax_type(node: exp.Expression) -> SqlType | str | None:
    """An argument's PostgreSQL type as far as its syntax tells; "unknown" for an untyped
    literal; None if it cannot be told here."""
    node = node.unnest()
    found = _literal_type(node)
    if found is not None:
        return found
    if isinstance(node, exp.Cast):
        return _cast_type(node.to)
    if isinstance(node, exp.Array) and node.expressions:
        # ARRAY[...] of one type's elements (untyped ones: text), as PostgreSQL resolves it.
        kinds = {t.display() if isinstance(t, SqlType) else t for t in map(_syntax_type, node.expressions)}
        known = [t for t in map(_syntax_type, node.expressions) if isinstance(t, SqlType)]
        if kinds == {"unknown"}:
            return SqlType(BY_NAME["text"], -1, True)
        if None not in kinds and len(kinds - {"unknown"}) == 1 and not known[0].is_array:
            return SqlType(known[0].base, known[0].typmod, True)
        return None
    if isinstance(node, exp.JSONExtract):
        return SqlType(BY_NAME["json"])  # `->` on this path is compact JSON: read again as json
    if isinstance(node, (exp.JSONBExtract, exp.JSONBDeleteAtPath, exp.JSONBObjectAgg)) or (
            isinstance(node, exp.Anonymous) and (node.name in (MARKER,) or node.name.lower() in JSONB_RESULTS)):
        return SqlType(BY_NAME["jsonb"])
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, exp.Unary, exp.Case, exp.Coalesce)):
        name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        nargs = len(list(node.iter_expressions()))
        results = {f.result for f in functions.overloads(name) if f.takes(nargs)}
        if len(results) == 1:
            result = results.pop()
            base = BY_NAME.get(result.removesuffix("[]"))
            return SqlType(base, -1, result.endswith("[]")) if base is not None else None
    return None


def _probe(arg: exp.Expression) -> exp.Expression:
    """What `resolve` reads an argument's type from: the type found now, or the column."""
    found = _syntax_type(arg)
    if isinstance(found, SqlType):
        return exp.Literal.string("type:" + type_tag(found))
    if found == "unknown":
        return exp.Literal.string("unknown")
    inner = arg.unnest()
    return inner.copy() if isinstance(inner, exp.Column) else exp.Literal.string("?")


def _marker(name: str, args: list[exp.Expression], probes: list[exp.Expression]) -> exp.Expression:
    return exp.Anonymous(this=MARKER, expressions=[exp.Literal.string(name), *probes, *args])


def mark(tree: exp.Expression) -> None:
    """Step 1, before the rewrite of PostgreSQL's constructs: set-returning functions
    written, typed calls marked with their arguments' type probes."""
    _from_items(tree)
    _select_lists(tree)
    for node in tree.find_all(exp.Anonymous):
        if _srf_name(node) is not None:  # in WHERE, GROUP BY, a join condition, ...
            raise SqlError(FEATURE_NOT_SUPPORTED, f"set-returning function {_srf_name(node)} is not allowed here",
                           hint="Call it in a select list or in FROM.")
    for node in list(tree.find_all(exp.Anonymous, exp.JSONBObjectAgg)):
        if isinstance(node, exp.JSONBObjectAgg):
            name, args = "jsonb_object_agg", [node.this, node.expression]
        else:
            name, args = node.name.lower(), list(node.expressions)
        if name not in jsonb_calls.TYPED | jsonb_calls.AGGREGATES or name == "jsonb_set" or not args:
            continue
        if any(isinstance(a, exp.Variadic) for a in args):
            raise _refuse(f"{name}(VARIADIC ...)")
        if name == "jsonb_agg":
            arg = args[0]
            if isinstance(arg, exp.Distinct):
                raise _refuse("jsonb_agg(DISTINCT ...)")
            value = arg.this if isinstance(arg, exp.Order) else arg
            # array_agg's rewrite keeps NULLs and the ORDER BY; the array becomes jsonb in `resolve`.
            node.replace(_marker(name, [exp.ArrayAgg(this=arg)], [_probe(value)]))
            continue
        node.replace(_marker(name, args, [_probe(a) for a in args]))


def _srf_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous) and node.name.lower() in jsonb_calls.SET_RETURNING:
        return node.name.lower()
    return None


def _from_items(tree: exp.Expression) -> None:
    """A set-returning function in FROM: the first FROM item as a subquery of its generator;
    a later one as a LATERAL VIEW (OUTER for `LEFT JOIN LATERAL ... ON true`), since
    PostgreSQL lets a function's arguments name the items before it."""
    for select in list(tree.find_all(exp.Select)):
        source = select.args.get("from_")
        if source is not None and _srf_name(source.this.this if isinstance(source.this, exp.Table) else None):
            source.this.replace(_first_item(source.this))
        joins = select.args.get("joins") or []
        found = [i for i, j in enumerate(joins) if isinstance(j.this, (exp.Table, exp.Lateral))
                 and _srf_name(j.this.this) is not None]
        if not found:
            continue
        if found != list(range(found[0], len(joins))):
            raise _refuse("a set-returning function in FROM before other joined items")
        for join in joins[found[0]:]:
            outer = join.side.upper() == "LEFT"
            on = join.args.get("on")
            if join.side.upper() not in ("", "LEFT") or join.args.get("using") or (
                    on is not None and not (isinstance(on, exp.Boolean) and on.this)) or (outer and on is None):
                raise _refuse("this join with a set-returning function")
            item = join.this
            name, cols, alias, arg = _item_parts(item)
            generator = jsonb_calls.set_returning(name, arg)
            select.append("laterals", exp.Lateral(this=generator, view=True, outer=outer, alias=exp.TableAlias(
                this=exp.to_identifier(alias), columns=[exp.to_identifier(c) for c in cols])))
        select.set("joins", joins[:found[0]] or None)


def _item_parts(item: exp.Expression) -> tuple[str, tuple[str, ...], str, exp.Expression]:
    """(function, its columns, the FROM item's name, the argument) of a function in FROM."""
    call = item.this
    name = _srf_name(call)
    if len(call.expressions) != 1:
        raise SqlError("42883", f"function {name} with these arguments does not exist")
    alias = item.args.get("alias")
    given = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
    alias_name = alias.name if alias is not None and alias.name else None
    cols = jsonb_calls.columns(name, alias_name)
    if len(given) > len(cols):
        raise SqlError("42P10", f'table "{alias_name or name}" has {len(cols)} columns available but '
                                f"{len(given)} columns specified")
    return name, tuple(given) + cols[len(given):], alias_name or name, call.expressions[0]


def _first_item(table: exp.Table) -> exp.Expression:
    """The first FROM item as a subquery: the generator's column, or a row's fields."""
    name, cols, alias, arg = _item_parts(table)
    generator = jsonb_calls.set_returning(name, arg)
    if len(cols) == 1:
        select = exp.select(exp.alias_(generator, exp.to_identifier(cols[0])))
    else:  # inline's columns are unnamed to sqlglot: read each field of exploded rows
        rows = exp.Subquery(this=exp.select(exp.alias_(exp.Explode(this=generator.expressions[0]), "__r")),
                            alias=exp.TableAlias(this=exp.to_identifier("__x")))
        fields = [exp.alias_(exp.Dot(this=exp.column("__r", "__x"), expression=exp.to_identifier(f)),
                             exp.to_identifier(c)) for f, c in zip(("key", "value"), cols, strict=True)]
        select = exp.select(*fields).from_(rows)
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias)))


def _in_select(node: exp.Expression, select: exp.Select) -> bool:
    return node.find_ancestor(exp.Select) is select


def _select_lists(tree: exp.Expression) -> None:
    """A set-returning function in a select list: one row per element, and none for an
    empty or NULL document, as PostgreSQL runs it there."""
    for k, select in enumerate(list(tree.find_all(exp.Select))):
        calls = [n for e in select.expressions for n in e.find_all(exp.Anonymous)
                 if _srf_name(n) is not None and _in_select(n, select)]
        if not calls:
            continue
        name = _srf_name(calls[0])
        others = [n for e in select.expressions for n in e.find_all(exp.Explode, exp.Unnest, exp.Posexplode)
                  if _in_select(n, select)]
        if len(calls) > 1 or others or select.args.get("laterals"):
            raise _refuse("more than one set-returning function in a select list")
        aggregated = select.args.get("group") is not None or any(
            _in_select(a, select) for e in select.expressions for a in e.find_all(exp.AggFunc))
        if aggregated:
            raise _refuse(f"{name} in the select list of an aggregating query")
        call = calls[0]
        if len(call.expressions) != 1:
            continue
        generator = jsonb_calls.set_returning(name, call.expressions[0], record=True)
        if select.args.get("from_") is None:
            if not any(e.unalias() is call for e in select.expressions):
                raise _refuse(f"{name} inside an expression without a FROM clause")
            call.replace(generator)
            continue
        view = f"__jsonb_srf{k}"
        select.append("laterals", exp.Lateral(this=generator, view=True, alias=exp.TableAlias(
            this=exp.to_identifier(view), columns=[exp.to_identifier("value")])))
        call.replace(exp.column("value", view))


# -- step 2: resolve -------------------------------------------------------------------------

def _column_type(column: exp.Column, column_types: dict[str, dict[str, SqlType]],
                 one_level: bool) -> SqlType | None:
    if not one_level:
        return None
    if column.table:
        found = [column_types.get(column.table, {}).get(column.name)]
    else:
        found = [cols[column.name] for cols in column_types.values() if column.name in cols]
    return found[0] if len(found) == 1 else None


def _probe_type(name: str, probe: exp.Expression, column_types: dict[str, dict[str, SqlType]],
                one_level: bool) -> SqlType:
    if isinstance(probe, exp.Literal) and probe.this.startswith("type:"):
        return tag_type(probe.this[len("type:"):])
    if isinstance(probe, exp.Literal) and probe.this == "unknown":
        if name in _ANY_ARGS:
            return SqlType(BY_NAME["text"])
        raise SqlError("42804", "could not determine polymorphic type because input has type unknown")
    if isinstance(probe, exp.Column):
        found = _column_type(probe, column_types, one_level)
        if found is not None:
            return found
    raise _refuse(f"{name} of this expression")


def resolve(tree: exp.Expression, column_types: dict[str, dict[str, SqlType]]) -> None:
    """Step 2, once relations are resolved (`column_types`: a relation's name or alias in the
    query → its columns' types): every marked call as its UDF calls."""
    one_level = sum(1 for _ in tree.find_all(exp.Select)) == 1 and tree.find(exp.CTE) is None
    for node in reversed(list(tree.find_all(exp.Anonymous))):  # inner calls first
        if node.name != MARKER:
            continue
        name = node.expressions[0].this
        rest = node.expressions[1:]
        n = 1 if name == "jsonb_agg" else len(rest) // 2
        types = [_probe_type(name, p, column_types, one_level) for p in rest[:n]]
        args = rest[n:]
        if name in jsonb_calls.AGGREGATES:
            if name == "jsonb_agg":
                t = types[0]
                replacement = jsonb_calls.value(args[0], SqlType(t.base, t.typmod, True))
            else:
                replacement = jsonb_calls.aggregate(name, args, types)
        else:
            replacement = jsonb_calls.call(name, args, types)
        node.replace(replacement)
