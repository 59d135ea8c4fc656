"""System relations: pg_catalog, information_schema and mz_internal, from the live catalog.

Each relation is a name, its columns and a function that computes its rows
from a `Snapshot` of the server (the catalog, the running subscriptions, the
reading session's user). A query that reads one gets the rows as they are
when it is planned: the coordinator's resolver calls `resolve`, and the query
hands the resulting `SystemTable` to Spark as a temp view (`dataframe`).

Column types follow PostgreSQL 15; types we have no codec for are shown as
text (aclitem, pg_node_tree, regproc, int2vector, oidvector).
"""

from __future__ import annotations

import collections
import datetime
import hashlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import sqlglot
from sqlglot import exp

from planner import functions, operators, pg_compat
from planner.pg_compat import NAMESPACES, SUPERUSER_OID, TYPES
from planner.sequences import sequence_in_default
from planner.types import BY_NAME, SqlType, lookup
from server import system_foreign_keys, system_keys, system_sequences
from server.settings import SYSTEM_VARIABLES, VARIABLES
from spark_backend.schema import arrow_type, pg_metadata, physical

OWNER = "materialize"
DATABASE = "materialize"

# Catalog item kinds that are relations, and their pg_class.relkind (sources are
# relations too: selecting one shows its progress, as in Materialize).
_KINDS = {"table": "r", "view": "v", "materialized view": "m", "materialized_view": "m",
          "source": "r"}
_SPECIAL_TYPES = {
    "oid": "oid", "xid": "oid", "name": "name", '"char"': "char", "aclitem": "text",
    "pg_node_tree": "text", "regproc": "text", "int2vector": "text", "oidvector": "text",
    "anyarray": "text", "inet": "text", "pg_lsn": "text", "int2": "smallint", "int4": "integer", "int8": "bigint",
    "float4": "real", "bool": "boolean", "timestamptz": "timestamp with time zone",
    "regtype": "text",
}


def _column_type(spec: str) -> SqlType:
    spec = spec.strip()
    is_array = spec.endswith("[]")
    base = spec[:-2] if is_array else spec
    name = _SPECIAL_TYPES.get(base, base)
    pg = BY_NAME.get(name) or lookup(name)
    if pg is None:
        raise ValueError(f"unknown system column type {spec!r}")
    if is_array and base in ("aclitem", "regproc"):
        return SqlType(BY_NAME["text"], -1, True)
    return SqlType(pg, -1, is_array)


def columns(spec: str) -> tuple[tuple[str, SqlType], ...]:
    """`name type, …` as a relation's columns."""
    out = []
    for part in spec.split(","):
        name, type_spec = part.strip().split(" ", 1)
        out.append((name, _column_type(type_spec)))
    return tuple(out)


@dataclass
class Snapshot:
    """What system relations are computed from, taken when a query is planned."""

    items: list  # server.catalog.Item, sorted by name: relations, roles, connections, ...
    subscriptions: list  # server.subscribe.Subscription
    system_settings: dict[str, str]
    user: str = OWNER
    sources: object | None = None  # the server's SourceManager, for mz_source_statuses
    background: list = field(default_factory=list)  # rows of mz_background_work
    activity: list = field(default_factory=list)  # rows of pg_stat_activity, one per session
    prepared: list = field(default_factory=list)  # rows of pg_prepared_statements: the reader's own
    # Each sequence's (last value, is_called, values logged ahead), as the server has it now.
    sequence_states: dict = field(default_factory=dict)

    @property
    def relations(self) -> list:
        """The catalog items that are relations (pg_class rows)."""
        return [i for i in self.items if i.kind in _KINDS]

    @property
    def tables(self) -> list:
        return [i for i in self.items if i.kind == "table"]


@dataclass(frozen=True)
class Relation:
    schema: str
    name: str
    columns: tuple[tuple[str, SqlType], ...]
    rows: Callable[[Snapshot], Iterable[tuple]] | None = None  # None: always empty
    kind: str = "r"  # relkind in pg_class: r (table) or v (view)
    oid: int = 0

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass
class SystemTable:
    """One system relation's rows for one query, ready for Spark."""

    relation: Relation
    table: pa.Table  # columns c0, c1, ... (storage names)
    column_names: list[str] = field(default_factory=list)
    column_types: list[SqlType] = field(default_factory=list)
    fingerprint: str = ""  # of the rows: equal rows make the same Spark DataFrame


# -- rows -------------------------------------------------------------------------------------

def _kind(item) -> str:
    return _KINDS.get(item.kind, "r")


def _pg_class(snap: Snapshot):
    for rel in RELATIONS:
        yield _class_row(rel.oid, rel.name, NAMESPACES[rel.schema], rel.kind, len(rel.columns))
    for item in snap.relations:
        yield _class_row(item.oid, item.name, NAMESPACES["public"], _kind(item), len(item.columns),
                         bool(item.index_names), checks=len(item.checks))
    for oid, name, natts, method in system_keys.index_relations(snap.tables):
        yield _class_row(oid, name, NAMESPACES["public"], "i", natts, access_method=method)
    for item in system_sequences.of(snap.items):
        yield _class_row(item.oid, item.name, NAMESPACES["public"], "S", 3)


def _class_row(oid: int, name: str, namespace: int, kind: str, natts: int, has_index: bool = False,
               access_method: int | None = None, checks: int = 0) -> tuple:
    if access_method is None:
        access_method = 2 if kind in ("r", "m") else 0  # heap
    return (oid, name, namespace, 0, 0, SUPERUSER_OID, access_method, oid, 0,
            0, -1.0, 0, 0, has_index, False, "p", kind, natts, checks, False, False, False, False, False,
            True, "d", False, 0, 0, 0, None, None, None)


