"""ALTER TABLE without a server: the statements read from PostgreSQL's parse tree, the
actions applied to a table's item (layout, attnums, keys, views), and the store's rewrite
(one record dropping and remaking a collection with its new file), replayed the same."""

from __future__ import annotations

import pyarrow as pa
import pytest

from planner import alter_syntax as alt
from planner import pg_parse
from planner.errors import SqlError
from planner.parser import parse
from planner.table_checks import renamed_column, table_checks
from planner.types import column_type
from server import alter_checks
from server.alter_plan import MAX_ATTNUM, NewColumn, plan_alter
from server.catalog import Catalog
from server.catalog_items import Column, Item, UniqueKey
from server.check_constraints import plan_checks
from spark_backend.schema import DIFF, TS, storage_arrow_schema
from spark_backend.storage import Store

INT, TEXT = column_type("integer"), column_type("text")


def _stmt(sql: str):
    return parse(sql)[0].statement


def test_actions_in_order():
    stmt = _stmt("ALTER TABLE IF EXISTS public.t ADD COLUMN IF NOT EXISTS c int DEFAULT 5 NOT NULL, "
                 "DROP COLUMN d CASCADE, ALTER c SET DEFAULT 1 + 2, ALTER c DROP DEFAULT, "
                 "ALTER COLUMN c DROP NOT NULL, ADD CONSTRAINT k PRIMARY KEY (a, b), DROP CONSTRAINT IF EXISTS k2")
    assert isinstance(stmt, alt.AlterTable) and stmt.table == "t" and stmt.if_exists
    kinds = [type(a).__name__ for a in stmt.actions]
    assert kinds == ["AddColumn", "DropColumn", "SetDefault", "SetDefault", "SetNotNull", "AddKey", "DropConstraint"]
    add = stmt.actions[0]
    assert (add.column.name, add.column.not_null, add.column.default.sql("postgres"), add.if_not_exists) == \
        ("c", True, "5", True)
    assert stmt.actions[1].cascade and stmt.actions[2].default.sql("postgres") == "1 + 2"
    assert stmt.actions[3].default is None and stmt.actions[5].key.columns == ("a", "b")


def test_renames_and_swap():
    assert _stmt('ALTER TABLE "T" RENAME COLUMN a TO "B"') == alt.RenameColumn("T", "a", "B")
    assert _stmt("ALTER VIEW v RENAME TO w") == alt.RenameRelation("v", "w", object_type="VIEW")
    assert _stmt("ALTER TABLE IF EXISTS t RENAME TO u") == alt.RenameRelation("t", "u", True)
    assert type(_stmt("ALTER TABLE a SWAP WITH b")).__name__ == "SwapTables"


def test_an_inline_key_becomes_an_action():
    stmt = _stmt("ALTER TABLE t ADD COLUMN c int UNIQUE")
    assert [type(a).__name__ for a in stmt.actions] == ["AddColumn", "AddKey"]
    assert stmt.actions[1].key.columns == ("c",)


@pytest.mark.parametrize(("sql", "fragment"), [
    ("ALTER TABLE t ALTER COLUMN c TYPE text", "ALTER COLUMN ... TYPE"),
    ("ALTER TABLE t ADD EXCLUDE USING gist (c WITH =)", "EXCLUDE constraints"),
    ("ALTER TABLE t OWNER TO x", "OWNER TO"),
    ("ALTER TABLE t ADD COLUMN c int, REPLICA IDENTITY FULL", "REPLICA IDENTITY"),
    ("ALTER TABLE t RENAME CONSTRAINT a TO b", "RENAME CONSTRAINT"),
    ("ALTER VIEW v ALTER COLUMN a SET DEFAULT 1", "ALTER VIEW"),
])
def test_refused_by_name(sql, fragment):
    with pytest.raises(SqlError) as info:
        _stmt(sql)
    assert info.value.sqlstate == "0A000" and fragment in info.value.message


def test_view_reads_column():
    assert alt.view_reads_column("SELECT a, t.b FROM t", "b", ["a", "b"])
    assert not alt.view_reads_column("SELECT a, count(*) FROM t GROUP BY a", "b", ["a", "count"])
    assert alt.view_reads_column("SELECT * FROM t", "b", ["a", "b"])
    assert not alt.view_reads_column("SELECT * FROM t", "c", ["a", "b"])  # added after the view


def _catalog() -> tuple[Catalog, Item]:
    catalog = Catalog()
    table = Item(catalog.allocate_id(), "t", "table", (Column("a", INT, True), Column("b", TEXT), Column("c", INT)),
                 1, keys=(UniqueKey("t_pkey", ("a",), True, "u9"), UniqueKey("t_b_c_key", ("b", "c"), False, "u10")))
    for op in catalog.plan_create(table):
        catalog.apply(op)
    star = Item(catalog.allocate_id(), "vs", "view", table.columns, 2, "SELECT * FROM t", (table.id,))
    for op in catalog.plan_create(star):
        catalog.apply(op)
    return catalog, catalog.require("t")


