"""to_char(number, format) as PostgreSQL 15 writes it (formatting.c's NUM patterns).

Pure. The format is read once into pattern nodes and a description of the number it asks
for (digits before and after the decimal point, which sign style, fill mode ...), with the
same checks, SQLSTATEs and messages PostgreSQL gives for formats it rejects. The value is
then turned into a digit string the way the argument's SQL type does it in PostgreSQL
(numeric rounds half away from zero; real and double precision go through printf, which
rounds the exact binary value half to even, and give up decimals to stay within 6 / 15
significant digits; integers are exact), and the nodes are walked left to right writing digits,
signs, separators and literal text.

The walk deliberately keeps PostgreSQL's quirks, because clients compare text: a "." is
written even when FM leaves no digits after it (`FM99.99` of 12 gives `12.`), a format with
more digits than the value has room for gets `#`s, and when the digit string runs out
before the format does (a real's digits are cut at 6) PostgreSQL writes a NUL byte, which
ends its result there; we cut the text at the same place.

The C locale is assumed (lc_numeric and lc_monetary C or C.UTF-8): the decimal point is `.`,
the group separator `,`, the signs `+`/`-`, and `L` prints one space because the C locale
has no currency symbol.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_HALF_UP, Context, Decimal

from planner.errors import (
    FEATURE_NOT_SUPPORTED,
    INVALID_TEXT_REPRESENTATION,
    NUMERIC_VALUE_OUT_OF_RANGE,
    SYNTAX_ERROR,
    SqlError,
)

KINDS = ("numeric", "integer", "bigint", "real", "double precision")
_FLOAT_KINDS = ("real", "double precision")

# Exact decimal arithmetic: big enough that no operation here ever rounds by accident; the
# only rounding is the explicit quantize, half away from zero as numeric's round() does.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_HALF_UP)

# Flag bits of the number description.
DECIMAL, ZERO, BLANK, FILL, LSIGN, BRACKET = 1, 2, 4, 8, 16, 32
MINUS, PLUS, ROMAN, MULTI, EEEE = 64, 128, 256, 512, 1024

# Where an "S" puts its sign: before the first digit or after the last one.
SIGN_NONE, SIGN_PRE, SIGN_POST = 0, -1, 1

# The pattern keywords, by the text that selects them. Where several start with the same
# character the first one listed that matches wins (so "SG" before "S"); a case-folded
# keyword means the same as its upper-case one except for rn/th, which print lower case.
_KEYWORDS: tuple[tuple[str, str], ...] = (
    (",", ","), (".", "."), ("0", "0"), ("9", "9"), ("B", "B"), ("C", "C"), ("D", "D"),
    ("EEEE", "EEEE"), ("FM", "FM"), ("G", "G"), ("L", "L"), ("MI", "MI"), ("PL", "PL"),
    ("PR", "PR"), ("RN", "RN"), ("SG", "SG"), ("SP", "SP"), ("S", "S"), ("TH", "TH"),
    ("V", "V"), ("b", "B"), ("c", "C"), ("d", "D"), ("eeee", "EEEE"), ("fm", "FM"),
    ("g", "G"), ("l", "L"), ("mi", "MI"), ("pl", "PL"), ("pr", "PR"), ("rn", "rn"),
    ("sg", "SG"), ("sp", "SP"), ("s", "S"), ("th", "th"), ("v", "V"),
)

_FLT_DIG, _DBL_DIG = 6, 15
# PostgreSQL's own printf asks the C library for at most this many digits after the point
# and pads any more with zeros.
_PRINTF_MAX_PRECISION = 350
# numeric's round() will not keep more decimals than this (numeric's largest display scale).
_NUMERIC_MAX_SCALE = 16383
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_ROMAN_DIGITS = (
    ("", "M", "MM", "MMM"),
    ("", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"),
    ("", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"),
    ("", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"),
)


@dataclass
class NumDesc:
    """What the format asks for. Counting happens while parsing; the value's preparation
    and the walk then adjust it (V adds its digits to `pre`, a real may lose `post`)."""

    flags: int = 0
    pre: int = 0  # digit positions before the decimal point
    post: int = 0  # digit positions after it
    lsign: int = SIGN_NONE
    pre_lsign: int = 0  # `pre` when the S was seen
    multi: int = 0  # digits after V: the value is multiplied by 10**multi
    zero_start: int = 0  # 1-based position of the first 0 before the point (0: none)
    zero_end: int = 0  # digit positions up to and including the last 0

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)


def _syntax(message: str, detail: str | None = None) -> SqlError:
    return SqlError(SYNTAX_ERROR, message, detail=detail)


# --- reading the format ---------------------------------------------------------------

def _keyword_at(fmt: str, pos: int) -> str | None:
    """The keyword (its text) that starts at `pos`, if any."""
    for text, _ in _KEYWORDS:
        if fmt.startswith(text, pos):
            return text
    return None


def parse_format(fmt: str) -> tuple[list[tuple[bool, str]], NumDesc]:
    """The format's nodes, each (is_keyword, keyword id or literal text), and the number
    description, raising PostgreSQL's error for a format it rejects."""
    ids = dict(_KEYWORDS)
    nodes: list[tuple[bool, str]] = []
    desc = NumDesc()
    pos = 0
    while pos < len(fmt):
        text = _keyword_at(fmt, pos)
        if text is not None:
            _describe(desc, ids[text])
            nodes.append((True, ids[text]))
            pos += len(text)
        elif fmt[pos] == '"':
            pos = _quoted(fmt, pos + 1, nodes)
        else:
            # outside quotes a backslash is only special in front of a double quote
            if fmt[pos] == "\\" and fmt.startswith('"', pos + 1):
                pos += 1
            nodes.append((False, fmt[pos]))
            pos += 1
    return nodes, desc