def _namespace_rows(snap: Snapshot):
    for name, oid in NAMESPACES.items():
        yield oid, name, SUPERUSER_OID, None


def _all_columns(snap: Snapshot):
    """(relation oid, schema, relation name, kind, attnum, column name, type, not null, default)."""
    for rel in RELATIONS:
        for i, (name, t) in enumerate(rel.columns, start=1):
            yield rel.oid, rel.schema, rel.name, rel.kind, i, name, t, False, None
    for item in snap.relations:
        for i, col in zip(item.attnums(), item.columns):
            yield (item.oid, "public", item.name, _kind(item), i, col.name, col.type, col.not_null,
                   col.default)


def _pg_attribute(snap: Snapshot):
    kinds = _identity_kinds(snap)
    for relid, _schema, _rel, _kind_, num, name, t, not_null, default in _all_columns(snap):
        identity = {"always": "a", "by default": "d"}.get(kinds.get((relid, name)), "")
        row = pg_compat.TYPES_BY_OID.get(t.oid)
        yield (relid, name, t.oid, -1, row.typlen if row else -1, num, 1 if t.is_array else 0, -1,
               t.typmod, bool(row and row.typbyval), row.typalign if row else "i",
               row.typstorage if row else "x", "", not_null, default is not None, False, identity, "",
               False, True, 0, row.typcollation if row else 0, None, None, None, None)


def _pg_attrdef(snap: Snapshot):
    for relid, _schema, _rel, _kind_, num, _name, t, _nn, default in _all_columns(snap):
        if default is not None:
            yield relid * 1000 + num, relid, num, default_expr(default, t)


def default_expr(default: str, t: SqlType) -> str:
    """A column default as `pg_get_expr` prints it: literals carry their type, as in PostgreSQL."""
    if sequence_in_default(default) is not None:
        return default  # kept as PostgreSQL prints it: nextval('s'::regclass)
    try:
        tree = sqlglot.parse_one(default, read="postgres")
    except Exception:  # noqa: BLE001 - shown as stored
        return default
    display = t.base.name if t.base.name != "character" else "bpchar"
    if isinstance(tree, exp.Literal) and tree.is_string:
        return f"{tree.sql('postgres')}::{display}{'[]' if t.is_array else ''}"
    if isinstance(tree, exp.Neg) and isinstance(tree.this, exp.Literal):
        literal_type = "numeric" if "." in tree.this.this else ("integer" if t.base.name in (
            "smallint", "integer") else t.base.name)
        return f"'-{tree.this.this}'::{literal_type}"
    # PostgreSQL prints booleans in lower case, and the usual `DEFAULT now()` as now().
    tree = tree.transform(lambda n: exp.Var(this=n.sql("postgres").lower()) if isinstance(n, exp.Boolean)
                          else exp.Var(this="now()") if isinstance(n, exp.CurrentTimestamp) else n)
    return tree.sql("postgres", normalize_functions="lower")


def _pg_type(snap: Snapshot):
    for t in TYPES:
        yield (t.oid, t.typname, NAMESPACES["pg_catalog"], SUPERUSER_OID, t.typlen, t.typbyval,
               t.typtype, t.typcategory, t.typispreferred, True, ",", 0,
               "array_subscript_handler" if t.typcategory == "A" else "-", t.typelem, t.typarray,
               t.typinput, t.typoutput, t.typreceive, t.typsend, "-", "-", "-", t.typalign,
               t.typstorage, False, 0, -1, 0, t.typcollation, None, None, None)


def _pg_database(snap: Snapshot):
    yield (pg_compat.DATABASE_OID, DATABASE, SUPERUSER_OID, 6, "c", False, True, -1, 0, 0, 1663,
           "C.UTF-8", "C.UTF-8", None, None, None)


def _roles(snap: Snapshot) -> list[tuple[int, str]]:
    """(oid, name): the owner of everything, roles made with CREATE ROLE, and the reader."""
    roles = {OWNER: SUPERUSER_OID}
    for item in snap.items:
        if item.kind == "role":
            roles.setdefault(item.name, item.oid)
    roles.setdefault(snap.user, 16390)
    return sorted(((oid, name) for name, oid in roles.items()), key=lambda r: r[1])


def _pg_roles(snap: Snapshot):
    for oid, name in _roles(snap):
        yield name, True, True, True, True, True, False, -1, "********", None, False, None, oid


def _pg_authid(snap: Snapshot):
    for oid, name in _roles(snap):
        yield oid, name, True, True, True, True, True, False, False, -1, None, None


def _pg_user(snap: Snapshot):
    for oid, name in _roles(snap):
        yield name, oid, True, True, False, False, "********", None, None


def _pg_settings(snap: Snapshot):
    for var in sorted(VARIABLES.values(), key=lambda v: v.name):
        context = "internal" if var.read_only else "user"
        yield (var.name, var.default, None, "Client Connection Defaults", var.description, None,
               context, "enum" if var.allowed else "string", "default", None, None,
               list(var.allowed) if var.allowed else None, var.default, var.default, None, None,
               False)
    for name, value, unit, description, vartype in _PRESET_OPTIONS:
        yield (name, value, unit, "Preset Options", description, None, "internal", vartype, "default",
               value, value, None, value, value, None, None, False)
    for name, default in sorted(SYSTEM_VARIABLES.items()):
        value = snap.system_settings.get(name, default)
        yield (name, value, None, "Feature Flags", f"Feature flag {name}.", None, "superuser",
               "bool", "default" if value == default else "configuration file", None, None, None,
               default, value, None, None, False)


