"""PostgreSQL catalog functions, operators and casts, rewritten for Spark.

psql and the drivers read the catalog with PostgreSQL-only constructs:
`pg_catalog.`-qualified function calls, `OPERATOR(pg_catalog.~)`,
`COLLATE pg_catalog.default`, casts to `regclass`/`regtype`/`oid`, and
functions such as `format_type`, `pg_get_userbyid` or `pg_table_is_visible`.
`rewrite` turns them into plain SQL that Spark can run, before relation names
are resolved (a `'t'::regclass` becomes a lookup in `pg_catalog.pg_class`).

This module also holds the catalog facts the rewrites and the system
relations (`server/system_catalog.py`) must agree on: the built-in types'
`pg_type` rows and the OIDs of schemas and system relations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from pglast.keywords import COL_NAME_KEYWORDS, RESERVED_KEYWORDS, TYPE_FUNC_NAME_KEYWORDS, UNRESERVED_KEYWORDS
from sqlglot import exp

from planner import catalog_defs, functions, jsonb, jsonb_sql, pg_functions, pg_regclass, pg_strings
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.sql_template import template as _parse
from planner.types import ALIASES, BY_NAME, SqlType

# -- OIDs ----------------------------------------------------------------------------------

DATABASE_OID = 16384
SUPERUSER_OID = 10  # the role that owns everything, as PostgreSQL's bootstrap superuser
NAMESPACES = {  # name → oid, in the order they are listed
    "pg_catalog": 11,
    "public": 2200,
    "information_schema": 16385,
    "mz_catalog": 16386,
    "mz_internal": 16387,
}
SEARCH_PATH = ("pg_catalog", "public")  # what current_schemas(true) returns
# System relations get OIDs in two ranges: the ones in a schema on the search
# path (pg_catalog), and the rest, which pg_table_is_visible reports invisible.
VISIBLE_SYSTEM_OIDS = 16400
HIDDEN_SYSTEM_OIDS = 17000
HIDDEN_SYSTEM_OIDS_END = 18000


@dataclass(frozen=True)
class TypeRow:
    """One built-in type's `pg_type` facts."""

    oid: int
    typname: str
    typlen: int
    typbyval: bool
    typtype: str
    typcategory: str
    typispreferred: bool
    typelem: int
    typarray: int
    typinput: str
    typoutput: str
    typreceive: str
    typsend: str
    typalign: str
    typstorage: str
    typcollation: int
    display: str  # format_type(oid, NULL)


def _types() -> list[TypeRow]:
    # oid, typname, typlen, byval, typtype, category, preferred, elem, array, io prefix,
    # align, storage, collation, format_type name. Copied from PostgreSQL 15.
    base = [
        (16, "bool", 1, True, "b", "B", True, 0, 1000, "bool", "c", "p", 0, "boolean"),
        (17, "bytea", -1, False, "b", "U", False, 0, 1001, "bytea", "i", "x", 0, "bytea"),
        (18, "char", 1, True, "b", "Z", False, 0, 1002, "char", "c", "p", 0, '"char"'),
        (19, "name", 64, False, "b", "S", False, 18, 1003, "name", "c", "p", 950, "name"),
        (20, "int8", 8, True, "b", "N", False, 0, 1016, "int8", "d", "p", 0, "bigint"),
        (21, "int2", 2, True, "b", "N", False, 0, 1005, "int2", "s", "p", 0, "smallint"),
        (22, "int2vector", -1, False, "b", "A", False, 21, 1006, "int2vector", "i", "p", 0,
         "int2vector"),
        (23, "int4", 4, True, "b", "N", False, 0, 1007, "int4", "i", "p", 0, "integer"),
        (24, "regproc", 4, True, "b", "N", False, 0, 1008, "regproc", "i", "p", 0, "regproc"),
        (25, "text", -1, False, "b", "S", True, 0, 1009, "text", "i", "x", 100, "text"),
        (26, "oid", 4, True, "b", "N", True, 0, 1028, "oid", "i", "p", 0, "oid"),
        (28, "xid", 4, True, "b", "U", False, 0, 1011, "xid", "i", "p", 0, "xid"),
        (30, "oidvector", -1, False, "b", "A", False, 26, 1013, "oidvector", "i", "p", 0,
         "oidvector"),
        (114, "json", -1, False, "b", "U", False, 0, 199, "json_", "i", "x", 0, "json"),
        (194, "pg_node_tree", -1, False, "b", "Z", False, 0, 0, "pg_node_tree_", "i", "x", 100,
         "pg_node_tree"),
        (700, "float4", 4, True, "b", "N", False, 0, 1021, "float4", "i", "p", 0, "real"),
        (701, "float8", 8, True, "b", "N", True, 0, 1022, "float8", "d", "p", 0,
         "double precision"),
        (705, "unknown", -2, False, "p", "X", False, 0, 0, "unknown", "c", "p", 0, "unknown"),
        (1033, "aclitem", 12, False, "b", "U", False, 0, 1034, "aclitem", "i", "p", 0, "aclitem"),
        (1042, "bpchar", -1, False, "b", "S", False, 0, 1014, "bpchar", "i", "x", 100, "character"),
        (1043, "varchar", -1, False, "b", "S", False, 0, 1015, "varchar", "i", "x", 100,
         "character varying"),
        (1082, "date", 4, True, "b", "D", False, 0, 1182, "date_", "i", "p", 0, "date"),
        (1083, "time", 8, True, "b", "D", False, 0, 1183, "time_", "d", "p", 0,
         "time without time zone"),
        (1114, "timestamp", 8, True, "b", "D", False, 0, 1115, "timestamp_", "d", "p", 0,
         "timestamp without time zone"),
        (1184, "timestamptz", 8, True, "b", "D", True, 0, 1185, "timestamptz_", "d", "p", 0,
         "timestamp with time zone"),
        (1186, "interval", 16, False, "b", "T", True, 0, 1187, "interval_", "d", "p", 0,
         "interval"),
        (1700, "numeric", -1, False, "b", "N", False, 0, 1231, "numeric_", "i", "m", 0, "numeric"),
        (2205, "regclass", 4, True, "b", "N", False, 0, 2210, "regclass", "i", "p", 0, "regclass"),
        (2206, "regtype", 4, True, "b", "N", False, 0, 2211, "regtype", "i", "p", 0, "regtype"),
        (2249, "record", -1, False, "p", "P", False, 0, 2287, "record_", "d", "x", 0, "record"),
        (2277, "anyarray", -1, False, "p", "P", False, 0, 0, "anyarray_", "d", "x", 0, "anyarray"),
        (2278, "void", 4, True, "p", "P", False, 0, 0, "void_", "i", "p", 0, "void"),
        (2950, "uuid", 16, False, "b", "U", False, 0, 2951, "uuid_", "c", "p", 0, "uuid"),
        (3802, "jsonb", -1, False, "b", "U", False, 0, 3807, "jsonb_", "i", "x", 0, "jsonb"),
    ]
    rows: list[TypeRow] = []
    for (oid, name, length, byval, kind, cat, pref, elem, arr, io, align, storage, coll,
         display) in base:
        rows.append(TypeRow(oid, name, length, byval, kind, cat, pref, elem, arr, f"{io}in",
                            f"{io}out", f"{io}recv", f"{io}send", align, storage, coll, display))
        if arr and name not in ("int2vector", "oidvector"):
            rows.append(TypeRow(arr, f"_{name}", -1, False, "b", "A", False, oid, 0, "array_in",
                                "array_out", "array_recv", "array_send",
                                "d" if align == "d" else "i", "x", coll, f"{display}[]"))
    return rows


