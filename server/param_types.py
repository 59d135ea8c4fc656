"""The types of a statement's parameters, as a client learns them from ParameterDescription.

A client that leaves a parameter's type unspecified (OID 0) encodes its value by the type
the server reports, so it must be PostgreSQL's: a parameter beside a column or in a cast
takes that type (planner.params, which also reads statements the front end does not
cover); any other takes what the front end of our own gives it while binding, as
PostgreSQL's parse analysis does (`$1 + 1` is integer, `upper($1)` text, `$1 || 'x'`
text); text where neither tells.
"""

from __future__ import annotations

from collections.abc import Callable

from planner import statements as st
from planner.params import TEXT, infer_types
from planner.types import SqlType
from server import bound_query, sequence_calls, writes
from server.catalog import Catalog


def columns_of(catalog: Catalog) -> Callable[[str], list[tuple[str, SqlType]] | None]:
    def columns(name: str) -> list[tuple[str, SqlType]] | None:
        item = catalog.get(name)
        return [(c.name, c.type) for c in item.columns] if item else None

    return columns


def statement_param_types(stmt: st.Statement, numbers: list[int], declared: dict[int, int], catalog: Catalog,
                          frontend: bool) -> dict[int, SqlType]:
    """The type of each `$n` of `stmt` (`numbers`), `declared` by OID where the client gave
    one; `frontend`: the session binds with the front end of our own."""
    types = infer_types(stmt, numbers, declared, columns_of(catalog), untyped=None)
    if frontend and any(n not in types for n in numbers):
        types.update(_bound(stmt, catalog, types))
    for n in numbers:
        types.setdefault(n, TEXT)
    return types


def _bound(stmt: st.Statement, catalog: Catalog, known: dict[int, SqlType]) -> dict[int, SqlType]:
    text = getattr(stmt, "text", None)
    if not text:
        return {}
    if isinstance(stmt, st.Query):
        form = sequence_calls.computed_form(catalog, text)  # its parameters are in its arguments' query
        return bound_query.param_types(form.query if form else text, catalog, known)
    if isinstance(stmt, (st.Insert, st.Update, st.Delete)):
        item = catalog.get(stmt.table)
        if item is None or item.kind != "table":
            return {}
        positions = (writes.target_columns(item, stmt.columns) if isinstance(stmt, st.Insert)
                     else list(range(len(item.columns))))
        return bound_query.param_types(text, catalog, known, (item.name, writes.dml_targets(item, positions)))
    return {}
