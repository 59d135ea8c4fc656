"""PostgreSQL 15's string functions that Spark has no function for, or one with other
answers: encode/decode (bytea as hex, base64, escape), like_escape (LIKE ... ESCAPE),
string_to_array, chr, and the catalog templates of overlay and quote_literal.

Pure. The Python functions run in Spark as UDFs (`spark_backend.string_udfs`, under
UDF_NAMES), each ported from PostgreSQL's C (encode.c, like.c, varlena.c) with its edge
cases and error texts: Spark's base64 does not wrap lines as PostgreSQL's does, its
chr(n) is a Latin-1 byte where PostgreSQL's is a Unicode code point, and its split reads
the delimiter as a regular expression.

TEMPLATES holds the catalog's Spark SQL of these and of planner.pg_regex's functions;
`sqlglot_rewrite` writes the same calls on the sqlglot path (SET sql_frontend = sqlglot),
where sqlglot would otherwise reach Spark's functions of the same names.
"""

from __future__ import annotations

import base64
import string
from functools import lru_cache

import sqlglot
from sqlglot import exp

from planner import pg_regex
from planner.errors import INVALID_PARAMETER_VALUE, INVALID_TEXT_REPRESENTATION, SqlError
from planner.sql_template import ERROR_PREFIX

PROGRAM_LIMIT_EXCEEDED = "54000"
INVALID_ESCAPE_SEQUENCE = "22025"

FORMAT_UDF = "sparkwire_format"  # planner.pg_format.UDF_NAME
UDF_NAMES: dict[str, str] = {
    "encode": "sparkwire_encode",
    "decode": "sparkwire_decode",
    "like_escape": "sparkwire_like_escape",
    "string_to_array": "sparkwire_string_to_array",
    "chr": "sparkwire_chr",
}

# overlay(s PLACING r FROM start [FOR count]) (textoverlay): s's first start - 1 characters,
# r, then s from start + count (a count below 0 reaches back before start); strict, so a NULL
# argument is NULL before any error.
OVERLAY = ("case when {0} is null or {1} is null or {2} is null or {3} is null then cast(null as string) "
           "when {2} < 1 then raise_error('" + ERROR_PREFIX + "22011:negative substring length not allowed') "
           "when abs(cast({2} as bigint) + {3}) > 2147483647 then raise_error('" + ERROR_PREFIX
           + "22003:integer out of range') "
           "else concat(substring({0}, 1, {2} - 1), {1}, substring({0}, greatest({2} + {3}, 1))) end")
OVERLAY_TO_END = OVERLAY.replace("{3}", "length({1})")

# quote_literal(text): in single quotes, each quote doubled; with a backslash, as an E''
# string with each backslash doubled too. chr(39) is ', chr(92) is \.
QUOTE_LITERAL = ("case when locate(chr(92), {0}) > 0 then concat(chr(69), chr(39), replace(replace({0}, chr(92), "
                 "concat(chr(92), chr(92))), chr(39), concat(chr(39), chr(39))), chr(39)) "
                 "else concat(chr(39), replace({0}, chr(39), concat(chr(39), chr(39))), chr(39)) end")

_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(_B64)}
_WHITE = frozenset(b" \t\n\r")


def _format(name: str) -> str:
    fmt = name.lower()
    if fmt not in ("hex", "base64", "escape"):
        raise SqlError(INVALID_PARAMETER_VALUE, f'unrecognized encoding: "{name}"')
    return fmt


def encode(data: bytes | None, name: str | None) -> str | None:
    """encode(bytea, format): hex in lower case; base64 with a newline after every 76
    characters (also after the last full line); escape with \\ooo for NUL and bytes
    over 127 and \\\\ for a backslash."""
    if data is None or name is None:
        return None
    fmt, data = _format(name), bytes(data)
    if fmt == "hex":
        return data.hex()
    if fmt == "base64":
        text = base64.b64encode(data).decode("ascii")
        lines = [text[i:i + 76] for i in range(0, len(text), 76)]
        return "\n".join(lines) + ("\n" if data and len(data) % 57 == 0 else "")
    out = []
    for b in data:
        if b == 0 or b >= 0x80:
            out.append(f"\\{b:03o}")
        elif b == 0x5C:
            out.append("\\\\")
        else:
            out.append(chr(b))
    return "".join(out)


def decode(text: str | None, name: str | None) -> bytes | None:
    """decode(text, format), the inverse of encode, as lenient and as strict as PostgreSQL."""
    if text is None or name is None:
        return None
    fmt, src = _format(name), text.encode("utf-8")
    if fmt == "hex":
        return _hex_decode(src)
    if fmt == "base64":
        return _base64_decode(src)
    return _escape_decode(src)


