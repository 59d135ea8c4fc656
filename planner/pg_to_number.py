"""to_number(text, format) as PostgreSQL 15 reads it (formatting.c's NUM patterns, read side).

Pure. The format is parsed by the to_char side (`pg_to_char_num`), which already gives
PostgreSQL's nodes and its syntax errors for bad formats; this module walks those nodes over
the input the way PostgreSQL's reader does, collecting a sign and digits into a string that
is then checked as numeric input with the precision and scale the format implies.

The reader is forgiving in PostgreSQL's particular ways, and the walk keeps them because
callers compare results with a real server: a literal character in the format skips one
input character whatever it is, a digit position may pick up the sign or the decimal point,
the input is abandoned as soon as it runs out, and anything after the last format node is
ignored. The input is walked as UTF-8 bytes because PostgreSQL sometimes steps one byte at
a time; the C locale is assumed (decimal point ".", group separator ",", signs "+"/"-").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal

from planner.encoding import utf8_length
from planner.errors import (
    FEATURE_NOT_SUPPORTED,
    INVALID_TEXT_REPRESENTATION,
    NUMERIC_VALUE_OUT_OF_RANGE,
    SqlError,
)
from planner.pg_to_char_num import (
    BRACKET,
    DECIMAL,
    EEEE,
    FILL,
    LSIGN,
    MINUS,
    MULTI,
    PLUS,
    ROMAN,
    SIGN_PRE,
    NumDesc,
    parse_format,
)

# Exact arithmetic: the product below must never be rounded by Decimal's default context.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
# numeric's power(10, -n) is computed to this many decimals, and V scales by it.
_POWER_SCALE = 16
_DIGITS = b"0123456789"
# Characters the L/TH/MI/PL/SG patterns refuse to skip: they may be part of the number.
_DATA = b"0123456789.,+-"


@dataclass
class _Reader:
    """The walk's state: where we are in the input and what has been collected."""

    data: bytes
    desc: NumDesc
    pos: int = 0
    sign: str = " "  # PostgreSQL keeps the sign in the first byte of the number
    digits: list[str] = field(default_factory=list)
    read_pre: int = 0
    read_post: int = 0
    read_dec: bool = False

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def byte(self, offset: int = 0) -> int:
        return self.data[self.pos + offset]

    def has(self, flag: int) -> bool:
        return self.desc.has(flag)


def _eat_non_data(r: _Reader, count: int) -> None:
    """Skip up to `count` characters, stopping at anything that could be number data."""
    for _ in range(count):
        if r.at_end() or r.byte() in _DATA:
            return
        r.pos += utf8_length(r.byte())


def _read_leading_sign(r: _Reader) -> None:
    """Before the first digit a digit position may take a sign ("<" with PR)."""
    char = r.byte()
    if r.has(LSIGN) and r.desc.lsign == SIGN_PRE:
        if char in b"-+":
            r.sign = chr(char)
            r.pos += 1
    elif char == ord("-") or (r.has(BRACKET) and char == ord("<")):
        r.sign = "-"
        r.pos += 1
    elif char == ord("+"):
        r.sign = "+"
        r.pos += 1


def _read_digit_or_point(r: _Reader) -> bool | None:
    """One digit or the decimal point; None when the format's decimals are used up."""
    char = r.byte()
    if char in _DIGITS:
        if r.read_dec and r.read_post == r.desc.post:
            return None
        r.digits.append(chr(char))
        if r.read_dec:
            r.read_post += 1
        else:
            r.read_pre += 1
        return True
    if r.has(DECIMAL) and not r.read_dec and char == ord("."):
        r.digits.append(".")
        r.read_dec = True
        return True
    return False


def _read_trailing_sign(r: _Reader, isread: bool) -> None:
    """A sign written after the number: S right behind a digit, or a loose MI/PL/SG sign."""
    if r.has(LSIGN):
        if isread and r.pos + 1 < len(r.data) and r.byte(1) not in _DIGITS and r.byte(1) in b"-+":
            r.pos += 1
            r.sign = chr(r.byte())
    elif not isread and r.desc.flags & (PLUS | MINUS) and r.byte() in b"-+":
        r.sign = chr(r.byte())  # the caller's step moves past it


def _numpart(r: _Reader, key: str) -> None:
    """What a 9, 0, "." or D position reads: maybe a space, a sign, a digit or the point."""
    if r.at_end():
        return
    if r.byte() == ord(" "):
        r.pos += 1
    if r.at_end():
        return
    if r.sign == " " and key in ("9", "0") and r.read_pre + r.read_post == 0:
        _read_leading_sign(r)
    if r.at_end():
        return
    isread = _read_digit_or_point(r)
    if isread is None or r.at_end():
        return
    if r.sign == " " and r.read_pre + r.read_post > 0:
        _read_trailing_sign(r, isread)


def _group(r: _Reader) -> bool:
    """"," and G skip a comma if there is one; under FM they never consume anything."""
    return not r.has(FILL) and r.byte() == ord(",")


