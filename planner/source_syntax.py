"""Statements for sources: secrets, connections, sources, and tables fed by sources.

    CREATE SECRET [IF NOT EXISTS] name AS 'value'
    CREATE CONNECTION [IF NOT EXISTS] name TO POSTGRES (HOST 'h', PORT 5432, USER 'u',
        PASSWORD SECRET s, DATABASE 'd') [WITH (VALIDATE = bool)]
    CREATE SOURCE [IF NOT EXISTS] name FROM POSTGRES CONNECTION c (PUBLICATION 'p')
    CREATE SOURCE [IF NOT EXISTS] name FROM KAFKA CONNECTION c (TOPIC 't'
        [, START OFFSET (n, ...) | , START TIMESTAMP ms]) [table clauses]
    CREATE TABLE name [(col, ...)] FROM SOURCE s (REFERENCE [schema.]table)
        [WITH (TEXT COLUMNS (col, ...))]
    DROP {SECRET | CONNECTION | SOURCE} [IF EXISTS] name [, ...] [CASCADE]
    SHOW {SOURCES | SECRETS | CONNECTIONS}
    ALTER TABLE a SWAP WITH b
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, SqlError
from planner.lexer import Scanner


@dataclass(frozen=True)
class CreateSecret(st.Statement):
    name: str
    value: str
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateConnection(st.Statement):
    name: str
    connector: str  # postgres | kafka
    options: tuple[tuple[str, object], ...]  # (OPTION, value); SECRET refs as ("secret", name)
    validate: bool = True
    if_not_exists: bool = False

    def option(self, name: str, default: object = None) -> object:
        return dict(self.options).get(name, default)


@dataclass(frozen=True)
class CreateSource(st.Statement):
    name: str
    connector: str  # postgres | kafka
    connection: str
    options: tuple[tuple[str, object], ...]
    if_not_exists: bool = False
    rest: str = ""  # the statement text after the connection options (Kafka's formats etc.)


@dataclass(frozen=True)
class CreateTableFromSource(st.Statement):
    name: str
    columns: tuple[str, ...] | None
    source: str
    reference: str  # [schema.]table as written
    text_columns: tuple[str, ...] = ()
    if_not_exists: bool = False
    rest: str = ""


@dataclass(frozen=True)
class DropObjects(st.Statement):
    object_type: str  # SECRET | CONNECTION | SOURCE
    names: tuple[str, ...]
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class CreateRole(st.Statement):
    name: str
    password: str | None  # None: no password (the role cannot log in with one)
    alter: bool = False  # ALTER ROLE ... PASSWORD


@dataclass(frozen=True)
class SwapTables(st.Statement):
    first: str
    second: str


_CONNECTION_OPTIONS = {
    "postgres": {"host", "port", "user", "password", "database", "ssl mode"},
    "kafka": {"broker", "brokers", "security protocol", "sasl mechanisms", "sasl username",
              "sasl password", "ssl certificate authority", "ssl certificate", "ssl key", "progress topic"},
}


def _option_name(s: Scanner) -> str:
    words = [s.ident("option name")]
    while s.peek() is not None and s.peek().kind == "word" and not (
            s.peek().text in ("secret",) or _is_value_start(s)):
        words.append(s.next().text)
    return " ".join(words)


def _is_value_start(s: Scanner) -> bool:
    w = s.peek()
    return w is None or w.kind in ("string", "number", "punct")


def _option_value(s: Scanner) -> object:
    s.accept_punct("=")
    if s.accept("secret"):
        return ("secret", s.qualified_name().split(".")[-1])
    for opening, closing in (("(", ")"), ("[", "]")):
        if s.accept_punct(opening):  # a list, such as START OFFSET (0, 10) or = [0, 10]
            items: list[object] = []
            while not s.accept_punct(closing):
                if items:
                    s.expect_punct(",")
                items.append(_scalar(s))
            return tuple(items)
    return _scalar(s)


_INTEGER = re.compile(r"-?[0-9]+")


def _scalar(s: Scanner) -> object:
    w = s.next()
    if w.kind == "punct" and w.text == "-" and s.peek() is not None and s.peek().kind == "number":
        number = "-" + s.next().text
    elif w.kind == "number":
        number = w.text
    else:
        number = None
    if number is not None:
        return int(number) if _INTEGER.fullmatch(number) else number
    if w.kind in ("string", "word", "qident"):
        return w.text
    raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)


def _options(s: Scanner, allowed: set[str] | None, what: str) -> tuple[tuple[str, object], ...]:
    s.expect_punct("(")
    out: list[tuple[str, object]] = []
    seen = set()
    while True:
        w = s.peek()
        name = _option_name(s)
        if allowed is not None and name not in allowed:
            raise SqlError(INVALID_PARAMETER_VALUE, f"unrecognized {what} option {name.upper()}",
                           position=w.pos + 1)
        if name in seen:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{what} option {name.upper()} specified more than once")
        seen.add(name)
        out.append((name, _option_value(s)))
        if s.accept_punct(")"):
            return tuple(out)
        s.expect_punct(",")


def parse_create(s: Scanner) -> st.Statement | None:
    """CREATE SECRET/CONNECTION/SOURCE, or CREATE TABLE ... FROM SOURCE; None if neither."""
    start = s.i
    s.expect("create")
    if s.accept("role") or s.accept("user"):
        return _role_rest(s, alter=False)
    if s.accept("secret"):
        if_not_exists = s.accept("if", "not", "exists")
        name = s.qualified_name().split(".")[-1]
        s.expect("as")
        w = s.next()
        if w.kind != "string":
            raise SqlError(SYNTAX_ERROR, "CREATE SECRET needs a string: CREATE SECRET name AS 'value'")
        s.expect_end()
        return CreateSecret(name, w.text, if_not_exists)
    if s.accept("connection"):
        if_not_exists = s.accept("if", "not", "exists")
        name = s.qualified_name().split(".")[-1]
        s.expect("to")
        kind = s.ident("connection type").lower()
        if kind not in _CONNECTION_OPTIONS:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"CONNECTION ... TO {kind.upper()} is not supported")
        options = _options(s, _CONNECTION_OPTIONS[kind], "CONNECTION")
        validate = True
        if s.accept("with"):
            for opt, value in _options(s, {"validate"}, "CONNECTION"):
                validate = str(value).lower() in ("true", "on", "1", "yes")
        s.expect_end()
        return CreateConnection(name, kind, options, validate, if_not_exists)
    if s.accept("source"):
        if_not_exists = s.accept("if", "not", "exists")
        name = s.qualified_name().split(".")[-1]
        s.expect("from")
        kind = s.ident("source type").lower()
        if kind not in ("postgres", "kafka"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE SOURCE ... FROM {kind.upper()} is not supported")
        s.expect("connection")
        connection = s.qualified_name().split(".")[-1]
        options = _options(s, None, "source") if s.peek() is not None and s.peek().text == "(" else ()
        rest = s.rest()
        if kind == "postgres":
            for opt, _ in options:
                if opt not in ("publication", "text columns"):
                    raise SqlError(INVALID_PARAMETER_VALUE, f"unrecognized POSTGRES source option {opt.upper()}")
            if "publication" not in dict(options):
                raise SqlError(INVALID_PARAMETER_VALUE, "POSTGRES sources need a PUBLICATION option")
            s.expect_end()
        return CreateSource(name, kind, connection, options, if_not_exists, rest)
    if s.accept("table"):
        if_not_exists = s.accept("if", "not", "exists")
        name = s.qualified_name().split(".")[-1]
        columns = None
        if s.peek() is not None and s.peek().text == "(":
            save = s.i
            s.next()
            cols = []
            while True:
                w = s.peek()
                if w is None or w.kind not in ("word", "qident"):
                    s.i = start
                    return None
                cols.append(s.ident())
                if s.accept_punct(")"):
                    break
                if not s.accept_punct(","):
                    s.i = start
                    return None
            if not s.is_keyword("from", "source"):
                s.i = save
                s.i = start
                return None
            columns = tuple(cols)
        if not s.accept("from", "source"):
            s.i = start
            return None
        source = s.qualified_name().split(".")[-1]
        s.expect_punct("(")
        s.expect("reference")
        s.accept_punct("=")
        reference = s.qualified_name() if s.peek().kind != "string" else s.next().text
        s.expect_punct(")")
        text_columns: tuple[str, ...] = ()
        rest = s.rest()
        if s.accept("with"):
            s.expect_punct("(")
            s.expect("text", "columns")
            s.accept_punct("=")
            s.expect_punct("(")
            cols = [s.ident("column")]
            while s.accept_punct(","):
                cols.append(s.ident("column"))
            s.expect_punct(")")
            s.expect_punct(")")
            text_columns = tuple(cols)
            rest = s.rest()
        if not rest:
            s.expect_end()
        return CreateTableFromSource(name, columns, source, reference, text_columns, if_not_exists, rest)
    s.i = start
    return None


def parse_drop(s: Scanner) -> st.Statement | None:
    start = s.i
    s.expect("drop")
    for kind in ("secret", "connection", "source", "role", "user"):
        if s.accept(kind):
            if_exists = s.accept("if", "exists")
            names = [s.qualified_name().split(".")[-1]]
            while s.accept_punct(","):
                names.append(s.qualified_name().split(".")[-1])
            cascade = s.accept("cascade")
            if not cascade:
                s.accept("restrict")
            s.expect_end()
            return DropObjects("ROLE" if kind == "user" else kind.upper(), tuple(names), if_exists, cascade)
    s.i = start
    return None


def _role_rest(s: Scanner, alter: bool) -> CreateRole:
    name = s.ident("role name")
    s.accept("with")
    password = None
    while not s.at_end() and not s.accept_punct(";"):
        if s.accept("password"):
            w = s.next()
            if w.kind == "word" and w.text == "null":
                password = None
            elif w.kind != "string":
                raise SqlError(SYNTAX_ERROR, "PASSWORD needs a string literal", position=w.pos + 1)
            else:
                password = w.text
        elif s.peek().kind == "word" and s.peek().text in ("login", "nologin", "inherit", "noinherit",
                                                             "superuser", "nosuperuser", "createdb",
                                                             "nocreatedb", "createrole", "nocreaterole"):
            s.next()
        else:
            w = s.peek()
            raise SqlError(FEATURE_NOT_SUPPORTED, f"role option {w.raw.upper()} is not supported",
                           position=w.pos + 1)
    return CreateRole(name, password, alter)


def parse_alter_table(s: Scanner) -> st.Statement | None:
    start = s.i
    s.expect("alter")
    if s.accept("role") or s.accept("user"):
        return _role_rest(s, alter=True)
    if not s.accept("table"):
        s.i = start
        return None
    if s.peek() is None or s.peek().kind not in ("word", "qident"):
        s.i = start
        return None
    first = s.qualified_name().split(".")[-1]
    if not s.accept("swap", "with"):
        s.i = start  # any other ALTER TABLE: PostgreSQL's grammar reads it (planner.alter_syntax)
        return None
    second = s.qualified_name().split(".")[-1]
    s.expect_end()
    return SwapTables(first, second)