def _hex_digit(src: bytes, i: int) -> int:
    c = chr(src[i])
    if c not in string.hexdigits:
        shown = src[i:].decode("utf-8", "replace")[:1]
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid hexadecimal digit: "{shown}"')
    return int(c, 16)


def _hex_decode(src: bytes) -> bytes:
    out, i, n = bytearray(), 0, len(src)
    while i < n:
        if src[i] in _WHITE:
            i += 1
            continue
        high = _hex_digit(src, i) << 4
        i += 1
        if i >= n:
            raise SqlError(INVALID_PARAMETER_VALUE, "invalid hexadecimal data: odd number of digits")
        out.append(high | _hex_digit(src, i))
        i += 1
    return bytes(out)


def _base64_decode(src: bytes) -> bytes:
    """pg_base64_decode: white space skipped, '=' ends the data (only where padding may be)."""
    out, buf, pos, end = bytearray(), 0, 0, 0
    for i, c in enumerate(src):
        if c in _WHITE:
            continue
        if c == ord("="):
            if not end:
                if pos == 2:
                    end = 1
                elif pos == 3:
                    end = 2
                else:
                    raise SqlError(INVALID_PARAMETER_VALUE, 'unexpected "=" while decoding base64 sequence')
            b = 0
        else:
            b = _B64_VALUE.get(c, -1)
            if b < 0:
                shown = src[i:].decode("utf-8", "replace")[:1]
                raise SqlError(INVALID_PARAMETER_VALUE, f'invalid symbol "{shown}" found while decoding base64 sequence')
        buf = (buf << 6) + b
        pos += 1
        if pos == 4:
            out.append((buf >> 16) & 255)
            if end == 0 or end > 1:
                out.append((buf >> 8) & 255)
            if end == 0 or end > 2:
                out.append(buf & 255)
            buf = pos = 0
    if pos != 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "invalid base64 end sequence")
    return bytes(out)


def _escape_decode(src: bytes) -> bytes:
    out, i, n = bytearray(), 0, len(src)
    while i < n:
        if src[i] != 0x5C:
            out.append(src[i])
            i += 1
        elif i + 3 < n and 0x30 <= src[i + 1] <= 0x33 and all(0x30 <= src[i + k] <= 0x37 for k in (2, 3)):
            out.append(int(src[i + 1:i + 4], 8))
            i += 4
        elif i + 1 < n and src[i + 1] == 0x5C:
            out.append(0x5C)
            i += 2
        else:
            raise SqlError(INVALID_TEXT_REPRESENTATION, "invalid input syntax for type bytea")
    return bytes(out)


def like_escape(pattern: str | None, escape: str | None, for_spark: bool = False) -> str | None:
    """like_escape(pattern, escape): the pattern with `escape` as its escape character
    rewritten for LIKE's own, the backslash (PostgreSQL's do_like_escape). `for_spark`:
    as Spark's LIKE must read it, which refuses a backslash before anything but % _ and
    itself, where PostgreSQL takes the character literally."""
    if pattern is None or escape is None:
        return None
    out = _like_escape(pattern, escape)
    return spark_like_pattern(out) if for_spark else out


