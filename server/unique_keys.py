"""PRIMARY KEY and UNIQUE, enforced: the keys present in each constrained table.

A table with keys has, per key, a count of the rows holding each key value, in memory.
It is built at the table's first write after start (reading only the key columns of the
table's files) and kept current by every commit. A write is checked where writes are
sequenced, under the write lock just before its commit record is written: against the
committed keys, plus the keys the earlier writes of the same group commit add. So two
sessions inserting one key at the same time get one success and one 23505, as in
PostgreSQL. A transaction block's statements are also checked when they run, against the
committed keys and the block's own staged writes, so the error comes from the statement.

NULL is distinct from every value (a key with a NULL column is never a duplicate); NaN
equals NaN and -0.0 equals 0.0, as PostgreSQL's float comparison says. The keys are
compared as one-value-per-update, so an UPDATE that swaps two keys is checked as a whole
(PostgreSQL checks such an update row by row, and can refuse it mid-way).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from planner import table_keys
from planner.codecs.text_out import encode_text
from planner.errors import SqlError
from planner.statements import CreateTable
from server.catalog import Catalog
from server.catalog_items import IndexDef, Item, UniqueKey
from spark_backend.schema import DIFF, physical
from spark_backend.storage import Store

UNIQUE_VIOLATION = "23505"
UNDEFINED_OBJECT = "42704"


def plan_keys(catalog: Catalog, stmt: CreateTable) -> tuple[UniqueKey, ...]:
    """CREATE TABLE's keys, checked and named, each with an id for its index's OID."""
    taken = {i.name for i in catalog.items.values()} | catalog.index_names()
    specs = table_keys.resolved_keys(stmt.name, [c.name for c in stmt.columns], stmt.keys, taken)
    types = {c.name: c.type for c in stmt.columns}
    for spec in specs:
        for col in spec.columns:
            t = types[col]
            if t.base.name == "json" and not t.is_array:
                raise SqlError(UNDEFINED_OBJECT, 'data type json has no default operator class for access method "btree"',
                               hint="You must specify an operator class for the index or define a default "
                                    "operator class for the data type.")
    return tuple(UniqueKey(s.name, s.columns, s.primary, catalog.allocate_id()) for s in specs)


class _NaN:
    """NaN as a key value: equal to itself, as PostgreSQL orders floats."""

    def __repr__(self) -> str:
        return "NaN"


NAN = _NaN()


def _key_value(v: object) -> object:
    if isinstance(v, float):
        return NAN if math.isnan(v) else (0.0 if v == 0 else v)
    if isinstance(v, list):
        return tuple(_key_value(x) for x in v)
    return v


def _keys(table: pa.Table, positions: tuple[int, ...]) -> list[tuple[tuple | None, tuple]]:
    """Each row's (key value, values as written); the key is None where a key column is NULL
    (such a row never conflicts)."""
    columns = [table.column(physical(p)).to_pylist() for p in positions]
    return [(None if any(v is None for v in values) else tuple(_key_value(v) for v in values), values)
            for values in zip(*columns)]


def keys_of(table: pa.Table, positions: tuple[int, ...]) -> list[tuple | None]:
    """Each row's key value (None where a key column is NULL)."""
    return [key for key, _ in _keys(table, positions)]


@dataclass
class _Change:
    net: int
    values: tuple  # the values as written, for the error message


def key_changes(updates: pa.Table, positions: tuple[int, ...]) -> dict[tuple, _Change]:
    """Per key value (without NULLs), the net change in rows holding it."""
    out: dict[tuple, _Change] = {}
    for (key, values), diff in zip(_keys(updates, positions), updates.column(DIFF).to_pylist()):
        if key is None:
            continue
        change = out.get(key)
        if change is None:
            out[key] = _Change(diff, values)
        else:
            change.net += diff
    return out


def net_changes(tables: Iterable[pa.Table], positions: tuple[int, ...]) -> dict[tuple, int]:
    """The net change per key value of several writes together."""
    out: dict[tuple, int] = {}
    for table in tables:
        _add_nets(out, key_changes(table, positions))
    return out


def _add_nets(into: dict[tuple, int], changes: dict[tuple, _Change]) -> None:
    for key, change in changes.items():
        into[key] = into.get(key, 0) + change.net


class Present:
    """The key values present: committed ones, with a transaction block's staged changes."""

    def __init__(self, counts: KeyCounts, staged: list[pa.Table]) -> None:
        self.counts = counts.counts
        self.staged = net_changes(staged, counts.positions)

    def __contains__(self, key: tuple) -> bool:
        return self.counts.get(key, 0) + self.staged.get(key, 0) > 0


class KeyCounts:
    """One key's present values: how many rows hold each."""

    def __init__(self, item: Item, key: UniqueKey | IndexDef) -> None:
        self.key = key
        self.positions = tuple(item.column_names.index(c) for c in key.columns)
        self.types = tuple(item.columns[p].type for p in self.positions)
        self.counts: dict[tuple, int] = {}

    def add(self, changes: dict[tuple, _Change]) -> None:
        for key, change in changes.items():
            n = self.counts.get(key, 0) + change.net
            if n > 0:
                self.counts[key] = n
            else:
                self.counts.pop(key, None)

    def violation(self, changes: dict[tuple, _Change], pending: dict[tuple, int] | None = None) -> SqlError | None:
        """The error for the first key `changes` would hold twice, after the `pending` net
        changes of writes before it."""
        pending = pending or {}
        for key, change in changes.items():
            if change.net <= 0:
                continue
            if self.counts.get(key, 0) + pending.get(key, 0) + change.net > 1:
                return self._error(change.values)
        return None

    def _error(self, values: tuple) -> SqlError:
        shown = ", ".join(encode_text(t, v).decode() for t, v in zip(self.types, values))
        return SqlError(UNIQUE_VIOLATION, f'duplicate key value violates unique constraint "{self.key.name}"',
                        detail=f"Key ({', '.join(self.key.columns)})=({shown}) already exists.")


