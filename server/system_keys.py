"""The system catalog's view of tables' keys: pg_constraint, pg_index, the index relations
in pg_class, pg_indexes, and information_schema's table_constraints, key_column_usage and
constraint_column_usage — as PostgreSQL 15 fills them for PRIMARY KEY and UNIQUE.

Every key is backed by a btree index, as in PostgreSQL: the index is a relation (relkind
'i') whose OID comes from the key's catalog id; the constraint's OID is the index's plus
CONSTRAINT_OID_OFFSET, which no other OID sparkwire hands out reaches.
"""

from __future__ import annotations

from collections.abc import Iterator

from planner.pg_compat import NAMESPACES, RESERVED_KEYWORDS
from server.catalog import FIRST_USER_OID
from server.catalog_items import Item, UniqueKey

DATABASE = "materialize"
BTREE = 403
CONSTRAINT_OID_OFFSET = 1_000_000


def index_oid(key: UniqueKey) -> int:
    return FIRST_USER_OID + int(key.index_id[1:])


def constraint_oid(key: UniqueKey) -> int:
    return index_oid(key) + CONSTRAINT_OID_OFFSET


def quote_ident(name: str) -> str:
    """A name as PostgreSQL prints it in a definition: bare when it can be."""
    if name.isidentifier() and name == name.lower() and name.isascii() and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def index_definition(table: Item, key: UniqueKey) -> str:
    """pg_get_indexdef: `CREATE UNIQUE INDEX t_pkey ON public.t USING btree (a)`."""
    cols = ", ".join(quote_ident(c) for c in key.columns)
    return (f"CREATE UNIQUE INDEX {quote_ident(key.name)} ON public.{quote_ident(table.name)} "
            f"USING btree ({cols})")


def constraint_definition(key: UniqueKey) -> str:
    """pg_get_constraintdef: `PRIMARY KEY (a)`, `UNIQUE (a, b)`."""
    cols = ", ".join(quote_ident(c) for c in key.columns)
    return f"{'PRIMARY KEY' if key.primary else 'UNIQUE'} ({cols})"


def keys(tables: list[Item]) -> Iterator[tuple[Item, UniqueKey]]:
    for table in tables:
        for key in table.keys:
            yield table, key


def attnums(table: Item, key: UniqueKey) -> list[int]:
    return [table.column_names.index(c) + 1 for c in key.columns]


def pg_constraint_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        yield (constraint_oid(key), key.name, NAMESPACES["public"], "p" if key.primary else "u",
               False, False, True, table.oid, 0, index_oid(key), 0, 0, " ", " ", " ", True, 0, True,
               attnums(table, key), None, None, None, None, None, None, None)


def pg_index_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        n = len(key.columns)
        yield (index_oid(key), table.oid, n, n, True, False, key.primary, False, True, False, True,
               False, True, True, False, _vector(attnums(table, key)), _vector([0] * n), _vector([0] * n),
               _vector([0] * n), None, None)


def _vector(values: list[int]) -> str:
    """An int2vector or oidvector as PostgreSQL prints it: `1 2`."""
    return " ".join(map(str, values))


def index_relations(tables: list[Item]) -> Iterator[tuple[int, str, int]]:
    """(oid, name, number of columns) of each key's index, for pg_class."""
    for _table, key in keys(tables):
        yield index_oid(key), key.name, len(key.columns)


def pg_indexes_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        yield "public", table.name, key.name, None, index_definition(table, key)


def constraint_definition_rows(tables: list[Item]) -> Iterator[tuple]:
    for _table, key in keys(tables):
        yield constraint_oid(key), constraint_definition(key)


def table_constraints_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        yield (DATABASE, "public", key.name, DATABASE, "public", table.name,
               "PRIMARY KEY" if key.primary else "UNIQUE", "NO", "NO", "YES",
               None if key.primary else "YES")


def key_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        for i, col in enumerate(key.columns, start=1):
            yield DATABASE, "public", key.name, DATABASE, "public", table.name, col, i, None


def constraint_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for table, key in keys(tables):
        for col in key.columns:
            yield DATABASE, "public", table.name, col, DATABASE, "public", key.name