# Compile-time limits PostgreSQL reports (pgjdbc's getImportedKeys reads max_index_keys).
_PRESET_OPTIONS = [
    ("max_index_keys", "32", None, "Shows the maximum number of index keys.", "integer"),
    ("max_function_args", "100", None, "Shows the maximum number of function arguments.", "integer"),
    ("max_identifier_length", "63", None, "Shows the maximum identifier length.", "integer"),
    ("block_size", "8192", None, "Shows the size of a disk block.", "integer"),
    ("segment_size", "131072", "8kB", "Shows the number of pages per disk file.", "integer"),
]


def _pg_language(snap: Snapshot):
    for oid, name, ispl, trusted in ((12, "internal", False, False), (13, "c", False, False),
                                     (14, "sql", False, True)):
        yield oid, name, SUPERUSER_OID, ispl, trusted, 0, 0, 0, None


def _pg_stat_user_tables(snap: Snapshot):
    """Every table, with no scan or tuple statistics kept."""
    for item in snap.relations:
        if item.kind == "table":
            yield (item.oid, "public", item.name, 0, 0, None, None, 0, 0, 0, 0, 0, 0, 0, 0,
                   None, None, None, None, 0, 0, 0, 0)


def _pg_am(snap: Snapshot):
    yield 2, "heap", "heap_tableam_handler", "t"
    yield 403, "btree", "bthandler", "i"
    yield 405, "hash", "hashhandler", "i"


def _pg_tablespace(snap: Snapshot):
    yield 1663, "pg_default", SUPERUSER_OID, None, None
    yield 1664, "pg_global", SUPERUSER_OID, None, None


# Type OIDs of the pseudo-types the function catalog's signatures use, beyond pg_type's rows.
_PSEUDO_TYPE_OIDS = {'"any"': 2276, "anyelement": 2283, "anyarray": 2277, "anynonarray": 2776,
                     "anycompatible": 5077, "anycompatiblearray": 5078, "regnamespace": 4089,
                     "record": 2249, "void": 2278}


def _type_oid(name: str) -> int:
    return _PSEUDO_TYPE_OIDS.get(name) or pg_compat.type_names().get(name, 0)


def _pg_proc(snap: Snapshot):
    """Exactly the functions of the function catalog (planner.functions), one row per signature."""
    for f in functions.FUNCTIONS:
        kind = {functions.Kind.AGGREGATE: "a", functions.Kind.WINDOW: "w"}.get(f.kind, "f")
        args = [_type_oid(a) for a in f.args]
        yield (f.oid, f.name, NAMESPACES["pg_catalog"], SUPERUSER_OID, 12, 1.0,
               1000.0 if f.kind is functions.Kind.TABLE else 0.0, args[-1] if f.variadic else 0, "-",
               kind, False, False, True, f.kind is functions.Kind.TABLE, "s", "s", len(args), 0,
               _type_oid(f.result), " ".join(str(a) for a in args), None, None, None, None, None,
               f.name, None, None, None, None)


def _pg_operator(snap: Snapshot):
    """Exactly the operators of the operator catalog (planner.operators)."""
    for o in operators.OPERATORS:
        yield (o.oid, o.name, NAMESPACES["pg_catalog"], SUPERUSER_OID, "l" if o.left is None else "b",
               False, False, _type_oid(o.left) if o.left else 0, _type_oid(o.right), _type_oid(o.result),
               0, 0, "-", "-", "-")


def _schema_rows(snap: Snapshot):
    for name in NAMESPACES:
        yield DATABASE, name, OWNER, None, None, None, None


def _table_rows(snap: Snapshot):
    for rel in RELATIONS:
        yield (DATABASE, rel.schema, rel.name, "VIEW" if rel.kind == "v" else "BASE TABLE",
               None, None, None, None, None, "NO", "NO", None)
    for item in snap.relations:
        table = _kind(item) == "r"
        yield (DATABASE, "public", item.name, "BASE TABLE" if table else "VIEW", None, None, None,
               None, None, "YES" if table else "NO", "NO", None)


_PRECISION = {"smallint": 16, "integer": 32, "bigint": 64, "real": 24, "double precision": 53,
              "oid": 32}


def _identity_kinds(snap: Snapshot) -> dict[tuple[int, str], str]:
    """Each identity column's kind ("always" | "by default"), by (table OID, column name)."""
    return {(item.oid, col.name): col.identity for item in snap.relations for col in item.columns if col.identity}


def _column_rows(snap: Snapshot):
    kinds = _identity_kinds(snap)
    oids = {i.id: i.oid for i in snap.relations}
    specs = {(oids.get(t), c): spec for (t, c), spec in system_sequences.identities(snap.items).items()}
    for relid, schema, rel, _kind_, num, name, t, not_null, default in _all_columns(snap):
        base = t.base.name
        row = pg_compat.TYPES_BY_OID.get(t.base.oid)
        data_type = "ARRAY" if t.is_array else ("USER-DEFINED" if base == "char" else base)
        char_len = t.max_length
        octets = (char_len * 4 if char_len is not None
                  else 1073741824 if base in ("text", "character varying", "character") else None)
        precision = scale = radix = None
        if base in _PRECISION:
            precision, radix, scale = _PRECISION[base], 2, (0 if base in ("smallint", "integer",
                                                                          "bigint") else None)
        elif base == "numeric":
            ps = t.precision_scale
            precision, scale, radix = (ps[0], ps[1], 10) if ps else (None, None, 10)
        datetime_precision = 0 if base == "date" else 6 if base.startswith(("time", "interval")) \
            else None
        udt = (("_" if t.is_array else "") + row.typname) if row else base
        yield (DATABASE, schema, rel, name, num, default_expr(default, t) if default else None,
               "NO" if not_null else "YES", data_type, char_len, octets, precision, radix, scale,
               datetime_precision, None, None, None, None, None, None, None, None, None, None,
               None, DATABASE, "pg_catalog", udt, None, None, None, None, str(num), "NO",
               *system_sequences.identity_columns(kinds.get((relid, name)), specs.get((relid, name))), "NEVER", None,
               "YES" if _kind_ == "r" and schema == "public" else "NO")