def _duplicated(c: KeyCounts) -> SqlError | None:
    key = next((k for k, n in c.counts.items() if n > 1), None)
    if key is None:
        return None
    shown = ", ".join(encode_text(t, v).decode() if v is not NAN else "NaN" for t, v in zip(c.types, key))
    return SqlError(UNIQUE_VIOLATION, f'could not create unique index "{c.key.name}"',
                    detail=f"Key ({', '.join(c.key.columns)})=({shown}) is duplicated.")


def duplicate_in(item: Item, key: UniqueKey | IndexDef, rows: pa.Table) -> SqlError | None:
    """A key added to `item` that `rows` (in its layout) already break."""
    counts = KeyCounts(item, key)
    counts.add(key_changes(rows, counts.positions))
    return _duplicated(counts)


def counted_sets(item: Item) -> tuple[UniqueKey | IndexDef, ...]:
    """The column sets whose values a table's counts keep: its keys and unique indexes, and
    the columns of its foreign keys (not unique: what references which key, for
    server.foreign_keys)."""
    return item.unique_sets + tuple(IndexDef(f.name, f.columns, False, f.fk_id) for f in item.foreign_keys)


def _unique(c: KeyCounts) -> bool:
    return not isinstance(c.key, IndexDef) or c.key.unique


class UniqueKeys:
    """Every constrained table's key counts (by collection id), built when first needed.

    Counts are kept with the keys they count: a table whose unique indexes changed (or a
    version of it a transaction block staged) does not use counts of the old set."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tables: dict[str, tuple[tuple, list[KeyCounts]]] = {}

    def built(self, item: Item) -> bool:
        kept = self._tables.get(item.id)
        return not counted_sets(item) or (kept is not None and kept[0] == counted_sets(item))

    def build(self, item: Item) -> None:
        """Count the keys in the table's files (blocking: run it on a worker thread, with the
        write lock held so that no commit lands meanwhile)."""
        counts = [KeyCounts(item, k) for k in counted_sets(item)]
        files, _ = self.store.files(item.id, self.store.last_ts)
        needed = sorted({p for c in counts for p in c.positions})
        with self.store.reading():
            table = self.store.read_columns(files, [*(physical(p) for p in needed), DIFF], item.id)
        for c in counts:
            c.add(key_changes(table, c.positions))
        self._tables[item.id] = (counted_sets(item), counts)

    def counts(self, item: Item) -> list[KeyCounts]:
        """The table's unique key counts (built, or a table its transaction block created: empty)."""
        return [c for c in self.all_counts(item) if _unique(c)]

    def all_counts(self, item: Item) -> list[KeyCounts]:
        """Its unique keys' counts and its foreign keys' (which reference each key)."""
        kept = self._tables.get(item.id)
        if kept is not None and kept[0] == counted_sets(item):
            return kept[1]
        return [KeyCounts(item, k) for k in counted_sets(item)]

    def find(self, item: Item, name: str) -> KeyCounts | None:
        """The counts of the key, index or foreign key called `name` of `item`."""
        return next((c for c in self.all_counts(item) if c.key.name == name), None)

    def duplicated(self, item: Item) -> SqlError | None:
        """After `build`: a unique index just added that the table's rows already break."""
        for c in self.counts(item):
            refused = _duplicated(c)
            if refused is not None:
                return refused
        return None

    def created(self, item: Item) -> None:
        """A new table: no keys present yet."""
        if counted_sets(item):
            self._tables[item.id] = (counted_sets(item), [KeyCounts(item, k) for k in counted_sets(item)])

    def forget(self, collection_id: str) -> None:
        self._tables.pop(collection_id, None)

    def violations(self, writes: list[dict[str, pa.Table]], items: dict[str, Item]) -> list[SqlError | None]:
        """For each write in commit order, the key it would duplicate (None: it may commit),
        given the committed keys and the writes before it that may commit. `items`: the
        written tables (those created by the same commit have no counts yet: no keys)."""
        accepted: dict[tuple[str, str], dict[tuple, int]] = {}  # net changes of the writes let through
        out: list[SqlError | None] = []
        for updates in writes:
            error, mine = None, []
            for cid, table in updates.items():
                item = items.get(cid)
                if item is None or not item.unique_sets or not table.num_rows:
                    continue
                for c in self.counts(item):
                    changes = key_changes(table, c.positions)
                    error = error or c.violation(changes, accepted.get((cid, c.key.name)))
                    mine.append(((cid, c.key.name), changes))
            if error is None:
                for slot, changes in mine:
                    _add_nets(accepted.setdefault(slot, {}), changes)
            out.append(error)
        return out

    def committed(self, updates: dict[str, pa.Table]) -> None:
        """Keep the counts current after a commit."""
        for cid, table in updates.items():
            for c in self._tables.get(cid, ((), []))[1]:
                c.add(key_changes(table, c.positions))

    def staged_violation(self, item: Item, table: pa.Table, staged: list[pa.Table]) -> SqlError | None:
        """A transaction block's statement writing `table`, after its earlier `staged` writes."""
        for c in self.counts(item):
            error = c.violation(key_changes(table, c.positions), net_changes(staged, c.positions))
            if error is not None:
                return error
        return None
