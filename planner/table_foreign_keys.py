"""FOREIGN KEY constraints as CREATE TABLE and ALTER TABLE … ADD CONSTRAINT write them, read
from PostgreSQL's parse tree.

`a int REFERENCES p [(id)]` on a column and `[CONSTRAINT n] FOREIGN KEY (a, b) REFERENCES p
[(x, y)]` on the table both become a `ForeignKeySpec`. sparkwire enforces NO ACTION and
RESTRICT (the row's referenced key must exist; a referenced key cannot go while rows refer to
it), MATCH SIMPLE (a key with a NULL column refers to nothing), and DEFERRABLE INITIALLY
DEFERRED (checked at COMMIT instead of at the statement). The actions that change other rows
(CASCADE, SET NULL, SET DEFAULT) and MATCH FULL are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node, names

_ACTIONS = {"c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_KEPT = {"a", "r", None}  # NO ACTION, RESTRICT


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
    for field, what in (("fk_del_action", "ON DELETE"), ("fk_upd_action", "ON UPDATE")):
        action = c.get(field)
        if action not in _KEPT:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"FOREIGN KEY ... {what} {_ACTIONS.get(action, action)} is not "
                                                  "supported",
                           hint="sparkwire enforces NO ACTION and RESTRICT: a referenced key cannot be removed "
                                "while rows refer to it.")
    if c.get("fk_matchtype") not in (None, "s"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "FOREIGN KEY ... MATCH FULL is not supported")
    table = c["pktable"]
    if table.get("schemaname") not in (None, "public"):
        raise SqlError("3F000", f'schema "{table["schemaname"]}" does not exist')
    deferrable, deferred = attributes or (bool(c.get("deferrable")), bool(c.get("initdeferred")))
    return ForeignKeySpec(columns, table["relname"], tuple(names(c.get("pk_attrs"))), c.get("conname"),
                          deferrable or deferred, deferred, not c.get("skip_validation", False))
