"""Splitting a query string into statements, and a small token scanner.

Splitting uses PostgreSQL's own scanner (pglast), so semicolons inside strings,
dollar quotes, quoted identifiers and comments never split. The scanner reads
the handful of Materialize/PostgreSQL statements sqlglot does not parse
(SHOW, SET, FETCH, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pglast import parser as _pg

from planner.errors import SYNTAX_ERROR, SqlError


@dataclass(frozen=True)
class Piece:
    text: str
    offset: int  # where the statement starts in the whole query string


def split_statements(sql: str) -> list[Piece]:
    """Statements of a query string, without empty ones between semicolons.

    PostgreSQL's own scanner finds the semicolons, so strings, dollar quotes, quoted
    identifiers and comments never split, exactly as in PostgreSQL."""
    try:
        tokens = _pg.scan(sql)
    except _pg.ParseError as exc:
        cursor = exc.args[1] if len(exc.args) > 1 and exc.args[1] is not None else len(sql)
        raise SqlError(SYNTAX_ERROR, exc.args[0], position=cursor + 1) from None
    pieces: list[Piece] = []
    start: int | None = None
    end = 0
    for tok in tokens:
        if tok.name == "ASCII_59":  # ;
            if start is not None:
                pieces.append(Piece(sql[start:end + 1], start))
            start = None
            continue
        if tok.name in ("SQL_COMMENT", "C_COMMENT"):
            continue  # a comment belongs to no statement, nor makes one
        if start is None:
            start = tok.start
        end = _token_end(sql, tok)
    if start is not None:
        pieces.append(Piece(sql[start:end + 1], start))
    return pieces


def _token_end(sql: str, tok) -> int:
    """Where a token ends. pglast's scanner gives a Unicode-escape constant (`U&'...'`,
    `U&"..."`) an end before its start: it ends at its closing quote (a doubled quote
    stays inside)."""
    if tok.end >= tok.start:
        return tok.end
    quote_at = min((i for i in (sql.find("'", tok.start), sql.find('"', tok.start)) if i >= 0), default=-1)
    if quote_at < 0:
        return len(sql) - 1
    quote, i = sql[quote_at], quote_at + 1
    while True:
        j = sql.find(quote, i)
        if j < 0:
            return len(sql) - 1
        if sql.startswith(quote * 2, j):
            i = j + 2
            continue
        return j


_WORD = re.compile(
    r"""\s*(?:
        (?P<comment>--[^\n]*|/\*.*?\*/)
      | (?P<qident>"(?:[^"]|"")*")
      | (?P<string>[eE]?'(?:[^']|'')*')
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<param>\$\d+)
      | (?P<punct>::|<>|!=|<=|>=|[^\s\w])
    )""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Word:
    kind: str  # qident | string | number | word | param | punct
    text: str  # identifiers folded to lower case unless quoted; strings unquoted
    raw: str
    pos: int


class Scanner:
    """A cursor over a statement's words, for hand-written statement parsers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = _scan(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> Word | None:
        j = self.i + ahead
        return self.words[j] if j < len(self.words) else None

    def at_end(self) -> bool:
        return self.i >= len(self.words)

    def next(self) -> Word:
        w = self.peek()
        if w is None:
            raise self.error("unexpected end of statement")
        self.i += 1
        return w

    def is_keyword(self, *words: str, ahead: int = 0) -> bool:
        for k, word in enumerate(words):
            w = self.peek(ahead + k)
            if w is None or w.kind != "word" or w.text != word.lower():
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.is_keyword(*words):
            self.i += len(words)
            return True
        return False

    def accept_punct(self, p: str) -> bool:
        w = self.peek()
        if w is not None and w.kind == "punct" and w.text == p:
            self.i += 1
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(w.upper() for w in words)}")

    def expect_punct(self, p: str) -> None:
        if not self.accept_punct(p):
            raise self.error(f"expected {p}")

    def ident(self, what: str = "identifier") -> str:
        w = self.peek()
        if w is None or w.kind not in ("word", "qident"):
            raise self.error(f"expected {what}")
        self.i += 1
        return w.text

    def qualified_name(self) -> str:
        parts = [self.ident("name")]
        while self.accept_punct("."):
            parts.append(self.ident("name"))
        return ".".join(parts)

    def rest(self) -> str:
        """The remaining text of the statement, from the current word on."""
        w = self.peek()
        return "" if w is None else self.text[w.pos:]

    def expect_end(self) -> None:
        self.accept_punct(";")
        if not self.at_end():
            raise self.error(f'syntax error at or near "{self.peek().raw}"')

    def error(self, message: str) -> SqlError:
        w = self.peek()
        if w is None:
            return SqlError(SYNTAX_ERROR, f"{message} (at end of input)" if "end" not in message else message,
                            position=len(self.text) + 1)
        if message.startswith("expected"):
            message = f'syntax error at or near "{w.raw}": {message}'
        return SqlError(SYNTAX_ERROR, message, position=w.pos + 1)


def _scan(text: str) -> list[Word]:
    words: list[Word] = []
    pos = 0
    stripped = text
    while pos < len(stripped):
        if stripped[pos:].strip() == "":
            break
        m = _WORD.match(stripped, pos)
        if m is None:
            bad = stripped[pos:].lstrip()[:1]
            at = len(stripped) - len(stripped[pos:].lstrip())
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{bad}"', position=at + 1)
        kind = m.lastgroup
        if kind == "comment":
            pos = m.end()
            continue
        raw = m.group(kind)
        start = m.start(kind)
        if kind == "qident":
            value = raw[1:-1].replace('""', '"')
        elif kind == "string":
            body = raw[1:] if raw[0] in "eE" else raw
            value = body[1:-1].replace("''", "'")
        elif kind == "word":
            value = raw.lower()
        else:
            value = raw
        words.append(Word(kind, value, raw, start))
        pos = m.end()
    return words