def _view_rows(snap: Snapshot):
    for item in snap.relations:
        if _kind(item) == "v":
            yield DATABASE, "public", item.name, item.sql, "NONE", "NO", "NO", "NO", "NO", "NO"


def _pg_tables(snap: Snapshot):
    for rel in RELATIONS:
        if rel.kind == "r":
            yield rel.schema, rel.name, OWNER, None, False, False, False, False
    for item in snap.relations:
        if _kind(item) == "r":
            yield "public", item.name, OWNER, None, bool(item.index_names), False, False, False


def _pg_views(snap: Snapshot):
    for rel in RELATIONS:
        if rel.kind == "v":
            yield rel.schema, rel.name, OWNER, None
    for item in snap.relations:
        if _kind(item) == "v":
            yield "public", item.name, OWNER, item.sql


def _subscriptions(snap: Snapshot):
    for sub in snap.subscriptions:
        stmt = sub.stmt
        what = (f"SUBSCRIBE {stmt.relation}" if stmt.relation is not None
                else f"SUBSCRIBE ({stmt.query.sql('postgres') if stmt.query is not None else stmt.text})")
        inputs = sorted({rel.collection_id for rel in getattr(sub, "inputs", [])})
        yield (f"s{sub.id}", sub.ctx.backend_pid, "default",
               datetime.datetime.fromtimestamp(sub.created_at, datetime.UTC), inputs,
               sub.user, what, stmt.output.label, sub.rows_sent)


def _source_statuses(snap: Snapshot):
    """One row per source and per table fed by one, from the running source runners."""
    manager = snap.sources
    if manager is None:
        return
    by_name = {i.name: i for i in snap.items}
    for name, kind, status, error in manager.status_rows():
        item = by_name.get(name)
        if item is None:
            continue
        runner, table_name = None, None
        if item.kind == "source":
            runner = manager.runners.get(item.id)
        elif item.source_id is not None:
            runner, table_name = manager.runners.get(item.source_id), item.name
        state = getattr(runner, "status", None)
        changed = getattr(state, "updated_at", None)
        progress = dict(getattr(state, "snapshot_rows", None) or {})
        if table_name is not None:
            progress = {table_name: progress[table_name]} if table_name in progress else {}
        copied = sum(p[0] for p in progress.values()) if progress else None
        expected = sum(p[1] for p in progress.values()) if progress else None
        yield (item.id, name, kind, datetime.datetime.fromtimestamp(changed, datetime.UTC)
               if changed else None, status, error, None, copied, expected)


# -- the relations ------------------------------------------------------------------------------

_CLASS = ("oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, "
          "relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, "
          "relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, "
          'relpersistence "char", relkind "char", relnatts int2, relchecks int2, '
          "relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, "
          'relforcerowsecurity bool, relispopulated bool, relreplident "char", '
          "relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, "
          "relacl aclitem[], reloptions text[], relpartbound pg_node_tree")
_ATTRIBUTE = ("attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, "
              "attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, "
              'attalign "char", attstorage "char", attcompression "char", attnotnull bool, '
              'atthasdef bool, atthasmissing bool, attidentity "char", attgenerated "char", '
              "attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, "
              "attacl aclitem[], attoptions text[], attfdwoptions text[], attmissingval anyarray")
_TYPE = ('oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, '
         'typtype "char", typcategory "char", typispreferred bool, typisdefined bool, '
         'typdelim "char", typrelid oid, typsubscript regproc, typelem oid, typarray oid, '
         "typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, "
         'typmodin regproc, typmodout regproc, typanalyze regproc, typalign "char", '
         'typstorage "char", typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, '
         "typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]")
_DATABASE = ('oid oid, datname name, datdba oid, encoding int4, datlocprovider "char", '
             "datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid, "
             "datminmxid xid, dattablespace oid, datcollate text, datctype text, "
             "daticulocale text, datcollversion text, datacl aclitem[]")
_ROLES = ("rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
          "rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, "
          "rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid")
_AUTHID = ("oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, "
           "rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolbypassrls bool, "
           "rolconnlimit int4, rolpassword text, rolvaliduntil timestamptz")
_USER = ("usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, "
         "usebypassrls bool, passwd text, valuntil timestamptz, useconfig text[]")
_SETTINGS = ("name text, setting text, unit text, category text, short_desc text, "
             "extra_desc text, context text, vartype text, source text, min_val text, "
             "max_val text, enumvals text[], boot_val text, reset_val text, sourcefile text, "
             "sourceline int4, pending_restart bool")
_PROC = ("oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, "
         'prorows float4, provariadic oid, prosupport regproc, prokind "char", prosecdef bool, '
         'proleakproof bool, proisstrict bool, proretset bool, provolatile "char", '
         'proparallel "char", pronargs int2, pronargdefaults int2, prorettype oid, '
         'proargtypes oidvector, proallargtypes oid[], proargmodes "char"[], proargnames text[], '
         "proargdefaults pg_node_tree, protrftypes oid[], prosrc text, probin text, "
         "prosqlbody pg_node_tree, proconfig text[], proacl aclitem[]")
