"""CREATE INDEX and DROP INDEX, read from PostgreSQL's parse tree.

An index on columns is accepted and recorded (Spark reads whole tables, so no plan uses
it); a UNIQUE one is enforced. What an index of ours could not honour is refused by name:
indexes on expressions, partial indexes (WHERE), INCLUDE, and access methods other than
btree and hash.
"""

from __future__ import annotations

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node

_METHODS = {"btree", "hash"}
_OTHER_METHODS = {"gin", "gist", "spgist", "brin"}
_ORDERING = {"SORTBY_DEFAULT": "", "SORTBY_ASC": "", "SORTBY_DESC": "DESC"}
_NULLS = {"SORTBY_NULLS_DEFAULT": "", "SORTBY_NULLS_FIRST": "NULLS FIRST", "SORTBY_NULLS_LAST": "NULLS LAST"}
UNDEFINED_OBJECT = "42704"


def create_index(node: Node, table: str) -> st.CreateIndex:
    """An IndexStmt as a statement (`table`: its relation's name, checked by the caller)."""
    method = node.get("accessMethod", "btree")
    if method in _OTHER_METHODS:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{method} indexes are not supported",
                       hint="sparkwire records btree and hash indexes.")
    if method not in _METHODS:
        raise SqlError(UNDEFINED_OBJECT, f'access method "{method}" does not exist')
    if node.get("unique") and method != "btree":
        raise SqlError(FEATURE_NOT_SUPPORTED, f'access method "{method}" does not support unique indexes')
    for field, what in (("whereClause", "partial indexes (WHERE)"), ("indexIncludingParams", "INCLUDE"),
                        ("options", "WITH (storage parameters)"), ("tableSpace", "TABLESPACE")):
        if node.get(field):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE INDEX ... {what} is not supported")
    columns, orders = [], []
    for param in node.get("indexParams") or ():
        elem = param["IndexElem"]
        if "name" not in elem:
            raise SqlError(FEATURE_NOT_SUPPORTED, "indexes on expressions are not supported")
        if elem.get("collation") or elem.get("opclass"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "COLLATE and operator classes in an index are not supported")
        columns.append(elem["name"])
        direction = _ORDERING.get(elem.get("ordering", "SORTBY_DEFAULT"), "")
        nulls = _NULLS.get(elem.get("nulls_ordering", "SORTBY_NULLS_DEFAULT"), "")
        if nulls == ("NULLS FIRST" if direction else "NULLS LAST"):
            nulls = ""  # the direction's default, which PostgreSQL does not print
        orders.append(" ".join(w for w in (direction, nulls) if w))
    return st.CreateIndex(node.get("idxname"), table, tuple(columns), tuple(orders), bool(node.get("unique")),
                          method, bool(node.get("if_not_exists")), bool(node.get("concurrent")))
