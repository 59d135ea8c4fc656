"""Parsing SUBSCRIBE and the statements that deliver it: DECLARE, FETCH, CLOSE (COPY in
copy_syntax).

    SUBSCRIBE [TO] {name | (query)}
        [ENVELOPE UPSERT (KEY (k, ...)) | ENVELOPE DEBEZIUM (KEY (k, ...))
         | WITHIN TIMESTAMP ORDER BY {column | ordinal} [ASC|DESC] [NULLS FIRST|LAST], ...]
        [WITH (SNAPSHOT [= bool], PROGRESS [= bool])]
        [AS OF [AT LEAST] ts] [UP TO ts]
        [the output modifier, if it was not given before WITH]

Clauses come in that order, as in Materialize's grammar (its parser reads the one
output modifier either right after the relation or at the very end), and errors use
its wording: a second modifier is `Expected end of statement, found WITHIN`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, SqlError
from planner.lexer import Scanner


@dataclass(frozen=True)
class OrderKey:
    column: str  # a column name; for an ordinal or an expression, its text
    descending: bool = False
    nulls_first: bool | None = None  # None: PostgreSQL's default for the direction
    ordinal: int | None = None  # ORDER BY 2: output column 2 (1 is mz_diff)
    expression: bool = False  # anything but a column or an ordinal (refused when planned)

    @property
    def effective_nulls_first(self) -> bool:
        return self.descending if self.nulls_first is None else self.nulls_first


@dataclass(frozen=True)
class OutputMode:
    """How a SUBSCRIBE's updates are shaped: plain diffs, or one modifier."""

    kind: str = "diffs"  # diffs | order_by | upsert | debezium
    keys: tuple[str, ...] = ()  # ENVELOPE ... (KEY (...))
    order_by: tuple[OrderKey, ...] = ()

    @property
    def label(self) -> str:
        return {"diffs": "diffs", "order_by": "within_timestamp_order_by",
                "upsert": "envelope_upsert", "debezium": "envelope_debezium"}[self.kind]


@dataclass(frozen=True)
class Subscribe(st.Statement):
    relation: str | None  # SUBSCRIBE name
    query: exp.Expression | None  # SUBSCRIBE (query): sqlglot's tree, for the older path
    snapshot: bool = True
    progress: bool = False
    as_of: int | None = None
    as_of_at_least: bool = False
    up_to: int | None = None
    output: OutputMode = field(default_factory=OutputMode)
    text: str = ""  # the query as written (empty for SUBSCRIBE name): what planner.sql binds
    unparsed: SqlError | None = None  # why a query has no sqlglot tree (st.Query.unparsed)


@dataclass(frozen=True)
class DeclareCursor(st.Statement):
    name: str
    inner: st.Statement
    text: str


@dataclass(frozen=True)
class Fetch(st.Statement):
    cursor: str
    count: int | None  # None = ALL
    timeout: float | None = None  # seconds; None = wait for at least one row


@dataclass(frozen=True)
class CloseCursor(st.Statement):
    name: str | None  # None = ALL


@dataclass(frozen=True)
class ExplainSubscribe(st.Statement):
    inner: Subscribe


def parse_subscribe(s: Scanner, parse_statement: st.ParseStatement) -> Subscribe:
    s.expect("subscribe")
    s.accept("to")
    relation = None
    query = None
    text = ""
    unparsed = None
    if s.peek() is not None and s.peek().kind == "punct" and s.peek().text == "(":
        inner = _parenthesized_query(s, parse_statement)
        query, text, unparsed = inner.ast, inner.text, inner.unparsed
    else:
        relation = s.qualified_name().split(".")[-1]
    output = _output_modifier(s)
    options: dict[str, bool] = {}
    if s.accept("with"):
        options = _options(s)
    as_of = up_to = None
    at_least = False
    if s.accept("as", "of"):
        at_least = s.accept("at", "least")
        as_of = _timestamp(s, "AS OF")
    if s.accept("up", "to"):
        up_to = _timestamp(s, "UP TO")
    if output.kind == "diffs":
        output = _output_modifier(s)
    s.accept_punct(";")
    if not s.at_end():
        raise expected(s, "end of statement")
    return Subscribe(relation, query, options.get("snapshot", True), options.get("progress", False),
                     as_of, at_least, up_to, output, text, unparsed)


# Words Materialize's lexer reads as keywords, for naming what was found instead of what
# was expected (`found WITHIN`, but `found identifier "foo"`).
_KEYWORDS = frozenset((
    "all", "and", "as", "asc", "at", "by", "debezium", "desc", "envelope", "first", "from", "key",
    "last", "least", "nulls", "of", "order", "progress", "select", "snapshot", "subscribe", "table",
    "timestamp", "to", "up", "upsert", "where", "with", "within"))