_IDENT, _CARD, _CHARS = "name", "int4", "varchar"
_IS_TABLES = ", ".join(f"{n} {t}" for n, t in [
    ("table_catalog", _IDENT), ("table_schema", _IDENT), ("table_name", _IDENT),
    ("table_type", _CHARS), ("self_referencing_column_name", _IDENT),
    ("reference_generation", _CHARS), ("user_defined_type_catalog", _IDENT),
    ("user_defined_type_schema", _IDENT), ("user_defined_type_name", _IDENT),
    ("is_insertable_into", _CHARS), ("is_typed", _CHARS), ("commit_action", _CHARS)])
_IS_COLUMNS = ", ".join(f"{n} {t}" for n, t in [
    ("table_catalog", _IDENT), ("table_schema", _IDENT), ("table_name", _IDENT),
    ("column_name", _IDENT), ("ordinal_position", _CARD), ("column_default", _CHARS),
    ("is_nullable", _CHARS), ("data_type", _CHARS), ("character_maximum_length", _CARD),
    ("character_octet_length", _CARD), ("numeric_precision", _CARD),
    ("numeric_precision_radix", _CARD), ("numeric_scale", _CARD), ("datetime_precision", _CARD),
    ("interval_type", _CHARS), ("interval_precision", _CARD), ("character_set_catalog", _IDENT),
    ("character_set_schema", _IDENT), ("character_set_name", _IDENT),
    ("collation_catalog", _IDENT), ("collation_schema", _IDENT), ("collation_name", _IDENT),
    ("domain_catalog", _IDENT), ("domain_schema", _IDENT), ("domain_name", _IDENT),
    ("udt_catalog", _IDENT), ("udt_schema", _IDENT), ("udt_name", _IDENT),
    ("scope_catalog", _IDENT), ("scope_schema", _IDENT), ("scope_name", _IDENT),
    ("maximum_cardinality", _CARD), ("dtd_identifier", _IDENT), ("is_self_referencing", _CHARS),
    ("is_identity", _CHARS), ("identity_generation", _CHARS), ("identity_start", _CHARS),
    ("identity_increment", _CHARS), ("identity_maximum", _CHARS), ("identity_minimum", _CHARS),
    ("identity_cycle", _CHARS), ("is_generated", _CHARS), ("generation_expression", _CHARS),
    ("is_updatable", _CHARS)])
_IS_SCHEMATA = ("catalog_name name, schema_name name, schema_owner name, "
                "default_character_set_catalog name, default_character_set_schema name, "
                "default_character_set_name name, sql_path varchar")
_IS_VIEWS = ("table_catalog name, table_schema name, table_name name, view_definition varchar, "
             "check_option varchar, is_updatable varchar, is_insertable_into varchar, "
             "is_trigger_updatable varchar, is_trigger_deletable varchar, "
             "is_trigger_insertable_into varchar")

