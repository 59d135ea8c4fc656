"""CHECK constraints: named as PostgreSQL names them, and enforced on every write.

Every write reaches storage through the coordinator's commit, so that is where a check is
enforced, whatever wrote the rows (INSERT, UPDATE, COPY FROM, ON CONFLICT, a transaction
block at COMMIT): under the write lock, before the log record, the rows the write adds
(diff > 0) of a table with checks are read by Spark as a relation of their own, and
`SELECT * FROM t WHERE NOT (check)` finds the first that breaks one. A check that is NULL
passes, as in PostgreSQL. The error is PostgreSQL's 23514 with its `Failing row contains
(...)` detail. ALTER TABLE ADD CHECK runs the same query over the table's rows.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from planner import table_keys
from planner.codecs.text_out import encode_text
from planner.errors import SqlError
from planner.parser import parse_one
from planner.table_checks import CheckSpec
from planner.translate import SessionContext
from server.catalog import Catalog
from server.catalog_items import CheckDef, Item
from spark_backend.reads import rows_df
from spark_backend.schema import DIFF

# `coord` below is the server.coordinator.Coordinator, which imports this module.
Coordinator = Any
CHECK_VIOLATION = "23514"
DUPLICATE_OBJECT = "42710"
UNDEFINED_COLUMN = "42703"
# Checks read only their row: the session functions a planner needs get fixed values.
_CONTEXT = SessionContext("materialize", "materialize", "", "1970-01-01 00:00:00.000000")


def constraint_names(catalog: Catalog) -> set[str]:
    """Every constraint name in use (PostgreSQL chooses a new one free in the schema)."""
    return {n for i in catalog.items.values() for n in [*(k.name for k in i.keys), *(c.name for c in i.checks)]}


def plan_checks(catalog: Catalog, table: str, columns: list[str], specs: tuple[CheckSpec, ...],
                own: tuple[str, ...] = ()) -> tuple[CheckDef, ...]:
    """`specs` checked against the table's columns and named (`own`: the names of the
    constraints the table has already)."""
    taken = constraint_names(catalog) | set(own)
    out = []
    for spec in specs:
        for col in spec.columns:
            if col not in columns:
                raise SqlError(UNDEFINED_COLUMN, f'column "{col}" does not exist')
        if spec.name:
            name = table_keys.truncated(spec.name)
            if name in own or name in {c.name for c in out}:
                raise SqlError(DUPLICATE_OBJECT, f'constraint "{name}" for relation "{table}" already exists')
        else:
            middle = spec.columns[0] if len(spec.columns) == 1 else ""
            name = table_keys.chosen_name(table, middle, "check", taken)
        taken.add(name)
        out.append(CheckDef(name, spec.sql, catalog.allocate_id(), spec.columns))
    return tuple(out)


def failing_row(item: Item, row: tuple) -> str:
    """PostgreSQL's detail for a row a constraint refuses."""
    shown = ", ".join("null" if v is None else encode_text(c.type, v).decode() for c, v in zip(item.columns, row))
    return f"Failing row contains ({shown})."


async def violation(coord: Coordinator, updates: dict[str, pa.Table], items: dict[str, Item]) -> SqlError | None:
    """23514 for the first row a write adds that breaks a check of its table."""
    for cid, table in updates.items():
        item = items.get(cid)
        if item is None or not item.checks or not table.num_rows:
            continue
        added = table.filter(pc.greater(table.column(DIFF), 0))
        if added.num_rows:
            for check in sorted(item.checks, key=lambda c: c.name):  # PostgreSQL tries them by name
                row = await failing(coord, item, check, added, items)
                if row is not None:
                    return SqlError(CHECK_VIOLATION, f'new row for relation "{item.name}" violates check '
                                                     f'constraint "{check.name}"', detail=failing_row(item, row))
    return None


async def failing(coord: Coordinator, item: Item, check: CheckDef, rows: pa.Table | None,
                  items: dict[str, Item] | None = None) -> tuple | None:
    """The first of `rows` (in the table's layout; None: the table's own rows) for which
    the check is false, as a tuple of values."""
    catalog = Catalog(dict(items if items is not None else coord.catalog.items))
    quoted = '"' + item.name.replace('"', '""') + '"'
    query = parse_one(f"SELECT * FROM {quoted} WHERE NOT ({check.sql}) LIMIT 1").statement.ast
    spark_sql, views = coord.plan_query(query, _CONTEXT, catalog=catalog)
    if rows is None:
        result = await coord.query(spark_sql, views, coord.read_ts())
        table = result.table
    else:
        table = await coord.engine.run(_first_in_spark, coord.store, spark_sql, views, item.id, rows)
    return tuple(table.slice(0, 1).to_pylist()[0].values()) if table.num_rows else None


def _first_in_spark(spark, store, spark_sql: str, views: dict, cid: str, rows: pa.Table) -> pa.Table:
    registered = []
    try:
        for item_id, (spark_name, item) in views.items():
            if item_id != cid:
                continue  # a check reads only its own row
            df = rows_df(spark, store, cid, item.column_names, item.column_types, 0, rows, ([], 0))
            df.createOrReplaceTempView(spark_name)
            registered.append(spark_name)
        return spark.sql(spark_sql).toArrow()
    finally:
        for name in registered:
            spark.catalog.dropTempView(name)
