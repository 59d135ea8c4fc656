"""PostgreSQL queries → Spark SQL.

sqlglot does the dialect translation; this module does what needs our
catalog: relation names become the Spark views a read registered, views are
inlined, parameters become typed literals, and the session functions
(`current_database()`, `now()`, ...) become constants, so that Spark computes
exactly what PostgreSQL would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from planner import jsonb_sql, pg_compat, pg_functions, spark_guard, typeof
from planner.errors import DUPLICATE_ALIAS, FEATURE_NOT_SUPPORTED, UNDEFINED_TABLE, SqlError
from planner.parser import sql_type, table_name
from planner.types import SqlType


@dataclass(frozen=True)
class TableSource:
    """A stored table, readable in Spark under `spark_name`."""

    spark_name: str
    columns: dict[str, str]  # column name → Spark type, for type inference
    oid: int | None = None  # the relation's pg_class OID: what its `tableoid` system column holds
    pg_types: dict[str, SqlType] = field(default_factory=dict)  # column name → its type (pg_typeof)


@dataclass(frozen=True)
class ViewSource:
    query: exp.Expression


# Called with a relation name, qualified (`pg_catalog.pg_class`) only for system schemas.
Resolver = Callable[[str], "TableSource | ViewSource | None"]


@dataclass(frozen=True)
class SessionContext:
    """The values of the session functions for one statement."""

    database: str
    user: str
    version: str
    now_literal: str  # transaction start, 'YYYY-MM-DD HH:MM:SS.ffffff'
    backend_pid: int = 0
    server_addr: str | None = None  # inet_server_addr(): None over a Unix socket
    server_port: int | None = None
    client_addr: str | None = None
    client_port: int | None = None


def referenced_relations(tree: exp.Expression) -> list[str]:
    """Names of the relations a query reads, excluding its own CTEs."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = []
    for table in tree.find_all(exp.Table):
        if _is_relation(table):
            name = table_name(table)
            if name not in ctes and name not in names:
                names.append(name)
    return names


def qualified_name(table: exp.Table) -> str:
    """The name a resolver is asked for: `schema.name` for a system schema
    (pg_catalog, information_schema, mz_internal, ...), else the bare name."""
    name = table_name(table)
    schema = table.args.get("db")
    schema_name = table_name(exp.Table(this=schema)) if schema is not None else "public"
    return name if schema_name == "public" else f"{schema_name}.{name}"


def _is_relation(table: exp.Table) -> bool:
    return isinstance(table.this, exp.Identifier)


def to_spark(tree: exp.Expression, resolve: Resolver, ctx: SessionContext,
             params: dict[int, exp.Expression] | None = None) -> str:
    """The Spark SQL text of a PostgreSQL query."""
    return spark_guard.spark_sql(resolve_tree(tree, resolve, ctx, params))


def resolve_tree(tree: exp.Expression, resolve: Resolver, ctx: SessionContext,
                 params: dict[int, exp.Expression] | None = None) -> exp.Expression:
    """The query as Spark will run it: relations resolved to the views a read registers,
    views inlined, PostgreSQL's constructs rewritten, parameters bound; checked by
    planner.spark_guard to read only those views (generate its text with spark_guard.spark_sql)."""
    registered: set[str] = set()

    def recording(name: str):
        source = resolve(name)
        if isinstance(source, TableSource):
            registered.add(source.spark_name)
        return source

    tree = _resolve(tree, recording, ctx, params)
    spark_guard.strip_comments(tree)
    spark_guard.cte_columns_as_aliases(tree)
    spark_guard.check_relations(tree, registered)
    return tree