def spark_like_pattern(pattern: str) -> str:
    """A PostgreSQL LIKE pattern (backslash escapes) meaning the same to Spark's LIKE."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        if pattern[i] == "\\" and i + 1 < n:
            e = pattern[i + 1]
            out.append("\\" + e if e in "%_\\" else e)
            i += 2
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def _like_escape(pattern: str, escape: str) -> str:
    if len(escape) > 1:
        raise SqlError(INVALID_ESCAPE_SEQUENCE, "invalid escape string")
    if escape == "":
        return pattern.replace("\\", "\\\\")  # no escape character: every backslash literal
    if escape == "\\":
        return pattern
    out, after_escape = [], False
    for c in pattern:
        if c == escape and not after_escape:
            out.append("\\")
            after_escape = True
        elif c == "\\":
            out.append("\\" if after_escape else "\\\\")
            after_escape = False
        else:
            out.append(c)
            after_escape = False
    return "".join(out)


def string_to_array(s: str | None, delimiter: str | None, null_string: str | None = None) -> list[str | None] | None:
    """string_to_array(string, delimiter [, null_string]): a NULL delimiter splits into
    characters, an empty one gives the whole string; an empty string is an empty array;
    elements equal to null_string are NULL."""
    if s is None:
        return None
    if s == "":
        return []
    if delimiter is None:
        parts = list(s)
    elif delimiter == "":
        parts = [s]
    else:
        parts = s.split(delimiter)
    return [None if null_string is not None and p == null_string else p for p in parts]


def pg_chr(code: int | None) -> str | None:
    """chr(integer) in a UTF8 database: the character of that Unicode code point."""
    if code is None:
        return None
    if code < 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "character number must be positive")
    if code == 0:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, "null character not permitted")
    if code > 0x10FFFF:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, f"requested character too large for encoding: {code}")
    if 0xD800 <= code <= 0xDFFF:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, f"requested character not valid for encoding: {code}")
    return chr(code)


# The catalog's Spark templates of the functions here ({0}, {1}: the arguments), by name and
# number of arguments: planner.functions lists them; the sqlglot path writes them too.
_REGEX = pg_regex.UDF_NAMES
TEMPLATES: dict[tuple[str, int], str] = {
    ("regexp_replace", 3): f"{_REGEX['regexp_replace']}({{0}}, {{1}}, {{2}}, '')",
    ("regexp_replace", 4): f"{_REGEX['regexp_replace']}({{0}}, {{1}}, {{2}}, {{3}})",
    ("regexp_match", 2): f"{_REGEX['regexp_match']}({{0}}, {{1}}, '')",
    ("regexp_match", 3): f"{_REGEX['regexp_match']}({{0}}, {{1}}, {{2}})",
    ("regexp_split_to_array", 2): f"{_REGEX['regexp_split']}({{0}}, {{1}}, '', 'regexp_split_to_array')",
    ("regexp_split_to_array", 3): f"{_REGEX['regexp_split']}({{0}}, {{1}}, {{2}}, 'regexp_split_to_array')",
    ("regexp_split_to_table", 2): f"explode({_REGEX['regexp_split']}({{0}}, {{1}}, '', 'regexp_split_to_table'))",
    ("regexp_split_to_table", 3):
        f"explode({_REGEX['regexp_split']}({{0}}, {{1}}, {{2}}, 'regexp_split_to_table'))",
    ("like_escape", 2): f"{UDF_NAMES['like_escape']}({{0}}, {{1}}, false)",
    ("encode", 2): f"{UDF_NAMES['encode']}({{0}}, {{1}})",
    ("decode", 2): f"{UDF_NAMES['decode']}({{0}}, {{1}})",
    ("overlay", 4): OVERLAY,
    ("overlay", 3): OVERLAY_TO_END,
    ("string_to_array", 2): f"{UDF_NAMES['string_to_array']}({{0}}, {{1}})",
    ("string_to_array", 3): f"{UDF_NAMES['string_to_array']}({{0}}, {{1}}, {{2}})",
    ("quote_literal", 1): QUOTE_LITERAL,
    ("chr", 1): f"{UDF_NAMES['chr']}({{0}})",
    ("substring", 2): f"{_REGEX['substring']}({{0}}, {{1}})",  # substring(s FROM pattern)
    ("substring", 3): f"{_REGEX['substring_similar']}({{0}}, {{1}}, {{2}})",  # s SIMILAR p ESCAPE e
    ("similar_to_escape", 1): f"{_REGEX['similar_to_escape']}({{0}})",
    ("similar_to_escape", 2): f"{_REGEX['similar_to_escape']}({{0}}, {{1}})",
}

# LIKE's pattern from `x LIKE p ESCAPE e`, as Spark's LIKE reads it (spark_sql: the operand
# of ~~ and its kin that is a like_escape call).
LIKE_ESCAPE_FOR_SPARK = f"{UDF_NAMES['like_escape']}({{0}}, {{1}}, true)"
# `x SIMILAR TO p` is `x ~ similar_to_escape(p)`: matched as ARE matches (spark_sql writes
# it so for ~ and !~ of a similar_to_escape call), not by Spark's rlike, whose . skips a
# newline and whose $ matches before a last one.
SIMILAR_MATCH = f"{_REGEX['regexp_like']}({{0}}, {{1}})"


# Arguments written as they are; any other is parenthesized (an operator inside a template's own).
_ATOMS = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Null, exp.Boolean)


@lru_cache(maxsize=64)
def _parsed(template: str) -> exp.Expression:
    text = template
    for i in range(4):
        text = text.replace(f"{{{i}}}", f"__sw_arg{i}")
    return sqlglot.parse_one(text, read="spark")


def template_call(template: str, args: list[exp.Expression]) -> exp.Expression:
    """`template` with the arguments' Spark SQL in place of {0}, {1}, ..."""
    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name.startswith("__sw_arg"):
            arg = args[int(node.name[len("__sw_arg"):])].copy()
            return arg if isinstance(arg, _ATOMS) else exp.Paren(this=arg)
        return node

    return _parsed(template).copy().transform(fill)