def test_drop_then_add_keeps_postgres_attnums():
    catalog, table = _catalog()
    catalog.items = {k: v for k, v in catalog.items.items() if v.kind == "table"}  # no view in the way
    planned = plan_alter(catalog, table, _stmt("ALTER TABLE t DROP COLUMN b, ADD COLUMN d text DEFAULT 'x'").actions)
    assert planned.rewrite and planned.sources[:2] == [0, 2] and isinstance(planned.sources[2], NewColumn)
    assert planned.table.column_names == ["a", "c", "d"] and planned.table.attnums() == [1, 3, 4]
    assert [k.name for k in planned.table.keys] == ["t_pkey"]  # the key on b went with it
    assert planned.table.details[MAX_ATTNUM] == 4
    # dropping the column added last: its attnum is not handed out again either
    catalog.items[table.id] = planned.table
    again = plan_alter(catalog, planned.table, _stmt("ALTER TABLE t DROP COLUMN d, ADD COLUMN e int").actions)
    assert again.table.attnums() == [1, 3, 5]


def test_metadata_only_keeps_the_layout_and_stored_json():
    catalog, table = _catalog()
    planned = plan_alter(catalog, table, _stmt("ALTER TABLE t ALTER b SET DEFAULT 'q', ALTER c SET NOT NULL").actions)
    assert not planned.rewrite
    assert planned.table.columns[0].to_json() == table.columns[0].to_json()
    assert "attnum" not in planned.table.columns[1].to_json()  # written as columns always were
    assert planned.table.column("b").default == "'q'" and planned.table.column("c").not_null


def test_errors_as_postgres():
    catalog, table = _catalog()
    for sql, state in [("ALTER TABLE t DROP COLUMN b", "2BP01"), ("ALTER TABLE t ADD COLUMN a int", "42701"),
                       ("ALTER TABLE t DROP COLUMN z", "42703"), ("ALTER TABLE t ALTER a DROP NOT NULL", "42P16"),
                       ("ALTER TABLE t ADD PRIMARY KEY (b)", "42P16"), ("ALTER TABLE t DROP CONSTRAINT z", "42704")]:
        with pytest.raises(SqlError) as info:
            plan_alter(catalog, table, _stmt(sql).actions)
        assert info.value.sqlstate == state, sql
    cascade = plan_alter(catalog, table, _stmt("ALTER TABLE t DROP COLUMN b CASCADE").actions)
    assert [v.name for v in cascade.dropped_views] == ["vs"]


def test_add_column_pins_a_star_view():
    catalog, table = _catalog()
    planned = plan_alter(catalog, table, _stmt("ALTER TABLE t ADD COLUMN d int").actions)
    (view,) = planned.pinned_views
    assert view.sql == 'SELECT "a", "b", "c" FROM (SELECT * FROM t) AS __view'


def _rows(values: list[tuple], types) -> pa.Table:
    schema = storage_arrow_schema(types)
    cols = [pa.array([v[i] for v in values], schema.field(i).type) for i in range(len(types))]
    n = len(values)
    return pa.Table.from_arrays([*cols, pa.array([0] * n, pa.int64()), pa.array([1] * n, pa.int64())], schema=schema)


def test_a_rewrite_is_one_record_and_replays_the_same(tmp_path):
    """drop_collection + create_collection + the new file in one record: the collection
    has only the new file, after the commit and after a replay of the log."""
    store = Store(tmp_path)
    store.open()
    store.commit(1, [{"op": "create_collection", "collection": "u1"}], {})
    store.commit(2, [], {"u1": _rows([(1, "a")], [INT, TEXT]).set_column(2, TS, pa.array([2], pa.int64()))})
    old_files = list(store.collections["u1"].files)
    assert store.holds("u1", old_files)
    new = _rows([(1,)], [INT])
    store.commit(3, [{"op": "drop_collection", "collection": "u1"}, {"op": "create_collection", "collection": "u1"}],
                 {"u1": new.set_column(1, TS, pa.array([3], pa.int64()))})
    coll = store.collections["u1"]
    assert len(coll.files) == 1 and coll.since == 3 and not store.holds("u1", old_files)
    state = [f.path for f in coll.files]
    store.close()
    again = Store(tmp_path)
    again.open()
    assert [f.path for f in again.collections["u1"].files] == state
    table = again.read_columns(again.collections["u1"].files, ["c0", DIFF], "u1")
    assert table.column("c0").to_pylist() == [1] and table.num_columns == 2
    again.close()


