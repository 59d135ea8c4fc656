"""CREATE SEQUENCE and ALTER SEQUENCE, read with PostgreSQL's grammar (pglast's AST: its
JSON form loses negative option values)."""

from __future__ import annotations

import pglast
from pglast import ast as pg_ast

from planner import sequences
from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError


def create_sequence(text: str) -> st.CreateSequence:
    stmt = pglast.parse_sql(text)[0].stmt
    assert isinstance(stmt, pg_ast.CreateSeqStmt)
    if stmt.sequence.relpersistence in ("t", "u"):
        what = "TEMPORARY" if stmt.sequence.relpersistence == "t" else "UNLOGGED"
        raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE {what} SEQUENCE is not supported")
    spec, owned, restart = sequences.options(stmt.options)
    if restart is not None:
        raise SqlError("42601", 'option "restart" not recognized')
    return st.CreateSequence(_name(stmt.sequence), spec, owned, bool(stmt.if_not_exists))


def alter_sequence(text: str) -> st.AlterSequence:
    stmt = pglast.parse_sql(text)[0].stmt
    if not isinstance(stmt, pg_ast.AlterSeqStmt):
        raise SqlError(FEATURE_NOT_SUPPORTED, "this form of ALTER SEQUENCE is not supported",
                       hint="ALTER SEQUENCE name [options] is supported; not RENAME, SET SCHEMA or OWNER TO.")
    return st.AlterSequence(_name(stmt.sequence), text, bool(stmt.missing_ok))


def alter_options(text: str, base: sequences.Spec) -> tuple[sequences.Spec, tuple[str, ...] | None, int | None]:
    """ALTER SEQUENCE's options over the sequence's own (`base`)."""
    stmt = pglast.parse_sql(text)[0].stmt
    return sequences.options(stmt.options, base=base)


def _name(relation: pg_ast.RangeVar) -> str:
    if relation.schemaname not in (None, "public"):
        raise SqlError("3F000", f'schema "{relation.schemaname}" does not exist')
    return relation.relname
