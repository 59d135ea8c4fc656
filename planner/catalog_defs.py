"""The catalog functions that read tables' indexes at run time: pg_get_indexdef and
pg_get_constraintdef as scalar subqueries over system relations, and subscripts of
pg_index.indoption, an int2vector."""

from __future__ import annotations

from sqlglot import exp

from planner.sql_template import template as _parse


def index_definition(index: exp.Expression, column: exp.Expression | None,
                      pretty: exp.Expression | None) -> exp.Expression:
    """pg_get_indexdef(oid[, column, pretty]): the index's CREATE INDEX statement (from
    pg_indexes; pretty leaves out the visible schema), or with a column number other than 0
    that column's name, '' past the last (pgjdbc's getIndexInfo asks so)."""
    query = exp.select(exp.Max(this=exp.column("indexdef", "x"))).from_("pg_catalog.pg_indexes AS x").join(
        "pg_catalog.pg_class AS c", on="c.relname = x.indexname AND c.relkind = 'i'").where(
        exp.EQ(this=exp.column("oid", "c"), expression=index.copy()))
    whole = exp.Subquery(this=query)
    if column is None:
        return whole
    named = exp.Subquery(this=exp.select(exp.Max(this=exp.column("name", "k"))).from_(
        "mz_internal.mz_index_columns AS k").where(exp.and_(
            exp.EQ(this=exp.column("indexrelid", "k"), expression=index.copy()),
            exp.EQ(this=exp.column("position", "k"), expression=column.copy()))))
    return _parse("CASE WHEN __n = 0 THEN CASE WHEN __p THEN replace(__whole, ' ON public.', ' ON ') ELSE __whole END "
                  "ELSE coalesce(__named, '') END", n=column, whole=whole, named=named, p=pretty)


def constraint_definition(constraint: exp.Expression, pretty: exp.Expression | None = None) -> exp.Expression:
    """pg_get_constraintdef(oid[, pretty]): `PRIMARY KEY (a)`, `CHECK ((v > 0))` (pretty:
    `CHECK (v > 0)`), from sparkwire's own relation of them (whose column is `conoid`, not
    `oid`: an unqualified `oid` argument is the caller's)."""
    def of(column: str) -> exp.Expression:
        return exp.Subquery(this=exp.select(exp.Max(this=exp.column(column, "d"))).from_(
            "mz_internal.mz_constraint_definitions AS d").where(
            exp.EQ(this=exp.column("conoid", "d"), expression=constraint.copy())))

    if pretty is None:
        return of("definition")
    return _parse("CASE WHEN __p THEN __pretty ELSE __plain END", p=pretty, pretty=of("pretty"), plain=of("definition"))


# pg_index.indoption is an int2vector: text on the wire ("0 3", which SQLAlchemy splits) and
# subscripted from 0 (pgjdbc's getIndexInfo reads `i.indoption[ordinal_position - 1]`, after
# selecting it as i_indoption). It is text here, so a subscript of it splits the text.
_INT2VECTOR_COLUMNS = {"indoption", "i_indoption"}


def is_int2vector(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and node.name.lower() in _INT2VECTOR_COLUMNS


def int2vector_element(vector: exp.Expression, index: exp.Expression) -> exp.Expression:
    return _parse("CAST(try_element_at(split(__v, ' '), __i + 1) AS SMALLINT)", v=vector, i=index)