def test_checks_read_and_named_as_postgres():
    stmt = _stmt("CREATE TABLE t (v int CHECK (v>0), w text, CONSTRAINT short CHECK (length(w)<5), "
                 "CHECK (v < 100 AND w <> 'x(')) ")
    assert [(c.sql, c.columns, c.name, c.column) for c in stmt.checks] == [
        ("v > 0", ("v",), None, "v"), ("length(w) < 5", ("w",), "short", None),
        ("v < 100 AND w <> 'x('", ("v", "w"), None, None)]
    catalog = Catalog()
    named = plan_checks(catalog, "t", ["v", "w"], stmt.checks)
    assert [c.name for c in named] == ["t_v_check", "short", "t_check"]
    again = plan_checks(catalog, "t", ["v", "w"], (stmt.checks[0],), own=tuple(c.name for c in named))
    assert again[0].name == "t_v_check1"  # the table's own names are taken, as in PostgreSQL
    with pytest.raises(SqlError) as info:
        plan_checks(catalog, "t", ["v"], (stmt.checks[1],))
    assert info.value.sqlstate == "42703"


def test_check_json_only_when_present():
    catalog, table = _catalog()
    assert "checks" not in table.to_json()
    spec = _stmt("ALTER TABLE t ADD CONSTRAINT pos CHECK (c > 0) NOT VALID").actions[0].check
    planned = plan_alter(catalog, table, (alt.AddCheck(spec),))
    assert not planned.rewrite and planned.validate == []
    assert Item.from_json(planned.table.to_json()) == planned.table
    renamed = renamed_column(planned.table.checks[0].sql, "c", "cc")
    assert renamed == "cc > 0"


def test_commit_time_checks_of_a_write():
    _, table = _catalog()
    strict = Item(table.id, "t", "table", (Column("a", INT, True), Column("b", TEXT)), 1)
    write = _rows([(None, "x")], [INT, TEXT])
    assert alter_checks.nulls_written({table.id: write}, {table.id: strict}).sqlstate == "23502"
    retraction = write.set_column(3, DIFF, pa.array([-1], pa.int64()))
    assert alter_checks.nulls_written({table.id: retraction}, {table.id: strict}) is None  # a DELETE of it
    # a write in the old layout (3 columns) reaching a table rewritten to 2: refused, 40001
    old_layout = _rows([(1, "x", 2)], [INT, TEXT, INT])
    assert alter_checks.stale_layout({table.id: old_layout}, {table.id: strict}, {table.id: 5}).sqlstate == "40001"
    assert alter_checks.stale_layout({table.id: old_layout}, {table.id: table}, {table.id: 5}) is None
    assert alter_checks.stale_layout({table.id: old_layout}, {table.id: strict}, {}) is None  # never rewritten


def test_check_expressions_are_read_after_multibyte_characters():
    sql = "CREATE TABLE t (a text CHECK (a <> 'ééé'), b int CHECK (b > -1), c text DEFAULT '€' CHECK (c <> ''))"
    specs = table_checks(pg_parse.parse_one(sql)["CreateStmt"], sql)
    assert [s.sql for s in specs] == ["a <> 'ééé'", "b > -1", "c <> ''"]


def test_set_generated_and_drop_identity():
    assert _stmt("ALTER TABLE t ALTER a SET GENERATED ALWAYS").actions == (alt.SetIdentity("a", "always"),)
    assert _stmt("ALTER TABLE t ALTER a SET GENERATED BY DEFAULT RESTART").actions == (
        alt.SetIdentity("a", "by default", ("RESTART",)),)
    assert _stmt("ALTER TABLE t ALTER a DROP IDENTITY IF EXISTS").actions == (alt.DropIdentity("a", True),)
    catalog, table = _catalog()
    made = plan_alter(catalog, table, _stmt("ALTER TABLE t ALTER a ADD GENERATED ALWAYS AS IDENTITY").actions)
    for op in catalog.plan_create(made.created[0]):
        catalog.apply(op)
    identity = made.table
    by_default = plan_alter(catalog, identity, _stmt("ALTER TABLE t ALTER a SET GENERATED BY DEFAULT").actions)
    assert by_default.table.column("a").identity == "by default" and not by_default.rewrite
    dropped = plan_alter(catalog, identity, _stmt("ALTER TABLE t ALTER a DROP IDENTITY").actions)
    assert dropped.table.column("a").identity is None and [s.name for s in dropped.dropped] == ["t_a_seq"]
    for sql, state in [("ALTER TABLE t ALTER b DROP IDENTITY", "55000"), ("ALTER TABLE t ALTER b SET GENERATED ALWAYS",
                                                                          "55000"),
                       ("ALTER TABLE t ALTER a SET START WITH 5", "0A000")]:
        with pytest.raises(SqlError) as info:
            plan_alter(catalog, identity, _stmt(sql).actions)
        assert info.value.sqlstate == state, sql
    skipped = plan_alter(catalog, identity, _stmt("ALTER TABLE t ALTER b DROP IDENTITY IF EXISTS").actions)
    assert skipped.notices == [("NOTICE", 'column "b" of relation "t" is not an identity column, skipping')]
