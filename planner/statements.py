"""The statements sparkwire understands, as plain data.

Queries and expressions stay sqlglot trees (PostgreSQL dialect); everything
else is a small dataclass, so the session can dispatch on the class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from planner.errors import SYNTAX_ERROR, SqlError
from planner.sequences import Spec as SequenceSpec
from planner.table_checks import CheckSpec
from planner.table_foreign_keys import ForeignKeySpec
from planner.table_keys import KeySpec
from planner.table_sequences import ColumnSequence
from planner.types import SqlType


@dataclass(frozen=True)
class Statement:
    """Base class; `tag` is the CommandComplete tag's first word."""

    @property
    def kind(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class Query(Statement):
    # sqlglot's tree, for the older path; None where PostgreSQL's grammar takes the query
    # and sqlglot's does not (`JOIN ... USING (...) AS j`): then `unparsed` is sqlglot's
    # error, which only that path raises.
    ast: exp.Expression | None
    as_of: exp.Expression | None = None  # Materialize's SELECT ... AS OF
    text: str = ""  # the query as written, without AS OF: what planner.sql binds
    unparsed: SqlError | None = None

    def tree(self) -> exp.Expression:
        """sqlglot's tree of the query, or the reason there is none."""
        if self.ast is None:
            raise self.unparsed or SqlError(SYNTAX_ERROR, "syntax error")
        return self.ast


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: SqlType
    not_null: bool = False
    default: exp.Expression | None = None
    sequence: ColumnSequence | None = None  # serial or identity: the sequence made for it


@dataclass(frozen=True)
class CreateTable(Statement):
    name: str
    columns: tuple[ColumnDef, ...]
    if_not_exists: bool = False
    keys: tuple[KeySpec, ...] = ()  # PRIMARY KEY and UNIQUE, as written
    checks: tuple[CheckSpec, ...] = ()  # CHECK constraints, as written
    foreign_keys: tuple[ForeignKeySpec, ...] = ()  # FOREIGN KEY constraints, as written


@dataclass(frozen=True)
class CreateIndex(Statement):
    name: str | None  # None: PostgreSQL's choice
    table: str
    columns: tuple[str, ...]
    orders: tuple[str, ...]  # per column: "", "DESC", "NULLS FIRST", ...
    unique: bool = False
    method: str = "btree"
    if_not_exists: bool = False
    concurrently: bool = False


@dataclass(frozen=True)
class DropIndex(Statement):
    names: tuple[str, ...]
    if_exists: bool = False
    concurrently: bool = False


@dataclass(frozen=True)
class CreateView(Statement):
    name: str
    query: exp.Expression
    sql: str  # the query's text as written, kept for SHOW CREATE VIEW
    column_names: tuple[str, ...] = ()
    or_replace: bool = False


@dataclass(frozen=True)
class Drop(Statement):
    object_type: str  # TABLE | VIEW | SEQUENCE
    names: tuple[str, ...]
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class OnConflict:
    """INSERT's ON CONFLICT clause: its target, and DO NOTHING or DO UPDATE SET ... WHERE."""

    columns: tuple[str, ...] = ()  # the conflict target `(a, b)`; () when none is given
    constraint: str | None = None  # ON CONSTRAINT name
    assignments: tuple[tuple[str, exp.Expression], ...] | None = None  # None: DO NOTHING
    where: exp.Expression | None = None  # DO UPDATE ... WHERE

    @property
    def updates(self) -> bool:
        return self.assignments is not None


@dataclass(frozen=True)
class Insert(Statement):
    table: str
    columns: tuple[str, ...] | None
    source: exp.Expression  # exp.Values or a query
    returning: tuple[exp.Expression, ...] = ()
    on_conflict: OnConflict | None = None
    alias: str | None = None  # INSERT INTO t AS alias: how ON CONFLICT's expressions name t
    text: str = ""  # the statement as written: what planner.sql binds its query from
    overriding: str | None = None  # OVERRIDING SYSTEM VALUE ("system") or USER VALUE ("user")


@dataclass(frozen=True)
class Update(Statement):
    table: str
    alias: str | None
    assignments: tuple[tuple[str, exp.Expression], ...]
    where: exp.Expression | None
    returning: tuple[exp.Expression, ...] = ()
    text: str = ""  # the statement as written: what planner.sql binds
    from_: exp.From | None = None  # UPDATE … FROM's list
    with_: exp.With | None = None  # WITH … UPDATE: the queries it reads


@dataclass(frozen=True)
class Delete(Statement):
    table: str
    alias: str | None
    where: exp.Expression | None
    returning: tuple[exp.Expression, ...] = ()
    text: str = ""  # the statement as written: what planner.sql binds
    with_: exp.With | None = None  # WITH … DELETE: the queries it reads


@dataclass(frozen=True)
class Truncate(Statement):
    """TRUNCATE [TABLE] t, ...: every row of each table deleted, in one commit. RESTART
    IDENTITY restarts the sequences the tables' columns own; CASCADE empties the tables
    referring to them too."""

    tables: tuple[str, ...]
    restart_identity: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class Begin(Statement):
    isolation: str | None = None  # ISOLATION LEVEL as written (lower case), if any


@dataclass(frozen=True)
class Commit(Statement):
    pass


@dataclass(frozen=True)
class Rollback(Statement):
    pass


@dataclass(frozen=True)
class Savepoint(Statement):
    name: str


@dataclass(frozen=True)
class ReleaseSavepoint(Statement):
    name: str


@dataclass(frozen=True)
class RollbackToSavepoint(Statement):
    name: str


@dataclass(frozen=True)
class SetVariable(Statement):
    name: str
    value: str | None  # None means DEFAULT
    local: bool = False


@dataclass(frozen=True)
class ResetVariable(Statement):
    name: str  # "all" resets every variable


@dataclass(frozen=True)
class ShowVariable(Statement):
    name: str  # "all" shows every variable


@dataclass(frozen=True)
class ShowObjects(Statement):
    object_type: str  # tables | views | schemas | databases


@dataclass(frozen=True)
class ShowColumns(Statement):
    table: str


@dataclass(frozen=True)
class ShowCreate(Statement):
    object_type: str
    name: str


@dataclass(frozen=True)
class AlterSystem(Statement):
    name: str
    value: str | None  # None: RESET (back to the default)


@dataclass(frozen=True)
class Discard(Statement):
    what: str


@dataclass(frozen=True)
class Deallocate(Statement):
    name: str | None  # None: DEALLOCATE ALL


@dataclass(frozen=True)
class Explain(Statement):
    statement: Statement


@dataclass(frozen=True)
class Empty(Statement):
    pass


@dataclass
class Parsed:
    """A statement with where it came from, for error positions and logs."""

    statement: Statement
    text: str
    offset: int = 0
    params: list[int] = field(default_factory=list)  # $n numbers it uses


@dataclass(frozen=True)
class Listen(Statement):
    channel: str


@dataclass(frozen=True)
class Unlisten(Statement):
    channel: str | None  # None: UNLISTEN *


@dataclass(frozen=True)
class Notify(Statement):
    channel: str
    payload: str = ""


@dataclass(frozen=True)
class SetConstraints(Statement):
    """SET CONSTRAINTS { ALL | name [, ...] } { DEFERRED | IMMEDIATE }."""

    names: tuple[tuple[str | None, str], ...] | None  # (schema, name); None: ALL
    deferred: bool


@dataclass(frozen=True)
class SetTransaction(Statement):
    """SET [SESSION] TRANSACTION / SET SESSION CHARACTERISTICS AS TRANSACTION: accepted,
    every transaction being serializable here."""


# Parses one statement's text. The sub-grammars (SUBSCRIBE, DECLARE, COPY) take it as an
# argument for the statements they enclose, so that they need not import the parser that
# dispatches to them.
ParseStatement = Callable[[str], "Statement"]


@dataclass(frozen=True)
class Prepare(Statement):
    """SQL PREPARE: the statement is parsed here, once; EXECUTE runs the parsed form."""

    name: str
    param_types: tuple[SqlType, ...]  # as declared; the rest are inferred
    statement: Statement
    text: str  # the statement's text after AS
    sql: str  # the whole PREPARE as written (pg_prepared_statements.statement)


@dataclass(frozen=True)
class Execute(Statement):
    name: str
    args: tuple[exp.Expression, ...]


@dataclass(frozen=True)
class CreateTableAs(Statement):
    """CREATE TABLE name [(col, ...)] AS query [WITH [NO] DATA], and SELECT ... INTO name."""

    name: str
    query: Query
    column_names: tuple[str, ...] = ()
    if_not_exists: bool = False
    with_data: bool = True
    select_into: bool = False  # tagged SELECT n, as PostgreSQL tags SELECT INTO


@dataclass(frozen=True)
class CreateSequence(Statement):
    name: str
    spec: SequenceSpec
    owned_by: tuple[str, ...] | None = None  # OWNED BY table.column; () for NONE
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterSequence(Statement):
    """ALTER SEQUENCE name options: `text` is re-read against the sequence's own options."""

    name: str
    text: str
    if_exists: bool = False
