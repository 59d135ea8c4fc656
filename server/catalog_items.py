"""The catalog's objects: a named item (table, view, source, connection, secret, role) and
its columns. Immutable values, beneath the catalog and the operations that change it."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.errors import SqlError
from planner.table_foreign_keys import Action
from planner.types import SqlType


@dataclass(frozen=True)
class Column:
    name: str
    type: SqlType
    not_null: bool = False
    default: str | None = None  # PostgreSQL-dialect SQL of the default expression
    # PostgreSQL's attnum, kept once ALTER TABLE dropped a column before this one (PostgreSQL
    # never reuses one); None: the column's position + 1, as for every table never altered.
    attnum: int | None = None
    # An identity column's kind ("always" | "by default"), its values drawn from the
    # sequence it owns (server.sequences); None for every other column.
    identity: str | None = None

    def to_json(self) -> dict:
        out = {"name": self.name, "type": self.type.to_json(), "not_null": self.not_null,
               "default": self.default}
        if self.attnum is not None:  # absent otherwise: columns are written as they always were
            out["attnum"] = self.attnum
        if self.identity is not None:
            out["identity"] = self.identity
        return out

    @classmethod
    def from_json(cls, d: dict) -> Column:
        return cls(d["name"], SqlType.from_json(d["type"]), d["not_null"], d.get("default"), d.get("attnum"),
                   d.get("identity"))

    @property
    def has_default(self) -> bool:
        """Whether an INSERT that does not give the column computes a value for it."""
        return self.default is not None or self.identity is not None


@dataclass(frozen=True)
class UniqueKey:
    """A table's PRIMARY KEY or UNIQUE constraint, and the index PostgreSQL would build for it
    (`index_id` gives the index its OID; the constraint's is derived from it)."""

    name: str
    columns: tuple[str, ...]
    primary: bool
    index_id: str

    def to_json(self) -> dict:
        return {"name": self.name, "columns": list(self.columns), "primary": self.primary,
                "index_id": self.index_id}

    @classmethod
    def from_json(cls, d: dict) -> UniqueKey:
        return cls(d["name"], tuple(d["columns"]), d["primary"], d["index_id"])


@dataclass(frozen=True)
class IndexDef:
    """An index made by CREATE INDEX: recorded and shown in the catalog (Spark scans whole
    tables, so no query uses it); a UNIQUE one is enforced like a UNIQUE constraint."""

    name: str
    columns: tuple[str, ...]
    unique: bool
    index_id: str
    method: str = "btree"
    orders: tuple[str, ...] = ()  # per column, as written after it: "", "DESC", "DESC NULLS LAST", ...

    def to_json(self) -> dict:
        return {"name": self.name, "columns": list(self.columns), "unique": self.unique,
                "index_id": self.index_id, "method": self.method, "orders": list(self.orders)}

    @classmethod
    def from_json(cls, d: dict) -> IndexDef:
        return cls(d["name"], tuple(d["columns"]), d["unique"], d["index_id"], d.get("method", "btree"),
                   tuple(d.get("orders", ())))


@dataclass(frozen=True)
class CheckDef:
    """A table's CHECK constraint: its expression as PostgreSQL prints it (`v > 0`), and
    `check_id` giving the constraint its OID."""

    name: str
    sql: str
    check_id: str
    columns: tuple[str, ...] = ()  # the columns the expression reads, for conkey

    def to_json(self) -> dict:
        return {"name": self.name, "sql": self.sql, "check_id": self.check_id, "columns": list(self.columns)}

    @classmethod
    def from_json(cls, d: dict) -> CheckDef:
        return cls(d["name"], d["sql"], d["check_id"], tuple(d.get("columns", ())))


@dataclass(frozen=True)
class ForeignKey:
    """A table's FOREIGN KEY: its columns refer to `ref_columns` of the table `table_id` (a
    PRIMARY KEY or UNIQUE set of it, in the order matching `columns`); `fk_id` gives the
    constraint its OID. MATCH SIMPLE; `deferred`: checked at COMMIT; `on_delete` and
    `on_update`: what removing or changing a referenced key does (server.referential_actions)."""

    name: str
    columns: tuple[str, ...]
    table_id: str
    ref_columns: tuple[str, ...]
    fk_id: str
    deferrable: bool = False
    deferred: bool = False
    validated: bool = True  # False: added NOT VALID (the rows there were then not checked)
    on_delete: Action = Action.NO_ACTION
    on_update: Action = Action.NO_ACTION

    def to_json(self) -> dict:
        return {"name": self.name, "columns": list(self.columns), "table_id": self.table_id,
                "ref_columns": list(self.ref_columns), "fk_id": self.fk_id, "deferrable": self.deferrable,
                "deferred": self.deferred, "validated": self.validated, "on_delete": self.on_delete.value,
                "on_update": self.on_update.value}

    @classmethod
    def from_json(cls, d: dict) -> ForeignKey:
        return cls(d["name"], tuple(d["columns"]), d["table_id"], tuple(d["ref_columns"]), d["fk_id"],
                   d.get("deferrable", False), d.get("deferred", False), d.get("validated", True),
                   Action(d.get("on_delete", "a")), Action(d.get("on_update", "a")))


@dataclass(frozen=True)
class Item:
    """A named catalog object: a table (with a storage collection), a view, a
    source, a connection, a secret or a sequence."""

    id: str
    name: str
    kind: str  # table | view | source | connection | secret | role | sequence
    columns: tuple[Column, ...]
    created_at: int
    sql: str | None = None  # a view's query as written
    depends_on: tuple[str, ...] = ()  # ids of the objects this one uses
    oid: int = 0
    # Kind-specific facts: a source's options and progress, a source-fed table's
    # upstream reference, a secret's value (never shown back).
    details: dict = field(default_factory=dict, compare=False, hash=False)
    keys: tuple[UniqueKey, ...] = ()  # a table's PRIMARY KEY and UNIQUE constraints
    indexes: tuple[IndexDef, ...] = ()  # a table's indexes made by CREATE INDEX
    checks: tuple[CheckDef, ...] = ()  # a table's CHECK constraints
    foreign_keys: tuple[ForeignKey, ...] = ()  # a table's FOREIGN KEY constraints

    @property
    def unique_sets(self) -> tuple[UniqueKey | IndexDef, ...]:
        """What writes must not duplicate: the keys, and the unique indexes."""
        return self.keys + tuple(i for i in self.indexes if i.unique)

    @property
    def index_names(self) -> list[str]:
        return [k.name for k in self.keys] + [i.name for i in self.indexes]

    @property
    def source_id(self) -> str | None:
        """The source feeding this table, if any: such tables are read-only."""
        return self.details.get("source", {}).get("source_id") if self.kind == "table" else None

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def column_types(self) -> list[SqlType]:
        return [c.type for c in self.columns]

    def check_readable(self) -> None:
        """Reading a Kafka table whose keys are in error fails, naming one key and its offset."""
        errors = self.details.get("source", {}).get("errors") if self.kind == "table" else None
        if not errors:
            return
        key, err = next(iter(sorted(errors.items())))
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        what = "a record" if key.startswith("offset ") else f"key {key}"  # ENVELOPE NONE errors have no key
        raise SqlError("XX000", f'table "{self.name}": {what} cannot be decoded at partition {err["partition"]} '
                                f'offset {err["offset"]}: {err["message"]}{more}',
                       hint="A later record or tombstone for the key replaces the error.")

    def attnums(self) -> list[int]:
        """Each column's PostgreSQL attnum (gaps where ALTER TABLE dropped columns)."""
        return [c.attnum if c.attnum is not None else i for i, c in enumerate(self.columns, start=1)]

    def attnum(self, name: str) -> int:
        return self.attnums()[self.column_names.index(name)]

    def column(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    def to_json(self) -> dict:
        out = {"id": self.id, "name": self.name, "kind": self.kind, "created_at": self.created_at,
               "columns": [c.to_json() for c in self.columns], "sql": self.sql,
               "depends_on": list(self.depends_on), "oid": self.oid, "details": self.details}
        if self.keys:  # absent otherwise: items without keys are written as they always were
            out["keys"] = [k.to_json() for k in self.keys]
        if self.indexes:
            out["indexes"] = [i.to_json() for i in self.indexes]
        if self.checks:
            out["checks"] = [c.to_json() for c in self.checks]
        if self.foreign_keys:
            out["foreign_keys"] = [f.to_json() for f in self.foreign_keys]
        return out

    @classmethod
    def from_json(cls, d: dict) -> Item:
        return cls(d["id"], d["name"], d["kind"], tuple(Column.from_json(c) for c in d["columns"]),
                   d["created_at"], d.get("sql"), tuple(d.get("depends_on", ())), d.get("oid", 0),
                   d.get("details", {}), tuple(UniqueKey.from_json(k) for k in d.get("keys", ())),
                   tuple(IndexDef.from_json(i) for i in d.get("indexes", ())),
                   tuple(CheckDef.from_json(c) for c in d.get("checks", ())),
                   tuple(ForeignKey.from_json(f) for f in d.get("foreign_keys", ())))
