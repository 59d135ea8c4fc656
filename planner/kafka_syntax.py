"""The Kafka clauses of CREATE SOURCE / CREATE TABLE ... FROM SOURCE:

    [KEY FORMAT f VALUE FORMAT f | FORMAT f]     f: TEXT | BYTES | JSON | CSV WITH n COLUMNS
    [INCLUDE {KEY | PARTITION | OFFSET | TIMESTAMP | HEADERS} [AS name], ...]
    [ENVELOPE {NONE | UPSERT [(ORDER BY (col, ...) [ASC])] [(VALUE DECODING ERRORS = INLINE)]}]

Pure: text in, a `KafkaSpec` out; semantic checks (ORDER BY only over the
included TIMESTAMP and OFFSET, OFFSET required) are in `check`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, SqlError
from planner.lexer import Scanner


@dataclass(frozen=True)
class Format:
    kind: str  # text | bytes | json | csv
    columns: int = 0  # CSV WITH n COLUMNS


@dataclass(frozen=True)
class Include:
    what: str  # key | partition | offset | timestamp | headers
    name: str


@dataclass(frozen=True)
class KafkaSpec:
    key_format: Format | None = None
    value_format: Format = Format("bytes")
    includes: tuple[Include, ...] = ()
    envelope: str = "none"  # none | upsert
    order_by: tuple[str, ...] = ()  # ENVELOPE UPSERT (ORDER BY (...))
    inline_errors: bool = False

    def include(self, what: str) -> Include | None:
        return next((i for i in self.includes if i.what == what), None)


_DEFAULT_NAMES = {"key": "key", "partition": "partition", "offset": "offset", "timestamp": "timestamp",
                  "headers": "headers"}


def parse_kafka_clauses(text: str) -> KafkaSpec:
    s = Scanner(text)
    key_format = None
    value_format = None
    includes: list[Include] = []
    envelope = "none"
    order_by: tuple[str, ...] = ()
    inline = False
    while not s.at_end():
        if s.accept_punct(";"):
            continue
        if s.accept("key", "format"):
            key_format = _format(s)
            s.expect("value", "format")
            value_format = _format(s)
        elif s.accept("value", "format"):
            value_format = _format(s)
        elif s.accept("format"):
            value_format = _format(s)
            key_format = value_format
        elif s.accept("include"):
            while True:
                w = s.peek()
                what = s.ident("metadata column").lower()
                if what not in _DEFAULT_NAMES:
                    raise SqlError(SYNTAX_ERROR, f"INCLUDE {what.upper()} is not a Kafka metadata column: "
                                                 "expected KEY, PARTITION, OFFSET, TIMESTAMP or HEADERS",
                                   position=w.pos + 1)
                name = s.ident("column name") if s.accept("as") else _DEFAULT_NAMES[what]
                if any(i.what == what for i in includes):
                    raise SqlError(INVALID_PARAMETER_VALUE, f"INCLUDE {what.upper()} specified more than once")
                includes.append(Include(what, name))
                if not s.accept_punct(","):
                    break
        elif s.accept("envelope"):
            if s.accept("none"):
                envelope = "none"
            elif s.accept("upsert"):
                envelope = "upsert"
                while s.accept_punct("("):
                    while True:  # comma-separated: (ORDER BY (...), VALUE DECODING ERRORS = INLINE)
                        if s.accept("order", "by"):
                            if not s.accept_punct("("):
                                raise s.error("ORDER BY needs its columns in parentheses: ORDER BY (ts, o); expected (")
                            cols = [s.ident("column")]
                            while s.accept_punct(","):
                                cols.append(s.ident("column"))
                            s.expect_punct(")")
                            if s.accept("desc"):
                                raise SqlError(SYNTAX_ERROR, "ENVELOPE UPSERT (ORDER BY ...) supports only ascending "
                                                             "order: DESC is not allowed")
                            s.accept("asc")
                            order_by = tuple(cols)
                        elif s.accept("value", "decoding", "errors"):
                            s.accept_punct("=")
                            if not s.accept("inline"):
                                raise s.error("expected INLINE")
                            inline = True
                        else:
                            raise s.error("expected ORDER BY or VALUE DECODING ERRORS")
                        if not s.accept_punct(","):
                            break
                    s.expect_punct(")")
            elif s.accept("debezium"):
                raise SqlError(FEATURE_NOT_SUPPORTED, "ENVELOPE DEBEZIUM for Kafka sources is not supported")
            else:
                raise s.error("expected NONE or UPSERT")
        else:
            w = s.peek()
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)
    return KafkaSpec(key_format, value_format or Format("bytes"), tuple(includes), envelope, order_by, inline)


def _format(s: Scanner) -> Format:
    w = s.peek()
    kind = s.ident("format").lower()
    if kind in ("text", "bytes", "json"):
        return Format(kind)
    if kind == "csv":
        s.expect("with")
        n = s.next()
        if n.kind != "number" or int(n.text) < 1:
            raise SqlError(SYNTAX_ERROR, "CSV needs WITH n COLUMNS, n at least 1", position=n.pos + 1)
        s.expect("columns")
        return Format("csv", int(n.text))
    if kind in ("avro", "protobuf"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"FORMAT {kind.upper()} is not supported (no schema registry)",
                       position=w.pos + 1)
    raise SqlError(SYNTAX_ERROR, f"unknown format {kind.upper()}: expected TEXT, BYTES, JSON or CSV",
                   position=w.pos + 1)


def check(spec: KafkaSpec) -> None:
    """The semantic rules of the upsert-order-by design, with errors that say which."""
    if spec.envelope == "upsert" and spec.key_format is None:
        raise SqlError(INVALID_PARAMETER_VALUE, "ENVELOPE UPSERT needs a key: give KEY FORMAT ... VALUE FORMAT ...")
    if spec.inline_errors and spec.envelope != "upsert":
        raise SqlError(INVALID_PARAMETER_VALUE, "VALUE DECODING ERRORS = INLINE needs ENVELOPE UPSERT")
    if not spec.order_by:
        return
    by_name = {i.name: i for i in spec.includes}
    # Unquoted TIMESTAMP / OFFSET in ORDER BY mean the included columns of that kind.
    resolved = []
    not_included = None  # reported after the OFFSET rule, which the design names first
    for col in spec.order_by:
        inc = by_name.get(col)
        if inc is None and col == "offset" and spec.include("offset") is None:
            # Offset order is the default one: it needs no INCLUDE to be named.
            resolved.append("offset")
            continue
        if inc is None and col in ("timestamp", "offset"):
            inc = spec.include(col)
            if inc is None:
                not_included = not_included or SqlError(
                    INVALID_PARAMETER_VALUE,
                    f"ORDER BY refers to {col.upper()}, which is not included: add INCLUDE {col.upper()}")
                resolved.append(col)
                continue
        if inc is None:
            raise SqlError("42703", f'ORDER BY column "{col}" is not an included metadata column')
        if inc.what not in ("timestamp", "offset"):
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f'ORDER BY column "{col}" is the included {inc.what.upper()} column; ENVELOPE UPSERT '
                           "can only be ordered by the included TIMESTAMP and OFFSET columns")
        resolved.append(inc.what)
    if "offset" not in resolved:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       "ENVELOPE UPSERT (ORDER BY (...)) must include the OFFSET column as a tie-breaker")
    if not_included is not None:
        raise not_included
    if len(set(resolved)) != len(resolved):
        raise SqlError(INVALID_PARAMETER_VALUE, "ORDER BY names the same column more than once")


def order_kinds(spec: KafkaSpec) -> tuple[str, ...]:
    """The ORDER BY as metadata kinds ('timestamp', 'offset'); offset alone by default."""
    if not spec.order_by:
        return ("offset",)
    by_name = {i.name: i.what for i in spec.includes}
    return tuple(by_name.get(c, c) for c in spec.order_by)
