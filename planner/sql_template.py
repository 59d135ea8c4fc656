"""PostgreSQL expression templates: SQL text with `__name` placeholders, filled with trees."""

from __future__ import annotations

import sqlglot
from sqlglot import exp


def template(template: str, **args: exp.Expression) -> exp.Expression:
    """A PostgreSQL expression with `__name` placeholders replaced by `args`."""
    tree = sqlglot.parse_one(template, read="postgres")

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__"):
            return args[node.name[2:]].copy()
        return node

    return tree.transform(fill)
