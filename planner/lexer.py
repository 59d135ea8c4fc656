"""Splitting a query string into statements, and a small token scanner.

Splitting uses sqlglot's PostgreSQL tokenizer, so semicolons inside strings,
dollar quotes, quoted identifiers and comments never split. The scanner reads
the handful of Materialize/PostgreSQL statements sqlglot does not parse
(SHOW, SET, FETCH, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from planner.errors import SYNTAX_ERROR, SqlError

_TOKENIZER = Postgres().tokenizer_class()


@dataclass(frozen=True)
class Piece:
    text: str
    offset: int  # where the statement starts in the whole query string


def split_statements(sql: str) -> list[Piece]:
    """Statements of a query string, without empty ones between semicolons."""
    try:
        tokens = _TOKENIZER.tokenize(sql)
    except TokenError as exc:
        raise _token_error(sql, exc) from exc
    pieces: list[Piece] = []
    start: int | None = None
    end = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if start is not None:
                pieces.append(Piece(sql[start:end + 1], start))
            start = None
            continue
        if start is None:
            start = tok.start
            # A comment before the first token belongs to no statement.
        end = tok.end
    if start is not None:
        pieces.append(Piece(sql[start:end + 1], start))
    return pieces


def _token_error(sql: str, exc: TokenError) -> SqlError:
    """PostgreSQL's wording for text the tokenizer cannot finish."""
    for opener, what in (("'", "quoted string"), ('"', "quoted identifier"), ("$$", "dollar-quoted string")):
        if sql.count(opener) % 2:
            at = sql.rfind(opener)
            return SqlError(SYNTAX_ERROR, f'unterminated {what} at or near "{sql[at:at + 20]}"',
                            position=at + 1)
    if sql.count("/*") > sql.count("*/"):
        at = sql.rfind("/*")
        return SqlError(SYNTAX_ERROR, "unterminated /* comment", position=at + 1)
    return SqlError(SYNTAX_ERROR, f"syntax error: {str(exc).splitlines()[0]}")


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