def _quoted(fmt: str, pos: int, nodes: list[tuple[bool, str]]) -> int:
    """Copy double-quoted text from `pos` (after the opening quote) into literal nodes;
    a backslash takes the next character as it is. Returns the position after the quote."""
    while pos < len(fmt):
        char = fmt[pos]
        if char == '"':
            return pos + 1
        if char == "\\" and pos + 1 < len(fmt):
            pos += 1
        nodes.append((False, fmt[pos]))
        pos += 1
    return pos


def _describe(desc: NumDesc, key: str) -> None:
    """Account for one keyword in the description, checking it against the ones before."""
    if desc.has(EEEE) and key != "EEEE":
        raise _syntax('"EEEE" must be the last pattern used')
    handler = _DESCRIBERS.get(key)
    if handler is not None:
        handler(desc)


def _describe_nine(desc: NumDesc) -> None:
    if desc.has(BRACKET):
        raise _syntax('"9" must be ahead of "PR"')
    if desc.has(MULTI):
        desc.multi += 1
    elif desc.has(DECIMAL):
        desc.post += 1
    else:
        desc.pre += 1


def _describe_zero(desc: NumDesc) -> None:
    if desc.has(BRACKET):
        raise _syntax('"0" must be ahead of "PR"')
    if not desc.has(ZERO) and not desc.has(DECIMAL):
        desc.flags |= ZERO
        desc.zero_start = desc.pre + 1
    # unlike 9, a 0 after V is an ordinary digit position
    if desc.has(DECIMAL):
        desc.post += 1
    else:
        desc.pre += 1
    desc.zero_end = desc.pre + desc.post


def _describe_blank(desc: NumDesc) -> None:
    # B prints nothing; PostgreSQL only notes it to refuse it next to EEEE
    if desc.pre == 0 and desc.post == 0 and not desc.has(ZERO):
        desc.flags |= BLANK


def _describe_point(desc: NumDesc) -> None:
    if desc.has(DECIMAL):
        raise _syntax("multiple decimal points")
    if desc.has(MULTI):
        raise _syntax('cannot use "V" and decimal point together')
    desc.flags |= DECIMAL


def _describe_s(desc: NumDesc) -> None:
    if desc.has(LSIGN):
        raise _syntax('cannot use "S" twice')
    if desc.flags & (PLUS | MINUS | BRACKET):
        raise _syntax('cannot use "S" and "PL"/"MI"/"SG"/"PR" together')
    if not desc.has(DECIMAL):
        desc.lsign = SIGN_PRE
        desc.pre_lsign = desc.pre
    else:
        desc.lsign = SIGN_POST
    desc.flags |= LSIGN