_DEFINITIONS: list[tuple[str, str, str, Callable | None, str]] = [
    # schema, name, columns, rows, relkind
    ("pg_catalog", "pg_class", _CLASS, _pg_class, "r"),
    ("pg_catalog", "pg_namespace", "oid oid, nspname name, nspowner oid, nspacl aclitem[]",
     _namespace_rows, "r"),
    ("pg_catalog", "pg_attribute", _ATTRIBUTE, _pg_attribute, "r"),
    ("pg_catalog", "pg_type", _TYPE, _pg_type, "r"),
    ("pg_catalog", "pg_database", _DATABASE, _pg_database, "r"),
    ("pg_catalog", "pg_roles", _ROLES, _pg_roles, "v"),
    ("pg_catalog", "pg_authid", _AUTHID, _pg_authid, "r"),
    ("pg_catalog", "pg_user", _USER, _pg_user, "v"),
    ("pg_catalog", "pg_settings", _SETTINGS, _pg_settings, "v"),
    ("pg_catalog", "pg_am", "oid oid, amname name, amhandler regproc, amtype \"char\"", _pg_am, "r"),
    ("pg_catalog", "pg_attrdef", "oid oid, adrelid oid, adnum int2, adbin pg_node_tree",
     _pg_attrdef, "r"),
    ("pg_catalog", "pg_proc", _PROC, _pg_proc, "r"),
    ("pg_catalog", "pg_operator", ("oid oid, oprname name, oprnamespace oid, oprowner oid, "
     'oprkind "char", oprcanmerge bool, oprcanhash bool, oprleft oid, oprright oid, oprresult oid, '
     "oprcom oid, oprnegate oid, oprcode regproc, oprrest regproc, oprjoin regproc"), _pg_operator, "r"),
    ("pg_catalog", "pg_tablespace",
     "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]", _pg_tablespace,
     "r"),
    ("pg_catalog", "pg_tables", ("schemaname name, tablename name, tableowner name, "
     "tablespace name, hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool"),
     _pg_tables, "v"),
    ("pg_catalog", "pg_views", "schemaname name, viewname name, viewowner name, definition text",
     _pg_views, "v"),
    # Indexes are those of tables' keys and CREATE INDEX (server.system_keys). indkey is an
    # int2vector in PostgreSQL and an array here: drivers use it as one (generate_subscripts,
    # ANY, _pg_expandarray); indoption stays int2vector (text), which SQLAlchemy splits. The
    # relations whose rows are
    # None are always empty: no comments, inheritance, policies, ...
    ("pg_catalog", "pg_index", ("indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, "
     "indisunique bool, indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, "
     "indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool, "
     "indisready bool, indislive bool, indisreplident bool, indkey int2[], indcollation oid[], "
     "indclass oid[], indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"),
     lambda snap: system_keys.pg_index_rows(snap.tables), "r"),
    ("pg_catalog", "pg_description", "objoid oid, classoid oid, objsubid int4, description text",
     None, "r"),
    ("pg_catalog", "pg_shdescription", "objoid oid, classoid oid, description text", None, "r"),
    ("pg_catalog", "pg_constraint", ("oid oid, conname name, connamespace oid, contype \"char\", "
     "condeferrable bool, condeferred bool, convalidated bool, conrelid oid, contypid oid, "
     "conindid oid, conparentid oid, confrelid oid, confupdtype \"char\", confdeltype \"char\", "
     "confmatchtype \"char\", conislocal bool, coninhcount int4, connoinherit bool, "
     "conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], "
     "confdelsetcols int2[], conexclop oid[], conbin pg_node_tree"),
     lambda snap: [*system_keys.pg_constraint_rows(snap.tables),
                  *system_foreign_keys.pg_constraint_rows(snap.tables)], "r"),
    ("pg_catalog", "pg_inherits",
     "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool", None, "r"),
    ("pg_catalog", "pg_collation", ("oid oid, collname name, collnamespace oid, collowner oid, "
     "collprovider \"char\", collisdeterministic bool, collencoding int4, collcollate text, "
     "collctype text, colliculocale text, collversion text"), None, "r"),
    ("pg_catalog", "pg_policy", ("oid oid, polname name, polrelid oid, polcmd \"char\", "
     "polpermissive bool, polroles oid[], polqual pg_node_tree, polwithcheck pg_node_tree"),
     None, "r"),
    ("pg_catalog", "pg_statistic_ext", ("oid oid, stxrelid oid, stxname name, stxnamespace oid, "
     "stxowner oid, stxstattarget int4, stxkeys int2vector, stxkind \"char\"[], "
     "stxexprs pg_node_tree"), None, "r"),
    ("pg_catalog", "pg_publication", ("oid oid, pubname name, pubowner oid, puballtables bool, "
     "pubinsert bool, pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool"),
     None, "r"),
    ("pg_catalog", "pg_publication_namespace", "oid oid, pnpubid oid, pnnspid oid", None, "r"),
    ("pg_catalog", "pg_publication_rel",
     "oid oid, prpubid oid, prrelid oid, prqual pg_node_tree, prattrs int2[]", None, "r"),
    ("pg_catalog", "pg_range", ("rngtypid oid, rngsubtype oid, rngmultitypid oid, "
     "rngcollation oid, rngsubopc oid, rngcanonical regproc, rngsubdiff regproc"), None, "r"),
    ("pg_catalog", "pg_enum", "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
     None, "r"),
    ("pg_catalog", "pg_auth_members", "roleid oid, member oid, grantor oid, admin_option bool",
     None, "r"),
    ("pg_catalog", "pg_extension", ("oid oid, extname name, extowner oid, extnamespace oid, "
     "extrelocatable bool, extversion text, extconfig oid[], extcondition text[]"), None, "r"),
    ("pg_catalog", "pg_trigger", ("oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, "
     "tgtype int2, tgenabled \"char\", tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, "
     "tgconstraint oid, tgdeferrable bool, tginitdeferred bool, tgnargs int2, tgattr int2vector, "
     "tgargs bytea, tgqual pg_node_tree, tgoldtable name, tgnewtable name"), None, "r"),
    ("pg_catalog", "pg_rewrite", ("oid oid, rulename name, ev_class oid, ev_type \"char\", "
     "ev_enabled \"char\", is_instead bool, ev_qual pg_node_tree, ev_action pg_node_tree"),
     None, "r"),
    ("pg_catalog", "pg_depend", ("classid oid, objid oid, objsubid int4, refclassid oid, "
     "refobjid oid, refobjsubid int4, deptype \"char\""), lambda snap: system_sequences.pg_depend(snap.items, find("pg_catalog.pg_class").oid), "r"),
    ("pg_catalog", "pg_sequence", ("seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, "
     "seqmax int8, seqmin int8, seqcache int8, seqcycle bool"), lambda snap: system_sequences.pg_sequence(snap.items),
     "r"),
    ("pg_catalog", "pg_sequences", system_sequences.PG_SEQUENCES,
     lambda snap: system_sequences.pg_sequences(snap.items, snap.sequence_states, OWNER), "v"),
    ("information_schema", "sequences", system_sequences.INFORMATION_SCHEMA,
     lambda snap: system_sequences.information_schema(snap.items, DATABASE), "v"),
    ("pg_catalog", "pg_foreign_table", "ftrelid oid, ftserver oid, ftoptions text[]", None, "r"),
    ("pg_catalog", "pg_largeobject_metadata", "oid oid, lomowner oid, lomacl aclitem[]", None, "r"),
    ("pg_catalog", "pg_language", ("oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, "
     "lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl aclitem[]"), _pg_language, "r"),
    ("pg_catalog", "pg_foreign_server", ("oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, "
     "srvversion text, srvacl aclitem[], srvoptions text[]"), None, "r"),
    ("pg_catalog", "pg_foreign_data_wrapper", ("oid oid, fdwname name, fdwowner oid, fdwhandler oid, "
     "fdwvalidator oid, fdwacl aclitem[], fdwoptions text[]"), None, "r"),
    ("pg_catalog", "pg_user_mapping", "oid oid, umuser oid, umserver oid, umoptions text[]", None, "r"),
    ("pg_catalog", "pg_event_trigger", ('oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, '
     'evtenabled "char", evttags text[]'), None, "r"),
    ("pg_catalog", "pg_default_acl", ('oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype "char", '
     "defaclacl aclitem[]"), None, "r"),
    ("pg_catalog", "pg_cast", ('oid oid, castsource oid, casttarget oid, castfunc oid, castcontext "char", '
     'castmethod "char"'), None, "r"),
    ("pg_catalog", "pg_subscription", ('oid oid, subdbid oid, subskiplsn pg_lsn, subname name, subowner oid, '
     'subenabled bool, subbinary bool, substream bool, subtwophasestate "char", subdisableonerr bool, '
     "subconninfo text, subslotname name, subsynccommit text, subpublications text[]"), None, "r"),
    ("pg_catalog", "pg_db_role_setting", "setdatabase oid, setrole oid, setconfig text[]", None, "r"),
    ("pg_catalog", "pg_opfamily", "oid oid, opfmethod oid, opfname name, opfnamespace oid, opfowner oid",
     None, "r"),
    ("pg_catalog", "pg_opclass", ("oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, "
     "opcfamily oid, opcintype oid, opcdefault bool, opckeytype oid"), None, "r"),
    ("pg_catalog", "pg_amop", ('oid oid, amopfamily oid, amoplefttype oid, amoprighttype oid, '
     'amopstrategy int2, amoppurpose "char", amopopr oid, amopmethod oid, amopsortfamily oid'), None, "r"),
    ("pg_catalog", "pg_amproc", ("oid oid, amprocfamily oid, amproclefttype oid, amprocrighttype oid, "
     "amprocnum int2, amproc regproc"), None, "r"),
    ("pg_catalog", "pg_conversion", ("oid oid, conname name, connamespace oid, conowner oid, "
     "conforencoding int4, contoencoding int4, conproc regproc, condefault bool"), None, "r"),
    ("pg_catalog", "pg_ts_config", "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid",
     None, "r"),
    ("pg_catalog", "pg_ts_dict", ("oid oid, dictname name, dictnamespace oid, dictowner oid, "
     "dicttemplate oid, dictinitoption text"), None, "r"),
    ("pg_catalog", "pg_ts_parser", ("oid oid, prsname name, prsnamespace oid, prsstart regproc, "
     "prstoken regproc, prsend regproc, prsheadline regproc, prslextype regproc"), None, "r"),
    ("pg_catalog", "pg_ts_template", ("oid oid, tmplname name, tmplnamespace oid, tmplinit regproc, "
     "tmpllexize regproc"), None, "r"),
    ("pg_catalog", "pg_seclabel", "objoid oid, classoid oid, objsubid int4, provider text, label text",
     None, "r"),
    ("pg_catalog", "pg_init_privs", ('objoid oid, classoid oid, objsubid int4, privtype "char", '
     "initprivs aclitem[]"), None, "r"),
    ("pg_catalog", "pg_transform", ("oid oid, trftype oid, trflang oid, trffromsql regproc, "
     "trftosql regproc"), None, "r"),
    ("pg_catalog", "pg_stat_activity", ("datid oid, datname name, pid int4, leader_pid int4, usesysid oid, "
     "usename name, application_name text, client_addr inet, client_hostname text, client_port int4, "
     "backend_start timestamptz, xact_start timestamptz, query_start timestamptz, "
     "state_change timestamptz, wait_event_type text, wait_event text, state text, backend_xid xid, "
     "backend_xmin xid, query_id int8, query text, backend_type text"), lambda snap: snap.activity, "v"),
    ("pg_catalog", "pg_prepared_statements", ("name text, statement text, prepare_time timestamptz, "
     "parameter_types regtype[], from_sql bool, generic_plans int8, custom_plans int8"),
     lambda snap: snap.prepared, "v"),
    ("pg_catalog", "pg_stat_user_tables", ("relid oid, schemaname name, relname name, seq_scan int8, "
     "seq_tup_read int8, idx_scan int8, idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, "
     "n_tup_del int8, n_tup_hot_upd int8, n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8, "
     "n_ins_since_vacuum int8, last_vacuum timestamptz, last_autovacuum timestamptz, "
     "last_analyze timestamptz, last_autoanalyze timestamptz, vacuum_count int8, "
     "autovacuum_count int8, analyze_count int8, autoanalyze_count int8"), _pg_stat_user_tables, "v"),
    ("pg_catalog", "pg_statio_user_tables", ("relid oid, schemaname name, relname name, "
     "heap_blks_read int8, heap_blks_hit int8, idx_blks_read int8, idx_blks_hit int8, "
     "toast_blks_read int8, toast_blks_hit int8, tidx_blks_read int8, tidx_blks_hit int8"), None, "v"),
    ("pg_catalog", "pg_matviews", ("schemaname name, matviewname name, matviewowner name, "
     "tablespace name, hasindexes bool, ispopulated bool, definition text"), None, "v"),
    ("pg_catalog", "pg_indexes", ("schemaname name, tablename name, indexname name, "
     "tablespace name, indexdef text"), lambda snap: system_keys.pg_indexes_rows(snap.tables), "v"),
    ("information_schema", "tables", _IS_TABLES, _table_rows, "v"),
    ("information_schema", "columns", _IS_COLUMNS, _column_rows, "v"),
    ("information_schema", "schemata", _IS_SCHEMATA, _schema_rows, "v"),
    ("information_schema", "views", _IS_VIEWS, _view_rows, "v"),
    # PRIMARY KEY and UNIQUE (NOT NULL is not listed as a CHECK constraint, as PostgreSQL does).
    ("information_schema", "table_constraints", ("constraint_catalog name, constraint_schema name, "
     "constraint_name name, table_catalog name, table_schema name, table_name name, "
     "constraint_type varchar, is_deferrable varchar, initially_deferred varchar, enforced varchar, "
     "nulls_distinct varchar"), lambda snap: [*system_keys.table_constraints_rows(snap.tables),
                                 *system_foreign_keys.table_constraints_rows(snap.tables)], "v"),
    ("information_schema", "key_column_usage", ("constraint_catalog name, constraint_schema name, "
     "constraint_name name, table_catalog name, table_schema name, table_name name, column_name name, "
     "ordinal_position int4, position_in_unique_constraint int4"),
     lambda snap: [*system_keys.key_column_usage_rows(snap.tables),
                  *system_foreign_keys.key_column_usage_rows(snap.tables)], "v"),
    ("information_schema", "referential_constraints", ("constraint_catalog name, constraint_schema name, "
     "constraint_name name, unique_constraint_catalog name, unique_constraint_schema name, "
     "unique_constraint_name name, match_option varchar, update_rule varchar, delete_rule varchar"),
     lambda snap: system_foreign_keys.referential_constraints_rows(snap.tables), "v"),
    ("information_schema", "constraint_column_usage", ("table_catalog name, table_schema name, "
     "table_name name, column_name name, constraint_catalog name, constraint_schema name, "
     "constraint_name name"), lambda snap: [*system_keys.constraint_column_usage_rows(snap.tables),
                                 *system_foreign_keys.constraint_column_usage_rows(snap.tables)], "v"),
    ("information_schema", "check_constraints", ("constraint_catalog name, constraint_schema name, "
     "constraint_name name, check_clause varchar"), lambda snap: system_keys.check_constraints_rows(snap.tables),
     "v"),
    ("mz_internal", "mz_subscriptions", ("id text, session_id int4, cluster_id text, "
     "created_at timestamptz, referenced_object_ids text[], user_name text, sql text, "
     "output_mode text, rows_sent int8"), _subscriptions, "v"),
    # Materialize's columns, plus snapshot progress (rows copied of rows expected) as in
    # its mz_source_statistics.
    ("mz_internal", "mz_source_statuses", ("id text, name text, type text, "
     "last_status_change_at timestamptz, status text, error text, details jsonb, "
     "snapshot_records_staged int8, snapshot_records_known int8"), _source_statuses, "v"),
    # sparkwire's own: long work the server does by itself (Spark start-up, compaction).
    ("mz_internal", "mz_background_work", ("kind text, target text, status text, detail text, "
     "started_at timestamptz, finished_at timestamptz, seconds float8"),
     lambda snap: snap.background, "v"),
    # sparkwire's own: what pg_get_constraintdef(oid) says of each constraint.
    ("mz_internal", "mz_constraint_definitions", "conoid oid, definition text, pretty text",
     lambda snap: [*system_keys.constraint_definition_rows(snap.tables),
                  *system_foreign_keys.definition_rows(snap.tables)], "v"),
    # sparkwire's own: each index's columns, what pg_get_indexdef(oid, n, pretty) says for n > 0.
    ("mz_internal", "mz_index_columns", "indexrelid oid, position int4, name text",
     lambda snap: system_keys.index_column_rows(snap.tables), "v"),
]


