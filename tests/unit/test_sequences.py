"""Sequences' pure parts: options with sequence.c's defaults and checks, nextval's
arithmetic, the serial and identity columns of CREATE TABLE, and the statements' parsing.
The expected values and messages are PostgreSQL 15's (side by side in
tests/slt/own/sequences.test)."""

from __future__ import annotations

import pglast
import pytest

from planner import sequences as seq
from planner import statements as st
from planner import table_sequences
from planner.errors import SqlError
from planner.parser import parse_statement


def _options(text: str, **kw) -> tuple[seq.Spec, tuple[str, ...] | None, int | None]:
    stmt = pglast.parse_sql(text)[0].stmt
    return seq.options(stmt.options, **kw)


@pytest.mark.parametrize("text, spec", [
    ("CREATE SEQUENCE s", seq.Spec("bigint", 1, 1, 1, 2 ** 63 - 1)),
    ("CREATE SEQUENCE s INCREMENT -1", seq.Spec("bigint", -1, -1, -(2 ** 63), -1)),
    ("CREATE SEQUENCE s AS smallint", seq.Spec("smallint", 1, 1, 1, 32767)),
    ("CREATE SEQUENCE s AS int4 INCREMENT -2 MINVALUE -10", seq.Spec("integer", -1, -2, -10, -1)),
    ("CREATE SEQUENCE s START 5 INCREMENT 2 MAXVALUE 11 CACHE 3 CYCLE", seq.Spec("bigint", 5, 2, 1, 11, 3, True)),
    ("CREATE SEQUENCE s START 9223372036854775807 MINVALUE 9223372036854775806",
     seq.Spec("bigint", 9223372036854775807, 1, 9223372036854775806, 2 ** 63 - 1)),
])
def test_options_take_postgresqls_defaults(text, spec):
    assert _options(text)[0] == spec


@pytest.mark.parametrize("text, message", [
    ("CREATE SEQUENCE s INCREMENT 0", "INCREMENT must not be zero"),
    ("CREATE SEQUENCE s MINVALUE 10 MAXVALUE 5", "MINVALUE (10) must be less than MAXVALUE (5)"),
    ("CREATE SEQUENCE s START 100 MAXVALUE 50", "START value (100) cannot be greater than MAXVALUE (50)"),
    ("CREATE SEQUENCE s START 0", "START value (0) cannot be less than MINVALUE (1)"),
    ("CREATE SEQUENCE s AS smallint MAXVALUE 40000", "MAXVALUE (40000) is out of range for sequence data type smallint"),
    ("CREATE SEQUENCE s AS text", "sequence type must be smallint, integer, or bigint"),
    ("CREATE SEQUENCE s CACHE 0", "CACHE (0) must be greater than zero"),
    ("CREATE SEQUENCE s START 1 START 2", "conflicting or redundant options"),
])
def test_bad_options_are_postgresqls_errors(text, message):
    with pytest.raises(SqlError) as err:
        _options(text)
    assert err.value.message == message


def test_alter_options_build_on_the_sequence_and_restart():
    base = _options("CREATE SEQUENCE s START 5 INCREMENT 2 MAXVALUE 11")[0]
    spec, owned, restart = _options("ALTER SEQUENCE s INCREMENT 3 RESTART", base=base)
    assert (spec.increment, spec.start, spec.maxvalue, restart, owned) == (3, 5, 11, 5, None)
    spec, _, restart = _options("ALTER SEQUENCE s NO MAXVALUE CYCLE RESTART WITH 7", base=base)
    assert (spec.maxvalue, spec.cycle, restart) == (2 ** 63 - 1, True, 7)
    spec, _, _ = _options("ALTER SEQUENCE s AS smallint", base=_options("CREATE SEQUENCE s")[0])
    assert spec.maxvalue == 32767  # a bound at its old type's limit follows the new type
    with pytest.raises(SqlError, match=r"RESTART value \(20\) cannot be greater than MAXVALUE \(11\)"):
        _options("ALTER SEQUENCE s RESTART 20", base=base)


def test_advance_counts_from_the_start_then_steps():
    spec = seq.Spec("bigint", 5, 2, 1, 11)
    values, state = seq.advance(spec, seq.start_state(spec), 3, "s")
    assert values == [5, 7, 9] and state == seq.State(9, True)
    values, state = seq.advance(spec, state, 1, "s")
    assert values == [11]
    with pytest.raises(SqlError) as err:
        seq.advance(spec, state, 1, "s")
    assert (err.value.sqlstate, err.value.message) == ("2200H", 'nextval: reached maximum value of sequence "s" (11)')