def _sign_pattern(name: str, flags: int) -> Callable[[NumDesc], None]:
    def describe(desc: NumDesc) -> None:
        if desc.has(LSIGN):
            raise _syntax(f'cannot use "S" and "{name}" together')
        desc.flags |= flags
    return describe


def _describe_pr(desc: NumDesc) -> None:
    if desc.flags & (LSIGN | PLUS | MINUS):
        raise _syntax('cannot use "PR" and "S"/"PL"/"MI"/"SG" together')
    desc.flags |= BRACKET


def _describe_v(desc: NumDesc) -> None:
    if desc.has(DECIMAL):
        raise _syntax('cannot use "V" and decimal point together')
    desc.flags |= MULTI


def _describe_eeee(desc: NumDesc) -> None:
    if desc.has(EEEE):
        raise _syntax('cannot use "EEEE" twice')
    if desc.flags & (BLANK | FILL | LSIGN | BRACKET | MINUS | PLUS | ROMAN | MULTI):
        raise _syntax('"EEEE" is incompatible with other formats',
                      '"EEEE" may only be used together with digit and decimal point patterns.')
    desc.flags |= EEEE


def _set_flag(flag: int) -> Callable[[NumDesc], None]:
    def describe(desc: NumDesc) -> None:
        desc.flags |= flag
    return describe


_DESCRIBERS = {
    "9": _describe_nine, "0": _describe_zero, "B": _describe_blank, ".": _describe_point,
    "D": _describe_point, "FM": _set_flag(FILL), "S": _describe_s,
    "MI": _sign_pattern("MI", MINUS), "PL": _sign_pattern("PL", PLUS),
    "SG": _sign_pattern("SG", MINUS | PLUS), "PR": _describe_pr, "RN": _set_flag(ROMAN),
    "rn": _set_flag(ROMAN), "V": _describe_v, "EEEE": _describe_eeee,
}


# --- turning the value into a digit string --------------------------------------------

@dataclass
class _Digits:
    """The value as the walk consumes it: unsigned digits (with a "." when the format has
    decimals), or `#`s on overflow, or a Roman numeral, or the finished EEEE text."""

    text: str
    sign: str = "+"  # "+", "-", or "" for a Roman numeral
    pre_spaces: int = 0  # format digit positions left of the value's first digit


def _hashes(desc: NumDesc) -> str:
    """What an overflowing value prints as: a # per digit position, "." between."""
    return "#" * desc.pre + "." + "#" * desc.post


def _place(desc: NumDesc, signed: str) -> _Digits:
    """Split a printed number ("-12.50") into sign and digits and fit it to the format."""
    sign = "-" if signed.startswith("-") else "+"
    digits = signed[1:] if sign == "-" else signed
    whole = digits.find(".")
    whole_len = len(digits) if whole < 0 else whole
    if whole_len < desc.pre:
        return _Digits(digits, sign, desc.pre - whole_len)
    if whole_len > desc.pre:
        return _Digits(_hashes(desc), sign)
    return _Digits(digits, sign)


def _roman(number: int) -> str:
    """Upper-case Roman numeral; PostgreSQL (like Oracle) only writes 1..3999."""
    if not 1 <= number <= 3999:
        return "#" * 15
    text = f"{number:04d}"
    return "".join(_ROMAN_DIGITS[i][int(d)] for i, d in enumerate(text))


def _sci_numeric(value: Decimal, post: int) -> str:
    """numeric's scientific text: the exponent is taken from the exact value before the
    significand is rounded, so 9.999 to two places gives 10.00e+00 as PostgreSQL does."""
    if value.is_nan() or value.is_infinite():
        return ""
    if value.is_zero():
        exponent = 0
        significand = Decimal(0)
    else:
        exponent = value.adjusted()
        significand = value.scaleb(-exponent, _EXACT)
    rounded = significand.quantize(Decimal(1).scaleb(-post), context=_EXACT)
    text = _plain(rounded)
    return f"{text if text.startswith('-') else ' ' + text}e{exponent:+03d}"


def _plain(value: Decimal) -> str:
    """numeric_out's text: no exponent, no negative zero."""
    text = format(value, "f")
    return text[1:] if value.is_zero() and text.startswith("-") else text