def _relations() -> list[Relation]:
    out = []
    visible, hidden = pg_compat.VISIBLE_SYSTEM_OIDS, pg_compat.HIDDEN_SYSTEM_OIDS
    for schema, name, spec, rows, kind in _DEFINITIONS:
        if schema in pg_compat.SEARCH_PATH:
            oid, visible = visible, visible + 1
        else:
            oid, hidden = hidden, hidden + 1
        out.append(Relation(schema, name, columns(spec), rows, kind, oid))
    return out


RELATIONS: list[Relation] = _relations()
BY_NAME_QUALIFIED = {rel.qualified: rel for rel in RELATIONS}
# Unqualified names find pg_catalog's relations (always first on PostgreSQL's search path).
BY_NAME_UNQUALIFIED = {rel.name: rel for rel in RELATIONS if rel.schema == "pg_catalog"}
SYSTEM_SCHEMAS = frozenset(rel.schema for rel in RELATIONS)


def find(name: str) -> Relation | None:
    """The system relation a (possibly schema-qualified) name refers to."""
    if "." in name:
        return BY_NAME_QUALIFIED.get(name)
    return BY_NAME_UNQUALIFIED.get(name)


def build(rel: Relation, snap: Snapshot) -> SystemTable:
    names = [n for n, _ in rel.columns]
    types = [t for _, t in rel.columns]
    rows = list(rel.rows(snap)) if rel.rows is not None else []
    arrays = []
    for i, t in enumerate(types):
        values = [r[i] for r in rows]
        arrays.append(pa.array(values, arrow_type(t)))
    table = pa.Table.from_arrays(arrays, names=[physical(i) for i in range(len(types))])
    fingerprint = hashlib.blake2b(repr(rows).encode(), digest_size=16).hexdigest()
    return SystemTable(rel, table, names, types, fingerprint)