_PUNCT_NAMES = {"(": "left parenthesis", ")": "right parenthesis", ",": "comma", ";": "semicolon",
                ".": "dot", "=": "equals sign", "*": "star", "+": "plus sign", "-": "minus sign"}


def expected(s: Scanner, what: str) -> SqlError:
    """Materialize's parser error: `Expected <what>, found <the next token>`."""
    w = s.peek()
    if w is None:
        found = "EOF"
    elif w.kind == "word":
        found = w.text.upper() if w.text in _KEYWORDS else f'identifier "{w.text}"'
    elif w.kind == "qident":
        found = f'identifier "{w.text}"'
    elif w.kind == "number":
        found = f'number "{w.text}"'
    elif w.kind == "string":
        found = f'string literal "{w.text}"'
    else:
        found = _PUNCT_NAMES.get(w.text, f'operator "{w.text}"')
    position = (w.pos if w is not None else len(s.text)) + 1
    return SqlError(SYNTAX_ERROR, f"Expected {what}, found {found}", position=position)


def parenthesized_statement(s: Scanner, parse_statement: st.ParseStatement) -> tuple[st.Statement, int]:
    """The statement between the parenthesis at the cursor and its match, and where it starts."""
    start = s.peek()
    depth = 0
    while True:
        w = s.next()
        if w.kind == "punct" and w.text == "(":
            depth += 1
        elif w.kind == "punct" and w.text == ")":
            depth -= 1
            if depth == 0:
                end = w.pos
                break
    return parse_statement(s.text[start.pos + 1:end]), start.pos


def _parenthesized_query(s: Scanner, parse_statement: st.ParseStatement) -> st.Query:
    inner, start = parenthesized_statement(s, parse_statement)
    if not isinstance(inner, st.Query):
        raise SqlError(SYNTAX_ERROR, "SUBSCRIBE needs a table, a view or a (SELECT ...) query",
                       position=start + 2)
    if inner.as_of is not None:
        raise SqlError(SYNTAX_ERROR, "AS OF belongs after the SUBSCRIBE's query, not inside it")
    return inner


def _options(s: Scanner) -> dict[str, bool]:
    s.expect_punct("(")
    out: dict[str, bool] = {}
    while True:
        w = s.peek()
        name = s.ident("option name")
        if name not in ("snapshot", "progress"):
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"unrecognized SUBSCRIBE option {name.upper()}: expected SNAPSHOT or PROGRESS",
                           position=w.pos + 1)
        if name in out:
            raise SqlError(INVALID_PARAMETER_VALUE, f"SUBSCRIBE option {name.upper()} specified more than once")
        value = True
        explicit = s.accept_punct("=")
        nxt = s.peek()
        if explicit or nxt is not None and nxt.kind in ("word", "string", "number"):
            value = _bool(s, name)
        out[name] = value
        if s.accept_punct(")"):
            return out
        s.expect_punct(",")


def _bool(s: Scanner, option: str) -> bool:
    w = s.next()
    text = w.text.lower() if w.kind in ("word", "string", "number") else ""
    if text in ("true", "on", "yes", "t", "1"):
        return True
    if text in ("false", "off", "no", "f", "0"):
        return False
    raise SqlError(INVALID_PARAMETER_VALUE,
                   f"invalid {option.upper()} option value: expected a boolean, got {w.raw}",
                   position=w.pos + 1)


def _timestamp(s: Scanner, clause: str) -> int:
    w = s.next()
    text = w.text
    if w.kind == "string":
        text = w.text.strip()
    try:
        value = int(text)
    except ValueError:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f"{clause} must be a number of milliseconds since the Unix epoch, got {w.raw}",
                       position=w.pos + 1) from None
    if value < 0:
        raise SqlError(INVALID_PARAMETER_VALUE, f"{clause} must not be negative", position=w.pos + 1)
    return value


