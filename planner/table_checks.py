"""CHECK constraints, read from PostgreSQL's parse tree (CREATE TABLE's column and table
constraints, and ALTER TABLE ADD CHECK).

A check is kept as its expression's text, printed by pglast as PostgreSQL prints it
(`v > 0`); the server enforces it by running `NOT (expr)` over the rows a write adds.
Named as PostgreSQL names an unnamed one (`t_v_check`: the table, the column it is written
on or the first column it reads, and `check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pglast
from pglast import ast, visitors
from pglast import parser as _pg
from pglast.stream import RawStream

from planner import pg_parse
from planner.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.pg_parse import Node


@dataclass(frozen=True)
class CheckSpec:
    """One CHECK constraint as written."""

    sql: str  # the expression, as PostgreSQL prints it
    columns: tuple[str, ...]  # the columns it reads, in the order first read
    name: str | None = None
    column: str | None = None  # the column it is written on (a column constraint)
    validate: bool = True  # False: NOT VALID (existing rows are not checked)


def table_checks(create: Node, text: str) -> tuple[CheckSpec, ...]:
    """The CHECK constraints of a CreateStmt whose text is `text`, in the order written."""
    out = []
    for element in create.get("tableElts") or ():
        if "ColumnDef" in element:
            column = element["ColumnDef"]
            for c in column.get("constraints") or ():
                if c["Constraint"]["contype"] == "CONSTR_CHECK":
                    out.append(check_spec(c["Constraint"], text, column["colname"]))
        elif "Constraint" in element and element["Constraint"]["contype"] == "CONSTR_CHECK":
            out.append(check_spec(element["Constraint"], text, None))
    return tuple(out)


def check_spec(c: Node, text: str, column: str | None) -> CheckSpec:
    """A CHECK Constraint node of the statement `text`."""
    if c.get("is_no_inherit"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "CHECK ... NO INHERIT is not supported")
    sql = normalized(_expression_text(text, c["location"]))
    return CheckSpec(sql, expression_columns(sql), c.get("conname"), column, not c.get("skip_validation"))


def _expression_text(text: str, location: int) -> str:
    """The text between the parentheses after CHECK at `location`."""
    depth, start = 0, None
    for token in _pg.scan(text):
        if token.start < location:
            continue
        if token.name == "ASCII_40":  # (
            depth += 1
            if start is None:
                start = token.end + 1
        elif token.name == "ASCII_41":  # )
            depth -= 1
            if depth == 0 and start is not None:
                return text[start:token.start]
    raise SqlError(SYNTAX_ERROR, "syntax error in CHECK constraint")


def normalized(expression: str) -> str:
    """An expression printed as pglast (PostgreSQL's grammar) prints it."""
    stmt = pglast.parse_sql(f"SELECT ({expression})")[0].stmt
    for kind, _node in pg_parse.walk(pg_parse.parse_one(f"SELECT ({expression})")):
        if kind == "SubLink":
            raise SqlError(FEATURE_NOT_SUPPORTED, "cannot use subquery in check constraint")
    return RawStream()(stmt.targetList[0].val)


def expression_columns(expression: str) -> tuple[str, ...]:
    """The columns an expression reads, in the order first read."""
    out: list[str] = []
    for kind, node in pg_parse.walk(pg_parse.parse_one(f"SELECT ({expression})")):
        if kind == "ColumnRef":
            name = pg_parse.names(node.get("fields"))
            if name and name[-1] not in out:
                out.append(name[-1])
    return tuple(out)


def renamed_column(expression: str, old: str, new: str) -> str:
    """The expression with column `old` read as `new` (ALTER TABLE RENAME COLUMN)."""
    stmt = pglast.parse_sql(f"SELECT ({expression})")[0].stmt

    class Rename(visitors.Visitor):
        def visit_ColumnRef(self, ancestors, node):
            last = node.fields[-1] if node.fields else None
            if isinstance(last, ast.String) and last.sval == old:
                return ast.ColumnRef(fields=(*node.fields[:-1], ast.String(sval=new)), location=node.location)
            return None

    Rename()(stmt)
    return RawStream()(stmt.targetList[0].val)
