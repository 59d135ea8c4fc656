"""regclass on the catalog-query path: `'t'::regclass` is the OID pg_class has for `t`
(42P01 if none has that name), compared as an OID and printed as the relation's name."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp


def relation_oid(name: exp.Expression) -> exp.Expression:
    """`'t'::regclass`: the OID of the relation named, found in pg_class."""
    relname: exp.Expression = name.copy()
    schema: exp.Expression | None = None
    if isinstance(name, exp.Literal) and name.is_string:
        parts = [p.strip('"') for p in name.this.split(".")]
        relname = exp.Literal.string(parts[-1])
        if len(parts) > 1:
            schema = exp.Literal.string(parts[-2])
    query = exp.select("c.oid").from_("pg_catalog.pg_class AS c").where(
        exp.EQ(this=exp.column("relname", "c"), expression=relname))
    if schema is not None:
        query = query.join("pg_catalog.pg_namespace AS n", on="n.oid = c.relnamespace").where(
            exp.EQ(this=exp.column("nspname", "n"), expression=schema))
    query = query.select(exp.Max(this=exp.column("oid", "c")), append=False)
    return exp.Subquery(this=query)


def existing_relation_oid(name: exp.Expression) -> exp.Expression:
    """`'t'::regclass` (regclassin): the relation's OID, and 42P01 when no relation has
    that name, as PostgreSQL answers rather than a NULL."""
    if not (isinstance(name, exp.Literal) and name.is_string):
        return relation_oid(name)
    message = f'sparkwire:42P01:relation "{name.this}" does not exist'
    return exp.Coalesce(this=relation_oid(name), expressions=[
        exp.Cast(this=exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(message)]),
                 to=exp.DataType.build("BIGINT"))])


def is_text(node: exp.Expression) -> bool:
    """Whether a reg* cast's operand is text, a name to look up (else it is an OID)."""
    if isinstance(node, exp.Literal):
        return node.is_string
    if isinstance(node, exp.Parameter):
        return True
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.TEXT_TYPES)
    return False


def print_names(tree: exp.Expression, is_regclass: Callable[[exp.Cast], bool]) -> None:
    """A regclass is an OID that prints as its relation's name (regclassout): `c.oid::regclass`
    in a select list or cast on to text shows `t`, where a comparison compares OIDs. Our
    relations all live in schemas on the search path, so the name is never qualified."""
    for cast in list(tree.find_all(exp.Cast)):
        if not is_regclass(cast):
            continue
        parent = cast.parent
        printed = (isinstance(parent, exp.Cast) and parent.to.is_type(*exp.DataType.TEXT_TYPES)
                   or isinstance(parent, exp.Select) and cast.arg_key == "expressions"
                   or isinstance(parent, exp.Alias) and isinstance(parent.parent, exp.Select)
                   and parent.arg_key == "expressions")
        if printed:
            cast.replace(_relation_name(cast.this))


def _relation_name(value: exp.Expression) -> exp.Expression:
    """The name regclassout prints for a relation OID (or for the relation a text names):
    its relname, else the OID's digits."""
    oid = existing_relation_oid(value) if is_text(value) else value.copy()
    query = exp.select(exp.Max(this=exp.column("relname", "__rc"))).from_(
        "pg_catalog.pg_class AS __rc").where(exp.EQ(this=exp.column("oid", "__rc"), expression=oid))
    return exp.Coalesce(this=exp.Subquery(this=query), expressions=[
        exp.Cast(this=oid.copy(), to=exp.DataType.build("TEXT"))])