def _resolve(tree: exp.Expression, resolve: Resolver, ctx: SessionContext,
             params: dict[int, exp.Expression] | None = None) -> exp.Expression:
    _check_with_names(tree)
    _refuse_outer_function_joins(tree)
    _refuse_ordinality(tree)
    _refuse_row_order(tree)
    tree = tree.copy()
    pg_functions.mark_user_arithmetic(tree)
    names = _written_names(tree)
    _unqualify_columns(tree)
    tree = pg_compat.rewrite(tree)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    schema: dict[str, dict[str, str]] = {}
    oids: dict[str, int] = {}  # a relation's name or alias in the query → its OID
    column_types: dict[str, dict[str, SqlType]] = {}  # a relation's name or alias → its columns' types
    for table in list(tree.find_all(exp.Table)):
        if isinstance(table.this, (exp.ExplodingGenerateSeries, exp.GenerateSeries)):
            table.replace(_series(table))
            continue
        if isinstance(table.this, exp.Anonymous) and table.this.name.lower() in _ARRAY_TABLE_FUNCTIONS:
            table.replace(_ARRAY_TABLE_FUNCTIONS[table.this.name.lower()](table))
            continue
        if not _is_relation(table):
            continue
        name = table_name(table)
        if name in ctes:
            continue
        source = resolve(qualified_name(table))
        if source is None:
            raise SqlError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        alias = table.args.get("alias")
        if isinstance(source, TableSource):
            new = exp.Table(this=exp.to_identifier(source.spark_name),
                            alias=alias or exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
            schema[source.spark_name] = source.columns
            if source.oid is not None:
                oids[(alias.name if alias is not None else name).lower()] = source.oid
            column_types[alias.name if alias is not None else name] = source.pg_types
        else:
            inner = _resolve(source.query, resolve, ctx, None)
            new = exp.Subquery(this=inner,
                               alias=alias or exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
        table.replace(new)
    _table_oids(tree, oids)
    typeof.replace(tree, sql_type, column_types, output_name)
    jsonb_sql.stored_columns(tree, column_types)  # `j || x`, `j - 'k'` of a stored jsonb column
    tree = _pg_types(tree)
    tree = _replace_functions(tree, ctx)
    if params:
        tree = _bind(tree, params)
    return _quote_unsafe(_name_outputs(_typed(tree, schema), names))


def _check_with_names(tree: exp.Expression) -> None:
    """PostgreSQL refuses one name given to two queries of the same WITH clause (Spark
    would take either)."""
    for with_ in tree.find_all(exp.With):
        seen: set[str] = set()
        for cte in with_.expressions:
            ident = cte.args["alias"].this
            name = ident.name if ident.quoted else ident.name.lower()  # as PostgreSQL folds it
            if name in seen:
                raise SqlError(DUPLICATE_ALIAS, f'WITH query name "{name}" specified more than once')
            seen.add(name)


def _refuse_ordinality(tree: exp.Expression) -> None:
    """WITH ORDINALITY runs on the front end of our own only: sqlglot's tree reads it as
    Spark's posexplode, whose number counts from 0 and comes first."""
    if any(u.args.get("offset") for u in tree.find_all(exp.Unnest)) or \
            any(t.args.get("ordinality") for t in tree.find_all(exp.Table)):
        raise SqlError(FEATURE_NOT_SUPPORTED, "WITH ORDINALITY is not supported in a query with a system catalog, "
                                              "ROWS FROM or a column definition list")


def _refuse_row_order(tree: exp.Expression) -> None:
    """ORDER BY (a, b) sorts field by field, a NULL field last (record_cmp): Spark would
    sort its struct with NULLs first. The front end of our own takes the fields apart."""
    for ordered in tree.find_all(exp.Ordered):
        if isinstance(ordered.this, (exp.Tuple, exp.Struct)):
            raise SqlError(FEATURE_NOT_SUPPORTED, "ORDER BY a row value is not supported in a query with a system "
                                                  "catalog", hint="Order by the fields one by one.")


def _refuse_outer_function_joins(tree: exp.Expression) -> None:
    """`a LEFT JOIN f(a.x) u ON c` keeps a's rows that f gives no row for (on c): sqlglot's
    tree would be a LATERAL VIEW that drops them. The front end of our own runs it."""
    for join in tree.find_all(exp.Join):
        item = join.this
        if join.side and (isinstance(item, exp.Unnest) or isinstance(item, exp.Table)
                          and isinstance(item.this, exp.Func)):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{join.side} JOIN of a set-returning function is not supported "
                                                  "in a query with a system catalog or on a condition with a subquery",
                           hint="Read the system catalog in a subquery of its own.")


def _table_oids(tree: exp.Expression, oids: dict[str, int]) -> None:
    """`c.tableoid`, PostgreSQL's system column (psql's \\dd reads it): the relation's OID."""
    for column in list(tree.find_all(exp.Column)):
        if column.name.lower() == "tableoid" and column.table and column.table.lower() in oids:
            column.replace(exp.Literal.number(oids[column.table.lower()]))


def _unqualify_columns(tree: exp.Expression) -> None:
    """`pg_catalog.pg_namespace.oid` and `materialize.public.t.id` as `pg_namespace.oid`
    and `t.id`: a relation is referred to by its name, and each name we know stands for one
    relation (SQLAlchemy's reflection qualifies its columns so)."""
    for column in tree.find_all(exp.Column):
        if column.args.get("db") is not None:
            column.set("db", None)
            column.set("catalog", None)


# Spark's lexer takes only ASCII letters, digits and _ in unquoted identifiers;
# sqlglot's star expansion writes columns like "tåble✓" unquoted.
_SPARK_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _quote_unsafe(tree: exp.Expression) -> exp.Expression:
    for ident in tree.find_all(exp.Identifier):
        if not ident.quoted and not _SPARK_PLAIN.match(ident.name):
            ident.set("quoted", True)
    return tree


def _series(table: exp.Table) -> exp.Subquery:
    """generate_series(a, b[, step]) in FROM, as a Spark subquery with PostgreSQL's column name."""
    series = table.this
    args = [series.args["start"], series.args["end"]]
    if series.args.get("step") is not None:
        args.append(series.args["step"])
    alias = table.args.get("alias")
    column = "generate_series"
    if alias is not None:
        columns = alias.args.get("columns") or []
        column = columns[0].name if columns else alias.name
    select = exp.select(exp.alias_(exp.Explode(this=pg_functions.series_values(*args)), exp.to_identifier(column, quoted=True)))
    return exp.Subquery(this=select, alias=exp.TableAlias(
        this=exp.to_identifier(alias.name if alias is not None else "generate_series", quoted=True)))


def _table_alias(table: exp.Table, default: str) -> tuple[str, list[str] | None]:
    alias = table.args.get("alias")
    if alias is None:
        return default, None
    columns = [c.name for c in alias.args.get("columns") or []]
    return alias.name or default, columns or None


def _subscripts_relation(table: exp.Table) -> exp.Expression:
    """FROM generate_subscripts(a, d): 1 .. the array's length for dimension 1; no rows for an
    empty array or any other dimension (a one-dimensional array has no other)."""
    args = table.this.expressions
    if len(args) != 2:
        raise SqlError("42883", "function generate_subscripts with these arguments does not exist")
    array, dimension = args
    name, columns = _table_alias(table, "generate_subscripts")
    size = exp.ArraySize(this=array.copy())
    values = exp.If(this=exp.and_(exp.EQ(this=dimension.copy(), expression=exp.Literal.number(1)),
                                  exp.GT(this=size, expression=exp.Literal.number(0))),
                    true=exp.Anonymous(this="sequence", expressions=[exp.Literal.number(1), size.copy()]),
                    false=exp.Anonymous(this="array", expressions=[]))
    column = columns[0] if columns else name
    select = exp.select(exp.alias_(exp.Explode(this=values), exp.to_identifier(column, quoted=True)))
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True)))


