"""The json type's constructors, as PostgreSQL's json.c writes them: to_json, json_agg,
json_build_array, json_build_object and a row value's object (row_to_json). Unlike jsonb, json is text kept as written: an
array from to_json is `[1,2]` (array_to_json, no spaces), json_agg and json_build_array
separate their elements with `, `, json_build_object writes `{"k" : v, ...}`, and a json
argument is copied as it is. Scalars are written as for jsonb (planner.jsonb_funcs), except
floats, which keep float8out's text (`1e+100`, where a jsonb number has every digit).

Python UDFs over values as Spark hands them over, with their PostgreSQL type as a tag;
spark_backend.jsonb_udfs registers them under UDF_NAMES.
"""

from __future__ import annotations

from typing import Any

from planner import jsonb_funcs
from planner.errors import SqlError
from planner.jsonb_funcs import tag_type, type_tag
from planner.types import SqlType

UDF_NAMES: dict[str, str] = {
    "to_json": "sparkwire_to_json",
    "key": "sparkwire_json_key",
    "build_object": "sparkwire_json_build_object",
    "build_array": "sparkwire_json_build_array",
    "agg": "sparkwire_json_agg",
    "build_row": "sparkwire_json_build_row",
}
_INVALID = "22023"
_FLOATS = ("real", "double precision")
_NOT_NUMBERS = ("NaN", "Infinity", "-Infinity")


def to_json(value: Any, tag: str | None) -> str | None:
    """to_json(value) for a value of the tagged type; NULL for NULL (the function is strict)."""
    if value is None or tag is None:
        return None
    return _json(value, tag_type(tag))


def _json(value: Any, t: SqlType) -> str:
    if value is None:
        return "null"
    if t.is_array:
        element = SqlType(t.base, t.typmod, False)
        return "[" + ",".join(_json(v, element) for v in value) + "]"
    if t.base.name == "json":
        return value
    if t.base.name in _FLOATS:
        from planner.codecs.text_out import encode_text  # numpy: only where a value needs it

        text = encode_text(t, value).decode()
        return f'"{text}"' if text in _NOT_NUMBERS else text
    return jsonb_funcs.to_jsonb(value, type_tag(t))


def key(value: Any, tag: str | None, position: int) -> str:
    """json_build_object's key, argument `position` (from 1): its text (22023 for an array,
    a json or a NULL, in json's words)."""
    if value is None or tag is None:
        raise SqlError(_INVALID, f"argument {position} cannot be null")
    return jsonb_funcs.object_key(value, tag, position)


def build_object(keys: list[str] | None, values: list[str | None] | None) -> str:
    """json_build_object over keys already as text (`key` checked them) and
    values already as json text (NULL: JSON null); every pair kept, in order."""
    pairs = zip(keys or [], values or [], strict=True)
    return "{" + ", ".join(f"{jsonb_funcs.to_jsonb(k, 'text|-1|0')} : {_or_null(v)}" for k, v in pairs) + "}"


def build_row(keys: list[str] | None, values: list[str | None] | None, pretty: bool | None) -> str | None:
    """A row value as composite_to_json writes it: `{"a":1,"b":"x"}`, its fields by name and
    values already as json text (NULL: JSON null); `pretty` (row_to_json's second argument)
    puts a new line after each comma."""
    if pretty is None:  # row_to_json is strict
        return None
    sep = ",\n " if pretty else ","
    pairs = zip(keys or [], values or [], strict=True)
    return "{" + sep.join(f"{jsonb_funcs.to_jsonb(k, 'text|-1|0')}:{_or_null(v)}" for k, v in pairs) + "}"


def build_array(values: list[str | None] | None) -> str:
    """json_build_array over values already as json text (NULL: JSON null)."""
    return "[" + ", ".join(_or_null(v) for v in values or []) + "]"


def agg(values: list[Any] | None, arrays: bool) -> str | None:
    """json_agg over the group's values already as json text, in order (rows as structs
    whose v0 is the value: a NULL stays in the list): NULL for no rows. Of `arrays`, each
    value but the first that is not NULL starts a new line (json_agg_transfn's whitespace
    for a structured type)."""
    if not values:
        return None
    texts = [v["v0"] if isinstance(v, dict) else v[0] for v in values]
    return "[" + ", ".join(("\n " if arrays and i and v is not None else "") + _or_null(v)
                           for i, v in enumerate(texts)) + "]"


def _or_null(v: str | None) -> str:
    return "null" if v is None else v
