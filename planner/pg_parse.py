"""PostgreSQL's own grammar: statement text → PostgreSQL's parse tree.

pglast wraps libpg_query, which is PostgreSQL 15's parser itself, so what it
accepts, its syntax errors and their positions are exactly PostgreSQL's. The
tree comes back as JSON (about five times faster than pglast's Python node
objects): every node is a one-key dict `{"NodeType": {field: value}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pglast import ast as pg_ast
from pglast import parser as _pg

from planner.errors import SYNTAX_ERROR, SqlError

Node = dict[str, Any]

# PostgreSQL's own guard against runaway recursion, with its SQLSTATE 54001.
STATEMENT_TOO_COMPLEX = "54001"


def parse(text: str) -> list[Node]:
    """The raw statements of `text` (each a `{"NodeType": {...}}` dict), their locations
    counted in characters of `text`, as PostgreSQL reports positions.

    Raises SqlError 42601 with PostgreSQL's message and 1-based position."""
    try:
        tree = json.loads(_pg.parse_sql_json(text))
    except _pg.ParseError as exc:
        message, cursor = exc.args[0], exc.args[1] if len(exc.args) > 1 else None
        if "stack depth limit exceeded" in message:
            raise SqlError(STATEMENT_TOO_COMPLEX, "statement too complex",
                           hint="Nest fewer expressions or subqueries.") from None
        position = _error_character(text, cursor) + 1 if cursor is not None else len(text) + 1
        raise SqlError(SYNTAX_ERROR, message, position=position) from None
    except RecursionError:
        raise SqlError(STATEMENT_TOO_COMPLEX, "statement too complex") from None
    if not text.isascii():  # libpg_query's JSON counts bytes (pglast's node objects do not)
        _relocate(tree, _characters_at_bytes(text))
    return [s["stmt"] for s in tree.get("stmts", [])]


def _characters_at_bytes(text: str) -> list[int]:
    """For each byte offset of the UTF-8 text (and its end), the character it belongs to."""
    out: list[int] = []
    for i, ch in enumerate(text):
        out.extend([i] * len(ch.encode()))
    out.append(len(text))
    return out


def _relocate(node: object, characters: list[int]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "location" and isinstance(value, int) and 0 <= value < len(characters):
                node[key] = characters[value]
            else:
                _relocate(value, characters)
    elif isinstance(node, list):
        for value in node:
            _relocate(value, characters)


def _error_character(text: str, cursor: int) -> int:
    """The character a syntax error is at. pglast hands libpg_query's cursor over less the
    extra bytes of the multibyte characters before it (a character offset made smaller
    again): the character c with c - extra_bytes_before(c) == cursor."""
    c = cursor
    for _ in range(len(text) + 1):
        at = cursor + len(text[:c].encode()) - c
        if at == c or at > len(text):
            return min(at, len(text))
        c = at
    return c


def parse_one(text: str) -> Node:
    """The one statement of `text`."""
    stmts = parse(text)
    if len(stmts) != 1:
        raise SqlError(SYNTAX_ERROR, "expected exactly one statement")
    return stmts[0]


def node_type(node: Node) -> str:
    return next(iter(node))


def walk(root: Any) -> Iterator[tuple[str, Node]]:
    """Every node under `root`, as (type, fields), parents before children.

    Iterative: a deeply nested expression must not exhaust Python's stack. A field
    that can hold only one node type (a TypeCast's `typeName`) comes unwrapped in the
    JSON: `_FIELD_TYPES` names its type."""
    stack: list[tuple[Any, str | None]] = [(root, None)]
    while stack:
        value, kind = stack.pop()
        if isinstance(value, dict):
            if kind is None and len(value) == 1:
                (key, inner), = value.items()
                if isinstance(inner, dict) and key[:1].isupper():
                    value, kind = inner, key
            if kind is not None:
                yield kind, value
                stack.extend((v, _FIELD_TYPES.get((kind, f))) for f, v in reversed(value.items()))
            else:
                stack.extend((v, None) for v in reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend((v, None) for v in reversed(value))


def _field_types() -> dict[tuple[str, str], str]:
    """(node type, field) → the one node type the field holds, from pglast's node classes."""
    out = {}
    for name in dir(pg_ast):
        slots = getattr(getattr(pg_ast, name), "__slots__", None)
        if isinstance(slots, dict):
            for field, info in slots.items():
                c_type = info.c_type
                if c_type.endswith("*") and c_type not in ("Node*", "List*", "char*", "Bitmapset*", "Expr*"):
                    out[(name, field)] = c_type[:-1]
    return out


_FIELD_TYPES = _field_types()


def position(n: dict) -> int | None:
    """A parse node's 1-based position in the text, as an error reports it (None: unknown)."""
    loc = n.get("location", -1)
    return loc + 1 if loc is not None and loc >= 0 else None


def position_of(node: Node) -> int | None:
    """The position of a node given as {kind: fields}."""
    inner = next(iter(node.values())) if isinstance(node, dict) and len(node) == 1 else node
    return position(inner) if isinstance(inner, dict) else None


def leftmost_position(node: Node) -> int | None:
    """Where an expression starts, as PostgreSQL's exprLocation reports it: the leftmost
    location in it (`'x' || 'y'` is at `'x'`, not at the operator)."""
    found: list[int] = []

    def walk(n: object) -> None:
        if isinstance(n, dict):
            loc = n.get("location")
            if isinstance(loc, int) and loc >= 0:
                found.append(loc)
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(node)
    return min(found) + 1 if found else None


# An integer constant as written, its minus signs (through parentheses) folded in.
_INTEGER = re.compile(r"([-\s(]*)([0-9]+)")


def integer_at(text: str, location: int) -> int | None:
    """The integer constant at a parse-tree location, read from the statement text:
    libpg_query's JSON leaves out an `ival` that is zero or negative (`-1` arrives as
    `{"ival": {}}`). PostgreSQL's grammar folds minus signs into the constant, through
    parentheses too (`- ( - 5 )` is the constant 5, located at the first sign)."""
    m = _INTEGER.match(text, location) if location >= 0 else None
    if m is None:
        return None
    return (-1) ** m.group(1).count("-") * int(m.group(2))


def with_integers(node: Node, text: str) -> Node:
    """`node`, parsed from `text`, with each integer constant's value written into it (in
    place), so that it can be bound as part of another statement, whose text is not the one
    its zero and negative constants would be read from (integer_at)."""
    for kind, fields in walk(node):
        if kind == "A_Const" and fields.get("ival") == {}:
            fields["ival"] = {"ival": integer_at(text, fields.get("location", -1)) or 0}
    return node


def names(items: list[Node] | None) -> list[str]:
    """A qualified name list (`[{"String": {"sval": "pg_catalog"}}, ...]`) as strings."""
    return [i["String"]["sval"] for i in items or () if "String" in i]


def scan_params(text: str) -> list[tuple[int, int]]:
    """(start, end) of every `$n` placeholder, end exclusive; strings and comments skipped."""
    try:
        tokens = _pg.scan(text)
    except _pg.ParseError:
        return []
    return [(t.start, t.end + 1) for t in tokens if t.name == "PARAM"]
