"""PostgreSQL's json and jsonb text: the input functions' checks and jsonb's normal form.

Pure. json keeps its text as given and only checks it; jsonb is stored as its
canonical text (jsonb_out of jsonb_in): keys ordered by byte length then bytes,
the last duplicate key wins, `", "` and `": "` separators, numbers printed as
numeric_out prints them. Used by the value codecs, by the planner for json
constants and parameters, and by the Kafka decoders in Spark's workers.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from planner.encoding import decode_utf8
from planner.errors import SqlError


def _reject_constant(name: str) -> Any:
    raise ValueError(f'Token "{name}" is invalid.')


def _json_int(s: str) -> int | Decimal:
    # int is several times cheaper than Decimal and prints as numeric_out does ("-0" as 0);
    # past Python's int-to-text digit limit it cannot be printed back, so Decimal.
    return int(s) if len(s) < 4000 else Decimal(s)


# One decoder: json.loads with hooks builds a new one per call, which costs more than the parse.
_JSON_DECODER = json.JSONDecoder(parse_float=Decimal, parse_int=_json_int, parse_constant=_reject_constant)


def parse_json(s: str) -> Any:
    """PostgreSQL's json input function without the output: the parsed document (numbers as
    int or Decimal), or SqlError 22P02 (54001 when nested too deep)."""
    try:
        return _JSON_DECODER.decode(s)
    except json.JSONDecodeError as e:
        raise SqlError("22P02", "invalid input syntax for type json",
                       detail=f"{e.msg} at character {e.pos + 1}.") from None
    except ValueError as e:
        raise SqlError("22P02", "invalid input syntax for type json", detail=str(e)) from None
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


_JSON_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_JSON_ESCAPES.update({
    ord('"'): '\\"', ord("\\"): "\\\\", ord("\b"): "\\b", ord("\f"): "\\f",
    ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t",
})
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _jsonb_string(s: str) -> str:
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'  # nothing to escape or reject: the common case
    if "\x00" in s:
        raise SqlError("22P05", "unsupported Unicode escape sequence",
                       detail="\\u0000 cannot be converted to text.")
    if _SURROGATE_RE.search(s):
        # json.loads pairs valid surrogates itself; anything left is lone.
        raise SqlError("22P02", "invalid input syntax for type json",
                       detail="Unicode low surrogate must follow a high surrogate.")
    return '"' + s.translate(_JSON_ESCAPES) + '"'


def jsonb_text(doc: Any) -> str:
    """jsonb_out of a document parsed elsewhere (kafka_decode: orjson), as parse_json gives
    it: raises TypeError on a float, which parse_json never gives (numbers with a fraction
    or exponent are Decimal, to keep every digit), and SqlError where jsonb_input would."""
    return _jsonb_text(doc)


def _jsonb_text(v: Any) -> str:
    """jsonb_out of a parsed document: keys ordered by (byte length, bytes),
    last duplicate wins, ", " and ": " separators, numbers as numeric_out."""
    if isinstance(v, str):
        return _jsonb_string(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        s = format(v, "f")
        return s[1:] if v.is_zero() and s.startswith("-") else s
    if isinstance(v, list):
        return "[" + ", ".join(_jsonb_text(x) for x in v) + "]"
    if not isinstance(v, dict):
        raise TypeError(f"no exact jsonb text for a {type(v).__name__}")
    items = sorted(v.items(), key=_jsonb_key_order) if len(v) > 1 else v.items()
    return "{" + ", ".join(f"{_jsonb_string(k)}: {_jsonb_text(x)}" for k, x in items) + "}"


def _jsonb_key_order(item: tuple[str, Any]) -> tuple[int, str]:
    # By UTF-8 length, then bytes: code point order is UTF-8 byte order (a lone surrogate,
    # the exception, is rejected when the key is written).
    key = item[0]
    return (len(key) if key.isascii() else len(key.encode("utf-8", "surrogatepass")), key)


def normalize(s: str) -> str:
    """jsonb_in then jsonb_out of a document's text, or SqlError."""
    try:
        return _jsonb_text(parse_json(s))
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


def jsonb_input(data: bytes) -> str:
    """PostgreSQL's jsonb input function over client bytes: the canonical text, or SqlError."""
    return normalize(decode_utf8(data))
