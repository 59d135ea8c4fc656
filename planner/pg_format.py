"""PostgreSQL's format(formatstr, VARIADIC "any"): %s, %I, %L and %%, argument positions
(`%2$s`), widths (`%10s`, `%-10s`, `%*s`, `%*2$s`), ported from varlena.c's text_format
with its error texts.

Pure. Spark runs `format` as a Python UDF (`spark_backend.string_udfs`, under UDF_NAME)
over the format string and the arguments' text, which the front end of our own writes
by each argument's type as concat's (its output function: t/f for a boolean, float8out,
a numeric at its scale, ...). The sqlglot path knows the types of fewer expressions and
takes text, integer, boolean and float arguments only (planner.pg_functions).
"""

from __future__ import annotations

from pglast.keywords import COL_NAME_KEYWORDS, RESERVED_KEYWORDS, TYPE_FUNC_NAME_KEYWORDS
from sqlglot import exp

from planner.errors import INVALID_PARAMETER_VALUE, NUMERIC_VALUE_OUT_OF_RANGE, SqlError

UDF_NAME = "sparkwire_format"
TEMPLATE_NO_ARGS = f"{UDF_NAME}({{0}}, cast(array() as array<string>))"
# The catalog's sample, for one integer argument: the front ends write every argument so.
TEMPLATE = f"{UDF_NAME}({{0}}, cast(array(cast({{1}} as string)) as array<string>))"

_NULL_VALUE_NOT_ALLOWED = "22004"
_HINT_PERCENT = 'For a single "%" use "%%".'
_INT_MAX = 2**31 - 1


def _unterminated() -> SqlError:
    return SqlError(INVALID_PARAMETER_VALUE, "unterminated format() type specifier", hint=_HINT_PERCENT)


class _Cursor:
    def __init__(self, text: str, i: int) -> None:
        self.text, self.i = text, i

    def char(self) -> str:
        return self.text[self.i]

    def advance(self) -> None:
        self.i += 1
        if self.i >= len(self.text):
            raise _unterminated()

    def digits(self) -> int | None:
        start, n = self.i, 0
        while self.char().isascii() and self.char().isdigit():
            n = n * 10 + int(self.char())
            if n > _INT_MAX:
                raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "number is out of range")
            self.advance()
        return n if self.i > start else None


def _argument_zero() -> SqlError:
    return SqlError(INVALID_PARAMETER_VALUE, "format specifies argument 0, but arguments are numbered from 1")


def _spec(c: _Cursor) -> tuple[int, int, bool, int]:
    """(argument position, width's argument position, left-justified, width): 0 for none,
    -1 for the width's position when it is not indirect (text_format_parse_format)."""
    argpos, widthpos, left, width = 0, -1, False, 0
    n = c.digits()
    if n is not None:
        if c.char() != "$":
            return argpos, widthpos, left, n
        if n == 0:
            raise _argument_zero()
        argpos = n
        c.advance()
    while c.char() == "-":
        left = True
        c.advance()
    if c.char() == "*":
        c.advance()
        n = c.digits()
        if n is not None:
            if c.char() != "$":
                raise SqlError(INVALID_PARAMETER_VALUE, 'width argument position must be ended by "$"')
            if n == 0:
                raise _argument_zero()
            widthpos = n
            c.advance()
        else:
            widthpos = 0
    else:
        n = c.digits()
        if n is not None:
            width = n
    return argpos, widthpos, left, width


def quote_identifier(name: str) -> str:
    """ruleutils.c's quote_identifier: as is when lower case letters, digits and _ (not
    first a digit) and not a keyword other than an unreserved one; else double-quoted."""
    safe = bool(name) and (name[0] == "_" or "a" <= name[0] <= "z") and all(
        ch == "_" or "a" <= ch <= "z" or "0" <= ch <= "9" for ch in name)
    if safe and name in _QUOTED_KEYWORDS:
        safe = False
    return name if safe else '"' + name.replace('"', '""') + '"'


_QUOTED_KEYWORDS = RESERVED_KEYWORDS | TYPE_FUNC_NAME_KEYWORDS | COL_NAME_KEYWORDS


def quote_literal(value: str) -> str:
    body = value.replace("'", "''")
    if "\\" in value:
        return "E'" + body.replace("\\", "\\\\") + "'"
    return "'" + body + "'"


def _pad(text: str, left: bool, width: int) -> str:
    return text.ljust(width) if left else text.rjust(width)


def pg_format(fmt: str | None, args: list[str | None] | None) -> str | None:
    """format(formatstr, args...) with each argument given as its text (None: NULL)."""
    if fmt is None:
        return None
    values = list(args or [])
    out: list[str] = []
    arg = 0
    i, n = 0, len(fmt)
    while i < n:
        ch = fmt[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        c = _Cursor(fmt, i)
        c.advance()
        if c.char() == "%":
            out.append("%")
            i = c.i + 1
            continue
        argpos, widthpos, left, width = _spec(c)
        conversion = c.char()
        if conversion not in "sIL":
            raise SqlError(INVALID_PARAMETER_VALUE, f'unrecognized format() type specifier "{conversion}"',
                           hint=_HINT_PERCENT)
        if widthpos >= 0:
            arg = widthpos if widthpos > 0 else arg + 1
            if arg > len(values):
                raise SqlError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
            given = values[arg - 1]
            width = 0 if given is None else _integer(given)
            if width < 0:
                left, width = True, -width
        arg = argpos if argpos > 0 else arg + 1
        if arg > len(values):
            raise SqlError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
        value = values[arg - 1]
        if value is None:
            if conversion == "I":
                raise SqlError(_NULL_VALUE_NOT_ALLOWED, "null values cannot be formatted as an SQL identifier")
            out.append(_pad("NULL" if conversion == "L" else "", left, width))
        else:
            shown = quote_identifier(value) if conversion == "I" else quote_literal(value) if conversion == "L" \
                else value
            out.append(_pad(shown, left, width))
        i = c.i + 1
    return "".join(out)


def _integer(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise SqlError("22P02", f'invalid input syntax for type integer: "{text}"') from None
    if not -(2**31) <= value <= _INT_MAX:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'value "{text}" is out of range for type integer')
    if value == -(2**31):
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "number is out of range")
    return value


def call(args: list[exp.Expression]) -> exp.Expression:
    """The UDF call of format(fmt, args...), the arguments already their text."""
    rest = exp.Cast(this=exp.Array(expressions=args[1:]), to=exp.DataType.build("ARRAY<STRING>"))
    return exp.Anonymous(this=UDF_NAME, expressions=[args[0], rest])