def _sqlglot_args(node: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """The PostgreSQL name and arguments of a call as sqlglot parsed it, if it is one here."""
    if isinstance(node, exp.RegexpReplace):
        args = [node.this, node.expression, node.args.get("replacement")]
        if node.args.get("occurrence") is not None:
            return None
        # sqlglot takes a fourth argument that is no string constant for a start position;
        # the catalog's four-argument form has the flags there
        flags = node.args.get("modifiers") or node.args.get("position")
        return "regexp_replace", args + ([flags] if flags is not None else [])
    if isinstance(node, exp.Chr) and len(node.expressions) == 1:
        return "chr", list(node.expressions)
    if isinstance(node, (exp.Encode, exp.Decode)):
        return ("encode" if isinstance(node, exp.Encode) else "decode"), [node.this, node.args.get("charset")]
    if isinstance(node, exp.Overlay):
        args = [node.this, node.expression, node.args.get("from_")]
        return "overlay", args + ([node.args["for_"]] if node.args.get("for_") is not None else [])
    if isinstance(node, exp.StringToArray):
        return "string_to_array", [node.this, node.expression] + (
            [node.args["null"]] if node.args.get("null") is not None else [])
    start, length = node.args.get("start"), node.args.get("length")
    if isinstance(node, exp.Substring) and isinstance(start, exp.Literal) and start.is_string:
        if length is None:
            return "substring", [node.this, start]  # substring(s FROM 'pattern')
        if isinstance(length, exp.Literal) and length.is_string:
            return "substring", [node.this, start, length]  # substring(s, 'pattern', 'escape')
    if isinstance(node, exp.Anonymous) and node.name.lower() in _ANONYMOUS:
        return node.name.lower(), list(node.expressions)
    return None


_ANONYMOUS = frozenset(("regexp_match", "regexp_split_to_array", "quote_literal", "like_escape",
                        "similar_to_escape"))


def _similar_to(node: exp.Expression) -> exp.Expression | None:
    """`x SIMILAR TO p [ESCAPE e]` as the front end of our own writes it."""
    if isinstance(node, exp.SimilarTo) and not isinstance(node.parent, exp.Escape):
        pattern = template_call(TEMPLATES["similar_to_escape", 1], [node.expression])
    elif isinstance(node, exp.Escape) and isinstance(node.this, exp.SimilarTo):
        pattern = template_call(TEMPLATES["similar_to_escape", 2], [node.this.expression, node.expression])
        node = node.this
    else:
        return None
    return template_call(SIMILAR_MATCH, [node.this, pattern])


def sqlglot_rewrite(node: exp.Expression) -> exp.Expression | None:
    """The sqlglot path's call of a function here, as the catalog's template; None for
    anything else. Spark's functions of the same names (regexp_replace replaces every
    match, chr takes n mod 256, encode/decode convert character sets) must not be reached."""
    if isinstance(node, exp.Format):
        # Not Spark's format_string (Java's): the UDF, over each argument's text once the
        # types are known (planner.pg_functions.typed writes them)
        call = exp.Anonymous(this=FORMAT_UDF, expressions=[
            node.this.copy(), exp.Array(expressions=[a.copy() for a in node.expressions])])
        call.meta["pg_format"] = True
        return call
    similar = _similar_to(node)
    if similar is not None:
        return similar
    found = _sqlglot_args(node)
    if found is None:
        return None
    name, args = found
    template = TEMPLATES.get((name, len(args)))
    if template is None or any(a is None for a in args):
        raise SqlError("0A000", f"this form of {name} is not supported")
    call = template_call(template, args)
    if name in _ARRAY_RESULTS:
        call.meta["pg_array"] = True  # an array, though sqlglot cannot type it (for array::text)
    return call


_ARRAY_RESULTS = frozenset(("regexp_match", "regexp_split_to_array", "string_to_array"))


_SPLIT_TABLE = "regexp_split_to_table"


def _split_array(call: exp.Anonymous) -> exp.Expression:
    args = list(call.expressions)
    if len(args) not in (2, 3):
        raise SqlError("42883", f"function {_SPLIT_TABLE} with these arguments does not exist")
    flags = args[2] if len(args) == 3 else exp.Literal.string("")
    return exp.Anonymous(this=pg_regex.UDF_NAMES["regexp_split"],
                         expressions=[args[0].copy(), args[1].copy(), flags.copy(), exp.Literal.string(_SPLIT_TABLE)])


def _is_split_table(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == _SPLIT_TABLE


def set_returning_calls(tree: exp.Expression) -> None:
    """regexp_split_to_table(s, pattern [, flags]) on the sqlglot path: unnest of the pieces'
    array, which that path runs in FROM (named as PostgreSQL names a function's column) and
    in a select list (changed in place, before the path's own set-returning rewrites)."""
    for table in list(tree.find_all(exp.Table)):
        if _is_split_table(table.this):
            alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(_SPLIT_TABLE),
                                                              columns=[exp.to_identifier(_SPLIT_TABLE)])
            table.replace(exp.Unnest(expressions=[_split_array(table.this)], alias=alias))
    for call in list(tree.find_all(exp.Anonymous)):
        if _is_split_table(call):
            call.replace(exp.Explode(this=_split_array(call)))
