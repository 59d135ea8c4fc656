"""The system catalog's view of sequences: pg_sequence, pg_sequences,
information_schema.sequences, and what pg_attribute and information_schema.columns say of
identity columns. Rows from the catalog's sequence items and their current states, as
server.system_catalog's Snapshot carries them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from planner import sequences as seq
from planner.types import BY_NAME
from server.catalog_items import Item

KIND = "sequence"


def of(items: Iterable[Item]) -> list[Item]:
    return [i for i in items if i.kind == KIND]


def _spec(item: Item) -> seq.Spec:
    return seq.Spec.from_json(item.details["spec"])


def pg_sequence(items: Iterable[Item]) -> Iterator[tuple]:
    for item in of(items):
        s = _spec(item)
        yield item.oid, BY_NAME[s.type].oid, s.start, s.increment, s.maxvalue, s.minvalue, s.cache, s.cycle


def pg_sequences(items: Iterable[Item], states: dict[str, tuple[int, bool, int]], owner: str) -> Iterator[tuple]:
    """pg_catalog.pg_sequences: last_value is NULL until nextval has returned a value."""
    for item in of(items):
        s = _spec(item)
        last, called, _ = states.get(item.id, (item.details["last_value"], item.details["is_called"], 0))
        yield ("public", item.name, owner, s.type, s.start, s.minvalue, s.maxvalue, s.increment, s.cycle,
               s.cache, last if called else None)


def information_schema(items: Iterable[Item], database: str) -> Iterator[tuple]:
    precision = {"smallint": 16, "integer": 32, "bigint": 64}
    for item in of(items):
        s = _spec(item)
        yield (database, "public", item.name, s.type, precision[s.type], 2, 0, str(s.start), str(s.minvalue),
               str(s.maxvalue), str(s.increment), "YES" if s.cycle else "NO")


def identities(items: Iterable[Item]) -> dict[tuple[str, str], seq.Spec]:
    """Each identity column's sequence options, by (table id, column name)."""
    out = {}
    for item in of(items):
        owned = item.details.get("owned_by")
        if owned and owned.get("identity"):
            out[(owned["table"], owned["column"])] = _spec(item)
    return out


def identity_columns(kind: str | None, spec: seq.Spec | None) -> tuple:
    """information_schema.columns' is_identity … identity_cycle for one column."""
    if kind is None or spec is None:
        return ("NO", None, None, None, None, None, "NO")
    return ("YES", kind.upper(), str(spec.start), str(spec.increment), str(spec.maxvalue), str(spec.minvalue),
            "YES" if spec.cycle else "NO")


def pg_depend(items: list[Item], pg_class: int) -> Iterator[tuple]:
    r"""A sequence owned by a column depends on it: deptype 'a' (serial, OWNED BY) or 'i'
    (identity), as psql's `\d` ("Owned by") and Rails' pk_and_sequence_for read it. `pg_class`:
    that relation's OID here (`'pg_class'::regclass`), the classid of relations."""
    by_id = {i.id: i for i in items}
    for item in of(items):
        owned = item.details.get("owned_by")
        table = by_id.get(owned["table"]) if owned else None
        if table is None or table.column(owned["column"]) is None:
            continue
        yield (pg_class, item.oid, 0, pg_class, table.oid, table.attnum(owned["column"]),
               "i" if owned.get("identity") else "a")


PG_SEQUENCES = ("schemaname name, sequencename name, sequenceowner name, data_type regtype, "
                "start_value int8, min_value int8, max_value int8, increment_by int8, cycle bool, "
                "cache_size int8, last_value int8")
INFORMATION_SCHEMA = ("sequence_catalog name, sequence_schema name, sequence_name name, data_type varchar, "
                      "numeric_precision int4, numeric_precision_radix int4, numeric_scale int4, "
                      "start_value varchar, minimum_value varchar, maximum_value varchar, increment varchar, "
                      "cycle_option varchar")