def test_a_call_that_would_pass_the_bound_takes_nothing():
    spec = seq.Spec("integer", 1, 1, 1, 3)
    with pytest.raises(SqlError):
        seq.advance(spec, seq.State(1, True), 5, "s")
    assert seq.advance(spec, seq.State(1, True), 2, "s")[0] == [2, 3]


def test_descending_and_cycling_sequences():
    down = seq.Spec("smallint", -1, -1, -32768, -1)
    assert seq.advance(down, seq.start_state(down), 2, "d")[0] == [-1, -2]
    with pytest.raises(SqlError, match='reached minimum value of sequence "d" \\(-32768\\)'):
        seq.advance(down, seq.State(-32768, True), 1, "d")
    cyc = seq.Spec("integer", 3, -1, -2, 3, cycle=True)
    assert seq.advance(cyc, seq.start_state(cyc), 8, "c")[0] == [3, 2, 1, 0, -1, -2, 3, 2]


def test_the_mark_ahead_stops_at_the_bound():
    spec = seq.Spec("bigint", 1, 1, 1, 40)
    assert seq.ahead(spec, seq.State(1, True), 32) == seq.State(33, True)
    assert seq.ahead(spec, seq.State(20, True), 32) == seq.State(40, True)
    down = seq.Spec("bigint", -1, -10, -100, -1)
    assert seq.ahead(down, seq.State(-1, False), 32) == seq.State(-100, True)


@pytest.mark.parametrize("name, default", [
    ("t_id_seq", "nextval('t_id_seq'::regclass)"),
    ("T5_Id_seq", "nextval('\"T5_Id_seq\"'::regclass)"),
    ("it's", "nextval('\"it''s\"'::regclass)"),
])
def test_a_serial_default_names_its_sequence_both_ways(name, default):
    assert seq.nextval_default(name) == default
    assert seq.sequence_in_default(default) == name


def test_only_a_plain_nextval_default_names_a_sequence():
    assert seq.sequence_in_default("nextval('s'::regclass) + 1") is None
    assert seq.sequence_in_default("now()") is None
    assert seq.sequence_in_default(None) is None


@pytest.mark.parametrize("text, name", [("s", "s"), ("S", "s"), ('"S"', "S"), ("public.s", "s"), (' "a""b" ', 'a"b')])
def test_regclass_names(text, name):
    assert seq.regclass_name(text) == name


def test_regclass_in_another_schema_is_refused():
    with pytest.raises(SqlError) as err:
        seq.regclass_name("other.s")
    assert err.value.sqlstate == "3F000"


def test_serial_and_identity_columns_of_create_table():
    found = table_sequences.column_sequences(
        "CREATE TABLE t (a serial, b bigserial, c smallserial, d int GENERATED ALWAYS AS IDENTITY, "
        "e bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 10 INCREMENT BY -5 MINVALUE -20 MAXVALUE 10), f int)")
    assert {k: (v.spec.type, v.identity) for k, v in found.items()} == {
        "a": ("integer", None), "b": ("bigint", None), "c": ("smallint", None),
        "d": ("integer", "always"), "e": ("bigint", "by default")}
    assert (found["e"].spec.start, found["e"].spec.increment, found["e"].spec.minvalue) == (10, -5, -20)


@pytest.mark.parametrize("text, state, message", [
    ("CREATE TABLE t (a serial DEFAULT 1)", "42601", 'multiple default values specified for column "a" of table "t"'),
    ("CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY DEFAULT 1)", "42601",
     'both default and identity specified for column "a" of table "t"'),
    ("CREATE TABLE t (a text GENERATED ALWAYS AS IDENTITY)", "22023",
     "identity column type must be smallint, integer, or bigint"),
])
def test_bad_serial_and_identity_columns(text, state, message):
    with pytest.raises(SqlError) as err:
        table_sequences.column_sequences(text)
    assert (err.value.sqlstate, err.value.message) == (state, message)


def test_identity_clauses_are_blanked_for_the_column_reader():
    text = "CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY (START 5 INCREMENT -1 MINVALUE -3), b text)"
    blanked = table_sequences.without_identity(text)
    assert len(blanked) == len(text)
    assert "IDENTITY" not in blanked and "START" not in blanked and "b text" in blanked
    text = "CREATE TABLE t (é€ text DEFAULT 'ü', a int GENERATED ALWAYS AS IDENTITY (START 5), b text)"
    blanked = table_sequences.without_identity(text)  # node locations count characters
    assert blanked == "CREATE TABLE t (é€ text DEFAULT 'ü', a int " + " " * 38 + ", b text)"


def test_create_table_columns_take_their_sequences():
    stmt = parse_statement("CREATE TABLE t (id serial PRIMARY KEY, g bigint GENERATED BY DEFAULT AS IDENTITY, v text)")
    assert isinstance(stmt, st.CreateTable)
    id_, g, v = stmt.columns
    assert (id_.type.base.name, id_.not_null, id_.sequence.identity) == ("integer", True, None)
    assert (g.type.base.name, g.not_null, g.sequence.identity) == ("bigint", True, "by default")
    assert v.sequence is None


