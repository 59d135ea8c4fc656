"""jsonb's btree order as a byte string: sort_key(a) < sort_key(b) exactly when jsonb a < b.

Pure. PostgreSQL (compareJsonbContainers in jsonb_util.c) walks both values' tokens in
storage order and stops at the first token that differs; this module writes the same token
stream, each token as a prefix-free, order-preserving byte string, so that comparing the
concatenations as unsigned bytes (Spark's BINARY order) stops at that same token:

- a token whose type differs compares by jbvType: null < string < numeric < bool < array
  < object, hence the tag bytes below (false and true get their own tags: false < true);
- an array or object compares first by its element or pair count (a 4-byte big-endian
  count after the tag); a top-level scalar is a "raw scalar" pseudo-array of one element,
  which sorts below a real array of one element but above the empty array `[]`;
- object pairs come in storage order (keys by byte length, then bytes), key then value,
  but keys and strings compare by the collation: the server's C.UTF-8 is code point order,
  i.e. UTF-8 byte order, with a NUL terminator (jsonb strings cannot hold NUL) so that a
  prefix sorts first;
- numbers compare numerically (1 = 1.0 = 1e0): see _number.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from planner.jsonb import parse_json

UDF_NAME = "sparkwire_jsonb_sort_key"  # spark_backend.jsonb_udfs registers sort_key under it

_NULL = b"\x10"
_STRING = b"\x20"
_NUMBER = b"\x30"
_FALSE = b"\x40"
_TRUE = b"\x41"
_ARRAY = b"\x50"
_OBJECT = b"\x60"

# Number sign classes: negative < zero < positive.
_NEGATIVE = b"\x01"
_ZERO = b"\x02"
_POSITIVE = b"\x03"
# Exponents are stored biased, so that unsigned order is signed order; numeric's exponents
# are far inside 32 bits (its weight is limited to 131072 digits, its scale to 16383).
_EXPONENT_BIAS = 1 << 31
# Digit d is written as byte d+1 and the digits end with 0: a shorter mantissa (trailing
# zeros stripped) sorts below any longer one it is a prefix of, as 0.12 < 0.123.
_DIGITS = bytes.maketrans(b"0123456789", bytes(range(1, 11)))
# A negative number is its magnitude's bytes inverted: the larger magnitude sorts first.
_INVERT = bytes(range(255, -1, -1))


def sort_key(text: str | None) -> bytes | None:
    """The byte string whose order is jsonb's btree order, from jsonb's text; None for NULL."""
    if text is None:
        return None
    doc = parse_json(text)
    out: list[bytes] = []
    if isinstance(doc, (dict, list)):
        _value(doc, out, raw_flag=b"\x01")
    else:
        # The raw scalar pseudo-array: one element, flagged below every real array's flag.
        out.append(_ARRAY + _count(1) + b"\x00")
        _value(doc, out)
    return b"".join(out)


def _count(n: int) -> bytes:
    return n.to_bytes(4, "big")


def _value(v: Any, out: list[bytes], raw_flag: bytes = b"") -> None:
    # raw_flag: only top-level arrays carry the raw-scalar flag, since only they can differ in it.
    t = type(v)
    if t is str:
        out.append(_string(v))
    elif t is dict:
        out.append(_OBJECT + _count(len(v)))
        for key in sorted(v, key=_storage_order) if len(v) > 1 else v:
            out.append(_string(key))
            _value(v[key], out)
    elif t is list:
        out.append(_ARRAY + _count(len(v)) + raw_flag)
        for x in v:
            _value(x, out)
    elif v is None:
        out.append(_NULL)
    elif v is True:
        out.append(_TRUE)
    elif v is False:
        out.append(_FALSE)
    else:
        out.append(_number(v))


def _storage_order(key: str) -> tuple[int, bytes]:
    # jsonb stores an object's keys by byte length, then bytes (lengthCompareJsonbString),
    # and compares pairs in that order, whatever the collation.
    b = key.encode("utf-8")
    return len(b), b


def _string(s: str) -> bytes:
    return _STRING + s.encode("utf-8") + b"\x00"


def _number(v: int | Decimal) -> bytes:
    """Sign class, then for a nonzero number its decimal exponent (the power of ten of its
    first significant digit) and its significant digits, trailing zeros stripped, so that
    equal numbers encode equally; a negative number's exponent and digits are inverted."""
    if not v:
        return _NUMBER + _ZERO
    if type(v) is int:
        negative, digits = v < 0, str(abs(v))
        exponent = len(digits) - 1
    else:
        negative, coefficient, _ = v.as_tuple()
        digits, exponent = "".join(map(str, coefficient)), v.adjusted()
    magnitude = (exponent + _EXPONENT_BIAS).to_bytes(4, "big") + _digits(digits)
    if negative:
        return _NUMBER + _NEGATIVE + magnitude.translate(_INVERT)
    return _NUMBER + _POSITIVE + magnitude


def _digits(digits: str) -> bytes:
    return digits.rstrip("0").encode().translate(_DIGITS) + b"\x00"
