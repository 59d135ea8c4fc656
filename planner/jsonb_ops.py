"""PostgreSQL 15's jsonb operators over jsonb's stored text: `@>`, `<@`, `?`, `?|`, `?&`,
`#>`, `-` (a key) and `||`.

Pure. A jsonb value is kept as its canonical text (`planner.jsonb`); each function here
parses that text, computes what PostgreSQL's jsonb_contains, jsonb_exists(_any/_all),
jsonb_extract_path, jsonb_delete and jsonb_concat compute, and writes a jsonb result back
in the canonical text. Spark runs them as Python UDFs in its workers (registered under
UDF_NAMES by `spark_backend.jsonb_udfs`), because key order by (length, bytes), numeric
equality of numbers and PostgreSQL's containment rules for arrays cannot be had exactly
with Spark's own JSON functions. NULL in gives NULL out, as the strict SQL functions do.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from planner import jsonb

# The Spark names of the UDFs: one per operator, prefixed so no Spark builtin is shadowed.
UDF_NAMES: dict[str, str] = {
    "contains": "sparkwire_jsonb_contains",
    "exists": "sparkwire_jsonb_exists",
    "exists_any": "sparkwire_jsonb_exists_any",
    "exists_all": "sparkwire_jsonb_exists_all",
    "extract_path": "sparkwire_jsonb_extract",
    "extract_path_text": "sparkwire_jsonb_extract_text",
    "delete_key": "sparkwire_jsonb_delete",
    "concat": "sparkwire_jsonb_concat",
}


def _kind(v: Any) -> str:
    # Python's True == 1: a JSON boolean and a number must never compare equal.
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, Decimal)):
        return "number"
    if v is None:
        return "null"
    return type(v).__name__


def _scalar_equal(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) and a == b  # numbers numerically: 1.0 = 1, as numeric_eq


def _is_container(v: Any) -> bool:
    return isinstance(v, (dict, list))


def _deep_contains(a: Any, b: Any) -> bool:
    """JsonbDeepContains below the top level: objects by key, arrays element-wise."""
    if isinstance(a, dict):
        return isinstance(b, dict) and all(k in a and _deep_contains(a[k], v) for k, v in b.items())
    if isinstance(a, list):
        if not isinstance(b, list):
            return False
        for y in b:
            if _is_container(y):
                if not any(type(x) is type(y) and _deep_contains(x, y) for x in a):
                    return False
            elif not any(not _is_container(x) and _scalar_equal(x, y) for x in a):
                return False
        return True
    return not _is_container(b) and _scalar_equal(a, b)


def contains(left: str | None, right: str | None) -> bool | None:
    """`left @> right`. At the top level an array contains a bare scalar it has as an
    element (`'[1, 2]' @> '1'`), as PostgreSQL's raw-scalar arrays do; a scalar never
    contains an array."""
    if left is None or right is None:
        return None
    a, b = jsonb.parse_json(left), jsonb.parse_json(right)
    if isinstance(a, list) and not _is_container(b):
        return any(not _is_container(x) and _scalar_equal(x, b) for x in a)
    return _deep_contains(a, b)


def _has_key(doc: Any, key: str) -> bool:
    """jsonb_exists: a top-level object key, or a string element of a top-level array
    (or the string itself, a raw scalar)."""
    if isinstance(doc, dict):
        return key in doc
    if isinstance(doc, list):
        return any(isinstance(x, str) and x == key for x in doc)
    return isinstance(doc, str) and doc == key


def exists(doc: str | None, key: str | None) -> bool | None:
    """`doc ? key`."""
    if doc is None or key is None:
        return None
    return _has_key(jsonb.parse_json(doc), key)


def exists_any(doc: str | None, keys: list[str | None] | None) -> bool | None:
    """`doc ?| keys`: NULL elements of keys are skipped, as PostgreSQL does."""
    if doc is None or keys is None:
        return None
    parsed = jsonb.parse_json(doc)
    return any(_has_key(parsed, k) for k in keys if k is not None)


def exists_all(doc: str | None, keys: list[str | None] | None) -> bool | None:
    """`doc ?& keys`: NULL elements of keys are skipped, as PostgreSQL does."""
    if doc is None or keys is None:
        return None
    parsed = jsonb.parse_json(doc)
    return all(_has_key(parsed, k) for k in keys if k is not None)


def _array_index(step: str, length: int) -> int | None:
    """An array step of a path: an integer, negative counting from the end; else None."""
    text = step.strip()
    try:
        index = int(text)
    except ValueError:
        return None
    if index < 0:
        index += length
    return index if 0 <= index < length else None


def extract_path(doc: str | None, path: list[str | None] | None) -> str | None:
    """`doc #> path`: the value at the path as jsonb text; NULL where a step is missing,
    a step is NULL, or a step goes into a scalar."""
    found, value = _at_path(doc, path)
    return jsonb.jsonb_text(value) if found else None


def extract_path_text(doc: str | None, path: list[str | None] | None) -> str | None:
    """`doc #>> path`: the value at the path as text - a string without its quotes, a JSON
    null as NULL, anything else as its jsonb text (`{"b": 1}`, `3.50`)."""
    found, value = _at_path(doc, path)
    if not found or value is None:
        return None
    return value if isinstance(value, str) else jsonb.jsonb_text(value)


def _at_path(doc: str | None, path: list[str | None] | None) -> tuple[bool, Any]:
    if doc is None or path is None:
        return False, None
    value = jsonb.parse_json(doc)
    for step in path:
        if step is None:
            return False, None
        if isinstance(value, dict):
            if step not in value:
                return False, None
            value = value[step]
        elif isinstance(value, list):
            index = _array_index(step, len(value))
            if index is None:
                return False, None
            value = value[index]
        else:
            return False, None
    return True, value


def delete_key(doc: str | None, key: str | None) -> str | None:
    """`doc - key`: the object without the key, or the array without its string elements
    equal to key; None for a scalar, which the SQL around the call refuses with 22023
    (Spark evaluates a Python UDF for every row, whatever CASE it sits in)."""
    if doc is None or key is None:
        return None
    value = jsonb.parse_json(doc)
    if isinstance(value, dict):
        return jsonb.jsonb_text({k: v for k, v in value.items() if k != key})
    if isinstance(value, list):
        return jsonb.jsonb_text([x for x in value if not (isinstance(x, str) and x == key)])
    return None


def concat(left: str | None, right: str | None) -> str | None:
    """`left || right`: two objects merge (the right's keys win); otherwise each side that
    is not an array becomes a one-element array and the arrays are concatenated."""
    if left is None or right is None:
        return None
    a, b = jsonb.parse_json(left), jsonb.parse_json(right)
    if isinstance(a, dict) and isinstance(b, dict):
        return jsonb.jsonb_text({**a, **b})
    as_list = (lambda v: v if isinstance(v, list) else [v])
    return jsonb.jsonb_text(as_list(a) + as_list(b))
