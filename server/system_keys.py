"""The system catalog's view of tables' keys: pg_constraint, pg_index, the index relations
in pg_class, pg_indexes, and information_schema's table_constraints, key_column_usage and
constraint_column_usage — as PostgreSQL 15 fills them for PRIMARY KEY and UNIQUE.

Every key is backed by a btree index, as in PostgreSQL: the index is a relation (relkind
'i') whose OID comes from the key's catalog id; the constraint's OID is the index's plus
CONSTRAINT_OID_OFFSET, which no other OID sparkwire hands out reaches.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from planner.pg_compat import NAMESPACES, RESERVED_KEYWORDS
from server.catalog import FIRST_USER_OID
from server.catalog_items import CheckDef, Item, UniqueKey

DATABASE = "materialize"
ACCESS_METHODS = {"btree": 403, "hash": 405}
CONSTRAINT_OID_OFFSET = 1_000_000


@dataclass(frozen=True)
class Index:
    """One index as the catalog shows it: a key's, or one CREATE INDEX made."""

    table: Item
    name: str
    columns: tuple[str, ...]
    orders: tuple[str, ...]
    unique: bool
    primary: bool
    method: str
    oid: int


def _oid(index_id: str) -> int:
    return FIRST_USER_OID + int(index_id[1:])


def constraint_oid(key: UniqueKey) -> int:
    return _oid(key.index_id) + CONSTRAINT_OID_OFFSET


def indexes(tables: list[Item]) -> Iterator[Index]:
    for table in tables:
        for key in table.keys:
            yield Index(table, key.name, key.columns, ("",) * len(key.columns), True, key.primary, "btree",
                        _oid(key.index_id))
        for ix in table.indexes:
            yield Index(table, ix.name, ix.columns, ix.orders, ix.unique, False, ix.method, _oid(ix.index_id))


def quote_ident(name: str) -> str:
    """A name as PostgreSQL prints it in a definition: bare when it can be."""
    if name.isidentifier() and name == name.lower() and name.isascii() and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def index_definition(ix: Index) -> str:
    """pg_get_indexdef: `CREATE UNIQUE INDEX t_pkey ON public.t USING btree (a)`."""
    cols = ", ".join(" ".join(w for w in (quote_ident(c), order) if w) for c, order in zip(ix.columns, ix.orders))
    unique = "UNIQUE " if ix.unique else ""
    return f"CREATE {unique}INDEX {quote_ident(ix.name)} ON public.{quote_ident(ix.table.name)} USING {ix.method} ({cols})"


def constraint_definition(key: UniqueKey) -> str:
    """pg_get_constraintdef: `PRIMARY KEY (a)`, `UNIQUE (a, b)`."""
    cols = ", ".join(quote_ident(c) for c in key.columns)
    return f"{'PRIMARY KEY' if key.primary else 'UNIQUE'} ({cols})"


def keys(tables: list[Item]) -> Iterator[tuple[Item, UniqueKey]]:
    for table in tables:
        for key in table.keys:
            yield table, key


def attnums(table: Item, key: UniqueKey) -> list[int]:
    return [table.attnum(c) for c in key.columns]


def pg_constraint_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        yield (constraint_oid(key), key.name, NAMESPACES["public"], "p" if key.primary else "u",
               False, False, True, table.oid, 0, _oid(key.index_id), 0, 0, " ", " ", " ", True, 0, True,
               attnums(table, key), None, None, None, None, None, None, None)
    for table, check in checks(tables):
        yield (check_oid(check), check.name, NAMESPACES["public"], "c", False, False, True, table.oid, 0, 0, 0, 0,
               " ", " ", " ", True, 0, False, [table.attnum(c) for c in check.columns if table.column(c)],
               None, None, None, None, None, None, None)


def checks(tables: list[Item]) -> Iterator[tuple[Item, CheckDef]]:
    for table in tables:
        for check in table.checks:
            yield table, check


