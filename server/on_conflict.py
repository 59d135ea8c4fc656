"""INSERT ... ON CONFLICT: which proposed rows conflict, and what DO NOTHING or DO UPDATE
makes of them.

It runs under the write lock (the session takes it for any INSERT with ON CONFLICT), so
the keys it finds present are still present when its updates commit. A proposed row
conflicts when a row with its value of an arbiter key is present — committed, or staged
earlier by the same transaction block. DO NOTHING drops such rows, and a row whose key an
earlier row of the same statement takes. DO UPDATE turns them into an update of the
present row, computed by Spark from the row and the proposed one (`excluded`); two
proposed rows with one key are an error (21000), as in PostgreSQL. A proposed row that
conflicts only on a key that is not an arbiter is still refused with 23505 at commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from planner import statements as st
from planner.errors import SYNTAX_ERROR, SqlError
from planner.params import literal
from server import writes
from server.catalog_items import IndexDef, Item, UniqueKey
from server.unique_keys import KeyCounts, Present, keys_of
from spark_backend.schema import physical

CARDINALITY_VIOLATION = "21000"
INVALID_COLUMN_REFERENCE = "42P10"
UNDEFINED_OBJECT = "42704"

Query = Callable[[exp.Expression], Awaitable[pa.Table]]  # runs a SELECT against the table


@dataclass
class Resolved:
    updates: pa.Table  # what the statement writes: inserted rows, and updated rows' -1/+1
    returned: pa.Table  # what RETURNING reads: the inserted and the updated rows' new values
    count: int  # INSERT 0 <count>: rows inserted plus rows updated


def arbiters(item: Item, clause: st.OnConflict) -> tuple[UniqueKey | IndexDef, ...]:
    """The keys whose conflicts the clause handles, as PostgreSQL infers them."""
    if clause.constraint is not None:
        key = next((k for k in item.keys if k.name == clause.constraint), None)
        if key is None:
            raise SqlError(UNDEFINED_OBJECT, f'constraint "{clause.constraint}" for table "{item.name}" does not exist')
        return (key,)
    if clause.columns:
        for name in clause.columns:
            if item.column(name) is None:
                raise SqlError("42703", f'column "{name}" does not exist')
        found = tuple(k for k in item.unique_sets if set(k.columns) == set(clause.columns))
        if not found:
            raise SqlError(INVALID_COLUMN_REFERENCE, "there is no unique or exclusion constraint matching "
                                                     "the ON CONFLICT specification")
        return found
    if clause.updates:
        raise SqlError(SYNTAX_ERROR, "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                       hint="For example, ON CONFLICT (column_name).")
    return item.unique_sets


async def resolve(item: Item, stmt: st.Insert, proposed: pa.Table, counts: list[KeyCounts],
                  staged: list[pa.Table], query: Query) -> Resolved:
    """Apply the statement's ON CONFLICT clause to its proposed rows (storage layout, +1)."""
    clause = stmt.on_conflict
    keys = arbiters(item, clause)
    by_name = {c.key.name: c for c in counts}
    present = [Present(by_name[k.name], staged) for k in keys]
    proposed_keys = [keys_of(proposed, by_name[k.name].positions) for k in keys]
    conflicting: list[bool] = []
    seen: list[set[tuple]] = [set() for _ in keys]
    for row in range(proposed.num_rows):
        values = [of_key[row] for of_key in proposed_keys]
        hit = any(v is not None and v in present[i] for i, v in enumerate(values))
        again = any(v is not None and v in seen[i] for i, v in enumerate(values))
        if again and clause.updates:
            raise SqlError(CARDINALITY_VIOLATION, "ON CONFLICT DO UPDATE command cannot affect row a second time",
                           hint="Ensure that no rows proposed for insertion within the same command have "
                                "duplicate constrained values.")
        conflicting.append(hit or again)
        for i, v in enumerate(values):
            if v is not None:
                seen[i].add(v)
    mask = pa.array(conflicting, pa.bool_())
    inserted = proposed.filter(pc.invert(mask))
    if not clause.updates or not any(conflicting):
        return Resolved(inserted, inserted, inserted.num_rows)
    result = await query(update_select(item, stmt, proposed.filter(mask), keys[0]))
    k = len(item.columns)
    old = writes.arrow_to_updates(item, result.select(list(range(k))), -1, check=False)
    new = writes.arrow_to_updates(item, result.select(list(range(k, 2 * k))), +1)
    return Resolved(writes.concat_updates([inserted, old, new]), writes.concat_updates([inserted, new]),
                    inserted.num_rows + result.num_rows)


def update_select(item: Item, stmt: st.Insert, conflicting: pa.Table, key: UniqueKey | IndexDef) -> exp.Select:
    """SELECT the present rows' old values and new values, joined to the conflicting proposed
    rows (`excluded`) on the key: DO UPDATE SET ... WHERE ... as one query."""
    clause = stmt.on_conflict
    target = stmt.alias or item.name
    names = item.column_names
    for name, _ in clause.assignments:
        if name not in names:
            raise SqlError("42703", f'column "{name}" of relation "{item.name}" does not exist')
    columns = [conflicting.column(physical(i)).to_pylist() for i in range(len(names))]
    rows = [exp.Tuple(expressions=[literal(v, c.type) for v, c in zip(values, item.columns)])
            for values in zip(*columns)]
    excluded = exp.Values(expressions=rows, alias=exp.TableAlias(
        this=exp.to_identifier("excluded"), columns=[exp.to_identifier(n, quoted=True) for n in names]))
    table = exp.Table(this=exp.to_identifier(item.name, quoted=True),
                      alias=exp.TableAlias(this=exp.to_identifier(target, quoted=True)))
    on = exp.and_(*[exp.EQ(this=exp.column(c, target, quoted=True), expression=exp.column(c, "excluded", quoted=True))
                    for c in key.columns])
    assigned = dict(clause.assignments)
    old = [exp.alias_(exp.column(n, target, quoted=True), f"__old{i}") for i, n in enumerate(names)]
    new = [exp.alias_(exp.Cast(this=_of_target(assigned[n], target), to=exp.DataType.build(c.type.spark, dialect="spark"))
                      if n in assigned else exp.column(n, target, quoted=True), f"__new{i}")
           for i, (n, c) in enumerate(zip(names, item.columns))]
    select = exp.select(*old, *new).from_(table).join(excluded, on=on)
    if clause.where is not None:
        select = select.where(_of_target(clause.where, target))
    return select


def _of_target(node: exp.Expression, target: str) -> exp.Expression:
    """An expression of DO UPDATE with its unqualified columns qualified: they are the
    target table's (`excluded`'s must be named)."""
    node = node.copy()
    for column in node.find_all(exp.Column):
        if not column.table:
            column.set("table", exp.to_identifier(target, quoted=True))
    return node
