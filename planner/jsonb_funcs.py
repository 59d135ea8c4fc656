"""PostgreSQL 15's jsonb functions over jsonb's stored text: to_jsonb, jsonb_build_object/
_array, jsonb_agg and jsonb_object_agg's last step, jsonb_object_keys, jsonb_array_elements
(_text), jsonb_each(_text), jsonb_set, jsonb_strip_nulls, jsonb_pretty, and the operators
`jsonb - text[]`, `jsonb - integer` and `#-`.

Pure. Spark runs them as Python UDFs in its workers (`spark_backend.jsonb_udfs`, under
UDF_NAMES), as it does `planner.jsonb_ops`. A value of another type is turned into jsonb
from its Python value (as Spark hands it over) and its PostgreSQL type, given as a tag
(`type_tag`): PostgreSQL's datum_to_jsonb works from the type, not the value. Errors are
SqlError with PostgreSQL's SQLSTATE and text; the UDF wrapper carries them out of Spark.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Any

from planner import jsonb
from planner.errors import SqlError
from planner.types import BY_NAME, SqlType

_INVALID = "22023"  # ERRCODE_INVALID_PARAMETER_VALUE
_NULL_NOT_ALLOWED = "22004"
_INT_MIN = -(2**31)
# An unconstrained numeric is stored as DECIMAL(38, 10): at that scale the digits written are
# not known, and numeric's output drops the padding zeros, as the wire does.
_STORED_SCALE = 10

# The Spark names of the UDFs, one per function here, prefixed so no Spark builtin is shadowed.
UDF_NAMES: dict[str, str] = {
    "to_jsonb": "sparkwire_to_jsonb",
    "object_key": "sparkwire_jsonb_key",
    "build_object": "sparkwire_jsonb_build_object",
    "build_array": "sparkwire_jsonb_build_array",
    "object_agg": "sparkwire_jsonb_object_agg",
    "object_keys": "sparkwire_jsonb_object_keys",
    "array_elements": "sparkwire_jsonb_array_elements",
    "array_elements_text": "sparkwire_jsonb_array_elements_text",
    "each": "sparkwire_jsonb_each",
    "each_text": "sparkwire_jsonb_each_text",
    "each_record": "sparkwire_jsonb_each_record",
    "each_text_record": "sparkwire_jsonb_each_text_record",
    "set_path": "sparkwire_jsonb_set",
    "strip_nulls": "sparkwire_jsonb_strip_nulls",
    "pretty": "sparkwire_jsonb_pretty",
    "delete_keys": "sparkwire_jsonb_delete_keys",
    "delete_index": "sparkwire_jsonb_delete_index",
    "delete_path": "sparkwire_jsonb_delete_nested",  # no "path(": see spark_sql._check_template
}


def _parse(text: str) -> Any:
    return jsonb.parse_json(text)


def _out(doc: Any) -> str:
    try:
        return jsonb.jsonb_text(doc)
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


# -- other types to jsonb --------------------------------------------------------------------

def type_tag(t: SqlType) -> str:
    """A type as the constant the planner passes to the UDFs: `name|typmod|array`."""
    return f"{t.base.name}|{t.typmod}|{int(t.is_array)}"


@lru_cache(maxsize=256)
def tag_type(tag: str) -> SqlType:
    """The type of a `type_tag`."""
    name, typmod, array = tag.split("|")
    return SqlType(BY_NAME[name], int(typmod), array == "1")


def _text_out(t: SqlType, value: Any) -> str:
    from planner.codecs.text_out import encode_text  # numpy: only where a value needs it

    return encode_text(t, value).decode()


def _scalar(value: Any, t: SqlType, key: bool) -> Any:
    """datum_to_jsonb of one non-NULL, non-array value: numbers through numeric_in of their
    text (a NaN or infinity stays a string), dates and timestamps in ISO 8601 with a `T`,
    json(b) parsed, anything else its output text as a string. A key is always a string."""
    name = t.base.name
    if name == "boolean":
        return ("true" if value else "false") if key else bool(value)
    if name in ("json", "jsonb"):
        if key:
            raise SqlError(_INVALID, "key value must be scalar, not array, composite, or json")
        return _parse(value)
    if name == "numeric" and t.typmod < 0 and isinstance(value, Decimal) and value.is_finite() \
            and value.as_tuple().exponent != -_STORED_SCALE:
        text = format(value, "f")  # a constant's or an expression's own scale (1.50 stays 1.50)
    else:
        text = _text_out(SqlType(t.base, t.typmod), value)
    if name in ("smallint", "integer", "bigint", "oid", "numeric", "real", "double precision"):
        if key or "n" in text.lower():
            return text
        return int(text) if text.lstrip("-").isdigit() else Decimal(text)
    if name in ("timestamp without time zone", "timestamp with time zone"):
        text = text.replace(" ", "T", 1)
        return text + ":00" if text.endswith("+00") else text
    return text


def _convert(value: Any, t: SqlType, key: bool = False) -> Any:
    if value is None:
        return None
    if t.is_array:
        if key:
            raise SqlError(_INVALID, "key value must be scalar, not array, composite, or json")
        element = SqlType(t.base, t.typmod)
        return [_convert_nested(v, element) for v in value]
    return _scalar(value, t, key)


def _convert_nested(value: Any, element: SqlType) -> Any:
    if isinstance(value, (list, tuple)):  # a multidimensional array: arrays of arrays
        return [_convert_nested(v, element) for v in value]
    return _convert(value, element)


def to_jsonb(value: Any, tag: str | None) -> str | None:
    """to_jsonb(value) for a value of the tagged type; NULL for NULL (the function is strict)."""
    if value is None or tag is None:
        return None
    return _out(_convert(value, tag_type(tag)))


def object_key(value: Any, tag: str | None, position: int) -> str | None:
    """A jsonb_build_object key (argument `position`, from 1) or, at position 0, a
    jsonb_object_agg key: its text, as a key_scalar datum_to_jsonb makes it. NULL is an
    error, jsonb_object_agg's own once the pairs are collected."""
    if value is None or tag is None:
        if position == 0:
            return None
        raise SqlError(_INVALID, f"argument {position}: key must not be null")
    return _convert(value, tag_type(tag), key=True)