def _expandarray_relation(table: exp.Table) -> exp.Expression:
    """FROM information_schema._pg_expandarray(a): (x, n), each element and its position."""
    name, columns = _table_alias(table, "_pg_expandarray")
    x, n = (columns + ["n"])[:2] if columns else ("x", "n")
    inner = exp.Subquery(this=exp.select(exp.Posexplode(this=table.this.expressions[0].copy())),
                         alias=exp.TableAlias(this=exp.to_identifier("__e")))
    select = exp.select(exp.alias_(exp.column("col", "__e"), exp.to_identifier(x, quoted=True)),
                        exp.alias_(exp.Add(this=exp.column("pos", "__e"), expression=exp.Literal.number(1)),
                                   exp.to_identifier(n, quoted=True))).from_(inner)
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True)))


_ARRAY_TABLE_FUNCTIONS = {
    "pg_get_keywords": lambda table: pg_compat.keywords_relation(table.args.get("alias")),
    "generate_subscripts": _subscripts_relation,
    "_pg_expandarray": _expandarray_relation,
}


def _literal_ts(ctx: SessionContext) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(ctx.now_literal),
                    to=exp.DataType.build("TIMESTAMPTZ"))


# An unconstrained numeric keeps its digits in PostgreSQL; in Spark a bare DECIMAL
# is DECIMAL(10,0). DECIMAL(38,10) is how sparkwire stores unconstrained numerics.
UNCONSTRAINED_NUMERIC = "DECIMAL(38, 10)"