# Spark DataFrames of recent system tables, by relation and rows. Making one from
# Arrow costs more than most catalog queries themselves, and most system
# relations change only with DDL (pg_type, pg_namespace, ... never).
_FRAMES: collections.OrderedDict[tuple, object] = collections.OrderedDict()
_FRAMES_LOCK = threading.Lock()
_FRAMES_KEPT = 64


def dataframe(spark, system: SystemTable):
    """The rows as a Spark DataFrame, with column names and PostgreSQL types."""
    from pyspark.sql import functions as F

    key = (id(spark), system.relation.qualified, system.fingerprint)
    with _FRAMES_LOCK:
        df = _FRAMES.get(key)
        if df is not None:
            _FRAMES.move_to_end(key)
            return df
    ddl = ", ".join(f"{physical(i)} {t.spark}" for i, t in enumerate(system.column_types))
    df = spark.createDataFrame(system.table, schema=ddl)
    df = df.select(*[
        F.col(physical(i)).alias(name, metadata=pg_metadata(t))
        for i, (name, t) in enumerate(zip(system.column_names, system.column_types))
    ])
    with _FRAMES_LOCK:
        _FRAMES[key] = df
        while len(_FRAMES) > _FRAMES_KEPT:
            _FRAMES.popitem(last=False)
    return df
