"""nextval, currval, setval and lastval, called from SQL.

A sequence's values live in the server (server.sequences), not in Spark, so these run
here: in a SELECT of nothing but such calls, without FROM (`SELECT nextval('s')`, the
form ORMs and psql users write), each call evaluated left to right. Anywhere else a query
naming them is refused (0A000) rather than sent on. Their per-session state (currval,
lastval) is `Seen`, which an INSERT drawing from a sequence updates too.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pglast
from pglast import ast as pg_ast
from pglast.stream import RawStream

from planner import pg_parse
from planner import sequences as seq
from planner.errors import FEATURE_NOT_SUPPORTED, UNDEFINED_TABLE, SqlError
from planner.pg_format import quote_identifier
from planner.pg_parse import Node, node_type
from planner.sql.coerce import BIGINT, TEXT
from planner.types import SqlType
from server import sequences
from server.catalog import Catalog
from server.catalog_items import Item
from server.outcome import Rows, rows_outcome

NAMES = ("nextval", "currval", "setval", "lastval")
# Answered here too when a SELECT calls nothing else: the sequence a column draws from.
SERIAL_SEQUENCE = "pg_get_serial_sequence"
OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
_MENTIONED = re.compile(r"(?i)\b(nextval|currval|setval|lastval|pg_get_serial_sequence)\s*\(")


@dataclass(frozen=True)
class Call:
    name: str  # nextval | currval | setval | lastval
    args: tuple[object, ...]
    label: str  # the result column's name
    position: int | None


def mentions(text: str) -> bool:
    return _MENTIONED.search(text) is not None


async def answer(session, text: str, params: dict[int, object],
                 query: Callable[[str], Awaitable[Rows]]) -> Rows | None:
    """A query's rows when it is a SELECT of sequence calls alone (None: not one); 0A000 when
    it calls them anywhere else. `query` runs a query of the arguments (see `computed`)."""
    if not text or not mentions(text):
        return None
    found = calls(text, params)
    if found is not None:
        return await run(session, found)
    if called_in(text):
        form = computed_form(session.catalog, text)
        if form is None:
            raise refused()
        return await computed(session, form, query)
    return None


@dataclass(frozen=True)
class Computed:
    """A SELECT of sequence calls with computed arguments: the query of the arguments, and
    per output its function, name and number of arguments."""

    query: str
    shapes: tuple[tuple[str, str, int], ...]


def computed_form(catalog: Catalog, text: str) -> Computed | None:
    """`SELECT setval(pg_get_serial_sequence('t', 'id'), coalesce(max(id), 1), max(id) IS NOT
    NULL) FROM t` (Django's sqlsequencereset), `SELECT setval('s', (SELECT max(id) FROM t))`:
    a SELECT whose every output is a sequence call. The same SELECT with the calls' arguments
    as its outputs (pg_get_serial_sequence of constants answered here, as the query path's
    catalog function does not know sequences). None when `text` is no such SELECT."""
    if not text or not mentions(text):
        return None
    try:
        stmt = pglast.parse_sql(text)[0].stmt
    except pglast.parser.ParseError:
        return None
    if not isinstance(stmt, pg_ast.SelectStmt) or not stmt.targetList:
        return None
    shapes: list[tuple[str, str, int]] = []
    outputs = []
    for target in stmt.targetList:
        call = target.val
        name = call.funcname[-1].sval if isinstance(call, pg_ast.FuncCall) else None
        if name not in NAMES or len(call.funcname) > 2 or call.agg_star or call.over is not None:
            return None
        args = [_serial_sequence_constant(catalog, a) for a in call.args or ()]
        if any(called_in(f"SELECT {RawStream()(a)}") for a in args):
            return None
        shapes.append((name, target.name or name, len(args)))
        outputs += [pg_ast.ResTarget(val=a) for a in args]
    stmt.targetList = tuple(outputs) or (pg_ast.ResTarget(val=pg_ast.A_Const(val=pg_ast.Integer(1))),)
    return Computed(RawStream()(stmt), tuple(shapes))


async def computed(session, form: Computed, query: Callable[[str], Awaitable[Rows]]) -> Rows:
    """The query of the arguments first; then the calls, on each of its rows in turn."""
    arguments = await query(form.query)
    rows = []
    for values in arguments.table.to_pylist():
        flat, row_calls = list(values.values()), []
        for name, label, n in form.shapes:
            row_calls.append(Call(name, tuple(flat[:n]), label, None))
            flat = flat[n:]
        rows.append(tuple(await _row(session, row_calls)))
    names, types = describe_computed(form)
    return rows_outcome(names, rows, types)


def describe_computed(form: Computed) -> tuple[list[str], list[SqlType]]:
    return describe([Call(name, (), label, None) for name, label, _ in form.shapes])


def _serial_sequence_constant(catalog: Catalog, node: object) -> object:
    """`pg_get_serial_sequence('t', 'c')` of constants as the constant it is here (the query
    path's catalog function does not know sequences); any other argument as it is."""
    if (isinstance(node, pg_ast.FuncCall) and node.funcname[-1].sval == SERIAL_SEQUENCE and node.args
            and all(isinstance(a, pg_ast.A_Const) and isinstance(a.val, pg_ast.String) for a in node.args)):
        value = _serial_sequence(catalog, Call(SERIAL_SEQUENCE, tuple(a.val.sval for a in node.args), "", None))
        return pg_ast.A_Const(isnull=True) if value is None else pg_ast.A_Const(val=pg_ast.String(value))
    return node


def calls(text: str, params: dict[int, object]) -> list[Call] | None:
    """The calls of `SELECT f(…) [AS x], …` when that is all the statement is, else None."""
    if not text or not mentions(text):
        return None
    try:
        tree = pg_parse.parse_one(text)
    except SqlError:
        return None
    select = tree.get("SelectStmt")
    if select is None or set(select) - {"targetList", "limitOption", "op"}:
        return None
    out = []
    for target in select["targetList"]:
        res = target["ResTarget"]
        call = _call(res.get("val"), params, text)
        if call is None:
            return None
        args = res["val"]["FuncCall"].get("args") or ()
        where = pg_parse.leftmost_position(args[0]) if args else pg_parse.position_of(res["val"])
        out.append(Call(call[0], call[1], res.get("name") or call[0], where))
    return out


def _call(node: Node | None, params: dict[int, object], text: str) -> tuple[str, tuple] | None:
    if node is None or node_type(node) != "FuncCall":
        return None
    f = node["FuncCall"]
    parts = pg_parse.names(f["funcname"])
    if parts[-1] not in (*NAMES, SERIAL_SEQUENCE) or parts[:-1] not in ([], ["pg_catalog"]) or set(f) - {"funcname", "args", "location",
                                                                                     "funcformat"}:
        return None
    args = []
    for a in f.get("args") or ():
        value = _constant(a, params, text)
        if value is _NOT_CONSTANT:
            return None
        args.append(value)
    return parts[-1], tuple(args)


_NOT_CONSTANT = object()


def _constant(node: Node, params: dict[int, object], text: str) -> object:
    kind = node_type(node)
    if kind == "TypeCast":
        cast = node["TypeCast"]
        type_name = pg_parse.names(cast["typeName"].get("names"))[-1]
        if type_name not in ("regclass", "text", "int8", "int4", "bool"):
            return _NOT_CONSTANT
        return _constant(cast["arg"], params, text)
    if kind == "ParamRef":
        return params.get(node["ParamRef"]["number"], _NOT_CONSTANT)
    if kind != "A_Const":
        return _NOT_CONSTANT
    const = node["A_Const"]
    if const.get("isnull"):
        return None
    for key in ("sval", "boolval", "fval"):
        if key in const:
            value = const[key].get(key, False if key == "boolval" else "")
            return int(value) if key == "fval" else value
    if "ival" in const:  # read from the text: libpg_query's JSON drops a zero or negative ival
        value = pg_parse.integer_at(text, const.get("location", -1))
        return const["ival"].get("ival", 0) if value is None else value
    return _NOT_CONSTANT


def sequence_named(catalog: Catalog, text: str, position: int | None = None) -> Item:
    """The sequence a regclass text names (`'s'`, `'public.s'`, `'"S"'`)."""
    try:
        return sequences.named(catalog, seq.regclass_name(text))
    except SqlError as err:
        err.position = position
        raise


async def run(session, calls_: list[Call]) -> Rows:
    """Each call in turn (a failure leaves the values earlier calls took taken, as in
    PostgreSQL), as one row of bigints."""
    names, types = describe(calls_)
    return rows_outcome(names, [tuple(await _row(session, calls_))], types)


async def _row(session, calls_: list[Call]) -> list[object]:
    seen: sequences.Seen = session.sequences_seen
    values = session.coord.sequence_values
    txn = session.txn
    lock_held = txn is not None and txn.holds_lock
    row = []
    for call in calls_:
        args = call.args
        if call.name == SERIAL_SEQUENCE:
            row.append(_serial_sequence(session.catalog, call))
            continue
        if call.name == "lastval":
            _arity(call, 0)
            if seen.last is None or seen.last not in session.catalog.items:
                raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "lastval is not yet defined in this session")
            row.append(seen.currval[seen.last])
            continue
        if not args or args[0] is None:
            row.append(None)  # strict
            continue
        item = sequence_named(session.catalog, str(args[0]), call.position)
        if call.name == "nextval":
            _arity(call, 1)
            taken = await values.take(item, 1, txn, lock_held)
            seen.record(item, taken)
            row.append(taken[0])
        elif call.name == "currval":
            _arity(call, 1)
            if item.id not in seen.currval:
                raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE,
                               f'currval of sequence "{item.name}" is not yet defined in this session')
            row.append(seen.currval[item.id])
        else:
            if len(args) not in (2, 3):
                raise SqlError("42883", f"function setval({', '.join(['regclass'] * 1 + ['bigint'] * (len(args) - 1))}) "
                                        "does not exist")
            if any(a is None for a in args):
                row.append(None)
                continue
            value, called = int(args[1]), bool(args[2]) if len(args) == 3 else True
            spec = sequences.spec_of(item)
            if not spec.minvalue <= value <= spec.maxvalue:
                raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'setval: value {value} is out of bounds for sequence '
                                                           f'"{item.name}" ({spec.minvalue}..{spec.maxvalue})')
            await values.restart(item, seq.State(value, called), txn, lock_held)
            if called:
                seen.record(item, [value])
            row.append(value)
    return row


