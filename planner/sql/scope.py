"""Which names a query level can see, and the column each one means (PostgreSQL's
namespace rules for FROM items, USING/NATURAL joins and join aliases)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.errors import SqlError
from planner.types import SqlType

AMBIGUOUS_COLUMN = "42702"
UNDEFINED_COLUMN = "42703"
UNDEFINED_TABLE = "42P01"
DUPLICATE_ALIAS = "42712"


@dataclass(frozen=True)
class ScopeColumn:
    table: str | None  # the FROM item's name or alias; None for an unnamed join's USING column
    name: str
    index: int  # position in the level's input relation
    type: SqlType
    schema: str | None = None  # set when the item is a catalogued relation named without alias
    unqualified: bool = True  # reachable by its bare name (not a USING join's side)
    in_star: bool = True  # listed by `*`
    # the FROM item's name standing for its one value (a function returning a scalar: `FROM
    # jsonb_array_elements(j) AS e` lets `e` mean the element); a column of that name wins
    whole_row: bool = False
    nullable: bool = False  # on an outer join's nullable side: its item's row may be all NULL


@dataclass(frozen=True)
class Scope:
    """The columns of one query level's FROM clause."""

    columns: tuple[ScopeColumn, ...] = ()
    tables: tuple[str, ...] = ()  # the names of its FROM items, to catch duplicates

    def nullable(self) -> Scope:
        """The scope of an outer join's nullable side."""
        return Scope(tuple(replace(c, nullable=True) for c in self.columns), self.tables)

    def shifted(self, offset: int) -> Scope:
        return Scope(tuple(replace(c, index=c.index + offset) for c in self.columns), self.tables)

    def combine(self, other: Scope, position: int | None = None) -> Scope:
        """Both items side by side (a comma or a join); their names must differ."""
        for name in other.tables:
            if name in self.tables:
                raise SqlError(DUPLICATE_ALIAS, f'table name "{name}" specified more than once',
                               position=position)
        return Scope(self.columns + other.columns, self.tables + other.tables)

    def find(self, name: str, table: str | None = None, schema: str | None = None) -> list[ScopeColumn]:
        """The columns a (possibly qualified) name could mean at this level."""
        if table is None:
            found = [c for c in self.columns if c.unqualified and c.name == name]
            return [c for c in found if not c.whole_row] or found
        return [c for c in self.columns if c.table == table and c.name == name
                and (schema is None or c.schema == schema)]

    def has_table(self, table: str, schema: str | None = None) -> bool:
        return any(c.table == table and (schema is None or c.schema == schema) for c in self.columns) or (
            schema is None and table in self.tables)

    def star(self, table: str | None = None, schema: str | None = None) -> list[ScopeColumn]:
        """What `*` (or `table.*`) expands to."""
        if table is None:
            return [c for c in self.columns if c.in_star]
        return [c for c in self.columns if c.table == table and (schema is None or c.schema == schema)
                and (c.in_star or not c.unqualified)]

    def aliased(self, alias: str, names: list[str] | None = None) -> Scope:
        """A join given an alias: its visible columns, renamed `alias.x`, and nothing else."""
        visible = self.star()
        if names and len(names) > len(visible):
            raise SqlError("42P10", f'table "{alias}" has {len(visible)} columns available but '
                                    f'{len(names)} columns specified')
        out = tuple(ScopeColumn(alias, (names[i] if names and i < len(names) else c.name), c.index, c.type)
                    for i, c in enumerate(visible))
        return Scope(out, (alias,))


def one(found: list[ScopeColumn], text: str, position: int | None) -> ScopeColumn | None:
    if len(found) > 1:
        raise SqlError(AMBIGUOUS_COLUMN, f'column reference "{text}" is ambiguous', position=position)
    return found[0] if found else None


def item_scope(name: str, cols: Sequence[Any], aliased: Sequence[str]) -> Scope:
    """The scope of one FROM item named `name` with columns `cols` (each with .name and
    .type), renamed in order by the alias's column names `aliased`."""
    if len(aliased) > len(cols):
        raise SqlError("42P10", f'table "{name}" has {len(cols)} columns available but '
                                f'{len(aliased)} columns specified')
    out = tuple(ScopeColumn(name, aliased[i] if i < len(aliased) else c.name, i, c.type)
                for i, c in enumerate(cols))
    return Scope(out, (name,))
