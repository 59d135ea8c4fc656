"""A catalogued function's Spark SQL template (planner.functions: `upper({0})`), parsed once
and filled with its arguments' Spark SQL, and the checks that a template can be filled here."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from planner import pg_functions
from planner.sql import plan as p


def no_subquery_in_lambda(name: str, template: str, args: tuple[p.Expr, ...]) -> None:
    """Spark refuses a subquery inside a higher-order function (exists, forall, transform)
    and its arguments: such a call of `name` is not covered here yet."""
    if "->" in template and any(p.contains(a, p.Subquery) for a in args):
        raise p.NotYet(f"{name} of a subquery's value is not covered by this front end yet")


def check_template(name: str, template: str, nargs: int) -> None:
    """Refuse a catalog template that only illustrates the call: one that shows an
    argument by a sample value (`date_trunc('day', {1})`, `lag({0}, 1)`), a JSON path
    helper, or a value the server computes (`<...>`). The sqlglot path rewrites those."""
    if (not template or template.startswith("<") or "'<" in template or template == "rewrite" or "path(" in template
            or any(f"{{{i}}}" not in template for i in range(nargs))):
        raise p.NotYet(f"{name} is not covered by this front end yet")


@lru_cache(maxsize=4096)
def _parsed(template: str, nargs: int) -> exp.Expression:
    text = template
    for i in range(nargs):
        text = text.replace(f"{{{i}}}", f"__arg{i}__")
    return pg_functions.exact_percentiles(sqlglot.parse_one(text, read="spark"))


def filled(template: str, args: list[exp.Expression]) -> exp.Expression:
    """`template` with `{i}` replaced by args[i] (parenthesized)."""
    tree = _parsed(template, len(args)).copy()

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name.startswith("__arg") and node.name.endswith("__"):
            return exp.Paren(this=args[int(node.name[5:-2])].copy())
        return node

    return tree.transform(fill)
