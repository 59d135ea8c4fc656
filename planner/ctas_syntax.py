"""CREATE TABLE name [(col, ...)] AS query [WITH [NO] DATA], and SELECT ... INTO name.

Apart from CREATE TABLE's own grammar: the query is parsed by the same path as any
query (handed in), and the statement becomes one `CreateTableAs`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from planner import statements as st
from planner.errors import SYNTAX_ERROR, SqlError
from planner.lexer import Scanner

ParseQuery = Callable[[str], st.Statement]
NameOf = Callable[[str], str]  # a qualified name as written → the relation's name

_WITH_DATA = re.compile(r"(?is)\s+with\s+(no\s+)?data\s*;?\s*$")


def parse_create_table_as(text: str, parse_query: ParseQuery, name_of: NameOf) -> st.CreateTableAs | None:
    """The statement, if `text` is a CREATE TABLE ... AS; None for any other CREATE TABLE."""
    s = Scanner(text)
    s.expect("create")
    s.accept("temp") or s.accept("temporary") or s.accept("unlogged")
    if not s.accept("table"):
        return None
    if_not_exists = s.accept("if", "not", "exists")
    name = name_of(s.qualified_name())
    columns: list[str] = []
    if s.accept_punct("("):
        # A column list of bare names, each followed by `,` or `)`; a column with a type is
        # an ordinary CREATE TABLE.
        while True:
            w = s.peek()
            after = s.peek(1)
            if w is None or w.kind not in ("word", "qident") or after is None or after.kind != "punct" \
                    or after.text not in (",", ")"):
                return None
            columns.append(s.ident())
            if s.next().text == ")":
                break
    if not s.accept("as"):
        return None
    body = s.rest()
    with_data = True
    m = _WITH_DATA.search(body)
    if m is not None:
        with_data = m.group(1) is None
        body = body[: m.start()]
    body = body.strip().rstrip(";").strip()
    if not body:
        raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(text) + 1)
    query = parse_query(body)
    if not isinstance(query, st.Query):
        first = Scanner(body).peek()
        raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{first.raw if first else body}"')
    if query.as_of is not None:
        raise SqlError(SYNTAX_ERROR, "CREATE TABLE AS cannot read AS OF a timestamp")
    _no_duplicates(columns)
    return st.CreateTableAs(name, query, tuple(columns), if_not_exists, with_data)


def _no_duplicates(columns: list[str]) -> None:
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise SqlError("42701", f'column "{c}" specified more than once')
        seen.add(c)


def split_select_into(s: Scanner, name_of: NameOf) -> tuple[str, str] | None:
    """`SELECT list INTO [TEMP|TEMPORARY|UNLOGGED] [TABLE] name FROM ...` → (the query without
    the INTO clause, the new table's name); None if the select has no INTO of its own. Reads
    the words the statement's scanner already has: a SELECT is not scanned twice."""
    text = s.text
    if "into" not in text.lower():
        return None
    depth = 0
    for k, w in enumerate(s.words):
        if w.kind == "punct" and w.text in "()":
            depth += 1 if w.text == "(" else -1
        elif depth == 0 and w.kind == "word" and w.text == "into":
            s.i = k + 1
            s.accept("temp") or s.accept("temporary") or s.accept("unlogged")
            s.accept("table")
            name = name_of(s.qualified_name())
            end = s.peek()
            rest = text[end.pos:] if end is not None else ""
            return f"{text[: w.pos]} {rest}", name
        elif depth == 0 and w.kind == "word" and w.text in ("from", "union", "except", "intersect"):
            return None
    return None
