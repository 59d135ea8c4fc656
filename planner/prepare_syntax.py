"""PREPARE name [(type, ...)] AS statement and EXECUTE name [(arg, ...)].

The prepared statement is parsed once, here, by the same parser as any other statement
(handed in, so that this module need not import the parser that dispatches to it).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from planner import statements as st
from planner.errors import SYNTAX_ERROR, SqlError
from planner.lexer import Scanner
from planner.types import SqlType

# The statements PostgreSQL lets PREPARE take (MERGE aside).
PREPARABLE = (st.Query, st.Insert, st.Update, st.Delete)


def parse_prepare(s: Scanner, parse_statement: st.ParseStatement,
                  type_of: Callable[[exp.DataType], SqlType]) -> st.Prepare:
    s.expect("prepare")
    name = s.ident("prepared statement name")
    types: tuple[SqlType, ...] = ()
    if s.accept_punct("("):
        types = tuple(type_of(t) for t in _type_list(s))
    s.expect("as")
    first = s.peek()
    if first is None:
        raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(s.text) + 1)
    text = s.rest().strip().rstrip(";").strip()
    inner = parse_statement(text)
    if not isinstance(inner, PREPARABLE):
        raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{first.raw}"', position=first.pos + 1)
    return st.Prepare(name, types, inner, text, s.text.strip().rstrip(";").strip())


def _type_list(s: Scanner) -> list[exp.DataType]:
    """The declared types up to the closing parenthesis: each spelled as PostgreSQL spells
    types (`double precision`, `varchar(5)`, `int[]`), commas inside a type's own
    parentheses not splitting it."""
    pieces, depth, start = [], 0, None
    while True:
        w = s.peek()
        if w is None:
            raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(s.text) + 1)
        if start is None:
            start = w.pos
        if w.kind == "punct" and w.text == "(":
            depth += 1
        elif w.kind == "punct" and w.text in (",", ")") and depth == 0:
            spelled = s.text[start:w.pos].strip()
            if not spelled:
                raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)
            pieces.append(_data_type(spelled, start))
            s.next()
            start = None
            if w.text == ")":
                return pieces
            continue
        elif w.kind == "punct" and w.text == ")":
            depth -= 1
        s.next()


def _data_type(spelled: str, pos: int) -> exp.DataType:
    try:
        return exp.DataType.build(spelled, dialect="postgres")
    except (ParseError, TokenError, ValueError):
        # An unknown name: PostgreSQL's 42704, as for a cast to it.
        raise SqlError("42704", f'type "{spelled.lower()}" does not exist', position=pos + 1) from None


def parse_execute(s: Scanner, parse_sql: Callable[[str], exp.Expression]) -> st.Execute:
    s.expect("execute")
    name = s.ident("prepared statement name")
    args: tuple[exp.Expression, ...] = ()
    if s.accept_punct("("):
        w = s.peek()
        start = w.pos if w is not None else len(s.text)
        text = s.text[start:].strip().rstrip(";").strip()
        if not text.endswith(")"):
            raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(s.text) + 1)
        args = _arguments(parse_sql(f"SELECT {text[:-1]}"))
        return st.Execute(name, args)
    s.expect_end()
    return st.Execute(name, args)


def _arguments(tree: exp.Expression) -> tuple[exp.Expression, ...]:
    """The arguments, read as a select list (through the parser's checks, deny by default
    included): each one expression."""
    if not isinstance(tree, exp.Select) or any(
            tree.args.get(k) for k in ("from", "from_", "where", "group", "having", "order", "limit")):
        raise SqlError(SYNTAX_ERROR, "syntax error in EXECUTE arguments")
    for e in tree.expressions:
        if isinstance(e, exp.Alias):
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{e.alias}"')
        if e.find(exp.Select) is not None:
            raise SqlError("0A000", "cannot use subquery in EXECUTE parameter")
    return tuple(tree.expressions)

