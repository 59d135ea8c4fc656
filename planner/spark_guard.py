"""The last look at what Spark is about to run: defence in depth behind the allowlist.

`planner.allowlist` refuses uncatalogued names in what the client wrote; this
module checks the Spark SQL we generate from it, so that a gap in translation
(or in sqlglot) still cannot hand Spark anything but our own relations and the
Spark functions our catalog's entries become:

- comments are dropped (Spark reads `/*+ ... */` as a hint);
- every relation is a view we registered for this query, a CTE or a subquery;
  the only function in FROM is the `explode` that `unnest`/`generate_series` become;
- every function the Spark text calls is one `planner.functions.SPARK_FUNCTIONS`
  lists, checked on the text itself with Spark's tokenizer, so nothing sqlglot
  renders differently from its tree can slip through.

A failure here is a bug of ours, not the client's: it is reported as 42883 for
the Spark function, which leaks nothing and never runs.
"""

from __future__ import annotations

import itertools
import re

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from planner.errors import FEATURE_NOT_SUPPORTED, UNDEFINED_FUNCTION, SqlError
from planner.functions import SPARK_FUNCTIONS

_TOKENIZER = Spark().tokenizer_class()

# Words that Spark reads before a parenthesis without calling a function: clauses,
# type names with modifiers, and the spelling of CAST.
_NOT_CALLS = frozenset((
    "in", "exists", "values", "over", "as", "filter", "on", "using", "and", "or", "not", "when",
    "then", "else", "select", "from", "where", "by", "join", "having", "all", "any", "some",
    "distinct", "union", "intersect", "except", "with", "limit", "offset", "decimal", "numeric",
    "dec", "char", "varchar", "time", "timestamp", "timestamp_ntz", "timestamp_ltz", "interval",
    "is", "like", "ilike", "rlike", "between", "case", "end", "asc", "desc", "first", "last",
    "nulls", "partition", "order", "group", "lateral", "inner", "outer", "left", "right", "full",
    "cross", "semi", "anti", "natural", "div", "escape", "array", "map", "struct",
))

# Table-valued forms translation itself writes in FROM.
_TABLE_FUNCTIONS = (exp.Explode, exp.Unnest)


def strip_comments(tree: exp.Expression) -> exp.Expression:
    """Drop every comment and hint from the tree (in place)."""
    for node in list(tree.walk()):
        if isinstance(node, exp.Hint):
            node.pop()
        elif node.comments:
            node.comments = None
    return tree


def check_relations(tree: exp.Expression, registered: set[str]) -> None:
    """Every table a resolved tree reads is a view we registered for it or one of its CTEs."""
    # Spark resolves names case-insensitively (spark.sql.caseSensitive is off), and so may
    # qualification have spelled them.
    names = {n.lower() for n in registered} | {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        target = table.this
        if isinstance(target, exp.Identifier):
            if table.args.get("db") is not None or table.args.get("catalog") is not None \
                    or target.name.lower() not in names:
                raise SqlError(FEATURE_NOT_SUPPORTED, f'relation "{target.name}" cannot be read here')
        elif not isinstance(target, _TABLE_FUNCTIONS):
            raise SqlError(FEATURE_NOT_SUPPORTED, "only catalogued table functions can stand in FROM")


def check_calls(spark_sql: str) -> None:
    """Every function the Spark SQL text calls is one our catalog's entries become.

    A call is a name - bare or quoted - before a parenthesis; a name after AS is an
    alias with its column list (`AS t(a, b)`), not a call."""
    tokens = _TOKENIZER.tokenize(spark_sql)
    previous = None
    for tok, nxt in itertools.pairwise(tokens):
        if tok.comments:
            raise SqlError(FEATURE_NOT_SUPPORTED, "comments are not passed to Spark")
        if nxt.token_type == TokenType.L_PAREN and (previous is None or previous.token_type != TokenType.ALIAS):
            quoted = tok.token_type == TokenType.IDENTIFIER
            name = tok.text.lower()
            if (quoted or _WORD.match(name)) and name not in SPARK_FUNCTIONS and (quoted or name not in _NOT_CALLS):
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} does not exist")
        previous = tok
    if tokens and tokens[-1].comments:
        raise SqlError(FEATURE_NOT_SUPPORTED, "comments are not passed to Spark")


_WORD = re.compile(r"^[a-z_][a-z0-9_]*$")


def cte_columns_as_aliases(tree: exp.Expression) -> None:
    """`WITH c(x) AS (SELECT a ...)` as `WITH c AS (SELECT a AS x ...)`, in place, so that a
    name before a parenthesis is a call unless it follows AS (see check_calls). A union's
    first branch names its columns, also in a recursive CTE; anything else is wrapped:
    `WITH c AS (SELECT * FROM (q) AS c(x))`."""
    for cte in list(tree.find_all(exp.CTE)):
        alias = cte.args.get("alias")
        columns = alias.args.get("columns") if alias is not None else None
        if not columns:
            continue
        first = cte.this
        while isinstance(first, exp.SetOperation):
            first = first.this
        names = [c.name for c in columns]
        if isinstance(first, exp.Select) and len(first.expressions) == len(names) \
                and not any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
                            for e in first.expressions):
            first.set("expressions", [exp.alias_(e.unalias(), exp.to_identifier(n, quoted=True))
                                      for e, n in zip(first.expressions, names)])
        else:
            inner = exp.Subquery(this=cte.this, alias=exp.TableAlias(
                this=exp.to_identifier(alias.name), columns=[c.copy() for c in columns]))
            cte.set("this", exp.select("*").from_(inner))
        alias.set("columns", None)


def spark_sql(tree: exp.Expression) -> str:
    """The Spark SQL of a resolved tree, checked: the only way translated SQL reaches Spark."""
    text = tree.sql("spark", comments=False)
    check_calls(text)
    return text