def _pg_types(tree: exp.Expression) -> exp.Expression:
    """Types as the user wrote them, in Spark's terms: `timestamp` has no time zone
    (Spark's TIMESTAMP has one), and a bare `numeric` is not DECIMAL(10,0)."""

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.DataType):
            if node.this == exp.DataType.Type.TIMESTAMP:
                return exp.DataType(this=exp.DataType.Type.TIMESTAMPNTZ)
            if node.this == exp.DataType.Type.DECIMAL and not node.expressions:
                return exp.DataType.build(UNCONSTRAINED_NUMERIC)
        return node

    return tree.transform(swap)


# The functions whose value the session supplies, by name: a statement runs with them as
# constants (the front end of our own takes the same values, planner.sql.spark_sql).
SESSION_FUNCTIONS: dict[str, Callable[[SessionContext], exp.Expression]] = {
    "pg_backend_pid": lambda ctx: exp.Literal.number(ctx.backend_pid),
    "now": lambda ctx: _literal_ts(ctx),
    "transaction_timestamp": lambda ctx: _literal_ts(ctx),
    "statement_timestamp": lambda ctx: _literal_ts(ctx),  # the transaction's start too
    "current_catalog": lambda ctx: exp.Literal.string(ctx.database),
    "current_database": lambda ctx: exp.Literal.string(ctx.database),  # pg_catalog.current_database()
    "current_schema": lambda ctx: exp.Literal.string("public"),
    "getdatabaseencoding": lambda ctx: exp.Literal.string("UTF8"),
    "version": lambda ctx: exp.Literal.string(ctx.version),
    "inet_server_addr": lambda ctx: _maybe(ctx.server_addr, "TEXT"),
    "inet_server_port": lambda ctx: _maybe(ctx.server_port, "INT"),
    "inet_client_addr": lambda ctx: _maybe(ctx.client_addr, "TEXT"),
    "inet_client_port": lambda ctx: _maybe(ctx.client_port, "INT"),
}


def _replace_functions(tree: exp.Expression, ctx: SessionContext) -> exp.Expression:
    constants: dict[type, Callable[[], exp.Expression]] = {
        exp.CurrentDatabase: lambda: exp.Literal.string(ctx.database),
        exp.CurrentVersion: lambda: exp.Literal.string(ctx.version),
        exp.CurrentUser: lambda: exp.Literal.string(ctx.user),
        exp.SessionUser: lambda: exp.Literal.string(ctx.user),
        exp.CurrentSchema: lambda: exp.Literal.string("public"),
        exp.CurrentTimestamp: lambda: _literal_ts(ctx),
        exp.CurrentDate: lambda: exp.Cast(this=_literal_ts(ctx), to=exp.DataType.build("DATE")),
    }
    def swap(node: exp.Expression) -> exp.Expression:
        make = constants.get(type(node))
        if make is not None:
            return make()
        if isinstance(node, exp.Anonymous):
            value = SESSION_FUNCTIONS.get(node.name.lower())
            if value is not None:
                return value(ctx)
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in (
                "current_user", "session_user", "current_catalog", "current_role", "user"):
            return exp.Literal.string(ctx.user if node.name.lower() != "current_catalog" else ctx.database)
        return node

    return tree.transform(swap)


