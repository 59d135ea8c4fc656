"""CREATE TABLE's PRIMARY KEY and UNIQUE clauses, read from PostgreSQL's parse tree.

Column constraints (`a int PRIMARY KEY`) and table constraints (`UNIQUE (a, b)`,
`CONSTRAINT name PRIMARY KEY (a)`) both become a `KeySpec`. The constraints sparkwire
does not enforce (EXCLUDE, generated columns) are refused
here, by name, rather than accepted and ignored: a schema that relies on them would
otherwise take data PostgreSQL refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import table_foreign_keys
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node, names

# Constraint kinds another part of CREATE TABLE handles (NOT NULL, NULL, DEFAULT; CHECK in
# planner.table_checks; identity in planner.table_sequences; FOREIGN KEY in
# planner.table_foreign_keys).
_HANDLED_ELSEWHERE = {"CONSTR_NOTNULL", "CONSTR_NULL", "CONSTR_DEFAULT", "CONSTR_CHECK", "CONSTR_IDENTITY",
                      "CONSTR_FOREIGN"}
_REFUSED = {
    "CONSTR_EXCLUSION": "EXCLUDE constraints",
    "CONSTR_GENERATED": "generated columns",
    "CONSTR_ATTR_DEFERRABLE": "DEFERRABLE constraints",
    "CONSTR_ATTR_DEFERRED": "INITIALLY DEFERRED constraints",
}
_KEY_KINDS = {"CONSTR_PRIMARY": True, "CONSTR_UNIQUE": False}
MAX_IDENTIFIER = 63  # NAMEDATALEN - 1: PostgreSQL truncates longer names to this many bytes


@dataclass(frozen=True)
class KeySpec:
    """One PRIMARY KEY or UNIQUE constraint as written: its columns, and its name if given."""

    columns: tuple[str, ...]
    primary: bool
    name: str | None = None


def table_keys(create: Node) -> tuple[KeySpec, ...]:
    """The keys a CreateStmt declares, in the order written."""
    keys: list[KeySpec] = []
    for element in create.get("tableElts") or ():
        if "ColumnDef" in element:
            column = element["ColumnDef"]
            previous = None
            for c in column.get("constraints") or ():
                kind = c["Constraint"]["contype"]
                if previous == "CONSTR_FOREIGN" and kind in table_foreign_keys.attribute_kinds():
                    continue  # DEFERRABLE … of the REFERENCES before it (planner.table_foreign_keys)
                previous = kind
                spec = key_spec(c["Constraint"], (column["colname"],))
                if spec is not None:
                    keys.append(spec)
        elif "Constraint" in element:
            c = element["Constraint"]
            spec = key_spec(c, tuple(names(c.get("keys"))))
            if spec is not None:
                keys.append(spec)
    return tuple(keys)


def key_spec(c: Node, columns: tuple[str, ...]) -> KeySpec | None:
    kind = c["contype"]
    if kind in _HANDLED_ELSEWHERE:
        return None
    if kind in _REFUSED:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{_REFUSED[kind]} are not supported",
                       hint="sparkwire enforces NOT NULL, CHECK, PRIMARY KEY and UNIQUE.")
    if kind not in _KEY_KINDS:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"constraint {kind.removeprefix('CONSTR_')} is not supported")
    for field, clause in (("including", "INCLUDE"), ("options", "WITH (index parameters)"),
                          ("indexspace", "USING INDEX TABLESPACE"), ("indexname", "USING INDEX")):
        if c.get(field):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{clause} in a key constraint is not supported")
    if c.get("nulls_not_distinct"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "UNIQUE NULLS NOT DISTINCT is not supported")
    return KeySpec(columns, _KEY_KINDS[kind], c.get("conname"))


def truncated(name: str) -> str:
    """`name` cut to PostgreSQL's identifier length, at a character boundary."""
    data = name.encode()
    if len(data) <= MAX_IDENTIFIER:
        return name
    return data[:MAX_IDENTIFIER].decode(errors="ignore")


def constraint_name(table: str, columns: tuple[str, ...], primary: bool, taken: set[str]) -> str:
    """The name PostgreSQL chooses for an unnamed key (ChooseConstraintName): `t_pkey`,
    `t_a_b_key`."""
    return chosen_name(table, "" if primary else "_".join(columns), "pkey" if primary else "key", taken)


def index_name(table: str, columns: tuple[str, ...], taken: set[str]) -> str:
    """The name PostgreSQL chooses for CREATE INDEX without one: `t_a_b_idx`."""
    return chosen_name(table, "_".join(columns), "idx", taken)


def chosen_name(table: str, middle: str, label: str, taken: set[str]) -> str:
    """`table_middle_label`, the longer part cut to fit, and a number added to the label
    until the name is free (PostgreSQL's ChooseRelationName)."""
    for n in range(10_000):
        suffix = f"{label}{n}" if n else label
        name = _make_object_name(table, middle, suffix)
        if name not in taken:
            return name
    raise AssertionError("no free constraint name")


def _make_object_name(name1: str, name2: str, label: str) -> str:
    """PostgreSQL's makeObjectName: name1_name2_label within 63 bytes, shortening the longer
    of name1 and name2 first."""
    overhead = len(label.encode()) + 1 + (1 if name2 else 0)
    b1, b2 = name1.encode(), name2.encode()
    while len(b1) + len(b2) + overhead > MAX_IDENTIFIER:
        if len(b1) > len(b2):
            b1 = b1[:-1]
        else:
            b2 = b2[:-1]
    parts = [b1.decode(errors="ignore")] + ([b2.decode(errors="ignore")] if name2 else []) + [label]
    return "_".join(parts)


def resolved_keys(table: str, columns: list[str], specs: tuple[KeySpec, ...],
                  taken: set[str]) -> tuple[KeySpec, ...]:
    """`specs` checked against the table's columns and named as PostgreSQL names them.

    A key on the same columns as an earlier one is one key, as PostgreSQL builds one index
    for both (the PRIMARY KEY wins). `taken`: the relation and index names already in use."""
    kept: list[KeySpec] = []
    primaries = 0
    for spec in specs:
        what = "primary key constraint" if spec.primary else "unique constraint"
        for i, col in enumerate(spec.columns):
            if col not in columns:
                raise SqlError("42703", f'column "{col}" named in key does not exist')
            if col in spec.columns[:i]:
                raise SqlError("42701", f'column "{col}" appears twice in {what}')
        if spec.primary:
            primaries += 1
            if primaries > 1:
                raise SqlError("42P16", f'multiple primary keys for table "{table}" are not allowed')
        same = next((i for i, k in enumerate(kept) if k.columns == spec.columns), None)
        if same is None:
            kept.append(spec)
        elif spec.primary:
            kept[same] = KeySpec(spec.columns, True, spec.name or kept[same].name)
    taken = set(taken) | {table}
    out = []
    for spec in kept:
        name = truncated(spec.name) if spec.name else constraint_name(table, spec.columns, spec.primary, taken)
        if name in taken:
            raise SqlError("42P07", f'relation "{name}" already exists')
        taken.add(name)
        out.append(KeySpec(spec.columns, spec.primary, name))
    return tuple(out)
