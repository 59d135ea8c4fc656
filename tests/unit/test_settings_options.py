"""Settings from a startup packet's `options` (libpq's `options=`, PGOPTIONS)."""

from server.settings import Settings, command_line_options


def test_dash_c_and_double_dash_forms_as_postgres_reads_them():
    assert command_line_options("-c sql_frontend=postgres --application-name=x -cextra_float_digits=3") == [
        ("sql_frontend", "postgres"), ("application_name", "x"), ("extra_float_digits", "3")]
    assert command_line_options(r"-c application_name=a\ b") == [("application_name", "a b")]
    assert command_line_options("-c") == [] and command_line_options("") == []
    assert command_line_options("-c work_mem") == [("work_mem", None)]


def test_options_set_the_session_and_bad_values_are_startup_errors():
    assert Settings({"options": "-c sql_frontend=sqlglot"}).get("sql_frontend") == "sqlglot"
    bad = Settings({"options": "-c sql_frontend=spark"})
    assert bad.get("sql_frontend") == "postgres"  # the default stays
    assert [e.sqlstate for e in bad.startup_errors] == ["22023"]


def test_unknown_or_valueless_options_are_reported_as_postgres_words_them():
    s = Settings({"options": "-c nosuch=1 -c application_name --sql-frontend=postgres"})
    assert [(e.sqlstate, e.message) for e in s.startup_errors] == [
        ("42704", 'unrecognized configuration parameter "nosuch"'),
        ("42601", "--application-name requires a value")]
    assert s.get("sql_frontend") == "postgres"  # the good ones still apply
