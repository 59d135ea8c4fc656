"""planner.jsonb_funcs: PostgreSQL 15's jsonb functions over jsonb's canonical text (the
answers are PostgreSQL's, checked side by side in tests/integration/test_jsonb_functions.py)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from planner import jsonb_funcs as f
from planner.errors import SqlError
from planner.types import column_type


def tag(name: str, *mods: int, array: bool = False) -> str:
    return f.type_tag(column_type(name, mods, array))


@pytest.mark.parametrize("value, type_tag, expected", [
    (7, tag("integer"), "7"),
    (Decimal("1.5000000000"), tag("numeric"), "1.5"),  # an unconstrained numeric, as stored
    (Decimal("1.50"), tag("numeric", 10, 2), "1.50"),
    (1e100, tag("double precision"), "1" + "0" * 100),  # through numeric_in of float8out
    (float("nan"), tag("double precision"), '"NaN"'),
    (float("-inf"), tag("double precision"), '"-Infinity"'),
    (-0.0, tag("double precision"), "0"),
    (0.1, tag("real"), "0.1"),
    (True, tag("boolean"), "true"),
    ('a"b\n', tag("text"), '"a\\"b\\n"'),
    ("ab", tag("character", 4), '"ab  "'),
    ('{"b": 1, "a": 2}', tag("jsonb"), '{"a": 2, "b": 1}'),
    ('{"b":1,"a":2, "a": 3}', tag("json"), '{"a": 3, "b": 1}'),
    (datetime.datetime(2020, 1, 2, 3, 4, 5, 678000), tag("timestamp without time zone"), '"2020-01-02T03:04:05.678"'),
    (datetime.datetime(2020, 1, 2, 3, 4, 5), tag("timestamp with time zone"), '"2020-01-02T03:04:05+00:00"'),
    (datetime.date(2020, 1, 2), tag("date"), '"2020-01-02"'),
    ([1, None, 3], tag("integer", array=True), "[1, null, 3]"),
    ([[1, 2], [3, 4]], tag("integer", array=True), "[[1, 2], [3, 4]]"),
    (['{"a":1}', None], tag("jsonb", array=True), '[{"a": 1}, null]'),
    ([], tag("text", array=True), "[]"),
    (None, tag("integer"), None),
])
def test_to_jsonb(value, type_tag, expected):
    assert f.to_jsonb(value, type_tag) == expected


def test_build_object_and_keys():
    keys = [f.object_key("b", tag("text"), 1), f.object_key(1.5, tag("double precision"), 3),
            f.object_key(True, tag("boolean"), 5), f.object_key("b", tag("text"), 7)]
    assert keys == ["b", "1.5", "true", "b"]
    assert f.build_object(keys, ["1", None, '"x"', "[2]"]) == '{"b": [2], "1.5": null, "true": "x"}'
    with pytest.raises(SqlError, match="argument 3: key must not be null") as err:
        f.object_key(None, tag("text"), 3)
    assert err.value.sqlstate == "22023"
    with pytest.raises(SqlError, match="key value must be scalar"):
        f.object_key("[1]", tag("jsonb"), 1)
    with pytest.raises(SqlError, match="key value must be scalar"):
        f.object_key([1], tag("integer", array=True), 1)
    assert f.object_key(None, tag("text"), 0) is None  # jsonb_object_agg says it itself
    assert f.build_array(["1", None, '{"a": 1}']) == '[1, null, {"a": 1}]'


def test_object_agg():
    assert f.object_agg([{"k": "a", "v": "1"}, {"k": "b", "v": None}, {"k": "a", "v": "3"}]) == '{"a": 3, "b": null}'
    assert f.object_agg([]) is None
    with pytest.raises(SqlError, match="field name must not be null"):
        f.object_agg([("a", "1"), (None, "2")])


def test_set_returning():
    doc = '{"b": 1, "aa": {"x": null}, "a": "s"}'
    assert f.object_keys(doc) == ["a", "b", "aa"]
    assert f.each(doc) == [{"key": "a", "value": '"s"'}, {"key": "b", "value": "1"},
                           {"key": "aa", "value": '{"x": null}'}]
    assert f.each_text(doc)[0] == {"key": "a", "value": "s"}
    assert f.each_record('{"a b": "c,d", "": null}') == ['("",null)', '("a b","""c,d""")']
    assert f.array_elements('[1, "a", null, [2]]') == ["1", '"a"', "null", "[2]"]
    assert f.array_elements_text('[1, "a", null, [2]]') == ["1", "a", None, "[2]"]
    assert f.object_keys(None) is None and f.array_elements(None) is None
    for call, doc, message in [(f.object_keys, "[1]", "cannot call jsonb_object_keys on an array"),
                               (f.object_keys, "1", "cannot call jsonb_object_keys on a scalar"),
                               (f.array_elements, "{}", "cannot extract elements from an object"),
                               (f.array_elements_text, '"x"', "cannot extract elements from a scalar"),
                               (f.each, "[]", "cannot call jsonb_each on a non-object"),
                               (f.each_text, "1", "cannot call jsonb_each_text on a non-object")]:
        with pytest.raises(SqlError, match=message) as err:
            call(doc)
        assert err.value.sqlstate == "22023"


@pytest.mark.parametrize("doc, path, create, expected", [
    ('{"a": [1, 2, 3], "b": 1}', ["a", "1"], True, '{"a": [1, "N", 3], "b": 1}'),
    ('{"a": [1, 2, 3]}', ["a", "-1"], True, '{"a": [1, 2, "N"]}'),
    ('{"a": [1, 2, 3]}', ["a", "10"], True, '{"a": [1, 2, 3, "N"]}'),
    ('{"a": [1, 2, 3]}', ["a", "-10"], True, '{"a": ["N", 1, 2, 3]}'),
    ('{"a": [1, 2, 3]}', ["a", "10"], False, '{"a": [1, 2, 3]}'),
    ('{"a": 1}', ["b"], True, '{"a": 1, "b": "N"}'),
    ('{"a": 1}', ["b"], False, '{"a": 1}'),
    ('{"a": 1}', ["b", "c"], True, '{"a": 1}'),
    ('{"a": "s"}', ["a", "0"], True, '{"a": "s"}'),  # a scalar part way down is kept
    ("[]", ["0"], True, '["N"]'),
    ("[1]", [], True, "[1]"),
    ("[1, 2]", [" +1"], True, '[1, "N"]'),
])
def test_set_path(doc, path, create, expected):
    assert f.set_path(doc, path, '"N"', create) == expected


@pytest.mark.parametrize("doc, path, sqlstate, message", [
    ('{"a": [1]}', ["a", "x"], "22P02", 'path element at position 2 is not an integer: "x"'),
    ("[1]", ["99999999999"], "22P02", "is not an integer"),
    ("[1]", ["1 "], "22P02", "is not an integer"),
    ('{"a": 1}', [None], "22004", "path element at position 1 is null"),
    ("1", ["a"], "22023", "cannot set path in scalar"),
])
def test_set_path_errors(doc, path, sqlstate, message):
    with pytest.raises(SqlError, match=message) as err:
        f.set_path(doc, path, "1", True)
    assert err.value.sqlstate == sqlstate


def test_set_path_nulls_and_deep_documents():
    assert f.set_path(None, ["a"], "1") is None and f.set_path("{}", ["a"], None) is None
    assert f.set_path("{}", ["a"], "1", None) is None
    # As deep as jsonb's input takes (its printing recurses; deeper documents are 54001).
    deep = "[" * 200 + "]" * 200
    assert f.set_path(deep, ["0"] * 199, "1") == "[" * 199 + "1" + "]" * 199
    assert f.strip_nulls(deep) == deep
    with pytest.raises(SqlError) as err:
        f.strip_nulls("[" * 100000 + "]" * 100000)
    assert err.value.sqlstate == "54001"


def test_deletes():
    assert f.delete_keys('{"a": 1, "b": 2, "c": 3}', ["a", "c", None]) == '{"b": 2}'
    assert f.delete_keys('["a", "b", 1]', ["a"]) == '["b", 1]'
    assert f.delete_index("[1, 2, 3]", -1) == "[1, 2]"
    assert f.delete_index("[1, 2, 3]", 5) == "[1, 2, 3]"
    assert f.delete_path('{"a": [1, 2, {"b": 1}]}', ["a", "2", "b"]) == '{"a": [1, 2, {}]}'
    assert f.delete_path("[1, 2]", ["5"]) == "[1, 2]"
    for call, args, message in [(f.delete_keys, ('"a"', []), "cannot delete from scalar"),
                                (f.delete_index, ('{"a": 1}', 0), "cannot delete from object using integer index"),
                                (f.delete_index, ("1", 0), "cannot delete from scalar"),
                                (f.delete_path, ("1", ["a"]), "cannot delete path in scalar")]:
        with pytest.raises(SqlError, match=message):
            call(*args)


def test_strip_nulls_and_pretty():
    assert f.strip_nulls('{"a": null, "b": [null, {"c": null, "d": 1}], "e": {"f": null}}') == \
        '{"b": [null, {"d": 1}], "e": {}}'
    assert f.pretty('{"a": [1, {"b": null}], "c": {}, "d": []}') == (
        '{\n    "a": [\n        1,\n        {\n            "b": null\n        }\n    ],\n'
        '    "c": {\n    },\n    "d": [\n    ]\n}')
    assert f.pretty("1") == "1" and f.pretty("[]") == "[\n]"