def check_oid(check: CheckDef) -> int:
    return _oid(check.check_id) + CONSTRAINT_OID_OFFSET


def pg_index_rows(tables: list[Item]) -> Iterator[tuple]:
    for ix in indexes(tables):
        n = len(ix.columns)
        options = [_option(o) for o in ix.orders]
        yield (ix.oid, ix.table.oid, n, n, ix.unique, False, ix.primary, False, True, False, True,
               False, True, True, False, [ix.table.attnum(c) for c in ix.columns],
               [0] * n, [0] * n, " ".join(map(str, options)), None, None)


def _option(order: str) -> int:
    """pg_index.indoption of a column: INDOPTION_DESC (1) | INDOPTION_NULLS_FIRST (2)."""
    desc = order.startswith("DESC")
    nulls_first = "NULLS FIRST" in order or (desc and "NULLS LAST" not in order)
    return int(desc) | (2 if nulls_first else 0)


def index_relations(tables: list[Item]) -> Iterator[tuple[int, str, int, int]]:
    """(oid, name, number of columns, access method) of each index, for pg_class."""
    for ix in indexes(tables):
        yield ix.oid, ix.name, len(ix.columns), ACCESS_METHODS[ix.method]


def pg_indexes_rows(tables: list[Item]) -> Iterator[tuple]:
    for ix in indexes(tables):
        yield "public", ix.table.name, ix.name, None, index_definition(ix)


def index_column_rows(tables: list[Item]) -> Iterator[tuple]:
    for ix in indexes(tables):
        for i, col in enumerate(ix.columns, start=1):
            yield ix.oid, i, quote_ident(col)


def constraint_definition_rows(tables: list[Item]) -> Iterator[tuple]:
    for _table, key in keys(tables):
        yield constraint_oid(key), constraint_definition(key), constraint_definition(key)
    for _table, check in checks(tables):
        yield check_oid(check), f"CHECK (({check.sql}))", f"CHECK ({check.sql})"


def table_constraints_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        yield (DATABASE, "public", key.name, DATABASE, "public", table.name,
               "PRIMARY KEY" if key.primary else "UNIQUE", "NO", "NO", "YES",
               None if key.primary else "YES")
    for table, check in checks(tables):
        yield DATABASE, "public", check.name, DATABASE, "public", table.name, "CHECK", "NO", "NO", "YES", None
    for table, column in _not_null(tables):  # PostgreSQL 15 lists NOT NULL as a CHECK
        yield (DATABASE, "public", _not_null_name(table, column), DATABASE, "public", table.name, "CHECK", "NO",
               "NO", "YES", None)


def check_constraints_rows(tables: list[Item]) -> Iterator[tuple]:
    """information_schema.check_constraints: each CHECK as pg_get_constraintdef writes it
    without `CHECK `, and each NOT NULL column as `c IS NOT NULL`, as PostgreSQL 15's view."""
    for _table, check in checks(tables):
        yield DATABASE, "public", check.name, f"(({check.sql}))"
    for table, column in _not_null(tables):
        yield DATABASE, "public", _not_null_name(table, column), f"{column} IS NOT NULL"


def _not_null(tables: list[Item]) -> Iterator[tuple[Item, str]]:
    for table in tables:
        for column in table.columns:
            if column.not_null:
                yield table, column.name


def _not_null_name(table: Item, column: str) -> str:
    """PostgreSQL 15's name for a NOT NULL: `<schema oid>_<table oid>_<attnum>_not_null`."""
    return f"{NAMESPACES['public']}_{table.oid}_{table.attnum(column)}_not_null"


def key_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        for i, col in enumerate(key.columns, start=1):
            yield DATABASE, "public", key.name, DATABASE, "public", table.name, col, i, None


def constraint_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        for col in key.columns:
            yield DATABASE, "public", table.name, col, DATABASE, "public", key.name
