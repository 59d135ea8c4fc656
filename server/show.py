"""SHOW OBJECTS/TABLES/VIEWS/…, SHOW COLUMNS and SHOW CREATE: Materialize's statements
describing the catalog, answered from it."""

from __future__ import annotations

from planner import statements as st
from planner.sql.coerce import BOOLEAN, TEXT
from server.outcome import Outcome, rows_outcome
from server.statement_context import StatementContext


async def show_objects(session: StatementContext, stmt: st.ShowObjects, params, ptypes) -> Outcome:
    kind = stmt.object_type
    if kind in ("tables", "views"):
        names = [(i.name,) for i in session.coord.catalog.sorted_items(kind[:-1])]
    elif kind == "objects":
        return rows_outcome(["name", "type"], [(i.name, i.kind) for i in session.coord.catalog.sorted_items()],
                            tag="SHOW")
    elif kind == "sources":
        rows = session.server_sources.status_rows() if session.server_sources else []
        return rows_outcome(["name", "type", "status", "error"], rows, tag="SHOW")
    elif kind in ("secrets", "connections"):
        names = [(i.name,) for i in session.coord.catalog.sorted_items(kind[:-1])]
    elif kind == "schemas":
        names = [("public",)]
    else:
        names = [(session.database,)]
    return rows_outcome(["name"], names, tag="SHOW")

async def show_columns(session: StatementContext, stmt: st.ShowColumns, params, ptypes) -> Outcome:
    item = session.coord.catalog.require(stmt.table)
    rows = [(c.name, not c.not_null, c.type.display()) for c in item.columns]
    return rows_outcome(["name", "nullable", "type"], rows, [TEXT, BOOLEAN, TEXT], tag="SHOW")

async def show_create(session: StatementContext, stmt: st.ShowCreate, params, ptypes) -> Outcome:
    item = session.coord.catalog.require(stmt.name, stmt.object_type.lower())
    if item.kind in ("source", "connection") or item.kind == "table" and item.source_id:
        sql = item.sql
    elif item.kind == "view":
        sql = f'CREATE VIEW "materialize"."public"."{item.name}" AS {item.sql}'
    else:
        cols = []
        for c in item.columns:
            text = f'"{c.name}" {c.type.display()}'
            if c.not_null:
                text += " NOT NULL"
            if c.default is not None:
                text += f" DEFAULT {c.default}"
            cols.append(text)
        sql = f'CREATE TABLE "materialize"."public"."{item.name}" ({", ".join(cols)})'
    return rows_outcome(["name", "create_sql"], [(f"materialize.public.{item.name}", sql)], tag="SHOW")


HANDLERS = {
    st.ShowObjects: show_objects,
    st.ShowColumns: show_columns,
    st.ShowCreate: show_create,
}