def build_object(keys: list[str] | None, values: list[str | None] | None) -> str:
    """jsonb_build_object over keys already as text and values already as jsonb text (NULL:
    JSON null); the last of equal keys wins."""
    doc = {k: (None if v is None else _parse(v)) for k, v in zip(keys or [], values or [], strict=True)}
    return _out(doc)


def build_array(values: list[str | None] | None) -> str:
    """jsonb_build_array over values already as jsonb text (NULL: JSON null)."""
    return _out([None if v is None else _parse(v) for v in values or []])


def object_agg(pairs: list[Any] | None) -> str | None:
    """jsonb_object_agg's result over the group's (key text, value jsonb) pairs in order:
    NULL for no rows, 22023 for a NULL key."""
    if not pairs:
        return None
    doc: dict[str, Any] = {}
    for pair in pairs:
        key, value = (pair["k"], pair["v"]) if isinstance(pair, dict) else (pair[0], pair[1])
        if key is None:
            raise SqlError(_INVALID, "field name must not be null")
        doc.pop(key, None)
        doc[key] = None if value is None else _parse(value)
    return _out(doc)


# -- set-returning functions -----------------------------------------------------------------

def _kind_word(doc: Any) -> str:
    return "an object" if isinstance(doc, dict) else "an array" if isinstance(doc, list) else "a scalar"


def _sorted_items(doc: dict) -> list[tuple[str, Any]]:
    return sorted(doc.items(), key=jsonb._jsonb_key_order)