def _maybe(value: str | int | None, spark_type: str) -> exp.Expression:
    if value is None:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(spark_type))
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def _bind(tree: exp.Expression, params: dict[int, exp.Expression]) -> exp.Expression:
    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
            n = int(node.this.this)
            if n not in params:
                raise SqlError("08P01", f"there is no parameter ${n}")
            value = params[n].copy()
            if isinstance(node.parent, (exp.Limit, exp.Offset)):
                return exp.Cast(this=value, to=exp.DataType.build("INT"))  # Spark wants an INT there
            return value
        return node

    tree = tree.transform(swap)
    for call in list(tree.find_all(exp.Anonymous)):
        if call.name == pg_compat.JSON_PARAMETER:
            call.replace(pg_compat.json_input(call.expressions[1].this, call.expressions[0]))
    for clause in list(tree.find_all(exp.Limit, exp.Offset)):
        # PostgreSQL reads a NULL limit or offset (`LIMIT $1::INTEGER` with NULL, as when a
        # statement is described) as none; Spark refuses it.
        value = clause.expression
        while isinstance(value, exp.Cast):
            value = value.this
        if isinstance(value, exp.Null):
            clause.set("expression", exp.Literal.number(2**31 - 1 if isinstance(clause, exp.Limit) else 0))
    return tree


_INTEGRAL = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
             exp.DataType.Type.BIGINT}
_AUTO_ALIAS = re.compile(r"^_col_\d+$")


def _typed(tree: exp.Expression, schema: dict[str, dict[str, str]]) -> exp.Expression:
    """Qualify and type the tree, so integer division can be told apart.

    PostgreSQL divides integers by truncation; Spark's `/` gives a fraction.
    Knowing operand types needs qualified columns; if the query cannot be
    qualified (it refers to an unknown column, say) Spark reports that itself.
    """
    # Column names are kept as written: a quoted "Key" must not come back as key.
    mapping = MappingSchema(schema, dialect="spark", normalize=False) if schema else None
    try:
        typed = annotate_types(
            qualify(tree.copy(), schema=mapping, dialect="spark",
                    validate_qualify_columns=False, quote_identifiers=False),
            schema=mapping, dialect="spark")
    except Exception:  # noqa: BLE001 - type inference is best effort
        return tree
    pg_functions.typed(typed)
    for div in list(typed.find_all(exp.Div)):
        left, right = div.this.type, div.expression.type
        if left is not None and right is not None and left.this in _INTEGRAL and right.this in _INTEGRAL:
            wide = exp.DataType.Type.BIGINT in (left.this, right.this)
            div.replace(exp.Cast(this=exp.IntDiv(this=div.this, expression=div.expression),
                                 to=exp.DataType.build("BIGINT" if wide else "INT")))
    pg_functions.char_semantics(typed)
    pg_functions.date_arithmetic(typed)
    pg_functions.timestamptz_text(typed)
    # sum(bigint) is numeric in PostgreSQL: it cannot overflow where Spark's bigint sum would.
    for agg in list(typed.find_all(exp.Sum)):
        arg = agg.this
        if arg.type is not None and arg.type.this == exp.DataType.Type.BIGINT:
            arg.replace(exp.Cast(this=arg.copy(), to=exp.DataType.build("DECIMAL(38,0)")))
    # Deepest first, so an enclosing operation wraps its already checked operands.
    for node in reversed(list(typed.find_all(exp.Add, exp.Sub, exp.Mul, exp.Div))):
        checked = pg_functions.checked_float_arithmetic(node)
        if checked is not node:
            node.replace(checked)
    return typed


# sqlglot's name for a function class is not always PostgreSQL's.
_FUNCTION_NAMES = {
    exp.CurrentTimestamp: "now",
    exp.CurrentVersion: "version",
    exp.CurrentDatabase: "current_database",
    exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user",
    exp.CurrentSchema: "current_schema",
    exp.CurrentDate: "current_date",
    exp.StrPosition: "position",
    exp.ArrayAgg: "array_agg",
    exp.ArraySize: "array_length",
    exp.ExplodingGenerateSeries: "generate_series",
    exp.GenerateSeries: "generate_series",
    exp.GroupConcat: "string_agg",
    exp.JSONBObjectAgg: "jsonb_object_agg",
    exp.TimestampTrunc: "date_trunc",
    exp.Extract: "extract",
}


