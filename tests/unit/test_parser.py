"""The statement parser and the PostgreSQL → Spark translation, without Spark."""

from __future__ import annotations

import pytest
import sqlglot

from planner import statements as st
from planner import subscribe_syntax as ss
from planner.errors import SqlError
from planner.lexer import split_statements
from planner.parser import parse, parse_one
from planner.translate import SessionContext, TableSource, ViewSource, to_spark

CTX = SessionContext("materialize", "alice", "PostgreSQL 15.0 (sparkwire)", "2024-01-02 03:04:05.000000", 42)


def resolve(name: str):
    if name == "t":
        return TableSource("__sw_1_t", {"a": "INT", "b": "BIGINT", "s": "STRING"})
    if name == "v":
        return ViewSource(sqlglot.parse_one("SELECT a FROM t WHERE b > 1", read="postgres"))
    return None


def one(sql: str) -> st.Statement:
    return parse_one(sql).statement


def test_split_respects_strings_dollar_quotes_and_comments():
    pieces = split_statements("select 'a;b', $$x;y$$; /* c; */ select 2 -- x;\n; ;show tables")
    assert [p.text for p in pieces] == ["select 'a;b', $$x;y$$", "select 2", "show tables"]
    assert pieces[1].offset == 32


def test_unicode_escape_constants_are_whole_statements():
    # pglast's scanner ends a U&'...' token before it starts: the statement was cut before it
    sql = "SELECT U&'d\\0061t', U&'a''b;' UESCAPE '!'; SELECT U&\"x\" FROM t"
    pieces = split_statements(sql)
    assert [p.text for p in pieces] == ["SELECT U&'d\\0061t', U&'a''b;' UESCAPE '!'", 'SELECT U&"x" FROM t']


def test_create_table_types_and_constraints():
    stmt = one("CREATE TABLE IF NOT EXISTS T (id int NOT NULL, price numeric(10,2) DEFAULT 0, "
               "tags text[], \"Name\" varchar(5))")
    assert isinstance(stmt, st.CreateTable)
    assert stmt.name == "t" and stmt.if_not_exists
    assert [c.name for c in stmt.columns] == ["id", "price", "tags", "Name"]
    assert [c.type.display() for c in stmt.columns] == ["integer", "numeric(10,2)", "text[]", "character varying(5)"]
    assert stmt.columns[0].not_null and stmt.columns[1].default is not None


@pytest.mark.parametrize(("sql", "code", "fragment"), [
    ("CREATE TABLE t (a foo)", "42704", 'type "foo" does not exist'),
    ("CREATE TABLE t (a int CHECK (a > (SELECT 1)))", "0A000", "cannot use subquery in check constraint"),
    ("CREATE TABLE t (a int REFERENCES u ON DELETE SET NULL (a))", "0A000", "SET NULL (columns) is not supported"),
    ("CREATE TABLE t (a int, PRIMARY KEY (a) INCLUDE (a))", "0A000", "INCLUDE"),
    ("CREATE TABLE t (a int, a text)", "42701", 'column "a" specified more than once'),
    ("CREATE TABLE t (a numeric(1001, 2))", "22023", "precision 1001"),
    ("SELECT 1 FROM", "42601", "syntax error"),
    ("GRANT SELECT ON t TO bob", "0A000", "GRANT is not supported"),
    ("CREATE INDEX i ON t ((a + 1))", "0A000", "indexes on expressions are not supported"),
    ("SELECT 'unterminated", "42601", "unterminated"),
    ("SUBSCRIBE t WITH (SNAPSHOT = 'x')", "22023", "SNAPSHOT"),
    ("SUBSCRIBE t WITH (FOO)", "22023", "FOO"),
    ("SUBSCRIBE t ENVELOPE UPSERT (KEY ())", "42601", "at least one KEY"),
    # Materialize's grammar and wording: one output modifier, clauses in their order.
    ("SUBSCRIBE t ENVELOPE UPSERT (KEY (a)) WITHIN TIMESTAMP ORDER BY a", "42601",
     "Expected end of statement, found WITHIN"),
    ("SUBSCRIBE t WITHIN TIMESTAMP ORDER BY a WITH (PROGRESS) ENVELOPE UPSERT (KEY (a))", "42601",
     "Expected end of statement, found ENVELOPE"),
    ("SUBSCRIBE t ENVELOPE FOO (KEY (a))", "42601", 'Expected one of UPSERT or DEBEZIUM, found identifier "foo"'),
    ("SUBSCRIBE t AS OF 5 WITH (PROGRESS)", "42601", "Expected end of statement, found WITH"),
    ("SUBSCRIBE t bogus", "42601", 'Expected end of statement, found identifier "bogus"'),
    ("FETCH ALL c WITH (bogus = 1)", "22023", "BOGUS"),
])
def test_bad_statements(sql, code, fragment):
    with pytest.raises(SqlError) as info:
        parse(sql)
    assert info.value.sqlstate == code
    assert fragment in info.value.message