def object_keys(text: str | None) -> list[str] | None:
    """jsonb_object_keys: the keys in jsonb's order; 22023 for an array or a scalar."""
    if text is None:
        return None
    doc = _parse(text)
    if not isinstance(doc, dict):
        raise SqlError(_INVALID, f"cannot call jsonb_object_keys on {_kind_word(doc)}")
    return [k for k, _ in _sorted_items(doc)]


def _elements(text: str) -> list[Any]:
    doc = _parse(text)
    if not isinstance(doc, list):
        raise SqlError(_INVALID, f"cannot extract elements from {_kind_word(doc)}")
    return doc


def _as_text(value: Any) -> str | None:
    """What ->> gives for a value: a string unquoted, JSON null as NULL, else jsonb text."""
    if value is None:
        return None
    return value if isinstance(value, str) else _out(value)


def array_elements(text: str | None) -> list[str] | None:
    return None if text is None else [_out(v) for v in _elements(text)]


def array_elements_text(text: str | None) -> list[str | None] | None:
    return None if text is None else [_as_text(v) for v in _elements(text)]


def _pairs(text: str, name: str) -> list[tuple[str, Any]]:
    doc = _parse(text)
    if not isinstance(doc, dict):
        raise SqlError(_INVALID, f"cannot call {name} on a non-object")
    return _sorted_items(doc)


def each(text: str | None) -> list[dict[str, str]] | None:
    return None if text is None else [{"key": k, "value": _out(v)} for k, v in _pairs(text, "jsonb_each")]


def each_text(text: str | None) -> list[dict[str, str | None]] | None:
    return None if text is None else [{"key": k, "value": _as_text(v)}
                                      for k, v in _pairs(text, "jsonb_each_text")]


def _record_field(value: str | None) -> str:
    """record_out's quoting of one field: empty, or holding `"\\(),` or a space, in quotes."""
    if value is None:
        return ""
    if value == "" or any(c in value for c in '"\\(),') or any(c.isspace() for c in value):
        return '"' + value.replace("\\", "\\\\").replace('"', '""') + '"'
    return value


def each_record(text: str | None) -> list[str] | None:
    """jsonb_each in a select list: each (key, value) record as record_out writes it."""
    rows = each(text)
    return None if rows is None else [f"({_record_field(r['key'])},{_record_field(r['value'])})" for r in rows]


def each_text_record(text: str | None) -> list[str] | None:
    rows = each_text(text)
    return None if rows is None else [f"({_record_field(r['key'])},{_record_field(r['value'])})" for r in rows]


# -- paths: jsonb_set and #- -----------------------------------------------------------------

def _path_index(step: str, position: int) -> int:
    """An array step of a path as strtoint reads it: leading blanks and a sign, then digits
    only, within int32; else 22P02."""
    text = step.lstrip(" \t\n\r\f\v")
    digits = text[1:] if text[:1] in "+-" else text
    if digits.isascii() and digits.isdigit():
        value = int(text)
        if _INT_MIN <= value < 2**31:
            return value
    raise SqlError("22P02", f'path element at position {position} is not an integer: "{step}"')


_DELETE = object()  # the new value of #-: remove what the path names


def _set_path(value: Any, path: list[str | None], level: int, new: Any, create: bool) -> Any:
    """setPath: the value with the path's target replaced (or created, or deleted)."""
    if path[level] is None:
        raise SqlError(_NULL_NOT_ALLOWED, f"path element at position {level + 1} is null")
    last = level == len(path) - 1
    step = path[level]
    if isinstance(value, dict):
        out = dict(value)
        if step in value:
            if not last:
                out[step] = _set_path(value[step], path, level + 1, new, create)
            elif new is _DELETE:
                del out[step]
            else:
                out[step] = new
        elif last and create and new is not _DELETE:
            out[step] = new
        return out
    if isinstance(value, list):
        n = len(value)
        index = _path_index(step, level + 1)
        if index < 0:
            index = _INT_MIN if -index > n else n + index
        index = min(index, n)
        out = list(value)
        if (index == _INT_MIN or n == 0) and last and create and new is not _DELETE:
            return [new] + out
        if 0 <= index < n:
            if not last:
                out[index] = _set_path(value[index], path, level + 1, new, create)
            elif new is _DELETE:
                del out[index]
            else:
                out[index] = new
        elif last and create and new is not _DELETE:
            out.append(new)
        return out
    return value  # a scalar part way down the path: left as it is


