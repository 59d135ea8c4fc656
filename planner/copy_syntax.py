"""COPY: `COPY t [(cols)] FROM STDIN [...]`, `COPY t [(cols)] TO STDOUT [...]` and
`COPY ({query | SUBSCRIBE ...}) TO STDOUT [...]`. Options are taken in both
spellings PostgreSQL accepts: `WITH (FORMAT csv, HEADER)` and the older `CSV HEADER`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, SqlError
from planner.lexer import Scanner
from planner.subscribe_syntax import Subscribe, parenthesized_statement


@dataclass(frozen=True)
class CopyTo(st.Statement):
    """COPY (query | SUBSCRIBE) TO STDOUT, or COPY t TO STDOUT, with PostgreSQL's options."""

    inner: st.Statement
    format: str = "text"  # text | csv | binary
    delimiter: str | None = None
    null: str | None = None
    header: bool = False
    quote: str = '"'
    escape: str | None = None

    @property
    def binary(self) -> bool:
        return self.format == "binary"


@dataclass(frozen=True)
class CopyFrom(st.Statement):
    """COPY t [(columns)] FROM STDIN: rows from the client, in text or CSV format."""

    table: str
    columns: tuple[str, ...] | None
    format: str = "text"
    delimiter: str | None = None
    null: str | None = None
    header: bool = False
    quote: str = '"'
    escape: str | None = None


def parse_copy(s: Scanner, parse_statement: st.ParseStatement) -> st.Statement:
    s.expect("copy")
    if not (s.peek() is not None and s.peek().kind == "punct" and s.peek().text == "("):
        return parse_table_copy(s, parse_statement)
    inner, _ = parenthesized_statement(s, parse_statement)
    if not isinstance(inner, (st.Query, Subscribe)):
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY (...) TO STDOUT takes a SELECT or a SUBSCRIBE")
    s.expect("to")
    if not s.accept("stdout"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY ... TO supports only STDOUT")
    options = _options(s, to=True)
    if isinstance(inner, Subscribe) and options.get("format", "text") != "text":
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY (SUBSCRIBE ...) TO STDOUT streams in text format only")
    return CopyTo(inner, **options)


def parse_table_copy(s: Scanner, parse_statement: st.ParseStatement) -> st.Statement:
    """After COPY, at a table name: FROM STDIN, or TO STDOUT (as a COPY of SELECT)."""
    table = s.qualified_name()
    columns = None
    if s.accept_punct("("):
        columns = [s.ident("column name")]
        while s.accept_punct(","):
            columns.append(s.ident("column name"))
        s.expect_punct(")")
    if s.accept("to"):
        if not s.accept("stdout"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "COPY ... TO supports only STDOUT (psql's \\copy writes files)")
        options = _options(s, to=True)
        select = f"SELECT {', '.join(_quote(c) for c in columns) if columns else '*'} FROM {_quote_name(table)}"
        return CopyTo(parse_statement(select), **options)
    s.expect("from")
    if not s.accept("stdin"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY ... FROM supports only STDIN (psql's \\copy reads files)")
    options = _options(s, to=False)
    schema, _, name = table.rpartition(".")  # pg_dump writes COPY public.t (…) FROM stdin
    if schema and schema != "public":
        raise SqlError("3F000", f'schema "{schema}" does not exist')
    return CopyFrom(name, tuple(columns) if columns else None, **options)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_name(name: str) -> str:
    return ".".join(_quote(part) for part in name.split("."))


def _options(s: Scanner, to: bool) -> dict:
    options: dict = {}
    s.accept("with")
    if s.accept_punct("("):
        while True:
            _option(s, options, s.ident("option"), modern=True)
            if s.accept_punct(")"):
                break
            s.expect_punct(",")
    else:
        while not s.at_end() and not s.accept_punct(";"):
            _option(s, options, s.ident("option"), modern=False)
    s.expect_end()
    fmt = options.get("format", "text")
    if fmt == "binary":
        shaping = set(options) - {"format"}
        if shaping:
            raise SqlError(SYNTAX_ERROR, f"cannot specify {min(shaping).upper()} in BINARY mode")
        return options
    for key in ("delimiter", "quote", "escape"):
        value = options.get(key)
        if value is not None and len(value.encode("utf-8")) != 1:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY {key} must be a single one-byte character")
    csv_only = {"quote", "escape"} & set(options)
    if fmt != "csv" and csv_only:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY {min(csv_only)} available only in CSV mode")
    delimiter = options.get("delimiter")
    if delimiter in ("\r", "\n"):
        raise SqlError(INVALID_PARAMETER_VALUE, "COPY delimiter cannot be newline or carriage return")
    # In text format these would be read as part of an escape or a value (PostgreSQL's list).
    if delimiter is not None and fmt == "text" and delimiter in "\\.abcdefghijklmnopqrstuvwxyz0123456789":
        raise SqlError(INVALID_PARAMETER_VALUE, f'COPY delimiter cannot be "{delimiter}"')
    return options


_NAMES = {"format", "delimiter", "null", "header", "quote", "escape"}


def _option(s: Scanner, options: dict, name: str, modern: bool) -> None:
    if not modern and name in ("csv", "binary"):
        options["format"] = name
        return
    if name not in _NAMES:
        raise SqlError(SYNTAX_ERROR if modern else FEATURE_NOT_SUPPORTED, f'option "{name}" not recognized')
    if name in options:
        raise SqlError(SYNTAX_ERROR, "conflicting or redundant options")
    if name == "header":
        options["header"] = _boolean(s) if modern else True
        return
    if name == "format":
        w = s.next()
        fmt = w.text.lower() if w.kind in ("word", "string", "qident") else ""  # FORMAT csv or 'csv'
        if not fmt:
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)
        if fmt not in ("text", "csv", "binary"):
            raise SqlError(INVALID_PARAMETER_VALUE, f'COPY format "{fmt}" not recognized')
        options["format"] = fmt
        return
    if not modern:
        s.accept("as")
    w = s.next()
    if w.kind != "string":
        raise SqlError(SYNTAX_ERROR, f"COPY {name} needs a quoted string, not {w.raw}")
    options[name] = w.text


def _boolean(s: Scanner) -> bool:
    w = s.peek()
    if w is None or w.kind == "punct":
        return True
    s.next()
    value = w.text.lower()
    if value in ("true", "on", "1"):
        return True
    if value in ("false", "off", "0"):
        return False
    raise SqlError(INVALID_PARAMETER_VALUE, f"header requires a Boolean value, not {w.raw}")