def test_syntax_error_position_points_into_the_whole_string():
    with pytest.raises(SqlError) as info:
        parse("SELECT 1; SELECT 1 2 3")
    assert info.value.position is not None and info.value.position > 10


def test_dml_and_parameters():
    ins = parse("INSERT INTO t (a, s) VALUES ($1, $2), (3, 'x')")[0]
    assert isinstance(ins.statement, st.Insert) and ins.statement.columns == ("a", "s")
    assert ins.params == [1, 2]
    upd = one("UPDATE t SET a = a + 1, s = 'y' WHERE b = 2")
    assert isinstance(upd, st.Update) and [n for n, _ in upd.assignments] == ["a", "s"]
    assert isinstance(one("DELETE FROM t WHERE a = 1"), st.Delete)


def test_a_query_only_postgres_grammar_takes_binds_from_its_text():
    """`JOIN ... USING (...) AS j` (PostgreSQL 14+) is beyond sqlglot's grammar: the query
    keeps its text and parameters for the front end of our own, and only the older path,
    which needs sqlglot's tree, raises sqlglot's syntax error."""
    parsed = parse_one("SELECT j.id, $2::int FROM u1 JOIN u2 USING (id) AS j WHERE x = $1")
    query = parsed.statement
    assert isinstance(query, st.Query) and query.ast is None
    assert parsed.params == [1, 2]
    with pytest.raises(SqlError) as err:
        query.tree()
    assert err.value.sqlstate == "42601" and 'at or near "AS"' in err.value.message
    sub = parse_one("SUBSCRIBE (SELECT j.id FROM u1 JOIN u2 USING (id) AS j)").statement
    assert sub.query is None and sub.unparsed is not None and "USING (id) AS j" in sub.text
    # What PostgreSQL's grammar refuses is still refused at once.
    with pytest.raises(SqlError) as err:
        parse_one("SELECT j.id FROM u1 JOIN u2 USING (id) AS")
    assert err.value.sqlstate == "42601"


def test_session_statements():
    assert one("SET application_name TO 'x'") == st.SetVariable("application_name", "x")
    assert one("SET TIME ZONE 'UTC'") == st.SetVariable("timezone", "UTC")
    assert one("RESET ALL") == st.ResetVariable("all")
    assert one("SHOW TABLES") == st.ShowObjects("tables")
    assert one("SHOW COLUMNS FROM t") == st.ShowColumns("t")
    assert one("DROP TABLE IF EXISTS a, b CASCADE") == st.Drop("TABLE", ("a", "b"), True, True)
    assert one("START TRANSACTION ISOLATION LEVEL SERIALIZABLE") == st.Begin("serializable")
    assert one("BEGIN READ ONLY, ISOLATION LEVEL REPEATABLE READ DEFERRABLE") == st.Begin("repeatable read")
    assert one("BEGIN ISOLATION LEVEL STRICT SERIALIZABLE") == st.Begin("strict serializable")
    assert one("BEGIN") == st.Begin(None)
    with pytest.raises(SqlError) as err:
        one("BEGIN ISOLATION LEVEL SOMETIMES")
    assert err.value.sqlstate == "42601" and "SOMETIMES" in err.value.message
    assert isinstance(one("END"), st.Commit)
    assert one("ALTER SYSTEM SET enable_envelope_upsert_in_subscribe = off") == st.AlterSystem(
        "enable_envelope_upsert_in_subscribe", "off")


@pytest.mark.parametrize("sql, query, as_of", [
    ("SELECT a FROM t ORDER BY a AS OF 5", "SELECT a FROM t ORDER BY a", "5"),
    ("SELECT a FROM t AS OF 5 ORDER BY a DESC LIMIT 2", "SELECT a FROM t ORDER BY a DESC LIMIT 2", "5"),
    ("SELECT a FROM t AS OF AT LEAST 5 OFFSET 1", "SELECT a FROM t OFFSET 1", "5"),
    ("SELECT a FROM t AS OF (SELECT 5 LIMIT 1)", "SELECT a FROM t", "(SELECT 5 LIMIT 1)"),
])
def test_as_of_keeps_the_result_clauses(sql, query, as_of):
    """ORDER BY/LIMIT written after AS OF <time> still shape the result."""
    stmt = one(sql)
    assert isinstance(stmt, st.Query)
    assert stmt.ast.sql("postgres") == query
    assert stmt.as_of.sql("postgres") == as_of


