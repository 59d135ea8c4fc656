"""The Outcome sum type: each kind carries what it needs, notices ride on every kind, and the
kinds are frozen values the connection matches on."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from planner.types import BY_NAME, SqlType
from server.copy_format import CopyOptions
from server.outcome import CommandDone, CopyOut, EmptyQuery, Outcome, Rows, Stream, rows_outcome

INT = SqlType(BY_NAME["integer"])
TEXT = SqlType(BY_NAME["text"])


def test_rows_outcome_builds_a_typed_table_and_a_select_tag():
    out = rows_outcome(["n", "name"], [(1, "a"), (2, None)], [INT, TEXT])
    assert isinstance(out, Rows)
    assert out.tag == "SELECT 2"
    assert out.names == ["n", "name"] and out.types == [INT, TEXT]
    assert out.table.to_pylist() == [{"c0": 1, "c1": "a"}, {"c0": 2, "c1": None}]
    assert out.table.schema.field(0).type == pa.int32()


def test_rows_outcome_defaults_to_text_and_keeps_a_given_tag():
    out = rows_outcome(["setting"], [("on",)], tag="SHOW")
    assert out.tag == "SHOW" and out.types == [TEXT]


def test_notices_and_parameter_changes_ride_on_every_kind_as_tuples():
    notices = [("WARNING", "there is no transaction in progress")]
    done = CommandDone("COMMIT", notices=notices, parameter_changes=[("TimeZone", "UTC")])
    notices.append(("NOTICE", "later"))  # the outcome keeps its own copy
    assert done.notices == (("WARNING", "there is no transaction in progress"),)
    assert done.parameter_changes == (("TimeZone", "UTC"),)
    rows = rows_outcome(["b"], [(True,)], [SqlType(BY_NAME["boolean"])], notices=[("WARNING", "PID 1 is not a PostgreSQL backend process")])
    assert rows.notices == (("WARNING", "PID 1 is not a PostgreSQL backend process"),)
    assert EmptyQuery().notices == () and EmptyQuery().parameter_changes == ()


def test_outcomes_are_frozen():
    done = CommandDone("SET")
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.tag = "RESET"  # type: ignore[misc]


def test_fixed_tags_are_not_fields():
    table = pa.table({"c0": pa.array([1], pa.int32())})
    copy = CopyOut(["n"], [INT], table, CopyOptions())
    assert copy.tag == "COPY" and "tag" not in {f.name for f in dataclasses.fields(copy)}
    assert EmptyQuery().tag == ""
    assert Stream.tag == "SUBSCRIBE"


@pytest.mark.parametrize("outcome, kind", [
    (CommandDone("CREATE TABLE"), "done"),
    (EmptyQuery(), "empty"),
    (rows_outcome(["a"], [("x",)]), "rows"),
    (CopyOut(["a"], [TEXT], pa.table({"c0": ["x"]}), CopyOptions()), "copy out"),
])
def test_each_kind_is_matched_by_its_class(outcome: Outcome, kind: str):
    match outcome:
        case CommandDone(tag=tag):
            got = "done" if tag else "?"
        case EmptyQuery():
            got = "empty"
        case Rows():
            got = "rows"
        case CopyOut():
            got = "copy out"
        case _:
            got = "?"
    assert got == kind
