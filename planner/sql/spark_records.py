"""A row value's text as PostgreSQL's record_out writes it (rowtypes.c), in Spark SQL.

`(f1,f2,…)`: each field is its type's output text, written bare, or in double quotes (with
`"` and `\\` doubled) when it is empty or holds `"`, `\\`, `(`, `)`, `,` or white space; a
NULL field is nothing at all (`(1,,x)`). The fields' texts are computed outside the lambda
that quotes them: a float's text is a Python UDF, which a Spark lambda cannot call.

Pure: builds sqlglot trees.
"""

from __future__ import annotations

from sqlglot import exp

from planner import sql_template

# Java's \s is C's isspace() in the C locale: space, \t, \n, \v, \f, \r.
_NEEDS_QUOTES = r'[",()\\\s]'


def record_text(field_texts: list[exp.Expression], var: str) -> exp.Expression:
    """`(…)` of the fields' output texts (STRING, NULL where a field is NULL); `var` names the
    quoting lambda's variable (unique in the query)."""
    if not field_texts:
        return exp.Literal.string("()")
    x = exp.column(var)
    quoted = sql_template.spark(
        "CASE WHEN {0} IS NULL THEN '' WHEN {0} = '' OR {0} RLIKE {1} "
        "THEN concat('\"', replace(replace({0}, {2}, {3}), '\"', '\"\"'), '\"') ELSE {0} END",
        x, exp.Literal.string(_NEEDS_QUOTES), exp.Literal.string("\\"), exp.Literal.string("\\\\"))
    texts = exp.Array(expressions=field_texts)
    each = exp.Anonymous(this="transform", expressions=[
        texts, exp.Lambda(this=quoted, expressions=[exp.to_identifier(var)])])
    return exp.Anonymous(this="concat", expressions=[
        exp.Literal.string("("), exp.Anonymous(this="array_join", expressions=[each, exp.Literal.string(",")]),
        exp.Literal.string(")")])
