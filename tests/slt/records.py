"""Parsing sqllogictest files into records; no I/O beyond the text it is given.

The format (SQLite's, as in /work/shared/conformance/README.md): records are separated by blank
lines; `#` starts a comment line; `statement ok|error [SQLSTATE or regex]` is followed by SQL;
`query <types> [nosort|rowsort|valuesort] [label]` is followed by SQL, `----`, then the
expected values one per line (or `N values hashing to MD5`); `hash-threshold N` and `halt` are
directives; `skipif <engine>` / `onlyif <engine>` lines guard the record after them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SORT_MODES = ("nosort", "rowsort", "valuesort")
# The engine name sparkwire and PostgreSQL answer to in skipif/onlyif: sparkwire speaks PostgreSQL.
ENGINE = "postgresql"


class FormatError(ValueError):
    """A file that is not valid sqllogictest."""


@dataclass(frozen=True)
class Statement:
    line: int  # 1-based line of the `statement` line; with the file, the record's name
    sql: str
    expect_error: bool
    error_pattern: str | None = None  # a SQLSTATE (5 characters) or a regex on the message


@dataclass(frozen=True)
class Query:
    line: int
    sql: str
    types: str  # one letter per column: I, T or R
    sort: str  # one of SORT_MODES
    label: str | None
    expected: tuple[str, ...] | None  # lines after `----`; None when the record has no `----`
    hash_threshold: int = 0  # the file's hash-threshold when the record was read (0: never hash)


Record = Statement | Query

_HEADER = re.compile(r"^(statement|query|hash-threshold|halt|skipif|onlyif)\b")


def _strip_comment(line: str) -> str:
    """`onlyif mysql # why` → `onlyif mysql` (comments may trail control lines)."""
    return line.split("#", 1)[0].strip()


def parse(text: str, engine: str = ENGINE) -> list[Record]:
    """The records of a file that apply to `engine` (skipif/onlyif resolved, stopping at `halt`)."""
    lines = text.splitlines()
    records: list[Record] = []
    hash_threshold = 0
    i = 0
    while i < len(lines):
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            i += 1
            continue
        # One record: condition lines, then a header, then its body up to a blank line.
        applies = True
        while True:
            words = _strip_comment(lines[i]).split()
            if words and words[0] in ("skipif", "onlyif"):
                if len(words) < 2:
                    raise FormatError(f"line {i + 1}: {words[0]} needs an engine name")
                if words[0] == "skipif" and words[1] == engine:
                    applies = False
                if words[0] == "onlyif" and words[1] != engine:
                    applies = False
                i += 1
                if i >= len(lines):
                    raise FormatError(f"line {i}: condition at end of file")
                continue
            break
        header_line = i + 1
        words = _strip_comment(lines[i]).split() if not lines[i].startswith("statement error") \
            else lines[i].split(None, 2)
        body_start = i + 1
        i = body_start
        while i < len(lines) and lines[i].strip():
            i += 1
        body = lines[body_start:i]
        kind = words[0] if words else ""
        if kind == "hash-threshold":
            if len(words) != 2 or not words[1].isdigit():
                raise FormatError(f"line {header_line}: hash-threshold needs a number")
            hash_threshold = int(words[1])
            continue
        if kind == "halt":
            if applies:
                break
            continue
        if kind == "statement":
            record: Record = _statement(words, body, header_line)
        elif kind == "query":
            record = _query(words, body, header_line, hash_threshold)
        else:
            raise FormatError(f"line {header_line}: unknown record {lines[header_line - 1]!r}")
        if applies:
            records.append(record)
    return records


def _statement(words: list[str], body: list[str], line: int) -> Statement:
    if len(words) < 2 or words[1] not in ("ok", "error"):
        raise FormatError(f"line {line}: expected `statement ok` or `statement error`")
    if not body:
        raise FormatError(f"line {line}: statement without SQL")
    pattern = words[2].strip() if len(words) > 2 and words[1] == "error" else None
    return Statement(line, "\n".join(body), words[1] == "error", pattern or None)


def _query(words: list[str], body: list[str], line: int, hash_threshold: int) -> Query:
    if len(words) < 2 or not re.fullmatch(r"[ITR]+", words[1]):
        raise FormatError(f"line {line}: query needs column types made of I, T and R")
    sort = words[2] if len(words) > 2 else "nosort"
    if sort not in SORT_MODES:
        raise FormatError(f"line {line}: unknown sort mode {sort!r}")
    label = words[3] if len(words) > 3 else None
    if "----" in body:
        cut = body.index("----")
        sql, expected = body[:cut], tuple(body[cut + 1:])
    else:
        sql, expected = body, None
    if not sql:
        raise FormatError(f"line {line}: query without SQL")
    return Query(line, "\n".join(sql), words[1], sort, label, expected, hash_threshold)


def sample(records: Sequence[Record], every: int) -> list[Record]:
    """Every `every`-th query (counting queries only), and every statement: the statements build
    the state later queries read."""
    if every <= 1:
        return list(records)
    kept, n = [], 0
    for record in records:
        if isinstance(record, Query):
            n += 1
            if (n - 1) % every:
                continue
        kept.append(record)
    return kept
