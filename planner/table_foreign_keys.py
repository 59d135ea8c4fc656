"""FOREIGN KEY constraints as CREATE TABLE and ALTER TABLE … ADD CONSTRAINT write them, read
from PostgreSQL's parse tree.

`a int REFERENCES p [(id)]` on a column and `[CONSTRAINT n] FOREIGN KEY (a, b) REFERENCES p
[(x, y)]` on the table both become a `ForeignKeySpec`. sparkwire enforces NO ACTION and
RESTRICT (the row's referenced key must exist; a referenced key cannot go while rows refer to
it), MATCH SIMPLE (a key with a NULL column refers to nothing), and DEFERRABLE INITIALLY
DEFERRED (checked at COMMIT instead of at the statement); ON DELETE and ON UPDATE CASCADE,
SET NULL and SET DEFAULT change the referring rows (server.referential_actions). MATCH FULL
and SET NULL (columns) are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node, names


class Action(Enum):
    """What removing or changing a referenced key does to the rows referring to it, by
    pg_constraint's letter (confdeltype, confupdtype)."""

    NO_ACTION = "a"
    RESTRICT = "r"
    CASCADE = "c"
    SET_NULL = "n"
    SET_DEFAULT = "d"

    @property
    def sql(self) -> str:
        return self.name.replace("_", " ")

    @property
    def changes_rows(self) -> bool:
        """CASCADE, SET NULL, SET DEFAULT; the other two refuse the change instead."""
        return self not in (Action.NO_ACTION, Action.RESTRICT)


@dataclass(frozen=True)
class ForeignKeySpec:
    """One FOREIGN KEY as written: its columns, the table and columns it refers to (() for
    that table's primary key), and when it is checked."""

    columns: tuple[str, ...]
    table: str
    ref_columns: tuple[str, ...] = ()
    name: str | None = None
    deferrable: bool = False
    deferred: bool = False  # INITIALLY DEFERRED: checked at COMMIT
    validate: bool = True  # False: NOT VALID (ALTER TABLE does not check the rows there are)
    on_delete: Action = Action.NO_ACTION
    on_update: Action = Action.NO_ACTION


def table_foreign_keys(create: Node) -> tuple[ForeignKeySpec, ...]:
    """The foreign keys a CreateStmt declares, in the order written."""
    out: list[ForeignKeySpec] = []
    for element in create.get("tableElts") or ():
        if "ColumnDef" in element:
            column = element["ColumnDef"]
            constraints = [c["Constraint"] for c in column.get("constraints") or ()]
            for i, c in enumerate(constraints):
                if c["contype"] == "CONSTR_FOREIGN":
                    out.append(foreign_key_spec(c, (column["colname"],), _attributes(constraints[i + 1:])))
        elif "Constraint" in element and element["Constraint"]["contype"] == "CONSTR_FOREIGN":
            c = element["Constraint"]
            out.append(foreign_key_spec(c, tuple(names(c.get("fk_attrs")))))
    return tuple(out)


def attribute_kinds() -> frozenset[str]:
    """The column-constraint kinds that qualify the constraint before them (DEFERRABLE, …)."""
    return frozenset({"CONSTR_ATTR_DEFERRABLE", "CONSTR_ATTR_NOT_DEFERRABLE", "CONSTR_ATTR_DEFERRED",
                      "CONSTR_ATTR_IMMEDIATE"})


def _attributes(following: list[Node]) -> tuple[bool, bool]:
    """(deferrable, deferred) from the attribute constraints right after a column's REFERENCES."""
    deferrable = deferred = False
    for c in following:
        kind = c["contype"]
        if kind not in attribute_kinds():
            break
        deferrable = deferrable or kind in ("CONSTR_ATTR_DEFERRABLE", "CONSTR_ATTR_DEFERRED")
        deferred = deferred or kind == "CONSTR_ATTR_DEFERRED"
    return deferrable, deferred


def foreign_key_spec(c: Node, columns: tuple[str, ...], attributes: tuple[bool, bool] | None = None) -> ForeignKeySpec:
    if c.get("fk_del_set_cols"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "FOREIGN KEY ... ON DELETE SET NULL (columns) is not supported",
                       hint="Without the column list, every referencing column is set.")
    if c.get("fk_matchtype") not in (None, "s"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "FOREIGN KEY ... MATCH FULL is not supported")
    table = c["pktable"]
    if table.get("schemaname") not in (None, "public"):
        raise SqlError("3F000", f'schema "{table["schemaname"]}" does not exist')
    deferrable, deferred = attributes or (bool(c.get("deferrable")), bool(c.get("initdeferred")))
    return ForeignKeySpec(columns, table["relname"], tuple(names(c.get("pk_attrs"))), c.get("conname"),
                          deferrable or deferred, deferred, not c.get("skip_validation", False),
                          Action(c.get("fk_del_action") or "a"), Action(c.get("fk_upd_action") or "a"))