def _nonfinite_sci(desc: NumDesc) -> str:
    """What EEEE prints for NaN or an infinity: #s shaped like d.ddde+dd."""
    chars = ["#"] * (desc.pre + desc.post + 6)
    chars[0] = " "
    chars[desc.pre + 1] = "."
    return "".join(chars)


def _numeric_digits(value: Decimal, desc: NumDesc) -> _Digits:
    if desc.has(ROMAN):
        return _Digits(_roman(_numeric_to_int4(value)), "")
    if desc.has(EEEE):
        sci = _sci_numeric(value, desc.post)
        return _Digits(sci or _nonfinite_sci(desc))
    if desc.has(MULTI):
        if value.is_finite():
            value = value.scaleb(desc.multi, _EXACT)
        desc.pre += desc.multi
    if value.is_nan():
        return _place(desc, "NaN")
    if value.is_infinite():
        return _place(desc, "-Infinity" if value < 0 else "Infinity")
    scale = min(desc.post, _NUMERIC_MAX_SCALE)
    return _place(desc, _plain(value.quantize(Decimal(1).scaleb(-scale), context=_EXACT)))


def _numeric_to_int4(value: Decimal) -> int:
    """numeric's cast to integer, with its errors."""
    if value.is_nan():
        raise SqlError(FEATURE_NOT_SUPPORTED, "cannot convert NaN to integer")
    if value.is_infinite():
        raise SqlError(FEATURE_NOT_SUPPORTED, "cannot convert infinity to integer")
    number = int(value.quantize(Decimal(1), context=_EXACT))
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
    return number


def _wrap32(number: int) -> int:
    """int32 arithmetic as PostgreSQL's C code (built with -fwrapv) does it."""
    return (number + 2**31) % 2**32 - 2**31


def _with_decimals(desc: NumDesc, value: int) -> _Digits:
    """An integer printed exactly, with the format's decimals as zeros."""
    text = str(value)
    if desc.post:
        text += "." + "0" * desc.post
    return _place(desc, text)


def _int4_digits(value: int, desc: NumDesc) -> _Digits:
    if desc.has(ROMAN):
        return _Digits(_roman(value), "")
    if desc.has(EEEE):
        return _Digits(_printf_e(desc.post, float(value)))
    if desc.has(MULTI):
        # PostgreSQL casts 10**multi to int32 (past 10**9 the x86 conversion gives
        # INT32_MIN) and multiplies with wraparound, without an overflow check
        factor = 10**desc.multi if desc.multi <= 9 else _INT32_MIN
        value = _wrap32(value * factor)
        desc.pre += desc.multi
    return _with_decimals(desc, value)


def _int8_digits(value: int, desc: NumDesc) -> _Digits:
    if desc.has(ROMAN):
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
        return _Digits(_roman(value), "")
    if desc.has(EEEE):
        return _Digits(_sci_numeric(Decimal(value), desc.post))
    if desc.has(MULTI):
        # 10**multi goes through float8 -> int8 and an overflow-checked multiply
        factor = _pow10(desc.multi)
        if not -9.2233720368547758e18 <= factor < 9.2233720368547758e18:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range")
        value *= int(factor)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range")
        desc.pre += desc.multi
    return _with_decimals(desc, value)


# The exponents where glibc's pow(10, n), which PostgreSQL calls, is one unit in the last
# place above the correctly rounded 10**n that Python's float('1eN') gives.
_POW10_ABOVE_NEAREST = frozenset((23, 210))


def _pow10(exponent: int) -> float:
    """pow(10.0, exponent) as glibc computes it (infinity past float8's range)."""
    nearest = float(f"1e{exponent}")
    return math.nextafter(nearest, math.inf) if exponent in _POW10_ABOVE_NEAREST else nearest


