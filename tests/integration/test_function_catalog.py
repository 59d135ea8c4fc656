"""The function and operator catalogs against a real PostgreSQL 15.

Every catalogued signature with PostgreSQL's semantics is called with sample
arguments on sparkwire and on PostgreSQL, side by side (tests/catalog_compare.py);
every signature is PostgreSQL's own (its OID, argument and result types);
`pg_proc`, `pg_operator` and psql's `\\df` list exactly the catalog; and a
function PostgreSQL has that the catalog does not list is 42883, never Spark's.
"""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from planner import functions, operators
from tests import catalog_compare
from tests.pgserver import reference_postgres


@pytest.fixture(scope="module")
def pg():
    with reference_postgres() as server, catalog_compare.connect_postgres(server.dsn) as conn:
        yield conn


def test_every_catalogued_function_and_operator_answers_as_postgresql(conn, pg):
    outcome = catalog_compare.compare(catalog_compare.jsonb_as_text(conn), pg)
    assert outcome.queries > 5000
    assert not outcome.mismatches, "\n".join(str(m) for m in outcome.mismatches[:20])
    # The known gaps are few and each says why (README, "Security" and "Supported SQL").
    assert len(outcome.gaps) < 60, "\n".join(f"{m}\n  why: {why}" for m, why in outcome.gaps)


def test_every_signature_is_postgresqls_own(pg):
    rows = pg.execute("SELECT oid::int, proname, oidvectortypes(proargtypes), prorettype::regtype::text, "
                      "proretset, provariadic <> 0, pronargdefaults FROM pg_proc").fetchall()
    by_oid = {r[0]: r[1:] for r in rows}
    for f in functions.FUNCTIONS:
        name, args, result, retset, variadic, defaults = by_oid[f.oid]
        assert (name, args, result) == (f.name, ", ".join(f.args), f.result), f
        assert (retset, variadic, defaults) == (f.kind is functions.Kind.TABLE, f.variadic, f.defaults), f
    ops = {r[0]: r[1:] for r in pg.execute(
        "SELECT oid::int, oprname, CASE WHEN oprleft = 0 THEN NULL ELSE oprleft::regtype::text END, "
        "oprright::regtype::text, oprresult::regtype::text FROM pg_operator").fetchall()}
    for o in operators.OPERATORS:
        assert ops[o.oid] == (o.name, o.left, o.right, o.result), o


def test_pg_proc_and_pg_operator_list_exactly_the_catalog(conn):
    procs = conn.execute("SELECT oid, proname, pronargs, prokind, proretset FROM pg_proc").fetchall()
    assert sorted(r[0] for r in procs) == sorted(f.oid for f in functions.FUNCTIONS)
    assert ("upper" in {r[1] for r in procs}) and ("reflect" not in {r[1] for r in procs})
    assert conn.execute("SELECT prokind, proretset FROM pg_proc WHERE proname = 'generate_series' "
                        "LIMIT 1").fetchone() == ("f", True)
    assert conn.execute("SELECT DISTINCT prokind FROM pg_proc WHERE proname = 'sum'").fetchall() == [("a",)]
    ops = conn.execute("SELECT oid, oprname FROM pg_operator").fetchall()
    assert sorted(r[0] for r in ops) == sorted(o.oid for o in operators.OPERATORS)


def test_psql_df_lists_the_catalogued_functions(server):
    out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize",
                          "materialize", "-c", r"\df upper"], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "upper" in out.stdout and "text" in out.stdout
    out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize",
                          "materialize", "-c", r"\df reflect"], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and "(0 rows)" in out.stdout, (out.stdout, out.stderr)


@pytest.mark.parametrize("sql, message", [
    ("SELECT justify_days(1)", "function justify_days(integer) does not exist"),
    ("SELECT isfinite(now())", "function isfinite(timestamp with time zone) does not exist"),
    ("SELECT regexp_count('a', 'a')", "function regexp_count(unknown, unknown) does not exist"),
    ("SELECT * FROM json_each('{}')", "function json_each(unknown) does not exist"),
    ("SELECT reflect('java.lang.System', 'getenv', 'HOME')", "function reflect(unknown, unknown, unknown)"),
])
def test_functions_outside_the_catalog_are_42883_with_postgresqls_text(conn, pg, sql, message):
    with pytest.raises(psycopg.errors.UndefinedFunction) as info:
        conn.execute(sql)
    assert info.value.diag.message_primary.startswith(message), info.value.diag.message_primary
    assert "Spark" not in str(info.value) and "spark" not in str(info.value)
    assert conn.execute("SELECT 1").fetchone() == (1,)