def set_path(text: str | None, path: list[str | None] | None, new: str | None,
             create: bool | None = True) -> str | None:
    """jsonb_set(target, path, new[, create_missing]), strict."""
    if text is None or path is None or new is None or create is None:
        return None
    doc = _parse(text)
    if not isinstance(doc, (dict, list)):
        raise SqlError(_INVALID, "cannot set path in scalar")
    if (not doc and not create) or not path:
        return text
    try:
        return _out(_set_path(doc, list(path), 0, _parse(new), bool(create)))
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


def delete_path(text: str | None, path: list[str | None] | None) -> str | None:
    """`jsonb #- path`."""
    if text is None or path is None:
        return None
    doc = _parse(text)
    if not isinstance(doc, (dict, list)):
        raise SqlError(_INVALID, "cannot delete path in scalar")
    if not doc or not path:
        return text
    try:
        return _out(_set_path(doc, list(path), 0, _DELETE, False))
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


def delete_keys(text: str | None, keys: list[str | None] | None) -> str | None:
    """`jsonb - text[]`: every listed key of an object, or string element of an array (NULL
    keys skipped)."""
    if text is None or keys is None:
        return None
    doc = _parse(text)
    if not isinstance(doc, (dict, list)):
        raise SqlError(_INVALID, "cannot delete from scalar")
    gone = {k for k in keys if k is not None}
    if isinstance(doc, dict):
        return _out({k: v for k, v in doc.items() if k not in gone})
    return _out([x for x in doc if not (isinstance(x, str) and x in gone)])


def delete_index(text: str | None, index: int | None) -> str | None:
    """`jsonb - integer`: the array without that element (negative: from the end)."""
    if text is None or index is None:
        return None
    doc = _parse(text)
    if isinstance(doc, dict):
        raise SqlError(_INVALID, "cannot delete from object using integer index")
    if not isinstance(doc, list):
        raise SqlError(_INVALID, "cannot delete from scalar")
    n = len(doc)
    if index < 0:
        index += n
    if not 0 <= index < n:
        return text
    return _out(doc[:index] + doc[index + 1:])


# -- whole documents -------------------------------------------------------------------------

def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def strip_nulls(text: str | None) -> str | None:
    """jsonb_strip_nulls: object fields whose value is null, at any depth (array nulls stay)."""
    if text is None:
        return None
    try:
        return _out(_strip(_parse(text)))
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None


def _pretty(v: Any, depth: int, out: list[str]) -> None:
    pad = "    " * (depth + 1)
    if isinstance(v, dict):
        out.append("{\n")
        items = _sorted_items(v)
        for i, (k, x) in enumerate(items):
            out.append(f"{pad}{_out(k)}: ")
            _pretty(x, depth + 1, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append("    " * depth + "}")
    elif isinstance(v, list):
        out.append("[\n")
        for i, x in enumerate(v):
            out.append(pad)
            _pretty(x, depth + 1, out)
            out.append(",\n" if i < len(v) - 1 else "\n")
        out.append("    " * depth + "]")
    else:
        out.append(_out(v))


def pretty(text: str | None) -> str | None:
    """jsonb_pretty: four spaces an indent level, an empty container's brackets on two lines."""
    if text is None:
        return None
    out: list[str] = []
    try:
        _pretty(_parse(text), 0, out)
    except RecursionError:
        raise SqlError("54001", "stack depth limit exceeded") from None
    return "".join(out)
