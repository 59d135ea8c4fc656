"""SQL value functions (current_date, current_timestamp, ...) on the front end of our own:
bound as the catalogued now()/current_schema(), valued from the session when generated."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.translate import SessionContext

SESSION = SessionContext("shop", "alice", "PostgreSQL 15.0 (sparkwire)", "2026-12-06 09:10:11.123456", 42)


class _NoTables:
    def relation(self, schema, name):
        return None


def _rel(sql: str) -> p.Rel:
    return bind.Binder(_NoTables(), sql).query(pg_parse.parse_one(sql))


def _types(sql: str) -> list[str]:
    return [c.type.display() for c in p.columns(_rel(sql))]


def test_value_functions_have_postgres_types():
    assert _types("SELECT current_date, current_timestamp, localtimestamp, current_schema, current_catalog") == [
        "date", "timestamp with time zone", "timestamp without time zone", "name", "name"]


def test_generated_with_the_session_values():
    with pytest.raises(p.NotYet):  # without a session there are no values to give them
        spark_sql.to_spark(_rel("SELECT current_date"), lambda name: name)
    tree = spark_sql.to_spark_query(_rel("SELECT current_date, now(), current_catalog, pg_backend_pid()"),
                                    lambda name: name, session=SESSION)
    text = tree.sql("spark")
    assert text.count("CAST('2026-12-06 09:10:11.123456' AS TIMESTAMP)") == 2
    assert "'shop'" in text and " 42 " in f"{text} "


@pytest.mark.parametrize("sql", ["SELECT current_timestamp(3)", "SELECT localtime", "SELECT current_user"])
def test_forms_not_covered_take_the_older_path(sql):
    with pytest.raises(p.NotYet):
        _rel(sql)
