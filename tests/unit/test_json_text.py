"""json's constructors (planner.json_text) as pure functions over values as Spark hands them
over; compared with PostgreSQL 15 in tests/slt/own/arrays_json.test and, for every sample
argument type, in tests/integration/test_function_catalog.py."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from planner import json_text
from planner.errors import SqlError


@pytest.mark.parametrize(("value", "tag", "text"), [
    ([1, None, 3], "integer|-1|1", "[1,null,3]"),  # array_to_json: no spaces, unlike jsonb's
    (Decimal("1.50"), "numeric|-1|0", "1.50"),
    (1e100, "double precision|-1|0", "1e+100"),  # float8out's text, not every digit
    (float("nan"), "double precision|-1|0", '"NaN"'),
    ('{"a":  [1,2]}', "json|-1|0", '{"a":  [1,2]}'),  # json as written
    ('{"a": [1, 2]}', "jsonb|-1|0", '{"a": [1, 2]}'),
    ('say "hi"\n', "text|-1|0", '"say \\"hi\\"\\n"'),
    (datetime.datetime(2020, 1, 2, 3, 4, 5), "timestamp without time zone|-1|0", '"2020-01-02T03:04:05"'),
    (True, "boolean|-1|0", "true"),
])
def test_to_json_writes_what_postgresql_writes(value, tag, text):
    assert json_text.to_json(value, tag) == text


def test_to_json_is_strict():
    assert json_text.to_json(None, "integer|-1|0") is None


def test_build_object_keeps_every_pair_in_order_with_spaced_colons():
    assert json_text.build_object(["a", "b", "a"], ["1", None, "[1,2]"]) == '{"a" : 1, "b" : null, "a" : [1,2]}'
    assert json_text.build_object([], []) == "{}"


def test_keys_refused_as_postgresql_refuses_them():
    with pytest.raises(SqlError) as err:
        json_text.key(None, "text|-1|0", 3)
    assert (err.value.sqlstate, err.value.message) == ("22023", "argument 3 cannot be null")
    with pytest.raises(SqlError) as err:
        json_text.key([1], "integer|-1|1", 1)
    assert err.value.sqlstate == "22023"
    assert json_text.key(7, "integer|-1|0", 1) == "7"


def test_build_array_and_agg_separate_with_a_comma_and_a_space():
    assert json_text.build_array(["1", None, '"a"']) == '[1, null, "a"]'
    assert json_text.agg([{"v0": "1"}, {"v0": None}], False) == "[1, null]"
    assert json_text.agg([], False) is None  # json_agg over no rows is NULL
    # arrays after the first start a new line, as json_agg_transfn writes them
    assert json_text.agg([{"v0": "[1]"}, {"v0": None}, {"v0": "[]"}], True) == "[[1], null, \n []]"


def test_a_row_is_written_as_composite_to_json_writes_it():
    assert json_text.build_row(["a", 'q"k'], ["1", None], False) == '{"a":1,"q\\"k":null}'
    assert json_text.build_row(["a", "b"], ["1", '"x"'], True) == '{"a":1,\n "b":"x"}'
    assert json_text.build_row([], [], False) == "{}"
    assert json_text.build_row(["a"], ["1"], None) is None  # row_to_json(r, NULL): strict
