"""ALTER TABLE's actions applied, in order, to a table's catalog item (pure: no I/O).

The result is the table as the statement leaves it, plus what the server must do with
its rows: whether they are rewritten (ADD/DROP COLUMN change the stored layout) and, per
new column, where its values come from; which views a DROP COLUMN ... CASCADE drops and
which `SELECT *` views are pinned to the columns they had. Errors are PostgreSQL's,
raised before anything is changed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sqlglot import exp

from planner import alter_syntax as alt
from planner import sequences as seq
from planner import table_keys, table_sequences
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.sequences import nextval_default, nextval_literal
from server import check_constraints, foreign_keys, sequences
from server.catalog import Catalog
from server.catalog_items import Column, Item, UniqueKey

DUPLICATE_COLUMN = "42701"
UNDEFINED_COLUMN = "42703"
UNDEFINED_OBJECT = "42704"
INVALID_TABLE_DEFINITION = "42P16"
DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
MAX_ATTNUM = "max_attnum"  # details: the highest attnum a dropped column had


@dataclass(frozen=True)
class NewColumn:
    """A column ADD COLUMN made: existing rows get its default as it was when added, or,
    for a serial or identity column, each its own next value of `sequence` (made with it)."""

    default: exp.Expression | None
    sequence: str | None = None  # the id of the sequence among AlterPlan.created


@dataclass
class AlterPlan:
    table: Item  # as the statement leaves it
    # Per column of `table`: the position it had before (int), or the column it adds.
    sources: list[int | NewColumn]
    rewrite: bool  # whether the stored rows change layout (a column added or dropped)
    dropped_views: list[Item] = field(default_factory=list)  # by DROP COLUMN ... CASCADE
    pinned_views: list[Item] = field(default_factory=list)  # `SELECT *` views kept to their columns
    notices: list[tuple[str, str]] = field(default_factory=list)
    validate: list[str] = field(default_factory=list)  # the CHECKs added, to check against the rows
    created: list[Item] = field(default_factory=list)  # sequences made for identity columns
    dropped: list[Item] = field(default_factory=list)  # sequences of identity columns that stop being one


def plan_alter(catalog: Catalog, table: Item, actions: tuple[alt.Action, ...]) -> AlterPlan:
    """`actions` applied to `table` (a table of `catalog`, not fed by a source)."""
    work = _Work(catalog, table)
    for action in actions:
        work.apply(action)
    return work.finish()


class _Work:
    def __init__(self, catalog: Catalog, table: Item) -> None:
        self.catalog = catalog
        self.old = table
        self.table = dataclasses.replace(table, columns=tuple(
            dataclasses.replace(c, attnum=n) for c, n in zip(table.columns, table.attnums())))
        self.sources: list[int | NewColumn] = list(range(len(table.columns)))
        self.dropped_views: dict[str, Item] = {}
        self.notices: list[tuple[str, str]] = []
        self.validate: list[str] = []  # checks added, to be checked against the rows
        self.created: list[Item] = []  # sequences for identity columns
        self.dropped: list[Item] = []  # sequences of DROP IDENTITY and of dropped columns
        self.max_attnum = max([*table.attnums(), table.details.get(MAX_ATTNUM, 0)])

    # -- helpers ------------------------------------------------------------------------
    def _position(self, name: str) -> int:
        pos = next((i for i, c in enumerate(self.table.columns) if c.name == name), None)
        if pos is None:
            raise SqlError(UNDEFINED_COLUMN, f'column "{name}" of relation "{self.table.name}" does not exist')
        return pos

    def _set_column(self, pos: int, column: Column) -> None:
        cols = list(self.table.columns)
        cols[pos] = column
        self.table = dataclasses.replace(self.table, columns=tuple(cols))

    # -- actions ------------------------------------------------------------------------
    def apply(self, action: alt.Action) -> None:
        match action:
            case alt.AddColumn():
                self._add_column(action)
            case alt.DropColumn():
                self._drop_column(action)
            case alt.SetDefault(name, default):
                pos = self._position(name)
                if self.table.columns[pos].identity is not None:
                    raise SqlError("42601", f'column "{name}" of relation "{self.table.name}" is an identity column',
                                   hint="Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.")
                named = nextval_literal(default) if default is not None else None
                if named is not None and self.catalog.get(named) is None:
                    raise SqlError("42P01", f'relation "{named}" does not exist')
                sql = (nextval_default(named) if named is not None
                       else default.sql("postgres") if default is not None else None)
                self._set_column(pos, dataclasses.replace(self.table.columns[pos], default=sql))
            case alt.AddForeignKey(spec):
                self.table = dataclasses.replace(self.table, foreign_keys=self.table.foreign_keys + foreign_keys.plan(
                    self.catalog, self.table.name, self.table.id, self.table.columns, self.table.unique_sets, [spec],
                    self.table.foreign_keys))
            case alt.AddIdentity(name, constraint):
                self._add_identity(self._position(name), constraint)
            case alt.SetIdentity(name, generated, options):
                pos = self._identity(name, False)
                if options:
                    raise SqlError(FEATURE_NOT_SUPPORTED, f"ALTER TABLE ... ALTER COLUMN ... SET {options[0]} is not "
                                                          "supported", hint="ALTER SEQUENCE on the column's sequence "
                                                                            "changes its options.")
                if generated is not None:
                    self._set_column(pos, dataclasses.replace(self.table.columns[pos], identity=generated))
            case alt.DropIdentity(name, if_exists):
                pos = self._identity(name, if_exists)
                if pos is not None:
                    column = self.table.columns[pos]
                    sequence = sequences.column_sequence(self.catalog, self.old, column)
                    self.dropped += [sequence] if sequence is not None else []
                    self._set_column(pos, dataclasses.replace(column, identity=None))
            case alt.SetNotNull(name, not_null):
                pos = self._position(name)
                if not not_null and any(k.primary and name in k.columns for k in self.table.keys):
                    raise SqlError(INVALID_TABLE_DEFINITION, f'column "{name}" is in a primary key')
                self._set_column(pos, dataclasses.replace(self.table.columns[pos], not_null=not_null))
            case alt.AddKey(spec):
                self._add_key(spec)
            case alt.AddCheck(spec):
                own = tuple(k.name for k in self.table.keys) + tuple(c.name for c in self.table.checks)
                (check,) = check_constraints.plan_checks(self.catalog, self.table.name, self.table.column_names,
                                                         (spec,), own)
                self.table = dataclasses.replace(self.table, checks=(*self.table.checks, check))
                if spec.validate:
                    self.validate.append(check.name)
            case alt.DropConstraint():
                self._drop_constraint(action)

    def _add_column(self, action: alt.AddColumn) -> None:
        col = action.column
        if self.table.column(col.name) is not None:
            if action.if_not_exists:
                self.notices.append(("NOTICE", (f'column "{col.name}" of relation "{self.table.name}" '
                                               "already exists, skipping")))
                return
            raise SqlError(DUPLICATE_COLUMN, f'column "{col.name}" of relation "{self.table.name}" already exists')
        if col.sequence is None and col.default is not None and nextval_literal(col.default) is not None:
            # Each existing row would take its own value of a sequence that exists already.
            raise SqlError(FEATURE_NOT_SUPPORTED, "ALTER TABLE ... ADD COLUMN with a DEFAULT of nextval is not "
                                                  "supported",
                           hint="Add the column with ADD COLUMN c integer, then SET DEFAULT nextval('seq'), or add "
                                "it as serial.")
        self.max_attnum += 1
        column = Column(col.name, col.type, col.not_null,
                        col.default.sql("postgres") if col.default is not None else None, self.max_attnum)
        sequence = None
        if col.sequence is not None:  # serial or identity: a sequence of its own, drawn from row by row
            sequence = self._new_sequence(column.name, col.sequence)
            column = (dataclasses.replace(column, default=nextval_default(sequence.name))
                      if col.sequence.identity is None else dataclasses.replace(column, identity=col.sequence.identity))
        self.table = dataclasses.replace(self.table, columns=(*self.table.columns, column))
        self.sources.append(NewColumn(col.default, sequence.id if sequence is not None else None))

    def _new_sequence(self, column: str, generated: table_sequences.ColumnSequence) -> Item:
        """The sequence a serial or identity column owns, named as PostgreSQL names it
        (`t_c_seq`, `t_c_seq1`, … while the name is taken), unless SEQUENCE NAME gave one."""
        taken = {i.name for i in self.catalog.items.values()} | self.catalog.index_names() | \
            {i.name for i in self.created}
        name = generated.name or table_keys.chosen_name(self.table.name, column, "seq", taken)
        if name in taken:
            raise SqlError("42P07", f'relation "{name}" already exists')
        made = Item(self.catalog.allocate_id(), name, sequences.KIND, (), self.old.created_at,
                    details=sequences.details(generated.spec, seq.start_state(generated.spec),
                                              (self.table.id, column), generated.identity is not None))
        self.created.append(made)
        return made

    def _identity(self, name: str, if_not: bool) -> int | None:
        """The position of identity column `name`; 55000 for another column (with `if_not`,
        a NOTICE and None)."""
        pos = self._position(name)
        if self.table.columns[pos].identity is not None:
            return pos
        message = f'column "{name}" of relation "{self.table.name}" is not an identity column'
        if not if_not:
            raise SqlError("55000", message)
        self.notices.append(("NOTICE", f"{message}, skipping"))
        return None

    def _add_identity(self, pos: int, constraint: object) -> None:
        """ALTER COLUMN … ADD GENERATED … AS IDENTITY: the column draws from a new sequence it
        owns (what pg_dump writes for an identity column)."""
        column = self.table.columns[pos]
        where = f'column "{column.name}" of relation "{self.table.name}"'
        # The sequence's options first (22023 for the column's type), as PostgreSQL reads them
        # before it looks at the column.
        generated = table_sequences.identity_sequence(column.type.base.name if not column.type.is_array else "",
                                                      constraint)
        if column.identity is not None:
            raise SqlError("55000", f"{where} is already an identity column")
        if column.default is not None:
            raise SqlError("55000", f"{where} already has a default value")
        if not column.not_null:
            raise SqlError("55000", f"{where} must be declared NOT NULL before identity can be added")
        self._new_sequence(column.name, generated)
        self._set_column(pos, dataclasses.replace(column, identity=generated.identity))

    def _drop_column(self, action: alt.DropColumn) -> None:
        name = action.name
        if self.table.column(name) is None:
            if action.if_exists:
                self.notices.append(("NOTICE", (f'column "{name}" of relation "{self.table.name}" '
                                               "does not exist, skipping")))
                return
            self._position(name)  # raises
        used = foreign_keys.referring_to_column(self.catalog, self.table, name)
        if used is not None:
            key = next((k.name for k in self.table.unique_sets if set(k.columns) == set(used[1].ref_columns)), "")
            raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                           f"cannot drop column {name} of table {self.table.name} because other objects depend on it",
                           detail=f"constraint {used[1].name} on table {used[0].name} depends on index {key}",
                           hint="Use DROP ... CASCADE to drop the dependent objects too.")
        # The table's own foreign keys over the column go with it, as its keys do.
        self.table = dataclasses.replace(self.table, foreign_keys=tuple(
            f for f in self.table.foreign_keys if name not in f.columns and name not in f.ref_columns))
        readers = sorted((v for v in self.catalog.items.values()
                          if v.kind == "view" and self.table.id in v.depends_on and v.id not in self.dropped_views
                          and v.sql and alt.view_reads_column(v.sql, name, v.column_names)), key=lambda v: v.oid)
        # PostgreSQL's detail: each view reading the column, then what depends on it, depth first.
        lines: list[str] = []
        victims: list[Item] = []

        def visit(view: Item, line: str) -> None:
            if any(v.id == view.id for v in victims):
                return
            victims.append(view)
            lines.append(line)
            for other in sorted((o for o in self.catalog.items.values() if view.id in o.depends_on),
                                key=lambda o: o.oid):
                visit(other, f"{other.kind} {other.name} depends on {view.kind} {view.name}")

        for view in readers:
            visit(view, f"view {view.name} depends on column {name} of table {self.table.name}")
        if readers and not action.cascade:
            raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                           f"cannot drop column {name} of table {self.table.name} because other objects depend on it",
                           detail="\n".join(lines), hint="Use DROP ... CASCADE to drop the dependent objects too.")
        for victim in victims:
            self.dropped_views.setdefault(victim.id, victim)
        if len(self.table.columns) == 1:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'cannot drop column {name}: it is the only column of table '
                                                  f'"{self.table.name}"',
                           hint="sparkwire tables have at least one column.")
        pos = self._position(name)
        dropped = self.table.columns[pos]
        self.max_attnum = max(self.max_attnum, dropped.attnum or 0)
        self.dropped += sequences.owned_by(self.catalog, self.table.id, name)  # a serial's sequence goes with it
        # As PostgreSQL: the keys and indexes on the column go with it.
        self.table = dataclasses.replace(
            self.table, columns=self.table.columns[:pos] + self.table.columns[pos + 1:],
            keys=tuple(k for k in self.table.keys if name not in k.columns),
            indexes=tuple(i for i in self.table.indexes if name not in i.columns),
            checks=tuple(c for c in self.table.checks if name not in c.columns))
        del self.sources[pos]

    def _add_key(self, spec: table_keys.KeySpec) -> None:
        taken = ({i.name for i in self.catalog.items.values() if i.id != self.table.id}
                 | {n for i in self.catalog.items.values() if i.id != self.table.id for n in i.index_names}
                 | set(self.table.index_names))
        if spec.primary and any(k.primary for k in self.table.keys):
            raise SqlError(INVALID_TABLE_DEFINITION, f'multiple primary keys for table "{self.table.name}" are not allowed')
        for col in spec.columns:
            if self.table.column(col) is None:
                raise SqlError(UNDEFINED_COLUMN, f'column "{col}" named in key does not exist')
        (resolved,) = table_keys.resolved_keys(self.table.name, self.table.column_names, (spec,), taken)
        for col in resolved.columns:
            t = self.table.column(col).type
            if t.base.name == "json" and not t.is_array:
                raise SqlError(UNDEFINED_OBJECT, 'data type json has no default operator class for access method "btree"',
                               hint="You must specify an operator class for the index or define a default "
                                    "operator class for the data type.")
        key = UniqueKey(resolved.name, resolved.columns, resolved.primary, self.catalog.allocate_id())
        self.table = dataclasses.replace(self.table, keys=(*self.table.keys, key))
        if key.primary:  # PostgreSQL makes a primary key's columns NOT NULL
            for col in key.columns:
                pos = self._position(col)
                self._set_column(pos, dataclasses.replace(self.table.columns[pos], not_null=True))

    def _drop_constraint(self, action: alt.DropConstraint) -> None:
        if any(f.name == action.name for f in self.table.foreign_keys):
            self.table = dataclasses.replace(self.table, foreign_keys=tuple(
                f for f in self.table.foreign_keys if f.name != action.name))
            return
        key = next((k for k in self.table.keys if k.name == action.name), None)
        used = foreign_keys.key_in_use(self.catalog, self.old, key.columns) if key is not None else None
        if used is not None and used[0].id != self.table.id:
            raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                           f'cannot drop constraint {key.name} on table {self.table.name} because other objects '
                           "depend on it",
                           detail=f"constraint {used[1].name} on table {used[0].name} depends on index {key.name}",
                           hint="Use DROP ... CASCADE to drop the dependent objects too.")
        if any(c.name == action.name for c in self.table.checks):
            self.table = dataclasses.replace(self.table, checks=tuple(c for c in self.table.checks
                                                                      if c.name != action.name))
            return
        if not any(k.name == action.name for k in self.table.keys):
            if action.if_exists:
                self.notices.append(("NOTICE", (f'constraint "{action.name}" of relation "{self.table.name}" '
                                               "does not exist, skipping")))
                return
            raise SqlError(UNDEFINED_OBJECT, f'constraint "{action.name}" of relation "{self.table.name}" does not exist')
        self.table = dataclasses.replace(self.table, keys=tuple(k for k in self.table.keys if k.name != action.name))

    # -- the result -------------------------------------------------------------------------
    def finish(self) -> AlterPlan:
        rewrite = self.sources != list(range(len(self.old.columns)))
        if rewrite:
            table = self.table
            details = {k: v for k, v in table.details.items() if k != MAX_ATTNUM}
            if self.max_attnum == len(table.columns) and all(
                    c.attnum == i for i, c in enumerate(table.columns, start=1)):
                # No gap: stored as a table never altered is.
                columns = tuple(dataclasses.replace(c, attnum=None) for c in table.columns)
            else:
                columns, details = table.columns, {**details, MAX_ATTNUM: self.max_attnum}
            table = dataclasses.replace(table, columns=columns, details=details)
        else:  # the same columns: their attnums as they were stored
            table = dataclasses.replace(self.table, columns=tuple(
                dataclasses.replace(old, default=new.default, not_null=new.not_null, identity=new.identity)
                for old, new in zip(self.old.columns, self.table.columns)))
        pinned = []
        if any(isinstance(s, NewColumn) for s in self.sources):
            for view in self.catalog.items.values():
                if (view.kind == "view" and table.id in view.depends_on and view.id not in self.dropped_views
                        and view.sql and alt.view_has_star(view.sql)):
                    cols = ", ".join('"' + c.name.replace('"', '""') + '"' for c in view.columns)
                    pinned.append(dataclasses.replace(view, sql=f"SELECT {cols} FROM ({view.sql}) AS __view"))
        return AlterPlan(table, self.sources, rewrite, list(self.dropped_views.values()), pinned, self.notices,
                         [n for n in self.validate if any(c.name == n for c in table.checks)], self.created,
                         self.dropped)