def test_subscribe_syntax_round_trip_of_options():
    s = one("SUBSCRIBE TO (SELECT a FROM t) WITH (PROGRESS, SNAPSHOT = false) AS OF AT LEAST 5 UP TO 10")
    assert isinstance(s, ss.Subscribe)
    assert (s.progress, s.snapshot, s.as_of, s.as_of_at_least, s.up_to) == (True, False, 5, True, 10)
    before = one("SUBSCRIBE kv ENVELOPE UPSERT (KEY (k2, k1)) WITH (PROGRESS)")
    after = one("SUBSCRIBE kv WITH (PROGRESS) ENVELOPE UPSERT (KEY (k2, k1))")
    assert before == after and before.output.keys == ("k2", "k1")
    ordinals = one("SUBSCRIBE t WITHIN TIMESTAMP ORDER BY 1 DESC, 3, c1 + 1")
    assert [(k.ordinal, k.expression, k.descending) for k in ordinals.output.order_by] == [
        (1, False, True), (3, False, False), (None, True, False)]
    order = one("SUBSCRIBE t WITHIN TIMESTAMP ORDER BY c1, c2 DESC NULLS LAST, mz_diff")
    assert [(k.column, k.descending, k.effective_nulls_first) for k in order.output.order_by] == [
        ("c1", False, False), ("c2", True, False), ("mz_diff", False, False)]
    decl = one("DECLARE c CURSOR FOR SUBSCRIBE t")
    assert isinstance(decl, ss.DeclareCursor) and isinstance(decl.inner, ss.Subscribe)
    assert one("FETCH 10 FROM c WITH (timeout = '500ms')") == ss.Fetch("c", 10, 0.5)
    assert one("FETCH ALL c") == ss.Fetch("c", None, None)
    assert isinstance(one("COPY (SUBSCRIBE t) TO STDOUT").inner, ss.Subscribe)


def test_translation_resolves_names_functions_and_integer_division():
    sql = to_spark(one("SELECT a / 2, a / 2.0, current_database(), current_user, now() FROM t").ast,
                   resolve, CTX)
    assert "__sw_1_t" in sql
    assert "DIV" in sql and "/ 2.0" in sql
    assert "'materialize' AS `current_database`" in sql
    assert "'alice' AS `current_user`" in sql
    assert "CAST('2024-01-02 03:04:05.000000' AS TIMESTAMP) AS `now`" in sql


def test_translation_inlines_views_and_rejects_unknown_relations():
    sql = to_spark(one("SELECT * FROM v").ast, resolve, CTX)
    assert "(SELECT" in sql and "__sw_1_t" in sql
    with pytest.raises(SqlError) as info:
        to_spark(one("SELECT * FROM nope").ast, resolve, CTX)
    assert info.value.sqlstate == "42P01" and '"nope"' in info.value.message


def test_output_names_follow_postgres():
    sql = to_spark(one("SELECT 1, count(*), a::text, sum(b) AS total FROM t GROUP BY a").ast, resolve, CTX)
    assert "`?column?`" in sql and "`count`" in sql and "AS `a`" in sql and "`total`" in sql


def test_generate_series_becomes_a_spark_subquery():
    sql = to_spark(one("SELECT g FROM generate_series(1, 3) AS g").ast, resolve, CTX)
    # An empty range is no rows (Spark's sequence would count back), a zero step an error.
    assert "SEQUENCE(1, 3, 1)" in sql and "EXPLODE" in sql and "ARRAY()" in sql
    assert "step size cannot equal zero" in sql


def test_kafka_source_options_take_lists_and_negative_numbers():
    options = dict(one("CREATE SOURCE s FROM KAFKA CONNECTION k "
                       "(TOPIC 't', START OFFSET (0, 10, 100), START TIMESTAMP = -1000)").options)
    assert options == {"topic": "t", "start offset": (0, 10, 100), "start timestamp": -1000}
    assert dict(one("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET=[4])").options)[
        "start offset"] == (4,)
    assert dict(one("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET 2) FORMAT TEXT").options)[
        "start offset"] == 2
    # Anything but a whole number stays as written, for the server to name in its error.
    assert dict(one("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET (1.5, 'x'))").options)[
        "start offset"] == ("1.5", "x")
    for bad in ("START OFFSET (0 1)", "START OFFSET (0,", "START OFFSET (,)"):
        with pytest.raises(SqlError) as info:
            one(f"CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', {bad})")
        assert info.value.sqlstate == "42601"


@pytest.mark.parametrize("sql, names, deferred", [
    ("SET CONSTRAINTS ALL DEFERRED", None, True),
    ('SET CONSTRAINTS a, public."B" IMMEDIATE', ((None, "a"), ("public", "B")), False),
])
def test_set_constraints(sql, names, deferred):
    assert parse(sql)[0].statement == st.SetConstraints(names, deferred)


@pytest.mark.parametrize("sql", ["SET CONSTRAINTS ALL", "SET CONSTRAINTS a LATER", "SET CONSTRAINTS DEFERRED"])
def test_set_constraints_syntax_errors(sql):
    with pytest.raises(SqlError) as err:
        parse(sql)
    assert err.value.sqlstate == "42601"
