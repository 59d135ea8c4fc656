"""PostgreSQL's regular expression functions with PostgreSQL's answers: regexp_replace,
regexp_match, regexp_split_to_array (and _to_table's rows), over Python's `re`.

Pure. Spark runs them as Python UDFs (`spark_backend.string_udfs`, under UDF_NAMES): Spark's
own regexp_replace replaces every match and reads `$1`, its split keeps an empty last piece
after a zero-length match, and no Spark function returns a match's capture groups.

PostgreSQL's regular expressions are ARE (Tcl's); `re` is Perl-like. The common syntax
means the same once translated (`translate`): `.` also matches a newline and `$` only the
end (ARE's defaults), `\\m \\M \\y \\Y \\B \\e` are spelled in `re`'s words. Where the two
differ and no translation is exact, the pattern is refused with 0A000 rather than answered
differently: POSIX bracket classes (`[[:alpha:]]`), embedded options, `***` directors,
`(?` groups other than `(?:` and look-arounds, and patterns that mix greedy and
non-greedy quantifiers. ARE picks the longest match (the shortest for a
non-greedy pattern) where `re` picks the first alternative that matches: `_search`
extends or shortens `re`'s match to ARE's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SqlError

INVALID_REGULAR_EXPRESSION = "2201B"

UDF_NAMES: dict[str, str] = {
    "regexp_replace": "sparkwire_regexp_replace",
    "regexp_match": "sparkwire_regexp_match",
    "regexp_split": "sparkwire_regexp_split",
    "regexp_like": "sparkwire_regexp_like",
    "substring": "sparkwire_regexp_substring",
    "similar_to_escape": "sparkwire_similar_to_escape",
    "substring_similar": "sparkwire_substring_similar",
}

# Options PostgreSQL knows that change how a pattern reads (newline-sensitive matching,
# expanded syntax, basic REs, ...): refused rather than ignored.
_UNSUPPORTED_OPTIONS = frozenset("bemnpwx")
# Escapes whose `re` spelling differs (ARE: \m start of word, \M end of word, \y/\Y word
# boundary or not, \B a backslash, \e ESC, \b backspace).
_ESCAPES = {"m": r"\b(?=\w)", "M": r"\b(?<=\w)", "y": r"\b", "Y": r"\B", "B": r"\\", "e": r"\x1b",
            "b": r"\x08", "a": r"\x07"}
_SAME_ESCAPES = frozenset("dDsSwWAZntrfv0123456789")
_BOUND = re.compile(r"\{\d+(,\d*)?\}")
_GROUPS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")  # the same in both


def _unsupported(what: str) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, f"{what} in a regular expression is not supported")


@dataclass(frozen=True)
class Options:
    glob: bool = False
    icase: bool = False
    literal: bool = False


def options(flags: str, function: str, glob_allowed: bool = True) -> Options:
    """PostgreSQL's option letters (parse_re_flags): g, i, c, q, s, t; others refused."""
    glob = icase = literal = False
    for ch in flags:
        if ch == "g":
            if not glob_allowed:
                raise SqlError(INVALID_PARAMETER_VALUE, f'{function}() does not support the "global" option')
            glob = True
        elif ch == "i":
            icase = True
        elif ch == "c":
            icase = False
        elif ch == "q":
            literal = True
        elif ch in "st":
            pass  # PostgreSQL's defaults: not newline-sensitive, tight syntax
        elif ch in _UNSUPPORTED_OPTIONS:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'regular expression option "{ch}" is not supported')
        else:
            raise SqlError(INVALID_PARAMETER_VALUE, f'invalid regular expression option: "{ch}"')
    return Options(glob, icase, literal)