TYPES: list[TypeRow] = _types()
TYPES_BY_OID = {t.oid: t for t in TYPES}


def type_names() -> dict[str, int]:
    """Every spelling of a type name that `'name'::regtype` accepts → its OID."""
    names: dict[str, int] = {}
    for t in TYPES:
        names[t.typname] = t.oid
        names[t.display] = t.oid
        if t.typelem and t.typtype == "b" and t.typcategory == "A":
            elem = TYPES_BY_OID.get(t.typelem)
            if elem is not None:
                names[f"{elem.typname}[]"] = t.oid
    by_display = {t.display: t.oid for t in TYPES}
    for alias, canonical in ALIASES.items():
        oid = by_display.get(canonical)
        if oid is not None and alias not in names:
            names[alias] = oid
            array = TYPES_BY_OID[oid].typarray
            if array:
                names[f"{alias}[]"] = array
    names['"char"'] = 18
    return names


# -- text pre-processing ---------------------------------------------------------------------

_OID_ARRAY = re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?oid\s*\[\s*\]", re.IGNORECASE)


def preprocess(text: str) -> str:
    """Spellings sqlglot cannot parse, made parseable: `::oid[]` (asyncpg's type
    introspection) becomes PostgreSQL's other name for it, `::_oid`."""
    if "[" in text:
        text = _OID_ARRAY.sub("::_oid", text)
    return text


def param_type(dt: exp.Expression):
    """The type of a parameter cast to a catalog type (`$1::oid`, `$1::_oid`), if one is."""
    key = _type_key(dt)
    if isinstance(dt, exp.ObjectIdentifier) and key == "oid" or key in ("oid", "xid"):
        return SqlType(BY_NAME["oid"])
    if key in ("_oid", "oidvector"):
        return SqlType(BY_NAME["oid"], -1, True)
    if isinstance(dt, exp.DataType) and dt.is_type(exp.DataType.Type.ARRAY) and dt.expressions \
            and _type_key(dt.expressions[0]) == "oid":
        return SqlType(BY_NAME["oid"], -1, True)
    return None


# -- tree rewriting --------------------------------------------------------------------------

def _null_text() -> exp.Expression:
    return exp.Cast(this=exp.Null(), to=exp.DataType.build("TEXT"))


def _str(value: str) -> exp.Expression:
    return exp.Literal.string(value)


def format_type(oid: exp.Expression, typmod: exp.Expression | None) -> exp.Expression:
    """`format_type(oid, typmod)`: the type's name as PostgreSQL prints it."""
    typmod = typmod if typmod is not None else exp.Null()
    ifs = []
    # Types whose typmod shows in the name, and their arrays.
    with_mod = {
        1042: "CASE WHEN __m IS NULL THEN 'character' WHEN __m < 0 THEN 'bpchar' "
              "ELSE 'character(' || CAST(__m - 4 AS TEXT) || ')' END",
        1043: "CASE WHEN __m IS NULL OR __m < 0 THEN 'character varying' "
              "ELSE 'character varying(' || CAST(__m - 4 AS TEXT) || ')' END",
        1700: "CASE WHEN __m IS NULL OR __m < 4 THEN 'numeric' ELSE 'numeric(' || "
              "CAST((__m - 4) >> 16 AS TEXT) || ',' || CAST((__m - 4) & 65535 AS TEXT) || ')' END",
    }
    for oid_value, zone in ((1083, "without"), (1114, "without"), (1184, "with")):
        word = "time" if oid_value == 1083 else "timestamp"
        with_mod[oid_value] = (f"CASE WHEN __m IS NULL OR __m < 0 THEN '{word} {zone} time zone' "
                               f"ELSE '{word}(' || CAST(__m AS TEXT) || ') {zone} time zone' END")
    for elem, template in with_mod.items():
        array = TYPES_BY_OID[elem].typarray
        text = _parse(template, m=typmod)
        ifs.append(exp.If(this=_parse("__o = " + str(elem), o=oid), true=text))
        ifs.append(exp.If(this=_parse("__o = " + str(array), o=oid),
                          true=exp.DPipe(this=text.copy(), expression=_str("[]"))))
    plain = exp.Case(this=oid.copy(), ifs=[
        exp.If(this=exp.Literal.number(t.oid), true=_str(t.display))
        for t in TYPES if t.oid not in with_mod and t.typelem not in with_mod
    ], default=_str("???"))
    ifs.insert(0, exp.If(this=exp.Is(this=oid.copy(), expression=exp.Null()), true=_null_text()))
    ifs.insert(1, exp.If(this=_parse("__o = 0", o=oid), true=_str("-")))
    return exp.Case(ifs=ifs, default=plain)