def _sign_char(r: _Reader, accepted: bytes) -> bool:
    """MI/PL/SG: take the sign if it is there, else skip one non-data character."""
    if r.byte() in accepted:
        r.sign = chr(r.byte())
        return True
    _eat_non_data(r, 1)
    return False


def _action(r: _Reader, key: str) -> None:
    """Apply one pattern node; whether it consumed the byte under it decides the step."""
    step = False
    if key in ("9", "0", ".", "D"):
        _numpart(r, key)
        step = True
    elif key in (",", "G"):
        step = _group(r)
    elif key == "L":
        _eat_non_data(r, 1)  # the C locale's currency symbol is one character
    elif key in ("TH", "th"):
        if not r.has(DECIMAL):
            _eat_non_data(r, 2)
    elif key == "MI":
        step = _sign_char(r, b"-")
    elif key == "PL":
        step = _sign_char(r, b"+")
    elif key == "SG":
        step = _sign_char(r, b"-+")
    if step:
        r.pos += 1


def _walk(text: str, nodes: list[tuple[bool, str]], desc: NumDesc) -> _Reader:
    r = _Reader(text.encode("utf-8"), desc)
    for is_keyword, key in nodes:
        if r.at_end():
            break
        if is_keyword:
            _action(r, key)
        else:
            # a literal skips one input character, whether or not it matches
            r.pos += utf8_length(r.byte())
    return r


def _number_text(r: _Reader) -> str:
    return r.sign + "".join(r.digits).removesuffix(".")


def _check_precision(value: Decimal, precision: int, scale: int) -> None:
    """numeric_in's typmod check: no more integer digits than precision - scale."""
    if value.is_zero():
        return
    integer_digits = max(value.adjusted() + 1, 0)
    maxdigits = precision - scale
    if integer_digits > maxdigits:
        limit = f"10^{maxdigits}" if maxdigits else "1"
        raise SqlError(
            NUMERIC_VALUE_OUT_OF_RANGE,
            "numeric field overflow",
            detail=f"A field with precision {precision}, scale {scale} must round to an "
            f"absolute value less than {limit}.",
        )


def _to_decimal(number: str, precision: int, scale: int) -> Decimal:
    body = number[1:]
    if not any(c.isdigit() for c in body):
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type numeric: "{number}"')
    value = Decimal(number.strip())
    _check_precision(value, precision, scale)
    if value.is_zero():
        value = value.copy_abs()  # numeric has no negative zero
    return value


def _apply_multiplier(value: Decimal, multi: int) -> Decimal:
    """V: numeric multiplies by power(10, -n), which has 16 decimals (0 once n > 16)."""
    factor = Decimal(1).scaleb(-multi) if multi <= _POWER_SCALE else Decimal(0)
    factor = factor.quantize(Decimal(1).scaleb(-_POWER_SCALE))
    product = _EXACT.multiply(value, factor)
    return product.copy_abs() if product.is_zero() else product


def to_number(text: str, fmt: str) -> Decimal:
    """PostgreSQL 15's to_number(text, text)."""
    if not fmt:
        raise SqlError(FEATURE_NOT_SUPPORTED, "to_number with an empty format (NULL in PostgreSQL) is not supported")
    if "\x00" in text or "\x00" in fmt:
        raise SqlError(FEATURE_NOT_SUPPORTED, "to_number of text containing NUL bytes is not supported")
    nodes, desc = parse_format(fmt)
    if desc.has(EEEE):
        raise SqlError(FEATURE_NOT_SUPPORTED, '"EEEE" not supported for input')
    if desc.has(ROMAN):
        raise SqlError(FEATURE_NOT_SUPPORTED, '"RN" not supported for input')
    r = _walk(text, nodes, desc)
    scale = r.read_post
    precision = desc.pre + desc.multi + scale
    value = _to_decimal(_number_text(r), precision, scale)
    if desc.has(MULTI):
        value = _apply_multiplier(value, desc.multi)
    return value


# The UDF (spark_backend.string_udfs) and the catalog's Spark SQL. A top-level select-list
# call arrives as PostgreSQL's text (its scale is the input's, value by value:
# planner.sql.value_scale); elsewhere the value is a DECIMAL(38,10), so one needing more
# digits after the point is refused there rather than rounded.
UDF_NAME = "sparkwire_to_number"
TEMPLATE = f"cast({UDF_NAME}({{0}}, {{1}}, true) as decimal(38,10))"
TEXT_TEMPLATE = f"{UDF_NAME}({{0}}, {{1}}, false)"
_STORED_SCALE = Decimal(1).scaleb(-10)


def from_text(text: str | None, fmt: str | None, nested: bool) -> str | None:
    """The UDF: to_number's value as text; NULL for a NULL argument or an empty format."""
    if text is None or fmt is None or fmt == "":
        return None
    value = to_number(text, fmt)
    if nested and value != value.quantize(_STORED_SCALE, context=_EXACT):
        raise SqlError(FEATURE_NOT_SUPPORTED, "to_number of a value with more than 10 digits after the point "
                                              "inside an expression is not supported")
    return f"{value:f}"