def translate(pattern: str, match_only: bool = False) -> tuple[str, str]:
    """An ARE pattern as `re` syntax, and its preference: "greedy", "lazy" or "" (none).
    `match_only`: only whether it matches counts, not where (any preferences will do)."""
    if pattern.startswith("***"):
        raise _unsupported("a *** director")
    out: list[str] = []
    prefs: set[str] = set()
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise SqlError(INVALID_REGULAR_EXPRESSION, "invalid regular expression: invalid escape \\ sequence")
            e = pattern[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
            elif e in _SAME_ESCAPES or not e.isalnum():
                out.append(c + e)
            else:
                raise _unsupported(f"the escape \\{e}")
            i += 2
            continue
        if c == "[":
            i = _bracket(pattern, i, out)
            continue
        if c == "(" and pattern.startswith("(?", i):
            group = next((g for g in _GROUPS if pattern.startswith(g, i)), None)
            if group is None:
                raise _unsupported("embedded options or a (? group other than (?: (?= (?! (?<= (?<!")
            out.append(group)
            i += len(group)
            continue
        if c == "$":
            out.append(r"\Z")
            i += 1
            continue
        if c == "{" and not _BOUND.match(pattern, i):
            # ARE: a { before a digit starts a bound, which this is not; any other is literal
            if i + 1 < n and pattern[i + 1].isdigit():
                raise SqlError(INVALID_REGULAR_EXPRESSION, "invalid regular expression: braces {} not balanced")
            out.append(r"\{")
            i += 1
            continue
        if c in "*+?{":
            bound = _BOUND.match(pattern, i)
            quant = bound.group(0) if bound is not None else c
            i += len(quant)
            lazy = i < n and pattern[i] == "?"
            if i < n and pattern[i] == "+":
                raise _unsupported("a possessive quantifier")
            exact = quant.startswith("{") and "," not in quant
            if not exact or lazy:
                prefs.add("lazy" if lazy else "greedy")
            out.append(quant + ("?" if lazy else ""))
            i += 1 if lazy else 0
            continue
        out.append(c)
        i += 1
    if "lazy" in prefs and (len(prefs) > 1 or "|" in pattern) and not match_only:
        # ARE gives a whole pattern one preference (alternatives make it greedy), re each quantifier its own
        raise _unsupported("mixing greedy and non-greedy quantifiers (or | with non-greedy ones)")
    return "".join(out), ("lazy" if "lazy" in prefs else "greedy" if "|" in pattern or prefs else "")


def _bracket(pattern: str, i: int, out: list[str]) -> int:
    """Copy the bracket expression at `i`; the index after it."""
    n = len(pattern)
    j = i + 1
    body = ["["]
    if j < n and pattern[j] == "^":
        body.append("^")
        j += 1
    if j < n and pattern[j] == "]":
        body.append(r"\]")
        j += 1
    while j < n and pattern[j] != "]":
        c = pattern[j]
        if c == "[" and j + 1 < n and pattern[j + 1] in ":.=":
            raise _unsupported("a POSIX bracket class ([:name:], [.x.], [=x=])")
        if c == "\\" and j + 1 < n:
            e = pattern[j + 1]
            body.append(_ESCAPES.get(e, c + e) if e in "Beba" else c + e)
            j += 2
            continue
        body.append("\\" + c if c in "[&~|" else c)  # literal in ARE; set operators in re
        j += 1
    if j >= n:
        raise SqlError(INVALID_REGULAR_EXPRESSION, "invalid regular expression: brackets [] not balanced")
    out.append("".join(body) + "]")
    return j + 1


@dataclass(frozen=True)
class Regex:
    rx: re.Pattern
    source: str  # the `re` pattern, for the longest/shortest probes
    flags: int
    preference: str

    def search(self, s: str, pos: int) -> re.Match | None:
        """ARE's match at or after `pos`: the leftmost, then the longest (a greedy pattern)
        or shortest (a non-greedy one) from there."""
        m = self.rx.search(s, pos)
        if m is None or not self.preference:
            return m
        while True:
            if self.preference == "greedy":
                # A match from the same start that ends past this one's end.
                probe = _probe(self.source, self.flags, f"(?<=[\\s\\S]{{{m.end() + 1}}})")
            elif m.end() > m.start():
                probe = _probe(self.source, self.flags, f"(?<![\\s\\S]{{{m.end()}}})")
            else:
                return m
            other = probe.match(s, m.start())
            if other is None:
                return m
            m = other


@lru_cache(maxsize=512)
def _probe(source: str, flags: int, condition: str) -> re.Pattern:
    return re.compile(f"(?:{source}){condition}", flags)


@lru_cache(maxsize=256)
def compile_are(pattern: str, icase: bool = False, literal: bool = False, match_only: bool = False) -> Regex:
    if literal:
        source, preference = re.escape(pattern), ""
    else:
        source, preference = translate(pattern, match_only)
    if match_only:
        preference = ""
    flags = re.DOTALL | (re.IGNORECASE if icase else 0)
    try:
        rx = re.compile(source, flags)
    except re.error as err:
        raise SqlError(INVALID_REGULAR_EXPRESSION, f"invalid regular expression: {err}") from None
    return Regex(rx, source, flags, preference)


def _regex(pattern: str, opts: Options) -> Regex:
    return compile_are(pattern, opts.icase, opts.literal)


def _substitute(replacement: str, m: re.Match) -> str:
    """PostgreSQL's replacement text: \\1..\\9 a group (empty past the last), \\& the match,
    \\\\ a backslash; any other backslash stays as written."""
    out, i, n = [], 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\" and i + 1 < n:
            e = replacement[i + 1]
            if "1" <= e <= "9":
                k = int(e)
                out.append((m.group(k) or "") if k <= (m.re.groups or 0) else "")
                i += 2
                continue
            if e == "&":
                out.append(m.group(0))
                i += 2
                continue
            if e == "\\":
                out.append("\\")
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


def regexp_replace(s: str | None, pattern: str | None, replacement: str | None,
                   flags: str | None = "") -> str | None:
    """regexp_replace(source, pattern, replacement [, flags]): the first match replaced, or
    every match with 'g'; after a zero-length match the search moves on one character."""
    if s is None or pattern is None or replacement is None or flags is None:
        return None
    opts = options(flags, "regexp_replace")
    rx = _regex(pattern, opts)
    out, copied, start = [], 0, 0
    while start <= len(s):
        m = rx.search(s, start)
        if m is None:
            break
        out.append(s[copied:m.start()])
        out.append(_substitute(replacement, m))
        copied = start = m.end()
        if m.start() == m.end():
            start += 1
        if not opts.glob:
            break
    out.append(s[copied:])
    return "".join(out)


def regexp_match(s: str | None, pattern: str | None, flags: str | None = "") -> list[str | None] | None:
    """regexp_match(string, pattern [, flags]): the first match's capture groups (the whole
    match when there are none), NULL when nothing matches."""
    if s is None or pattern is None or flags is None:
        return None
    opts = options(flags, "regexp_match", glob_allowed=False)
    m = _regex(pattern, opts).search(s, 0)
    if m is None:
        return None
    return list(m.groups()) if m.re.groups else [m.group(0)]


def regexp_split(s: str | None, pattern: str | None, flags: str | None = "",
                 function: str = "regexp_split_to_array") -> list[str] | None:
    """regexp_split_to_array / _to_table: the pieces between matches; a zero-length match at
    the start or end of the string, or right after a match, splits nothing."""
    if s is None or pattern is None or flags is None:
        return None
    opts = options(flags, function, glob_allowed=False)
    rx = _regex(pattern, opts)
    pieces, piece_start, prev_end, start = [], 0, 0, 0
    while start <= len(s):
        m = rx.search(s, start)
        if m is None:
            break
        if m.start() < len(s) and m.end() > prev_end:
            pieces.append(s[piece_start:m.start()])
            piece_start = m.end()
        prev_end = m.end()
        start = m.end() + (1 if m.start() == m.end() else 0)
    pieces.append(s[piece_start:])
    return pieces


def regexp_like(s: str | None, pattern: str | None) -> bool | None:
    """Whether `s` has a match of `pattern` (the ~ of SIMILAR TO's translated pattern)."""
    if s is None or pattern is None:
        return None
    return compile_are(pattern, match_only=True).rx.search(s) is not None


def substring(s: str | None, pattern: str | None) -> str | None:
    """substring(string FROM pattern): the part that matched the first parenthesized
    subexpression if there is one (NULL when it took no part), else the whole match."""
    if s is None or pattern is None:
        return None
    m = compile_are(pattern).search(s, 0)
    if m is None:
        return None
    return m.group(1) if m.re.groups else m.group(0)


def similar_to_escape(pattern: str | None, escape: str | None = "\\") -> str | None:
    """similar_to_escape(pattern [, escape]): SQL's SIMILAR TO pattern as the ARE that
    PostgreSQL 15 matches it with (similar_escape_internal, character classes as 15.18):
    the parts between escape-double-quote separators are the first (as short as can be),
    the middle (a capture group, as long as can be) and the last."""
    if pattern is None or escape is None:
        return None
    parts = _similar_parts(pattern, escape)
    if len(parts) == 1:
        return f"^(?:{parts[0]})$"
    if len(parts) == 2:
        return f"^(?:{parts[0]}){{1,1}}?({parts[1]})$"
    return f"^(?:{parts[0]}){{1,1}}?({parts[1]}){{1,1}}(?:{parts[2]})$"


def _similar_parts(pattern: str, escape: str) -> list[str]:
    """The ARE text of each part of a SIMILAR TO pattern, split at its separators."""
    if len(escape) > 1:
        raise SqlError("22025", "invalid escape string")
    parts: list[str] = []
    out: list[str] = []
    after_escape = in_class = False
    class_pos = 0
    for c in pattern:
        if after_escape:
            if c == '"' and not in_class:
                if len(parts) == 2:
                    raise SqlError("2200C", "SQL regular expression may not contain more than two "
                                            "escape-double-quote separators")
                parts.append("".join(out))
                out = []
            else:
                out.append("\\" + c)
            after_escape = False
        elif escape and c == escape:
            after_escape = True
        elif in_class:
            out.append("\\" + c if c == "\\" else c)
            if c == "]" and class_pos > 2:
                in_class = False
            elif c == "^" and class_pos == 1:
                class_pos = 2
            else:
                class_pos = 3
        elif c == "[":
            out.append(c)
            in_class, class_pos = True, 1
        else:
            out.append(_SIMILAR_CHARS.get(c, c))
    return [*parts, "".join(out)]


_SIMILAR_CHARS = {"%": ".*", "_": ".", "(": "(?:", "\\": "\\\\", ".": "\\.", "^": "\\^", "$": "\\$"}


def substring_similar(s: str | None, pattern: str | None, escape: str | None) -> str | None:
    """substring(string SIMILAR pattern ESCAPE escape): the part of the string that the
    pattern's middle part matched, the first part as short and the middle as long as the
    whole match allows (ARE's reading of similar_to_escape's {1,1}? and {1,1}); the whole
    string without separators; NULL when the pattern does not match the whole string."""
    if s is None or pattern is None or escape is None:
        return None
    parts = _similar_parts(pattern, escape)
    if len(parts) == 1:
        return s if regexp_like(s, similar_to_escape(pattern, escape)) else None
    first, middle, last = (compile_are(p, match_only=True).rx for p in (*parts, "")[:3])
    n = len(s)
    for i in range(n + 1):
        if first.fullmatch(s, 0, i) is None:
            continue
        for j in range(n, i - 1, -1):
            if middle.fullmatch(s, i, j) is not None and last.fullmatch(s, j) is not None:
                return s[i:j]
    return None
