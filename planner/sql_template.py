"""Expression templates filled with trees: PostgreSQL SQL with `__name` placeholders, and
Spark SQL with `{0}`, `{1}`, ... (the function catalog's form); and the expression that fails
a query with PostgreSQL's error."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

# What starts the text of an error raised in Spark that carries PostgreSQL's SQLSTATE
# (spark_backend.errors reads it back).
ERROR_PREFIX = "sparkwire:"


def pg_error(sqlstate: str, message: str) -> exp.Expression:
    """A Spark expression that fails the query with PostgreSQL's error."""
    return exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(f"{ERROR_PREFIX}{sqlstate}:{message}")])


def template(template: str, **args: exp.Expression) -> exp.Expression:
    """A PostgreSQL expression with `__name` placeholders replaced by `args`."""
    tree = sqlglot.parse_one(template, read="postgres")

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__"):
            return args[node.name[2:]].copy()
        return node

    return tree.transform(fill)


@lru_cache(maxsize=256)
def _parsed_spark(template: str, nargs: int) -> exp.Expression:
    text = template
    for i in range(nargs):
        text = text.replace(f"{{{i}}}", f"__a{i}")
    return sqlglot.parse_one(text, read="spark")


def spark(template: str, *args: exp.Expression) -> exp.Expression:
    """A Spark SQL template (`{0}`, `{1}`, ... for the arguments) as a tree around `args`;
    each template is parsed once."""
    by_name = {f"__a{i}": a for i, a in enumerate(args)}
    return _parsed_spark(template, len(args)).copy().transform(
        lambda n: by_name[n.name].copy() if isinstance(n, exp.Column) and n.name in by_name else n)