def _to_float4(value: float) -> float:
    """Round a double to the nearest float4 (infinity past its range), as C's cast does."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _real_value(value: Decimal | float) -> float:
    """The float4 nearest the value, as float4in would read its text. Going through a
    double first can round twice: when the double lands exactly halfway between two
    float4s, the exact value decides which side it belongs to."""
    double = float(value)
    single = _to_float4(double)
    if isinstance(value, float) or single == double or not math.isfinite(single):
        return single
    other = 2 * double - single  # exact: both are float4-sized numbers
    if _to_float4(other) != other or Decimal(double) == Decimal(value):
        return single  # not a tie, or the tie is the value itself
    toward_value = (Decimal(value) > Decimal(double)) == (other > double)
    return other if toward_value else single


def _printf_f(precision: int, value: float) -> str:
    """PostgreSQL's printf "%.*f": the C library's digits; NaN and infinities spelled out."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if precision <= _PRINTF_MAX_PRECISION:
        return f"{value:.{precision}f}"
    return f"{value:.{_PRINTF_MAX_PRECISION}f}" + "0" * (precision - _PRINTF_MAX_PRECISION)


def _printf_e(precision: int, value: float) -> str:
    """PostgreSQL's printf "%+.*e" with the leading "+" turned into a space."""
    if precision <= _PRINTF_MAX_PRECISION:
        text = f"{value:+.{precision}e}"
    else:
        text = f"{value:+.{_PRINTF_MAX_PRECISION}e}"
        mantissa, exponent = text.split("e")
        text = mantissa + "0" * (precision - _PRINTF_MAX_PRECISION) + "e" + exponent
    return " " + text[1:] if text.startswith("+") else text


def _float_digits(value: float, desc: NumDesc, single: bool) -> _Digits:
    if desc.has(ROMAN):
        rounded = round(value) if math.isfinite(value) else None  # rint: half to even
        fits = rounded is not None and _INT32_MIN <= rounded <= _INT32_MAX
        # out of int32's range the x86 conversion gives INT32_MIN, which prints #s
        return _Digits(_roman(rounded if fits else _INT32_MIN), "")
    if desc.has(EEEE):
        if not math.isfinite(value):
            return _Digits(_nonfinite_sci(desc))
        return _Digits(_printf_e(desc.post, value))
    if desc.has(MULTI):
        factor = _pow10(desc.multi)
        value = _to_float4(value * _to_float4(factor)) if single else value * factor
        desc.pre += desc.multi
    # keep no more than FLT_DIG / DBL_DIG significant digits counting the whole part
    max_digits = _FLT_DIG if single else _DBL_DIG
    whole_len = len(_printf_f(0, abs(value)))
    if whole_len >= max_digits:
        desc.post = 0
    elif whole_len + desc.post > max_digits:
        desc.post = max_digits - whole_len
    return _place(desc, _printf_f(desc.post, value))


