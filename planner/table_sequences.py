"""CREATE TABLE's serial and identity columns, read from PostgreSQL's parse tree.

A `serial` column is an integer column whose default draws from a sequence made for it;
`GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [( options )]` is the SQL-standard form of
the same, with no default shown and, for ALWAYS, no value accepted from INSERT. Both give
a `ColumnSequence` (parse_utilcmd.c's transformColumnDefinition and
generateSerialExtraStmts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pglast
from pglast import ast as pg_ast
from pglast.enums import ConstrType

from planner import sequences
from planner.errors import INVALID_PARAMETER_VALUE, SYNTAX_ERROR, SqlError

ALWAYS = "always"
BY_DEFAULT = "by default"


@dataclass(frozen=True)
class ColumnSequence:
    """The sequence a column draws from: its options, and the identity kind (None: serial)."""

    spec: sequences.Spec
    identity: str | None = None  # ALWAYS | BY_DEFAULT
    name: str | None = None  # SEQUENCE NAME given; None: PostgreSQL's choice (t_c_seq)


def column_sequences(text: str) -> dict[str, ColumnSequence]:
    """The serial and identity columns of a CREATE TABLE, by column name."""
    if not _MAYBE.search(text):
        return {}
    stmt = _create_stmt(text)
    if stmt is None:
        return {}
    table = stmt.relation.relname
    out: dict[str, ColumnSequence] = {}
    for element in stmt.tableElts or ():
        if not isinstance(element, pg_ast.ColumnDef) or element.typeName is None:
            continue
        found = _column_sequence(table, element)
        if found is not None:
            out[element.colname] = found
    return out


_MAYBE = re.compile(r"(?i)serial|identity")


def _create_stmt(text: str) -> pg_ast.CreateStmt | None:
    """The CreateStmt of `text`; None when it is none or does not parse (the caller's
    parse reports PostgreSQL's error)."""
    try:
        stmt = pglast.parse_sql(text)[0].stmt
    except pglast.parser.ParseError:
        return None
    return stmt if isinstance(stmt, pg_ast.CreateStmt) else None


def serial_type(type_name: pg_ast.TypeName) -> str | None:
    """The integer type a serial spelling stands for (None for any other type)."""
    if type_name.arrayBounds or len(type_name.names) != 1:
        return None
    return sequences.SERIALS.get(type_name.names[0].sval)


def _column_sequence(table: str, column: pg_ast.ColumnDef) -> ColumnSequence | None:
    constraints = column.constraints or ()
    identity = [c for c in constraints if c.contype == ConstrType.CONSTR_IDENTITY]
    has_default = any(c.contype == ConstrType.CONSTR_DEFAULT for c in constraints)
    serial = serial_type(column.typeName)
    where = f'column "{column.colname}" of table "{table}"'
    if serial is not None:
        if has_default:
            raise SqlError(SYNTAX_ERROR, f"multiple default values specified for {where}")
        if identity:
            raise SqlError(SYNTAX_ERROR, f"both default and identity specified for {where}")
        return ColumnSequence(sequences.options((), type_name=serial)[0])
    if not identity:
        return None
    if len(identity) > 1:
        raise SqlError(SYNTAX_ERROR, f"multiple identity specifications for {where}")
    if has_default:
        raise SqlError(SYNTAX_ERROR, f"both default and identity specified for {where}")
    names = column.typeName.names
    return identity_sequence(names[-1].sval if not column.typeName.arrayBounds else "", identity[0])


def identity_sequence(column_type: str, constraint: pg_ast.Constraint) -> ColumnSequence:
    """The sequence of `GENERATED … AS IDENTITY [(options)]` on a column of `column_type`
    (PostgreSQL's name for it: int4, int8, …)."""
    type_name = sequences.type_of(column_type)
    if type_name is None:
        raise SqlError(INVALID_PARAMETER_VALUE, "identity column type must be smallint, integer, or bigint")
    spec, owned, restart = sequences.options(constraint.options, type_name=type_name)
    if owned is not None or restart is not None:
        raise SqlError(SYNTAX_ERROR, "OWNED BY and RESTART are not identity column options")
    kind = ALWAYS if constraint.generated_when == "a" else BY_DEFAULT
    return ColumnSequence(spec, kind, sequences.sequence_name(constraint.options))


def without_identity(text: str) -> str:
    """`text` with each `GENERATED … AS IDENTITY [( options )]` clause blanked out, for a
    reader of the columns that does not know every spelling of the options (sqlglot)."""
    stmt = _create_stmt(text) if re.search(r"(?i)identity", text) else None
    if stmt is None:
        return text
    chars = list(text)  # pglast's node objects count characters
    for element in stmt.tableElts or ():
        for c in getattr(element, "constraints", None) or ():
            if c.contype == ConstrType.CONSTR_IDENTITY:
                end = _identity_end(text, c.location)
                chars[c.location:end] = " " * (end - c.location)
    return "".join(chars)


_IDENTITY = re.compile(r"(?i)identity")


def _identity_end(text: str, start: int) -> int:
    """Where the identity clause starting at `start` ends: after IDENTITY and its options."""
    end = _IDENTITY.search(text, start).end()
    rest = len(text[end:]) - len(text[end:].lstrip())
    if text[end + rest:end + rest + 1] != "(":
        return end
    depth = 0
    for i in range(end + rest, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)
