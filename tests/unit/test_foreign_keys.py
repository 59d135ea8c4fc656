"""FOREIGN KEY planning and checking (planner/table_foreign_keys.py, server/foreign_keys.py)
over in-memory key counts, without Spark or storage. Messages and SQLSTATEs are PostgreSQL
15's (side by side in tests/slt/own/foreign_keys.test)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from planner.errors import SqlError
from planner.parser import parse_statement
from planner.table_foreign_keys import Action
from planner.types import column_type
from server import foreign_keys, referential_actions, system_foreign_keys
from server.catalog import Catalog
from server.catalog_items import Column, ForeignKey, Item, UniqueKey
from server.transaction import ConstraintModes
from server.unique_keys import UniqueKeys
from spark_backend.schema import storage_arrow_schema

INT = column_type("integer", (), is_array=False)
TEXT = column_type("text", (), is_array=False)


def _catalog() -> Catalog:
    """p (id PRIMARY KEY, name) and c (pid REFERENCES p, v)."""
    catalog = Catalog()
    p = Item("u1", "p", "table", (Column("id", INT, True), Column("name", TEXT)), 0,
             keys=(UniqueKey("p_pkey", ("id",), True, "u2"),))
    for op in catalog.plan_create(p):
        catalog.apply(op)
    stmt = parse_statement("CREATE TABLE c (pid int REFERENCES p, v text)")
    columns = (Column("pid", INT), Column("v", TEXT))
    fks = foreign_keys.plan(catalog, "c", "u3", columns, (), stmt.foreign_keys)
    for op in catalog.plan_create(Item("u3", "c", "table", columns, 0, foreign_keys=fks)):
        catalog.apply(op)
    return catalog


def _rows(item: Item, rows: list[tuple], diff: int = 1) -> pa.Table:
    arrays = [pa.array([r[i] for r in rows], pa.int32() if c.type == INT else pa.string())
              for i, c in enumerate(item.columns)]
    arrays += [pa.array([0] * len(rows), pa.int64()), pa.array([diff] * len(rows), pa.int64())]
    return pa.Table.from_arrays(arrays, schema=storage_arrow_schema(item.column_types))


def _counts(catalog: Catalog, committed: dict[str, pa.Table]) -> UniqueKeys:
    unique = UniqueKeys(None)
    for item in catalog.items.values():
        unique.created(item)
    unique.committed(committed)
    return unique


def test_planned_as_postgresql_names_and_resolves_it():
    (fk,) = _catalog().get("c").foreign_keys
    assert (fk.name, fk.columns, fk.table_id, fk.ref_columns) == ("c_pid_fkey", ("pid",), "u1", ("id",))


@pytest.mark.parametrize("sql, state, message", [
    ("CREATE TABLE d (q int REFERENCES nosuch)", "42P01", 'relation "nosuch" does not exist'),
    ("CREATE TABLE d (q int REFERENCES p (name))", "42830",
     'there is no unique constraint matching given keys for referenced table "p"'),
    ("CREATE TABLE d (q text REFERENCES p)", "42804", 'foreign key constraint "d_q_fkey" cannot be implemented'),
    ("CREATE TABLE d (q int, r int, FOREIGN KEY (q, r) REFERENCES p (id))", "42830",
     "number of referencing and referenced columns for foreign key disagree"),
    ("CREATE TABLE d (q int, FOREIGN KEY (nope) REFERENCES p)", "42703",
     'column "nope" referenced in foreign key constraint does not exist'),
    ("CREATE TABLE d (q int REFERENCES c)", "42704", 'there is no primary key for referenced table "c"'),
])
def test_bad_references_are_postgresqls_errors(sql, state, message):
    stmt = parse_statement(sql)
    with pytest.raises(SqlError) as err:
        foreign_keys.plan(_catalog(), "d", "u9", tuple(Column(c.name, c.type) for c in stmt.columns), (),
                          stmt.foreign_keys)
    assert (err.value.sqlstate, err.value.message) == (state, message)


@pytest.mark.parametrize("sql, on_delete, on_update", [
    ("CREATE TABLE d (q int REFERENCES p ON DELETE CASCADE)", Action.CASCADE, Action.NO_ACTION),
    ("CREATE TABLE d (q int REFERENCES p ON UPDATE SET NULL ON DELETE SET DEFAULT)", Action.SET_DEFAULT,
     Action.SET_NULL),
    ("CREATE TABLE d (q int, FOREIGN KEY (q) REFERENCES p ON DELETE RESTRICT ON UPDATE CASCADE)", Action.RESTRICT,
     Action.CASCADE),
    ("CREATE TABLE d (q int REFERENCES p)", Action.NO_ACTION, Action.NO_ACTION),
])
def test_actions_are_read_kept_and_written_back(sql, on_delete, on_update):
    stmt = parse_statement(sql)
    (spec,) = stmt.foreign_keys
    assert (spec.on_delete, spec.on_update) == (on_delete, on_update)
    (fk,) = foreign_keys.plan(_catalog(), "d", "u9", (Column("q", INT),), (), stmt.foreign_keys)
    assert ForeignKey.from_json(fk.to_json()) == fk
    shown = system_foreign_keys.definition(fk, _catalog().get("p"))
    words = [f"ON UPDATE {on_update.sql}"] if on_update is not Action.NO_ACTION else []
    words += [f"ON DELETE {on_delete.sql}"] if on_delete is not Action.NO_ACTION else []
    assert shown == " ".join(["FOREIGN KEY (q) REFERENCES p(id)", *words])  # ruleutils' order


def test_a_catalog_written_before_actions_reads_as_no_action():
    old = {"name": "c_pid_fkey", "columns": ["pid"], "table_id": "u1", "ref_columns": ["id"], "fk_id": "u4"}
    fk = ForeignKey.from_json(old)
    assert (fk.on_delete, fk.on_update) == (Action.NO_ACTION, Action.NO_ACTION)


def test_set_null_with_columns_and_match_full_are_refused():
    for sql in ("CREATE TABLE d (q int REFERENCES p ON DELETE SET NULL (q))",
                "CREATE TABLE d (q int REFERENCES p MATCH FULL)"):
        with pytest.raises(SqlError) as err:
            parse_statement(sql)
        assert err.value.sqlstate == "0A000"


def test_the_keys_a_change_removes_and_what_they_become():
    p = _catalog().get("p")
    (fk,) = _catalog().get("c").foreign_keys

    def rows(*values):
        return pa.table({"id": pa.array([v[0] for v in values], pa.int32()), "name": [v[1] for v in values]})

    deleted = referential_actions.RowChange(p, rows((1, "a"), (None, "n")))
    assert referential_actions._changed_keys(deleted, fk) == {(1,): None}  # a NULL key refers to nothing
    updated = referential_actions.RowChange(p, rows((1, "a"), (2, "b"), (3, "c")), rows((1, "z"), (5, "b"), (2, "c")))
    # 1 kept its key; 2 became 5 but row 3 now holds 2, so 2 is not gone; 3 became 2
    assert referential_actions._changed_keys(updated, fk) == {(3,): (2,)}


def test_truncate_cascade_takes_the_referring_tables_with_a_notice():
    catalog = _catalog()
    notices: list[tuple[str, str]] = []
    with pytest.raises(SqlError) as err:
        foreign_keys.truncated(catalog, [catalog.get("p")], False, notices)
    assert err.value.sqlstate == "0A000"
    names = [t.name for t in foreign_keys.truncated(catalog, [catalog.get("p")], True, notices)]
    assert names == ["p", "c"] and notices == [("NOTICE", 'truncate cascades to table "c"')]


def test_a_child_row_needs_its_parent_key_present_or_written_with_it():
    catalog = _catalog()
    p, c = catalog.get("p"), catalog.get("c")
    unique = _counts(catalog, {"u1": _rows(p, [(1, "a")])})
    assert foreign_keys.violation(unique, {"u3": _rows(c, [(1, "x"), (None, "n")])}, catalog.items) is None
    error = foreign_keys.violation(unique, {"u3": _rows(c, [(2, "y")])}, catalog.items)
    assert error.sqlstate == "23503" and error.detail == 'Key (pid)=(2) is not present in table "p".'
    both = {"u1": _rows(p, [(2, "b")]), "u3": _rows(c, [(2, "y")])}
    assert foreign_keys.violation(unique, both, catalog.items) is None
    assert foreign_keys.violation(unique, {"u3": _rows(c, [(2, "y")])}, catalog.items,
                                  earlier=[{"u1": _rows(p, [(2, "b")])}]) is None


def test_a_parent_key_cannot_go_while_referenced():
    catalog = _catalog()
    p, c = catalog.get("p"), catalog.get("c")
    unique = _counts(catalog, {"u1": _rows(p, [(1, "a"), (2, "b")]), "u3": _rows(c, [(1, "x")])})
    error = foreign_keys.violation(unique, {"u1": _rows(p, [(1, "a")], -1)}, catalog.items)
    assert error.sqlstate == "23503" and error.detail == 'Key (id)=(1) is still referenced from table "c".'
    assert foreign_keys.violation(unique, {"u1": _rows(p, [(2, "b")], -1)}, catalog.items) is None
    gone_too = {"u1": _rows(p, [(1, "a")], -1), "u3": _rows(c, [(1, "x")], -1)}
    assert foreign_keys.violation(unique, gone_too, catalog.items) is None
    # an UPDATE that keeps the key (retract and insert the same id) removes nothing
    same = {"u1": pa.concat_tables([_rows(p, [(1, "a")], -1), _rows(p, [(1, "renamed")])])}
    assert foreign_keys.violation(unique, same, catalog.items) is None


def test_deferred_keys_wait_for_commit():
    catalog = Catalog()
    for op in catalog.plan_create(Item("u1", "p", "table", (Column("id", INT, True),), 0,
                                       keys=(UniqueKey("p_pkey", ("id",), True, "u2"),))):
        catalog.apply(op)
    stmt = parse_statement("CREATE TABLE d (pid int REFERENCES p DEFERRABLE INITIALLY DEFERRED)")
    fks = foreign_keys.plan(catalog, "d", "u3", (Column("pid", INT),), (), stmt.foreign_keys)
    assert fks[0].deferred
    for op in catalog.plan_create(Item("u3", "d", "table", (Column("pid", INT),), 0, foreign_keys=fks)):
        catalog.apply(op)
    unique = _counts(catalog, {})
    write = {"u3": _rows(catalog.get("d"), [(7,)])}
    at_statement = ConstraintModes().deferred  # a block's statement leaves the key to COMMIT
    assert foreign_keys.violation(unique, write, catalog.items, deferred=at_statement) is None
    assert foreign_keys.violation(unique, write, catalog.items).sqlstate == "23503"
    made_immediate = ConstraintModes().set(None, False).deferred  # SET CONSTRAINTS ALL IMMEDIATE
    assert foreign_keys.violation(unique, write, catalog.items, deferred=made_immediate).sqlstate == "23503"