def _digits_for(value: Decimal | float, desc: NumDesc, kind: str) -> _Digits:
    if kind == "numeric":
        if isinstance(value, float):
            raise TypeError("to_char(numeric): pass a Decimal or an int, not a float")
        return _numeric_digits(Decimal(value), desc)
    if kind in ("integer", "bigint"):
        number = _as_int(value)
        low, high, name = ((_INT32_MIN, _INT32_MAX, "integer") if kind == "integer"
                           else (_INT64_MIN, _INT64_MAX, "bigint"))
        if not low <= number <= high:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")
        return _int4_digits(number, desc) if kind == "integer" else _int8_digits(number, desc)
    if kind == "real":
        return _float_digits(_real_value(value), desc, single=True)
    if kind == "double precision":
        return _float_digits(float(value), desc, single=False)
    raise ValueError(f"to_char: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def _as_int(value: Decimal | float) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    raise TypeError(f"to_char(integer): {value!r} is not an integer")


# --- writing ----------------------------------------------------------------------------

def _ordinal_suffix(number: str, upper: bool) -> str:
    """TH/th of a number's text: 1st, 2nd, 3rd, 4th, 11th..13th, 21st ..."""
    if not number or not number[-1].isdigit():
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'"{number}" is not a number')
    last = number[-1] if len(number) < 2 or number[-2] != "1" else "0"
    suffix = {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")
    return suffix.upper() if upper else suffix


class _Writer:
    """One walk over the format's nodes, writing the value's digits into the output."""

    def __init__(self, desc: NumDesc, digits: _Digits) -> None:
        self.desc = desc
        self.number = digits.text
        self.sign = digits.sign
        self.pre_spaces = digits.pre_spaces
        self.out: list[str] = []
        self.pos = 0  # next character of self.number to write
        self.curr = 0  # digit positions of the format handled so far
        self.in_number = False  # the last digit position wrote a digit (for "," and G)
        self.last_relevant: int | None = None  # FM: index of the last decimal worth writing
        self.sign_wrote = False
        self.count = 0  # digit positions, plus one when the sign takes a position of its own
        self._prepare()

    def _prepare(self) -> None:
        desc = self.desc
        if desc.zero_start:
            desc.zero_start -= 1  # 0-based from here on
        if desc.has(ROMAN):
            # Roman numerals drop every other setting but fill mode
            desc.flags = (desc.flags & FILL) | ROMAN
            desc.lsign = desc.pre_lsign = desc.pre = desc.post = 0
            self.pre_spaces = 0
        if desc.flags & (PLUS | MINUS):
            # MI and SG write the sign where they stand; PL alone still leaves "-" to digits
            self.sign_wrote = not (desc.has(PLUS) and not desc.has(MINUS))
        else:
            if self.sign != "-" and desc.has(FILL):
                desc.flags &= ~BRACKET
            self.sign_wrote = self.sign == "+" and desc.has(FILL) and not desc.has(LSIGN)
            if desc.lsign == SIGN_PRE and desc.pre == desc.pre_lsign:
                desc.lsign = SIGN_POST  # an S after every digit position signs at the end
        self.count = desc.post + desc.pre - 1
        if desc.has(FILL) and desc.has(DECIMAL):
            self._find_last_relevant()
        if not self.sign_wrote and self.pre_spaces == 0:
            self.count += 1

    def _find_last_relevant(self) -> None:
        """FM drops trailing zeros after the point, except those a 0 pattern asks for."""
        point = self.number.find(".")
        if point < 0:
            return
        last = point
        for index in range(point + 1, len(self.number)):
            if self.number[index] != "0":
                last = index
        if self.desc.zero_end > self.pre_spaces:
            last = max(last, min(len(self.number) - 1, self.desc.zero_end - self.pre_spaces))
        self.last_relevant = last

    def _char(self, index: int) -> str:
        """The digit string's character, or NUL past its end (as C's string would give)."""
        return self.number[index] if index < len(self.number) else "\0"

    def _relevant_is_point(self) -> bool:
        return self.last_relevant is not None and self._char(self.last_relevant) == "."

    def _leading_zero_blank(self) -> bool:
        """The value's leading "0" before the point prints as a blank (0.5 in 9.9 -> " .5")."""
        return (not self.desc.has(ZERO) and self.pos == 0 and self._char(0) == "0"
                and self.desc.post != 0)

    def run(self, nodes: list[tuple[bool, str]]) -> str:
        if self.desc.has(EEEE):
            return self.number  # EEEE prints the number alone, without literal text
        for is_key, item in nodes:
            if is_key:
                self._keyword(item)
            else:
                self.out.append(item)
        text = "".join(self.out)
        return text.split("\0", 1)[0]

    def _keyword(self, key: str) -> None:
        desc = self.desc
        fill = desc.has(FILL)
        if key in ("9", "0", ".", "D"):
            self._digit_position(key)
        elif key in (",", "G"):
            if self.in_number:
                self.out.append(",")
            elif not fill:
                self.out.append(" ")
        elif key == "L":
            self.out.append(" ")  # the C locale's empty currency symbol
        elif key in ("RN", "rn"):
            numeral = self.number[self.pos:]
            numeral = numeral if key == "RN" else numeral.lower()
            self.out.append(numeral if fill else numeral.rjust(15))
        elif key in ("TH", "th"):
            if not (desc.has(ROMAN) or self.number.startswith("#") or self.sign == "-"
                    or desc.has(DECIMAL)):
                self.out.append(_ordinal_suffix(self.number, key == "TH"))
        elif key in ("MI", "PL"):
            wanted = "-" if key == "MI" else "+"
            if self.sign == wanted:
                self.out.append(wanted)
            elif not fill:
                self.out.append(" ")
        elif key == "SG":
            self.out.append(self.sign or "\0")  # no sign (Roman) ends the text in C

    def _digit_position(self, key: str) -> None:
        if self.desc.has(ROMAN):
            return
        self.in_number = False
        self._maybe_write_leading_sign()
        self._write_position(key)
        self._maybe_write_trailing_sign()
        self.curr += 1

    def _maybe_write_leading_sign(self) -> None:
        desc = self.desc
        if self.sign_wrote:
            return
        at_number = self.curr >= self.pre_spaces or (desc.has(ZERO) and desc.zero_start == self.curr)
        if not at_number or (self._leading_zero_blank() and not self._relevant_is_point()):
            return
        if desc.has(LSIGN):
            if desc.lsign == SIGN_PRE:
                self.out.append("-" if self.sign == "-" else "+")
                self.sign_wrote = True
        elif desc.has(BRACKET):
            self.out.append(" " if self.sign == "+" else "<")
            self.sign_wrote = True
        elif self.sign == "+":
            if not desc.has(FILL):
                self.out.append(" ")
            self.sign_wrote = True
        elif self.sign == "-":
            self.out.append("-")
            self.sign_wrote = True

    def _write_position(self, key: str) -> None:
        desc = self.desc
        fill = desc.has(FILL)
        if self.curr < self.pre_spaces and (desc.zero_start > self.curr or not desc.has(ZERO)):
            if not fill:
                self.out.append(" ")
            return
        if desc.has(ZERO) and self.curr < self.pre_spaces:
            self.out.append("0")
            self.in_number = True
            return
        char = self._char(self.pos)
        if char == ".":
            self.out.append(".")  # written even when FM leaves nothing after it
        elif self.last_relevant is not None and self.pos > self.last_relevant and key != "0":
            pass  # FM: a trailing zero nobody asked for
        elif self._leading_zero_blank():
            if not fill:
                self.out.append(" ")
            elif self._relevant_is_point():
                self.out.append("0")
        else:
            self.out.append(char)  # NUL once the digits ran out: the text ends here
            self.in_number = True
        if char != "\0":
            self.pos += 1

    def _maybe_write_trailing_sign(self) -> None:
        desc = self.desc
        end = self.count + (1 if self.pre_spaces else 0) + (1 if desc.has(DECIMAL) else 0)
        if self.last_relevant is not None and self.last_relevant == self.pos:
            end = self.curr
        if self.curr + 1 != end:
            return
        if self.sign_wrote and desc.has(BRACKET):
            self.out.append(" " if self.sign == "+" else ">")
        elif desc.has(LSIGN) and desc.lsign == SIGN_POST:
            self.out.append("-" if self.sign == "-" else "+")


def to_char(value: Decimal | int | float, fmt: str, kind: str) -> str:  # noqa: PYI041 (int spelled out)
    """PostgreSQL 15's to_char(number, text).

    kind: 'numeric', 'integer', 'bigint', 'real' or 'double precision' — the SQL type of the
    argument, which decides how the value becomes digits (float4/float8 keep 6/15
    significant digits, integers are exact, numeric rounds half away from zero). Raises
    SqlError with PostgreSQL's SQLSTATE and message for a format PostgreSQL rejects.
    """
    if kind not in KINDS:
        raise ValueError(f"to_char: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not fmt:
        return ""
    nodes, desc = parse_format(fmt)
    digits = _digits_for(value, desc, kind)
    return _Writer(desc, digits).run(nodes)


# The UDF (spark_backend.string_udfs) and the catalog's Spark SQL, by the argument's type: the
# value reaches Python as text, a float through double so that a real is its exact value.
UDF_NAME = "sparkwire_to_char_number"
TEMPLATES = {
    kind: f"{UDF_NAME}(cast({'cast({0} as double)' if kind in _FLOAT_KINDS else '{0}'} as string), {{1}}, '{kind}')"
    for kind in KINDS
}


def from_text(value: str | None, fmt: str | None, kind: str) -> str | None:
    """The UDF: to_char of a value given as Spark's text of it; NULL for a NULL argument."""
    if value is None or fmt is None:
        return None
    if kind in _FLOAT_KINDS:
        return to_char(float(value), fmt, kind)
    return to_char(int(value) if kind in ("integer", "bigint") else Decimal(value), fmt, kind)


__all__ = ["KINDS", "TEMPLATES", "UDF_NAME", "from_text", "to_char"]