def _type_oid_of_name(name: exp.Expression) -> exp.Expression:
    """`'integer'::regtype` for a text value: the OID of the type it names, else NULL."""
    if isinstance(name, exp.Literal) and name.is_string:
        spelled = name.this.strip().lower()
        oid = type_names().get(spelled.removeprefix("pg_catalog."))
        return exp.Literal.number(oid) if oid is not None else \
            exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT"))
    key = exp.Lower(this=exp.Trim(this=name.copy()))
    ifs = []
    for spelled, oid in sorted(type_names().items()):
        for prefix in ("", "pg_catalog."):
            ifs.append(exp.If(this=_str(prefix + spelled), true=exp.Literal.number(oid)))
    return exp.Case(this=key, ifs=ifs, default=exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")))


def _namespace_name(oid: exp.Expression) -> exp.Expression:
    return exp.Case(this=oid.copy(), ifs=[
        exp.If(this=exp.Literal.number(v), true=_str(k)) for k, v in NAMESPACES.items()
    ], default=exp.Cast(this=oid.copy(), to=exp.DataType.build("TEXT")))


def _namespace_oid(name: exp.Expression) -> exp.Expression:
    return exp.Case(this=name.copy(), ifs=[
        exp.If(this=_str(k), true=exp.Literal.number(v)) for k, v in NAMESPACES.items()
    ], default=exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")))


def _type_key(dt: exp.Expression) -> str | None:
    """The PostgreSQL name of a cast target that needs rewriting, lower case."""
    if isinstance(dt, exp.ObjectIdentifier):
        return dt.name.lower()
    if isinstance(dt, exp.DataType):
        if dt.this == exp.DataType.Type.USERDEFINED:
            kind = dt.args.get("kind")
            if isinstance(kind, exp.Dot):
                kind = kind.expression
            if isinstance(kind, exp.Identifier):
                return kind.name.lower()
            return None
        if dt.this == exp.DataType.Type.NAME:
            return "name"
    return None


_PLAIN_TYPES = {
    "oid": "BIGINT", "_oid": "ARRAY<BIGINT>", "_text": "ARRAY<STRING>", "_int2": "ARRAY<SMALLINT>",
    "_int4": "ARRAY<INT>", "_int8": "ARRAY<BIGINT>", "_name": "ARRAY<STRING>", "xid": "BIGINT", "name": "TEXT", "char": "TEXT", "aclitem": "TEXT",
    "pg_node_tree": "TEXT", "int2vector": "TEXT", "oidvector": "TEXT", "regrole": "TEXT",
    "int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE",
    "bool": "BOOLEAN", "text": "TEXT", "varchar": "VARCHAR", "bpchar": "TEXT",
    "numeric": "DECIMAL(38, 10)", "timestamptz": "TIMESTAMPTZ", "timestamp": "TIMESTAMP",
    "date": "DATE", "bytea": "BYTEA", "jsonb": "TEXT", "json": "TEXT", "uuid": "TEXT",
}


def _rewrite_datatype(dt: exp.Expression) -> exp.Expression:
    """A cast target without PostgreSQL-only type names (for arrays, element-wise)."""
    if isinstance(dt, exp.DataType) and dt.this == exp.DataType.Type.ARRAY and dt.expressions:
        inner = _rewrite_datatype(dt.expressions[0])
        return exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[inner], nested=True)
    key = _type_key(dt)
    if key is None:
        return dt
    if key in _PLAIN_TYPES:
        return exp.DataType.build(_PLAIN_TYPES[key], dialect="postgres")
    if key.startswith("reg"):
        return exp.DataType.build("BIGINT")
    return dt


def _json_cast(node: exp.Cast) -> exp.Expression:
    """A cast to json/jsonb. jsonb and json values are kept as text (jsonb in PostgreSQL's
    normal form: keys sorted, duplicates dropped, `", "` and `": "`); a constant is checked
    and normalised here by the jsonb input function. Normalising computed text would need
    that function in Spark, which it does not have."""
    value = node.this
    kind = "jsonb" if node.to.this == exp.DataType.Type.JSONB else "json"
    if isinstance(value, exp.Literal) and value.is_string:
        return exp.Literal.string(_json_text(kind, value.this))
    if isinstance(value, exp.Null):
        return _null_text()
    if isinstance(value, exp.Parameter):
        # $1::jsonb (pgjdbc's setString for a jsonb column): checked and normalised when bound.
        return exp.Anonymous(this=JSON_PARAMETER, expressions=[value, exp.Literal.string(kind)])
    raise SqlError(FEATURE_NOT_SUPPORTED, f"casting a computed value to {kind} is not supported (only a constant, "
                            f"such as '{{\"a\": 1}}'::{kind})")


JSON_PARAMETER = "__json_parameter"


def _json_text(kind: str, text: str) -> str:
    """A json or jsonb constant as stored: json's text checked, jsonb's normalised."""
    if kind == "jsonb":
        return jsonb.normalize(text)
    jsonb.parse_json(text)
    return text


def json_input(kind: str, value: exp.Expression) -> exp.Expression:
    """A bound parameter cast to json/jsonb: its text through the jsonb input function."""
    while isinstance(value, exp.Cast) and not isinstance(value.this, exp.Null):
        value = value.this
    if isinstance(value, exp.Literal) and value.is_string:
        return exp.Literal.string(_json_text(kind, value.this))
    return _null_text()


def _json_path_text(node: exp.Expression) -> exp.Expression:
    """`x #>> '{a,0,b}'`: the value at a path as text, through Spark's get_json_object (an
    all-digit step indexes an array)."""
    path = node.expression
    if not (isinstance(path, exp.Literal) and path.is_string and _ARRAY_TEXT.match(path.this)):
        raise SqlError(FEATURE_NOT_SUPPORTED, "#>> takes a constant path, such as '{a,b}'")
    steps = [p.strip().strip('"') for p in path.this.strip()[1:-1].split(",") if p.strip()]
    json_path = "$" + "".join(f"[{p}]" if p.isdigit() else "['" + p.replace("'", "\\'") + "']" for p in steps)
    return exp.Anonymous(this="get_json_object", expressions=[node.this, exp.Literal.string(json_path)])


def _subscript(array: exp.Expression, index: exp.Expression) -> exp.Expression:
    """`a[i]`: PostgreSQL arrays count from 1, and a subscript out of range (0 and negative
    ones too, where Spark's element_at would count from the end or fail) is NULL. sqlglot
    has already made a constant subscript 0-based."""
    constant = index.this if isinstance(index, exp.Neg) else index
    if isinstance(constant, exp.Literal) and constant.is_int:
        index = exp.Literal.number(int(index.sql()) + 1) if isinstance(index, exp.Literal) else \
            exp.Literal.number(1 - int(constant.this))
    element = exp.Anonymous(this="try_element_at", expressions=[array, index])
    return exp.If(this=exp.GTE(this=index.copy(), expression=exp.Literal.number(1)), true=element, false=exp.Null())


def _json_extract(node: exp.JSONExtract) -> exp.Expression:
    """`x -> 'k'` / `x -> 0`: the JSON value there, as JSON text. Through Spark's variant,
    which keeps a string's quotes and a JSON null (get_json_object, what sqlglot writes,
    returns a string unquoted and a null as NULL); objects and arrays come out compact,
    with keys in byte order, where PostgreSQL's jsonb text has spaces and orders keys by
    length first."""
    path = node.expression.sql("spark").strip("'")
    return pg_functions.spark_to_json(exp.Anonymous(this="variant_get", expressions=[
        exp.Anonymous(this="parse_json", expressions=[node.this]), exp.Literal.string(path)]))


def _json_typeof(value: exp.Expression) -> exp.Expression:
    """json(b)_typeof: in a valid JSON text the first character tells the type."""
    return _parse("CASE WHEN __v IS NULL THEN NULL ELSE CASE substr(ltrim(__v), 1, 1) "
                  "WHEN '{' THEN 'object' WHEN '[' THEN 'array' "
                  "WHEN '\"' THEN 'string' WHEN 't' THEN 'boolean' WHEN 'f' THEN 'boolean' "
                  "WHEN 'n' THEN 'null' ELSE 'number' END END", v=value)


def _cast(node: exp.Cast) -> exp.Expression:
    if node.to.this in (exp.DataType.Type.JSONB, exp.DataType.Type.JSON):
        return _json_cast(node)
    key = _type_key(node.to)
    value = node.this
    if key == "regclass":
        if pg_regclass.is_text(value):
            return pg_regclass.existing_relation_oid(value)
        return exp.Cast(this=value, to=exp.DataType.build("TEXT"))
    if key == "regtype":
        return _type_oid_of_name(value) if pg_regclass.is_text(value) else format_type(value, None)
    if key == "regnamespace":
        return _namespace_oid(value) if pg_regclass.is_text(value) else _namespace_name(value)
    if key in ("regproc", "regprocedure"):
        if isinstance(value, exp.Literal) and value.is_string:
            return _str(value.this.split(".")[-1])
        return exp.Cast(this=value, to=exp.DataType.build("TEXT"))
    to = _rewrite_datatype(node.to)
    if isinstance(value, exp.Literal) and value.is_string and _ARRAY_TEXT.match(value.this) \
            and to.is_type(exp.DataType.Type.ARRAY):
        value = _array_literal(value.this)  # '{1,2}'::int[]
    if to is not node.to or value is not node.this:
        return exp.Cast(this=value, to=to)
    return node


def _array_subquery(node: exp.Array) -> exp.Expression:
    """`ARRAY(SELECT x FROM ...)` → `(SELECT collect_list(x) FROM ...)`."""
    select = node.expressions[0]
    if isinstance(select, exp.Subquery):
        select = select.this
    select = select.copy()
    order = select.args.get("order")
    select.set("order", None)
    column = select.expressions[0]
    if isinstance(column, exp.Alias):
        column = column.this
    agg: exp.Expression = exp.Anonymous(this="collect_list", expressions=[column])
    if order is not None:
        agg = exp.Anonymous(this="array_sort", expressions=[agg])
    select.set("expressions", [agg])
    return exp.Subquery(this=select)


# The array-typed columns of the system relations that clients compare with text ('{0}').
_CATALOG_ARRAY_COLUMNS = frozenset({
    "polroles", "proargtypes", "proallargtypes", "proargmodes", "proargnames", "proconfig",
    "conkey", "confkey", "conpfeqop", "conppeqop", "conffeqop", "conexclop", "indkey", "indclass",
    "indcollation", "indoption", "stxkind", "extconfig", "extcondition", "reloptions", "relacl",
    "datacl", "nspacl", "attacl", "attoptions", "rolconfig", "useconfig", "enumvals", "spcacl",
    "spcoptions", "referenced_object_ids",
})
_ARRAY_TEXT = re.compile(r"^\{[^{}]*\}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _array_literal(text: str) -> exp.Expression:
    """An array in PostgreSQL's text form (`'{0}'`, compared with an array column) as an ARRAY."""
    items = [i.strip().strip('"') for i in text[1:-1].split(",")] if text[1:-1].strip() else []
    if items and all(_NUMBER.match(i) for i in items):
        return exp.Array(expressions=[exp.Literal.number(i) for i in items])
    return exp.Array(expressions=[_str(i) for i in items])


def _ilike_regex(value: exp.Expression, pattern: exp.Expression) -> exp.Expression:
    """`~*`: a case-insensitive regular expression match (Java's `(?i)` flag)."""
    return exp.RegexpLike(this=value, expression=exp.Paren(this=exp.DPipe(this=_str("(?i)"), expression=pattern)))


_REGEX_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.Not(this=exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: _ilike_regex(a, b),
    "!~*": lambda a, b: exp.Not(this=_ilike_regex(a, b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.Not(this=exp.Like(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
}


def _operator(node: exp.Operator) -> exp.Expression:
    op = str(node.args.get("operator") or "").replace(" ", "")
    op = op.split(".", 1)[1] if op.lower().startswith("pg_catalog.") else op
    make = _REGEX_OPERATORS.get(op)
    return make(node.this, node.expression) if make is not None else node


def _size_pretty(size: exp.Expression) -> exp.Expression:
    return _parse(
        "CASE WHEN __s IS NULL THEN NULL "
        "WHEN abs(__s) < 10240 THEN CAST(__s AS TEXT) || ' bytes' "
        "WHEN abs(__s) < 10485760 THEN CAST(CAST(round(__s / 1024.0) AS BIGINT) AS TEXT) || ' kB' "
        "WHEN abs(__s) < 10737418240 THEN CAST(CAST(round(__s / 1048576.0) AS BIGINT) AS TEXT) || ' MB' "
        "ELSE CAST(CAST(round(__s / 1073741824.0) AS BIGINT) AS TEXT) || ' GB' END", s=size)


def _strict(args: list[exp.Expression], value: exp.Expression) -> exp.Expression:
    """`value`, or NULL when the first argument is NULL (a strict function)."""
    if not args:
        return value
    return exp.Case(ifs=[exp.If(this=exp.Is(this=args[0].copy(), expression=exp.Null()),
                                true=exp.Cast(this=exp.Null(), to=exp.DataType.build("TEXT")))],
                    default=value)


def _schemas(include_implicit: exp.Expression) -> exp.Expression:
    with_pg = exp.Array(expressions=[_str(s) for s in SEARCH_PATH])
    without = exp.Array(expressions=[_str(s) for s in SEARCH_PATH if s != "pg_catalog"])
    if isinstance(include_implicit, exp.Boolean):
        return with_pg if include_implicit.this else without
    return exp.If(this=include_implicit, true=with_pg, false=without)


# What current_setting() reports (SHOW knows the session's own values).
_SETTINGS = {
    "jit": "off", "server_version": "15.0", "server_version_num": "150000",
    "server_encoding": "UTF8", "client_encoding": "UTF8", "standard_conforming_strings": "on",
    "integer_datetimes": "on", "max_identifier_length": "63", "search_path": "public",
    "datestyle": "ISO, MDY", "timezone": "UTC", "intervalstyle": "postgres",
    "transaction_isolation": "serializable", "default_transaction_isolation": "serializable",
    "lc_collate": "C.UTF-8", "lc_ctype": "C.UTF-8",
}

_TRUE = {"pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible",
         "pg_opfamily_is_visible", "pg_conversion_is_visible", "pg_ts_config_is_visible",
         "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible",
         "pg_statistics_obj_is_visible",
         "pg_opclass_is_visible", "pg_operator_is_visible", "pg_collation_is_visible",
         "has_table_privilege", "has_schema_privilege", "has_database_privilege",
         "has_column_privilege", "has_any_column_privilege", "has_function_privilege",
         "has_sequence_privilege", "has_type_privilege", "pg_has_role"}
_FALSE = {"pg_relation_is_publishable", "pg_is_in_recovery", "pg_is_other_temp_schema"}
_NULL_TEXT = {"obj_description", "col_description", "shobj_description", "pg_get_triggerdef", "pg_get_ruledef",
              "pg_get_statisticsobjdef_columns",
              "pg_get_partkeydef", "pg_get_serial_sequence", "pg_get_functiondef",
              "pg_get_statisticsobjdef", "pg_tablespace_location"}
_ZERO = {"pg_total_relation_size", "pg_table_size", "pg_relation_size", "pg_indexes_size",
         "pg_database_size", "pg_tablespace_size"}


def _function(name: str, args: list[exp.Expression]) -> exp.Expression | None:
    """The Spark-ready replacement of a PostgreSQL catalog function call, if it is one."""
    if name == "pg_table_is_visible" and args:
        # Relations of schemas outside the search path (mz_internal, ...) are not visible.
        return _parse(f"NOT (__o >= {HIDDEN_SYSTEM_OIDS} AND __o < {HIDDEN_SYSTEM_OIDS_END})",
                      o=args[0])
    if name in _TRUE:
        return exp.true()
    if name in _FALSE:
        return exp.false()
    if name in _NULL_TEXT:
        return _null_text()
    if name in _ZERO:
        return exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build("BIGINT"))
    if name == "pg_advisory_unlock_all" and not args:
        return _null_text()  # no advisory locks are ever held (asyncpg's pool resets with it)
    if name in ("pg_cancel_backend", "pg_terminate_backend"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{name}() takes a process id given as a constant or a "
                                              f"parameter, as in SELECT {name}(12345)")
    if name == "pg_get_viewdef" and args:
        return _view_definition(args[0])
    if name == "pg_get_indexdef" and args:
        return catalog_defs.index_definition(args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None)
    if name == "pg_get_constraintdef" and args:
        return catalog_defs.constraint_definition(args[0], args[1] if len(args) > 1 else None)
    if name == "json_build_object":
        return pg_functions.json_build_object(args)
    if name == "make_date" and len(args) == 3:
        return pg_functions.make_date(args)
    if name in _FUNCTION_TEXTS and len(args) == 1:
        return _by_function_oid(args[0], _FUNCTION_TEXTS[name])
    if name == "pg_get_userbyid":
        return _strict(args, _str("materialize"))
    if name == "pg_encoding_to_char":
        return _strict(args, _str("UTF8"))
    if name == "pg_char_to_encoding":
        return exp.Literal.number(6)
    if name == "format_type" and args:
        return format_type(args[0], args[1] if len(args) > 1 else None)
    if name == "pg_get_expr" and args:
        return exp.Cast(this=args[0], to=exp.DataType.build("TEXT"))
    if name == "pg_size_pretty" and args:
        return _size_pretty(args[0])
    if name == "array_to_string" and len(args) in (2, 3):  # pg_catalog.array_to_string(...)
        return exp.Anonymous(this="array_join", expressions=args)
    if name == "cardinality" and len(args) == 1:
        return exp.ArraySize(this=pg_functions.one_dimensional(args[0]))
    if name in ("array_upper", "array_lower") and len(args) == 2:
        return pg_functions.array_bound(args[0], args[1], upper=name == "array_upper")
    if name == "current_schemas" and args:
        return _schemas(args[0])
    if name in ("to_regtype",) and args:
        return _type_oid_of_name(args[0])
    if name in ("to_regclass",) and args:
        return pg_regclass.relation_oid(args[0])
    if name == "to_regnamespace" and args:
        return _namespace_oid(args[0])
    if name == "current_setting" and args:
        return exp.Case(this=exp.Lower(this=args[0]), ifs=[
            exp.If(this=_str(k), true=_str(v)) for k, v in _SETTINGS.items()], default=_null_text())
    if name == "set_config" and len(args) >= 2:
        return exp.Cast(this=args[1], to=exp.DataType.build("TEXT"))  # accepted, not kept
    if name == "pg_postmaster_start_time":
        return exp.CurrentTimestamp()
    if name in ("jsonb_typeof", "json_typeof") and len(args) == 1:
        return _json_typeof(args[0])
    if name in ("jsonb_array_length", "json_array_length") and len(args) == 1:
        length = exp.Anonymous(this="json_array_length", expressions=[args[0]])
        not_array = exp.and_(exp.Not(this=exp.Is(this=args[0].copy(), expression=exp.Null())),
                             exp.Is(this=length.copy(), expression=exp.Null()))
        return exp.Case(ifs=[exp.If(this=not_array, true=pg_functions.pg_error(
            "22023", "cannot get array length of a non-array"))], default=length)
    if name == "quote_ident" and len(args) == 1:
        return _quote_ident(args[0])
    return None


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)

# pg_get_keywords(): PostgreSQL 15's keywords (its grammar's, through pglast), by category.
_KEYWORD_CATEGORIES = (
    (UNRESERVED_KEYWORDS, "U", "unreserved", "can be bare label"),
    (COL_NAME_KEYWORDS, "C", "unreserved (cannot be function or type name)", "can be bare label"),
    (TYPE_FUNC_NAME_KEYWORDS, "T", "reserved (can be function or type name)", "can be bare label"),
    (RESERVED_KEYWORDS, "R", "reserved", "can be bare label"),
)


# The keywords PostgreSQL 15's grammar does not take as a bare column label (kwlist.h's AS_LABEL).
_AS_LABEL = frozenset((
    "array", "as", "char", "character", "create", "day", "except", "fetch", "filter", "for", "from", "grant",
    "group", "having", "hour", "intersect", "into", "isnull", "limit", "minute", "month", "notnull", "offset",
    "on", "order", "over", "overlaps", "precision", "returning", "second", "to", "union", "varying", "where",
    "window", "with", "within", "without", "year",
))


def keywords_relation(alias: exp.TableAlias | None) -> exp.Expression:
    """FROM pg_get_keywords(): a constant relation (word, catcode, barelabel, catdesc, baredesc),
    in word order as PostgreSQL lists them."""
    entries = sorted((word, code, desc) for words, code, desc, _ in _KEYWORD_CATEGORIES for word in words)
    rows = [exp.Tuple(expressions=[_str(word), _str(code), exp.Boolean(this=word not in _AS_LABEL), _str(desc),
                                   _str("requires AS" if word in _AS_LABEL else "can be bare label")])
            for word, code, desc in entries]
    columns = [exp.to_identifier(c) for c in ("word", "catcode", "barelabel", "catdesc", "baredesc")]
    name = alias.name if alias is not None and alias.name else "pg_get_keywords"
    return exp.Values(expressions=rows, alias=exp.TableAlias(this=exp.to_identifier(name), columns=columns))


def _all_of_array(node: exp.Expression) -> exp.Expression:
    """`x op ALL (array)`: true when the comparison holds for every element (and for an empty
    array), NULL when none fails but some is NULL - Spark's forall over a lambda."""
    element = exp.to_identifier("__e")
    test = type(node)(this=node.this.copy(), expression=exp.column(element))
    return exp.Anonymous(this="forall", expressions=[node.expression.expressions[0].copy(),
                                                     exp.Lambda(this=test, expressions=[element])])


def _view_definition(view: exp.Expression) -> exp.Expression:
    """pg_get_viewdef(oid or name): the view's query as it was written (PostgreSQL prints its
    own deparse of it), from pg_views."""
    query = exp.select(exp.Max(this=exp.column("definition", "v"))).from_("pg_catalog.pg_views AS v")
    if pg_regclass.is_text(view):
        query = query.where(exp.EQ(this=exp.column("viewname", "v"), expression=view.copy()))
    else:
        query = query.join("pg_catalog.pg_class AS c", on="c.relname = v.viewname AND c.relkind = 'v'").where(
            exp.EQ(this=exp.column("oid", "c"), expression=view.copy()))
    return exp.Subquery(this=query)


def _quote_ident(value: exp.Expression) -> exp.Expression:
    """quote_ident: the name as is when it needs no quotes (lower case letters, digits, _
    and $, not starting with a digit, not a reserved word), else in double quotes."""
    reserved = sorted(RESERVED_KEYWORDS | TYPE_FUNC_NAME_KEYWORDS | COL_NAME_KEYWORDS)
    plain = exp.and_(exp.RegexpLike(this=value.copy(), expression=exp.Literal.string("^[a-z_][a-z0-9_$]*$")),
                     exp.Not(this=exp.In(this=value.copy(), expressions=[_str(w) for w in reserved])))
    quoted = exp.DPipe(this=exp.DPipe(this=_str('"'), expression=exp.Anonymous(
        this="replace", expressions=[value.copy(), _str('"'), _str('""')])), expression=_str('"'))
    return exp.If(this=plain, true=value.copy(), false=quoted)


def _signature_texts() -> dict[str, dict[int, str]]:
    """What pg_get_function_result/_arguments/_identity_arguments say of each catalogued function."""
    out: dict[str, dict[int, str]] = {"pg_get_function_result": {}, "pg_get_function_arguments": {},
                                      "pg_get_function_identity_arguments": {}}
    for f in functions.FUNCTIONS:
        args = f.identity[len(f.name) + 1:-1]
        out["pg_get_function_result"][f.oid] = f"SETOF {f.result}" if f.kind is functions.Kind.TABLE else f.result
        out["pg_get_function_arguments"][f.oid] = args
        out["pg_get_function_identity_arguments"][f.oid] = args
    return out


_FUNCTION_TEXTS = _signature_texts()


def _by_function_oid(oid: exp.Expression, texts: dict[int, str]) -> exp.Expression:
    return exp.Case(this=oid.copy(), ifs=[exp.If(this=exp.Literal.number(k), true=_str(v))
                                          for k, v in texts.items()], default=_null_text())


def _func_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.CurrentSchemas):
        return "current_schemas"
    return None


def _args(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [a for a in (node.args.get("this"), node.args.get("expression")) if a is not None]


def _srf_call(node: exp.Expression) -> tuple[str, exp.Expression] | None:
    """(kind, array) of a set-returning function over an array in a select list: unnest,
    generate_subscripts or information_schema._pg_expandarray (pgjdbc's key columns)."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous):
        node = node.expression
    if isinstance(node, exp.Explode) and not isinstance(node.parent, exp.Table):
        return "unnest", node.this
    if isinstance(node, (exp.ExplodingGenerateSeries, exp.GenerateSeries)) and not isinstance(node.parent, exp.Table):
        args = [node.args["start"], node.args["end"], node.args.get("step")]
        return "series", pg_functions.series_values(*[a for a in args if a is not None])
    if isinstance(node, exp.Anonymous) and node.expressions:
        name = node.name.lower()
        if name == "generate_subscripts":
            dimension = node.expressions[1] if len(node.expressions) == 2 else None
            while isinstance(dimension, exp.Cast):
                dimension = dimension.this
            if not (isinstance(dimension, exp.Parameter) or dimension is not None and dimension.sql() == "1"):
                raise SqlError(FEATURE_NOT_SUPPORTED, "generate_subscripts is supported for dimension 1 only")
            return "subscripts", node.expressions[0]
        if name == "_pg_expandarray":
            return "expand", node.expressions[0]
    return None


def _srfs_in_select_lists(tree: exp.Expression) -> None:
    """Set-returning functions of arrays in a select list as one `LATERAL VIEW posexplode`.

    PostgreSQL runs them in lockstep: as many rows as the longest array has elements, the
    shorter ones giving NULL past their end. SQLAlchemy's and pgjdbc's reflection queries
    select `unnest(indkey)` beside `unnest(indclass)`, `generate_subscripts(indkey, 1)` or
    `_pg_expandarray(indkey)`; Spark allows one generator per select list. So the view
    counts positions up to the longest array and each call picks its element there."""
    for k, select in enumerate(list(tree.find_all(exp.Select))):
        calls = []
        for expression in select.expressions:
            for node in expression.walk():
                found = _srf_call(node)
                if found is not None and node.find_ancestor(exp.Select) is select:
                    calls.append((node, *found))
        if len(calls) == 1 and calls[0][1] == "series":
            calls[0][0].replace(exp.Explode(this=calls[0][2]))  # with PostgreSQL's bounds and step
            continue
        if len(calls) < 2 and not any(kind != "unnest" for _, kind, _ in calls):
            continue  # a lone unnest: Spark's explode in a select list is PostgreSQL's unnest
        view = f"__srf{k}"
        position = exp.column("__pos", view)  # 0-based
        for node, kind, array in calls:
            size = exp.ArraySize(this=array.copy())
            inside = exp.LT(this=position.copy(), expression=size)
            subscript = exp.If(this=inside.copy(), true=exp.Add(this=position.copy(), expression=exp.Literal.number(1)),
                               false=exp.Null())
            element = exp.Anonymous(this="try_element_at", expressions=[
                array.copy(), exp.Add(this=position.copy(), expression=exp.Literal.number(1))])
            call = node.expression if isinstance(node, exp.Dot) else node
            if kind == "subscripts" and call.expressions[1].find(exp.Parameter) is not None:
                # Bound later (psycopg sends the 1 as $1): NULL beyond dimension 1, which a
                # one-dimensional array does not have.
                subscript = exp.If(this=exp.EQ(this=call.expressions[1].copy(), expression=exp.Literal.number(1)),
                                   true=subscript, false=exp.Null())
            replacement = {"unnest": element, "series": element, "subscripts": subscript,
                           "expand": exp.Anonymous(this="named_struct", expressions=[
                               _str("x"), element, _str("n"), subscript])}[kind]
            node.replace(replacement)
        longest = exp.Greatest(this=exp.Literal.number(0),
                               expressions=[exp.ArraySize(this=array.copy()) for _, _, array in calls])
        positions = exp.Anonymous(this="array_repeat", expressions=[exp.Literal.number(0), longest])
        lateral = exp.Lateral(this=exp.Posexplode(this=positions), view=True, alias=exp.TableAlias(
            this=exp.to_identifier(view), columns=[exp.to_identifier("__pos"), exp.to_identifier("__unused")]))
        select.append("laterals", lateral)


def rewrite(tree: exp.Expression) -> exp.Expression:
    """Rewrite the PostgreSQL catalog constructs in a query."""
    pg_strings.set_returning_calls(tree)
    _srfs_in_select_lists(tree)
    # PostgreSQL has no lambdas: sqlglot reads `f(data->'k')`, for a function it does not
    # know, as a lambda `data -> 'k'`. Read each such text again as the JSON operator it is.
    for lam in list(tree.find_all(exp.Lambda)):
        lam.replace(sqlglot.parse_one(lam.sql("postgres"), read="postgres"))
    for sub in list(tree.find_all(exp.Subquery)):
        base = _domain_base_type(sub)
        if base is not None:
            sub.replace(base)
        elif _composite_attributes(sub):
            sub.replace(exp.Cast(this=exp.Null(), to=exp.DataType.build("ARRAY<TEXT>")))
    _unique_ctes(tree)
    pg_regclass.print_names(tree, lambda cast: _type_key(cast.to) == "regclass")
    jsonb_sql.mark(tree)
    return _rewrite(tree)


def _composite_attributes(node: exp.Subquery) -> bool:
    """`(SELECT array_agg(...) FROM pg_attribute JOIN pg_class ... WHERE c.reltype = t.oid)`:
    the attributes of a composite type (asyncpg's introspection). Our relations have no
    row type (reltype is 0), so this is always NULL. As a text[] NULL: asyncpg knows text[]
    without asking, where an int8[] would send it into introspecting its introspection."""
    select = node.this
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return False
    if not isinstance(select.expressions[0].unalias(), exp.ArrayAgg):
        return False
    where = select.args.get("where")
    return where is not None and any(
        isinstance(eq.this, exp.Column) and eq.this.name.lower() == "reltype"
        for eq in where.find_all(exp.EQ))


def _domain_base_type(node: exp.Subquery) -> exp.Expression | None:
    """asyncpg's type introspection finds a domain's base type with a correlated
    `WITH RECURSIVE` over pg_type (for domains over domains), which Spark cannot run.
    Without domains over domains that is the type's `typbasetype`; we have no domains."""
    select = node.this
    with_ = select.args.get("with_") if isinstance(select, exp.Select) else None
    if with_ is None or not with_.args.get("recursive") or len(with_.expressions) != 1:
        return None
    union = with_.expressions[0].this
    anchor = union.this if isinstance(union, exp.Union) else None
    if not isinstance(anchor, exp.Select) or not anchor.expressions:
        return None
    first = anchor.expressions[0].unalias()
    where = anchor.args.get("where")
    if not (isinstance(first, exp.Column) and first.name.lower() == "typbasetype"
            and where is not None and isinstance(where.this, exp.EQ)):
        return None
    outer = where.this.expression
    if not (isinstance(outer, exp.Column) and outer.table and outer.name.lower() == "oid"):
        return None
    return exp.column("typbasetype", outer.table)


def _rewrite(tree: exp.Expression) -> exp.Expression:
    """Innermost first, so each rewrite sees its arguments already rewritten. The argument
    of pg_typeof stays as written: typeof types it as the user wrote it (`upper(b)`, not the
    CASE that computes PostgreSQL's upper) and replaces the call by a constant."""
    if isinstance(tree, exp.Anonymous) and tree.name.lower() == "pg_typeof":
        return tree
    for key, value in list(tree.args.items()):
        if isinstance(value, exp.Expression):
            new = _rewrite(value)
            if new is not value:
                tree.set(key, new)
        elif isinstance(value, list) and any(isinstance(v, exp.Expression) for v in value):
            tree.set(key, [_rewrite(v) if isinstance(v, exp.Expression) else v for v in value])
    return _swap(tree)


def _unique_ctes(tree: exp.Expression) -> None:
    """Rename CTEs that repeat a name used elsewhere in the query (PostgreSQL scopes a
    CTE to its subquery; Spark wants one name per query): asyncpg's type introspection
    has the same `WITH RECURSIVE typebases` in two subqueries."""
    seen: set[str] = set()
    for with_ in list(tree.find_all(exp.With)):
        scope = with_.parent
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            if name not in seen:
                seen.add(name)
                continue
            k = 2
            while f"{name}_{k}" in seen:
                k += 1
            new = f"{name}_{k}"
            seen.add(new)
            for table in scope.find_all(exp.Table):
                if isinstance(table.this, exp.Identifier) and table.name.lower() == name \
                        and table.args.get("db") is None:
                    if table.alias_or_name.lower() == name and not table.args.get("alias"):
                        table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
                    table.set("this", exp.to_identifier(new))
            alias = cte.args.get("alias")
            alias.set("this", exp.to_identifier(new))


def _lambda(params: list[str], body: str) -> exp.Lambda:
    return exp.Lambda(this=sqlglot.parse_one(body, read="spark"), expressions=[exp.to_identifier(p) for p in params])


def _array_agg(node: exp.ArrayAgg) -> exp.Expression:
    """array_agg as PostgreSQL computes it, in Spark terms.

    Spark's collect_list drops NULL elements, ignores an ORDER BY and gives [] over no
    rows; PostgreSQL keeps NULLs, follows the ORDER BY (ASC puts NULLs last, DESC first,
    unless NULLS FIRST/LAST says otherwise) and gives NULL. So each element is collected
    in a struct with its sort keys (a struct is never NULL), the structs are sorted by a
    comparator and unwrapped, and an empty result is NULL."""
    arg = node.this
    order: list[exp.Ordered] = []
    if isinstance(arg, exp.Order):
        order, arg = list(arg.expressions), arg.this
    if isinstance(arg, exp.Distinct):
        return node  # DISTINCT cannot see through the struct; collect_set's order is arbitrary anyway
    fields = [exp.alias_(o.this.copy(), f"k{i}") for i, o in enumerate(order)]
    fields.append(exp.alias_(arg.copy(), "v"))
    collected = exp.ArrayAgg(this=exp.Struct(expressions=fields))
    if order:
        steps = []
        for i, o in enumerate(order):
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            if nulls_first is None:
                nulls_first = desc
            lo, hi = ("1", "-1") if desc else ("-1", "1")
            first, last = ("-1", "1") if nulls_first else ("1", "-1")
            steps.append(f"WHEN sw_l.k{i} IS NULL AND sw_r.k{i} IS NULL THEN 0 WHEN sw_l.k{i} IS NULL THEN {first} "
                         f"WHEN sw_r.k{i} IS NULL THEN {last} WHEN sw_l.k{i} < sw_r.k{i} THEN {lo} "
                         f"WHEN sw_l.k{i} > sw_r.k{i} THEN {hi}")
        # Lambda variables named apart from any column: Spark reads `r.k0` as column r's field
        # when the query has a column r.
        comparator = _lambda(["sw_l", "sw_r"], f"CASE {' '.join(steps)} ELSE 0 END")
        collected = exp.Anonymous(this="array_sort", expressions=[collected, comparator])
    values = exp.Anonymous(this="transform", expressions=[collected, _lambda(["sw_e"], "sw_e.v")])
    result = exp.If(this=exp.EQ(this=exp.ArraySize(this=values.copy()), expression=exp.Literal.number(0)),
                    true=exp.Null(), false=values)
    result.meta["pg_array"] = True  # an array, though sqlglot cannot type it (for array::text)
    return result


def _swap(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) \
            and node.this.name.lower() == "pg_catalog" and not isinstance(node.expression, exp.Identifier):
        node = node.expression  # pg_catalog.f(...) is f(...)
    if isinstance(node, exp.Operator):
        return _operator(node)
    if isinstance(node, exp.RegexpILike):
        return _ilike_regex(node.this, node.expression)
    if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier) \
            and node.args.get("db") is not None and node.args["db"].name.lower() == "pg_catalog":
        node.set("db", None)  # FROM pg_catalog.unnest(...)
        if isinstance(node.this, exp.Explode):
            node = exp.Unnest(expressions=[node.this.this], alias=node.args.get("alias"))
    if isinstance(node, exp.Unnest) and len(node.expressions) == 1:
        alias = node.args.get("alias")
        if alias is None:
            # FROM unnest(a): PostgreSQL names the relation and its column unnest.
            node.set("alias", exp.TableAlias(this=exp.to_identifier("unnest"),
                                             columns=[exp.to_identifier("unnest")]))
        elif alias.name and not alias.args.get("columns"):
            # FROM unnest(a) x: PostgreSQL names the column x too.
            alias.set("columns", [exp.to_identifier(alias.name)])
    if isinstance(node, (exp.EQ, exp.NEQ)):
        # `pol.polroles = '{0}'` (psql): an array column compared with an array's text form.
        left, right = node.this, node.expression
        for column, value, side in ((left, right, "expression"), (right, left, "this")):
            if isinstance(column, exp.Column) and column.name.lower() in _CATALOG_ARRAY_COLUMNS \
                    and isinstance(value, exp.Literal) and value.is_string \
                    and _ARRAY_TEXT.match(value.this):
                node.set(side, _array_literal(value.this))
    if isinstance(node, _COMPARISONS) and isinstance(node.expression, exp.Anonymous) \
            and node.expression.name.upper() == "ALL" and len(node.expression.expressions) == 1 \
            and not isinstance(node.expression.expressions[0], (exp.Select, exp.Subquery)):
        return _all_of_array(node)
    if isinstance(node, exp.Collate):
        return node.this
    jsonb_op = jsonb_sql.rewrite(node)
    if jsonb_op is not None:
        return jsonb_op
    if isinstance(node, exp.Cast):
        return _cast(node)
    if isinstance(node, exp.JSONBExtractScalar):
        return _json_path_text(node)
    if isinstance(node, exp.JSONExtract) and isinstance(node.expression, exp.JSONPath):
        return _json_extract(node)
    if isinstance(node, exp.ArrayAgg):
        return _array_agg(node)
    if isinstance(node, exp.Array) and len(node.expressions) == 1 \
            and isinstance(node.expressions[0], (exp.Select, exp.Subquery)):
        return _array_subquery(node)
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and catalog_defs.is_int2vector(node.this):
        return catalog_defs.int2vector_element(node.this, node.expressions[0])
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        return _subscript(node.this, node.expressions[0])
    name = _func_name(node)
    if name is not None:
        replacement = _function(name, _args(node))
        if replacement is not None:
            return replacement
    return pg_functions.rewrite(node)