# PostgreSQL names a cast constant by the type's internal name.
_TYPE_COLUMN_NAMES = {"decimal": "numeric", "int": "int4", "integer": "int4", "bigint": "int8",
                      "smallint": "int2", "double precision": "float8", "real": "float4",
                      "boolean": "bool", "varchar": "varchar", "char": "bpchar"}


def output_name(node: exp.Expression) -> str:
    """The column name PostgreSQL gives an unaliased select expression."""
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name if not isinstance(node.this, exp.Star) else "?column?"
    if isinstance(node, exp.Cast):
        inner = output_name(node.this)
        if inner != "?column?":
            return inner
        spelled = node.to.sql("postgres").lower().split("(")[0].strip()
        return _TYPE_COLUMN_NAMES.get(spelled, spelled)
    if isinstance(node, exp.Case):
        return "case"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return output_name(node.expression)  # pg_catalog.f(...)
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, exp.Unary)):
        return _FUNCTION_NAMES.get(type(node), node.sql_name().lower())
    return "?column?"


def _name_outputs(tree: exp.Expression, names: list[str] | None) -> exp.Expression:
    """Alias every output column with PostgreSQL's name for it.

    `names` come from the query as the user wrote it (before functions became
    constants and qualification named columns); None when it had a `*`.
    """
    selects = _outer_select(tree)
    if selects is None:
        return tree
    if names is None or len(names) != len(selects.expressions):
        names = [
            "?column?" if isinstance(e, exp.Alias) and _AUTO_ALIAS.match(e.alias) else output_name(e)
            for e in selects.expressions
        ]
    renamed: dict[str, int] = {}
    for pos, (e, name) in enumerate(zip(list(selects.expressions), names), start=1):
        if isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            continue  # a * that qualification could not expand: Spark names its columns
        inner = e.this if isinstance(e, exp.Alias) else e
        if isinstance(e, exp.Alias) and e.alias != name:
            renamed[e.alias] = pos
        e.replace(exp.alias_(inner, exp.to_identifier(name, quoted=True)))
    _order_by_position(tree, selects, renamed)
    for select in tree.find_all(exp.Select):
        if select.args.get("distinct"):
            _distinct_order_by(select)
    return tree


def _distinct_order_by(select: exp.Select) -> None:
    """Spark resolves the ORDER BY of a SELECT DISTINCT against its output only, where a
    qualified `t.a` (as qualification writes it) no longer exists: use the position."""
    order = select.args.get("order")
    for ordered in order.expressions if order is not None else []:
        for pos, e in enumerate(select.expressions, start=1):
            if isinstance(e, exp.Alias) and isinstance(ordered.this, exp.Column) and e.this == ordered.this:
                ordered.set("this", exp.Literal.number(pos))
                break


def _order_by_position(tree: exp.Expression, selects: exp.Select, renamed: dict[str, int]) -> None:
    """ORDER BY an output alias that was renamed (qualify's `_col_0` for ORDER BY 1)
    refers to the column by position instead, which also survives duplicate names."""
    if not renamed:
        return
    for node in (tree, selects) if tree is not selects else (tree,):
        order = node.args.get("order")
        for ordered in order.expressions if order is not None else []:
            key = ordered.this
            if isinstance(key, exp.Column) and not key.table and key.name in renamed:
                key.replace(exp.Literal.number(renamed[key.name]))


def _written_names(tree: exp.Expression) -> list[str] | None:
    select = _outer_select(tree)
    if select is None or any(
        isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
        for e in select.expressions
    ):
        return None
    return [output_name(e) for e in select.expressions]


def _outer_select(tree: exp.Expression) -> exp.Select | None:
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    if isinstance(tree, exp.Subquery):
        return _outer_select(tree.this)
    return tree if isinstance(tree, exp.Select) else None
