"""planner.jsonb_ops: PostgreSQL 15's jsonb operators over jsonb's canonical text (the
answers are PostgreSQL's, checked side by side in tests/integration/test_jsonb.py)."""

from __future__ import annotations

import pytest

from planner import jsonb_ops as j


@pytest.mark.parametrize("left, right, expected", [
    ('{"a": 1, "b": 2}', '{"a": 1}', True),
    ('{"a": 1}', '{"a": 1.0}', True),  # numbers compare numerically
    ('{"a": true}', '{"a": 1}', False),  # a boolean is not a number
    ('{"a": [1, 2, 3]}', '{"a": [3, 1]}', True),
    ('{"a": [1, 2, 3]}', '{"a": 1}', False),  # the bare-scalar rule is for the top level only
    ("[1, 2]", "1", True),
    ("1", "[1]", False),
    ("[1, [1, 2]]", "[[1]]", True),
    ("[[1, 2]]", "[1]", False),
    ('{"a": {"b": 1, "c": 2}}', '{"a": {"c": 2}}', True),
    ('{"a": 1}', "[]", False),
    ('"a"', '"a"', True),
    (None, "1", None),
])
def test_contains(left, right, expected):
    assert j.contains(left, right) is expected


def test_exists_family():
    assert j.exists('{"a": null}', "a") is True
    assert j.exists('["a", 1]', "a") is True
    assert j.exists('["1"]', "1") is True and j.exists("[1]", "1") is False
    assert j.exists('"a"', "a") is True
    assert j.exists('{"a": {"b": 1}}', "b") is False
    assert j.exists(None, "a") is None and j.exists("{}", None) is None
    assert j.exists_any('{"a": 1}', [None, "a"]) is True
    assert j.exists_any('{"a": 1}', []) is False
    assert j.exists_all('{"a": 1}', [None]) is True
    assert j.exists_all('{"a": 1, "b": 2}', ["a", "c"]) is False


@pytest.mark.parametrize("doc, path, expected", [
    ('{"a": {"b": [1, {"c": 2}]}}', ["a", "b", "1"], '{"c": 2}'),
    ('{"a": 1}', ["a"], "1"),
    ("[1, 2, 3]", ["-1"], "3"),
    ("[1, 2, 3]", ["1.0"], None),
    ("[1, 2, 3]", ["+1"], "2"),
    ("[1, 2, 3]", [], "[1, 2, 3]"),
    ('{"a": 1}', ["a", "b"], None),
    ('{"a": 1}', [None], None),
    ('{"a": null}', ["a"], "null"),
])
def test_extract_path(doc, path, expected):
    assert j.extract_path(doc, path) == expected


@pytest.mark.parametrize("doc, path, expected", [
    ('{"a": {"b": 1, "cc": [2, 3.50]}}', ["a"], '{"b": 1, "cc": [2, 3.50]}'),
    ('{"a": "x\\ny"}', ["a"], "x\ny"),
    ('{"a": null}', ["a"], None),
    ('"x"', [], "x"),
    ('{"a": true}', ["a"], "true"),
    ('{"a": 1}', ["b"], None),
    (None, ["a"], None),
])
def test_extract_path_text_unquotes_strings_and_writes_containers_as_jsonb(doc, path, expected):
    assert j.extract_path_text(doc, path) == expected


def test_delete_and_concat_write_jsonb_text():
    assert j.delete_key('{"a": 1, "bb": 2}', "a") == '{"bb": 2}'
    assert j.delete_key('["a", "b", "a", 1]', "a") == '["b", 1]'
    assert j.delete_key("1", "a") is None  # the SQL around the call raises 22023
    assert j.concat('{"bb": 1, "a": 2}', '{"a": 3, "c": [1]}') == '{"a": 3, "c": [1], "bb": 1}'
    assert j.concat("[1]", "[2, 3]") == "[1, 2, 3]"
    assert j.concat("1", "2") == "[1, 2]"
    assert j.concat('{"a": 1}', "[2]") == '[{"a": 1}, 2]'
    assert j.concat(None, "[]") is None