def _output_modifier(s: Scanner) -> OutputMode:
    """ENVELOPE ... or WITHIN TIMESTAMP ORDER BY ... at the cursor; plain diffs if neither."""
    if s.accept("within", "timestamp", "order", "by"):
        keys = [_order_key(s)]
        while s.accept_punct(","):
            keys.append(_order_key(s))
        return OutputMode("order_by", order_by=tuple(keys))
    if not s.accept("envelope"):
        return OutputMode()
    if s.accept("upsert"):
        kind = "upsert"
    elif s.accept("debezium"):
        kind = "debezium"
    else:
        raise expected(s, "one of UPSERT or DEBEZIUM")
    if not s.accept_punct("("):
        raise expected(s, "left parenthesis")
    if not s.accept("key"):
        raise expected(s, "KEY")
    if not s.accept_punct("("):
        raise expected(s, "left parenthesis")
    keys: list[str] = []
    if s.accept_punct(")"):
        raise SqlError(SYNTAX_ERROR, f"ENVELOPE {kind.upper()} needs at least one KEY column")
    while True:
        w = s.peek()
        if w is None or w.kind not in ("word", "qident"):
            raise expected(s, "identifier")
        keys.append(s.ident("key column"))
        if s.accept_punct(")"):
            break
        if not s.accept_punct(","):
            raise expected(s, "one of right parenthesis or comma")
    if not s.accept_punct(")"):
        raise expected(s, "right parenthesis")
    return OutputMode(kind, keys=tuple(keys))


# What ends one WITHIN TIMESTAMP ORDER BY item: its direction, or the next clause.
_ORDER_ITEM_END = {"asc", "desc", "nulls", "with", "as", "up", "envelope", "within"}


def _order_key(s: Scanner) -> OrderKey:
    first = s.peek()
    words = []
    depth = 0
    while not s.at_end():
        w = s.peek()
        if depth == 0 and (w.kind == "punct" and w.text in (",", ";", ")")
                           or w.kind == "word" and w.text in _ORDER_ITEM_END and words):
            break
        if w.kind == "punct" and w.text == "(":
            depth += 1
        elif w.kind == "punct" and w.text == ")":
            depth -= 1
        words.append(s.next())
    if not words:
        raise expected(s, "an expression")
    end = words[-1].pos + len(words[-1].raw)
    text = s.text[first.pos:end]
    only = words[0] if len(words) == 1 else None
    descending = False
    if s.accept("desc"):
        descending = True
    else:
        s.accept("asc")
    nulls_first = None
    if s.accept("nulls"):
        if s.accept("first"):
            nulls_first = True
        elif s.accept("last"):
            nulls_first = False
        else:
            raise expected(s, "one of FIRST or LAST")
    if only is not None and only.kind in ("word", "qident"):
        return OrderKey(only.text, descending, nulls_first)
    if only is not None and only.kind == "number" and only.text.isdigit():
        return OrderKey(text, descending, nulls_first, ordinal=int(only.text))
    return OrderKey(text, descending, nulls_first, expression=True)


def parse_declare(s: Scanner, parse_statement: st.ParseStatement) -> DeclareCursor:
    s.expect("declare")
    name = s.ident("cursor name")
    s.accept("binary")
    s.accept("no", "scroll")
    s.expect("cursor")
    if s.accept("with", "hold"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR WITH HOLD is not supported")
    s.accept("without", "hold")
    s.expect("for")
    rest = s.rest()
    inner = parse_statement(rest)
    if not isinstance(inner, (st.Query, Subscribe)):
        raise SqlError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR is supported for SELECT and SUBSCRIBE")
    return DeclareCursor(name, inner, rest)


def parse_fetch(s: Scanner) -> Fetch:
    s.expect("fetch")
    s.accept("forward")
    count: int | None = 1
    w = s.peek()
    if s.accept("all"):
        count = None
    elif s.accept("next"):
        count = 1
    elif w is not None and w.kind == "number":
        s.next()
        count = int(w.text)
        if count < 0:
            raise SqlError(FEATURE_NOT_SUPPORTED, "FETCH BACKWARD is not supported")
    s.accept("from") or s.accept("in")
    name = s.ident("cursor name")
    timeout = None
    if s.accept("with"):
        s.expect_punct("(")
        opt = s.peek()
        if s.ident("option name") != "timeout":
            raise SqlError(INVALID_PARAMETER_VALUE, f"unrecognized FETCH option {opt.raw.upper()}",
                           position=opt.pos + 1)
        s.accept_punct("=")
        value = s.next()
        timeout = parse_duration(value.text, "timeout")
        s.expect_punct(")")
    s.expect_end()
    return Fetch(name, count, timeout)


def parse_duration(text: str, what: str) -> float:
    """'1s', '500ms', '2 minutes', '0' → seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec|seconds?|m|min|minutes?|h|hours?)?\s*",
                     text.lower())
    if m is None:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid {what} value "{text}": expected a duration like 1s')
    value = float(m.group(1))
    unit = (m.group(2) or "s")[:1] if m.group(2) not in ("ms", "millisecond", "milliseconds") else "ms"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def parse_close(s: Scanner) -> CloseCursor:
    s.expect("close")
    if s.accept("all"):
        s.expect_end()
        return CloseCursor(None)
    name = s.ident("cursor name")
    s.expect_end()
    return CloseCursor(name)