def test_sequence_statements_parse():
    create = parse_statement("CREATE SEQUENCE IF NOT EXISTS s AS integer START 3 OWNED BY t.id")
    assert create == st.CreateSequence("s", seq.Spec("integer", 3, 1, 1, 2 ** 31 - 1), ("t", "id"), True)
    alter = parse_statement("ALTER SEQUENCE IF EXISTS s RESTART")
    assert isinstance(alter, st.AlterSequence) and alter.if_exists and alter.name == "s"
    assert parse_statement('DROP SEQUENCE "S", s CASCADE') == st.Drop("SEQUENCE", ("S", "s"), False, True)
    with pytest.raises(SqlError) as err:
        parse_statement("CREATE TEMP SEQUENCE s")
    assert err.value.sqlstate == "0A000"


def test_insert_overriding_and_default_values_parse():
    stmt = parse_statement("INSERT INTO g OVERRIDING SYSTEM VALUE VALUES (1, 'a')")
    assert stmt.overriding == "system" and len(stmt.source.expressions) == 1
    assert parse_statement("INSERT INTO g (id) OVERRIDING USER VALUE SELECT 1").overriding == "user"
    default = parse_statement("INSERT INTO g DEFAULT VALUES")
    assert default.overriding is None and default.source.expressions[0].expressions == []


def test_sequence_name_option_of_an_identity_column():
    found = table_sequences.column_sequences(
        "CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME public.t_custom START 7))")
    assert (found["a"].name, found["a"].spec.start) == ("t_custom", 7)
    with pytest.raises(SqlError) as err:
        table_sequences.column_sequences("CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME x.s))")
    assert err.value.sqlstate == "3F000"


def test_alter_column_add_identity_parses_to_its_action():
    from planner import alter_syntax
    stmt = parse_statement("ALTER TABLE ONLY public.book ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY "
                           "(SEQUENCE NAME public.book_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1)")
    (action,) = stmt.actions
    assert isinstance(action, alter_syntax.AddIdentity) and action.column == "id"
    generated = table_sequences.identity_sequence("bigint", action.constraint)
    assert (generated.identity, generated.name, generated.spec.maxvalue) == ("always", "book_id_seq", 2 ** 63 - 1)


def test_copy_of_a_public_table_names_the_table():
    assert parse_statement("COPY public.author (id, name) FROM stdin").table == "author"
    with pytest.raises(SqlError) as err:
        parse_statement("COPY other.author FROM stdin")
    assert err.value.sqlstate == "3F000"


def test_sequence_calls_with_computed_arguments_become_a_query_of_the_arguments():
    from server.catalog import Catalog
    from server.sequence_calls import computed_form
    form = computed_form(Catalog(), "SELECT setval('s', coalesce(max(id), 1), max(id) IS NOT NULL) AS x FROM t WHERE id > $1")
    assert form.query == "SELECT 's', COALESCE(max(id), 1), max(id) IS NOT NULL FROM t WHERE id > $1"
    assert form.shapes == (("setval", "x", 3),)
    assert computed_form(Catalog(), "SELECT lastval() FROM t").query == "SELECT 1 FROM t"
    with pytest.raises(SqlError) as err:  # pg_get_serial_sequence is answered while rewriting
        computed_form(Catalog(), "SELECT setval(pg_get_serial_sequence('t', 'id'), 1) FROM t")
    assert err.value.sqlstate == "42P01"
    for refused in ("SELECT nextval('s') + 1 FROM t", "SELECT setval('s', nextval('s')) FROM t", "SELECT 1 FROM t",
                    "INSERT INTO t VALUES (nextval('s'))"):
        assert computed_form(Catalog(), refused) is None, refused


def test_update_set_default_of_a_serial_or_identity_column_draws_per_row():
    from planner.types import column_type
    from server import sequences
    from server.catalog_items import Column, Item

    integer = column_type("integer")
    table = Item("u1", "t", "table", (Column("id", integer, True, "nextval('t_id_seq'::regclass)"),
                                      Column("g", integer, identity="always"), Column("v", integer)), 0)
    stmt = parse_statement("UPDATE t SET v = DEFAULT, id = DEFAULT, g = DEFAULT")
    assert sequences.check_update(table, stmt.assignments) == (0, 1)  # v has no sequence: its default
    with pytest.raises(SqlError) as err:
        sequences.check_update(table, parse_statement("UPDATE t SET g = 5").assignments)
    assert err.value.sqlstate == "428C9"