def describe(calls_: list[Call]) -> tuple[list[str], list[SqlType]]:
    """The columns `run` returns."""
    return [c.label for c in calls_], [TEXT if c.name == SERIAL_SEQUENCE else BIGINT for c in calls_]


def _serial_sequence(catalog: Catalog, call: Call) -> str | None:
    """pg_get_serial_sequence(table, column): `public.name` of the sequence the column
    owns (serial or identity), NULL when it owns none."""
    if len(call.args) != 2:
        _arity(call, 2)
    if any(a is None for a in call.args):
        return None
    table = catalog.get(seq.regclass_name(str(call.args[0])))
    if table is None or table.kind not in ("table", "view"):
        raise SqlError(UNDEFINED_TABLE, f'relation "{seq.regclass_name(str(call.args[0]))}" does not exist',
                       position=call.position)
    name = str(call.args[1])  # taken literally, case and all, as PostgreSQL does
    column = table.column(name)
    if column is None:
        raise SqlError("42703", f'column "{name}" of relation "{table.name}" does not exist')
    owned = sequences.owned_by(catalog, table.id, column.name)
    return f"public.{quote_identifier(owned[0].name)}" if owned else None


def _arity(call: Call, n: int) -> None:
    if len(call.args) != n:
        shown = ", ".join("unknown" for _ in call.args)
        raise SqlError("42883", f"function {call.name}({shown}) does not exist",
                       hint="No function matches the given name and argument types. "
                            "You might need to add explicit type casts.", position=call.position)


def refused() -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "nextval, currval, setval and lastval are supported in a column's "
                                           "DEFAULT, in INSERT ... VALUES, and as every output of a SELECT",
                    hint="Select the calls alone: SELECT setval('s', max(id)) FROM t.")


def called_in(text: str) -> bool:
    """Whether a statement calls one of the sequence functions anywhere."""
    if not mentions(text):
        return False
    try:
        tree = pg_parse.parse_one(text)
    except SqlError:
        return False
    return any(kind == "FuncCall" and pg_parse.names(node["funcname"])[-1] in NAMES
               for kind, node in pg_parse.walk(tree))
