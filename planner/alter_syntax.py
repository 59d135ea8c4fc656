"""ALTER TABLE and ALTER ... RENAME, read from PostgreSQL's parse tree.

One ALTER TABLE may hold several actions; they are read here in order and applied by
the server as one change (all or nothing). The actions sparkwire implements:
ADD/DROP COLUMN, ALTER COLUMN SET/DROP DEFAULT and SET/DROP NOT NULL, ADD CONSTRAINT
PRIMARY KEY/UNIQUE and DROP CONSTRAINT; RENAME of a table, a view or a column. Every
other subcommand is refused by name (0A000) before anything is changed, so a statement
is never half applied.

A column definition or a default is turned back into SQL text by pglast and read the way
CREATE TABLE reads it (the caller passes that reader), so its types, defaults and
refusals are CREATE TABLE's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pglast
from pglast.stream import RawStream
from sqlglot import exp

from planner import pg_parse, table_keys
from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_parse import Node
from planner.sequences import sequence_name
from planner.table_checks import CheckSpec, check_spec
from planner.table_foreign_keys import ForeignKeySpec, foreign_key_spec
from planner.table_keys import KeySpec
from planner.table_sequences import ALWAYS, BY_DEFAULT


@dataclass(frozen=True)
class AddColumn:
    column: st.ColumnDef
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropColumn:
    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class SetDefault:
    column: str
    default: exp.Expression | None  # None: DROP DEFAULT


@dataclass(frozen=True)
class SetNotNull:
    column: str
    not_null: bool


@dataclass(frozen=True)
class AddKey:
    key: KeySpec


@dataclass(frozen=True)
class AddCheck:
    check: CheckSpec


@dataclass(frozen=True)
class DropConstraint:
    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class AddIdentity:
    """ALTER COLUMN c ADD GENERATED … AS IDENTITY [(options)]: its constraint as PostgreSQL's
    grammar read it (options are read against the column's type when the action applies)."""

    column: str
    constraint: object  # pglast's ast.Constraint


@dataclass(frozen=True)
class SetIdentity:
    """ALTER COLUMN c SET GENERATED { ALWAYS | BY DEFAULT }: the identity's kind
    (table_sequences.ALWAYS or BY_DEFAULT; None: as it is). `options`: the sequence options
    PostgreSQL also takes there (RESTART, INCREMENT BY, …), refused by name once the column
    is known to be an identity column: ALTER SEQUENCE changes them."""

    column: str
    generated: str | None
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class DropIdentity:
    """ALTER COLUMN c DROP IDENTITY [IF EXISTS]: the column stops drawing from its sequence,
    which goes with it."""

    column: str
    if_exists: bool = False


@dataclass(frozen=True)
class AddForeignKey:
    spec: ForeignKeySpec


Action = (AddColumn | DropColumn | SetDefault | SetNotNull | AddKey | AddCheck | DropConstraint | AddIdentity
          | SetIdentity | DropIdentity | AddForeignKey)


@dataclass(frozen=True)
class AlterTable(st.Statement):
    table: str
    actions: tuple[Action, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class RenameColumn(st.Statement):
    table: str
    old: str
    new: str
    if_exists: bool = False
    object_type: str = "TABLE"  # as written: ALTER TABLE or ALTER VIEW


@dataclass(frozen=True)
class RenameRelation(st.Statement):
    name: str
    new: str
    if_exists: bool = False
    object_type: str = "TABLE"


# PostgreSQL's subcommands that sparkwire does not implement, by how they are written.
_REFUSED = {
    "AT_AlterColumnType": "ALTER COLUMN ... TYPE",
    "AT_SetStatistics": "ALTER COLUMN ... SET STATISTICS",
    "AT_SetStorage": "ALTER COLUMN ... SET STORAGE",
    "AT_SetCompression": "ALTER COLUMN ... SET COMPRESSION",
    "AT_SetOptions": "ALTER COLUMN ... SET (options)",
    "AT_ResetOptions": "ALTER COLUMN ... RESET (options)",
    "AT_AddIdentity": "ALTER COLUMN ... ADD GENERATED AS IDENTITY",
    "AT_DropExpression": "ALTER COLUMN ... DROP EXPRESSION",
    "AT_AlterConstraint": "ALTER CONSTRAINT",
    "AT_ValidateConstraint": "VALIDATE CONSTRAINT",
    "AT_AddIndexConstraint": "ADD CONSTRAINT ... USING INDEX",
    "AT_ChangeOwner": "OWNER TO",
    "AT_ClusterOn": "CLUSTER ON",
    "AT_DropCluster": "SET WITHOUT CLUSTER",
    "AT_SetLogged": "SET LOGGED",
    "AT_SetUnLogged": "SET UNLOGGED",
    "AT_SetAccessMethod": "SET ACCESS METHOD",
    "AT_SetTableSpace": "SET TABLESPACE",
    "AT_SetRelOptions": "SET (storage parameters)",
    "AT_ResetRelOptions": "RESET (storage parameters)",
    "AT_ReplaceRelOptions": "SET (storage parameters)",
    "AT_EnableTrig": "ENABLE TRIGGER",
    "AT_DisableTrig": "DISABLE TRIGGER",
    "AT_EnableTrigAll": "ENABLE TRIGGER ALL",
    "AT_DisableTrigAll": "DISABLE TRIGGER ALL",
    "AT_EnableTrigUser": "ENABLE TRIGGER USER",
    "AT_DisableTrigUser": "DISABLE TRIGGER USER",
    "AT_EnableRule": "ENABLE RULE",
    "AT_DisableRule": "DISABLE RULE",
    "AT_EnableRowSecurity": "ENABLE ROW LEVEL SECURITY",
    "AT_DisableRowSecurity": "DISABLE ROW LEVEL SECURITY",
    "AT_ForceRowSecurity": "FORCE ROW LEVEL SECURITY",
    "AT_NoForceRowSecurity": "NO FORCE ROW LEVEL SECURITY",
    "AT_AddInherit": "INHERIT",
    "AT_DropInherit": "NO INHERIT",
    "AT_AddOf": "OF type",
    "AT_DropOf": "NOT OF",
    "AT_ReplicaIdentity": "REPLICA IDENTITY",
    "AT_AttachPartition": "ATTACH PARTITION",
    "AT_DetachPartition": "DETACH PARTITION",
    "AT_GenericOptions": "OPTIONS",
}
_HINT = ("sparkwire's ALTER TABLE implements ADD/DROP COLUMN, ALTER COLUMN SET/DROP DEFAULT and "
         "SET/DROP NOT NULL, ADD CONSTRAINT PRIMARY KEY/UNIQUE/CHECK, DROP CONSTRAINT and RENAME.")
_RENAMED_KINDS = {"OBJECT_TABLE": "TABLE", "OBJECT_VIEW": "VIEW"}

ColumnReader = Callable[[str], st.CreateTable]  # CREATE TABLE text → its statement
ExpressionReader = Callable[[str], exp.Expression]  # an expression's text → its sqlglot tree
NameReader = Callable[[str | None, str], str]  # (schema, relation) from the parse tree → our name


def parse_alter(text: str, read_table: ColumnReader, read_expression: ExpressionReader,
                name_of: NameReader) -> st.Statement:
    """ALTER TABLE / ALTER VIEW text (not SWAP WITH) as a statement."""
    node = pg_parse.parse_one(text)
    kind = pg_parse.node_type(node)
    if kind == "RenameStmt":
        return _rename(node[kind], name_of)
    if kind != "AlterTableStmt" or node[kind].get("objtype") != "OBJECT_TABLE":
        what = {"OBJECT_VIEW": "ALTER VIEW", "OBJECT_INDEX": "ALTER INDEX", "OBJECT_MATVIEW":
                "ALTER MATERIALIZED VIEW", "OBJECT_SEQUENCE": "ALTER SEQUENCE"}.get(
                    node[kind].get("objtype", ""), "this ALTER statement")
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not supported" if kind == "AlterTableStmt"
                       else "this ALTER statement is not supported",
                       hint="ALTER VIEW ... RENAME TO is supported." if "VIEW" in what else None)
    stmt = node[kind]
    # The same statement as pglast's node objects: what is turned back into SQL text.
    objects = pglast.parse_sql(text)[0].stmt
    actions: list[Action] = []
    for raw, cmd in zip(stmt["cmds"], objects.cmds):
        actions.extend(_action(raw["AlterTableCmd"], cmd, text, read_table, read_expression))
    return AlterTable(_relation(stmt["relation"], name_of), tuple(actions), bool(stmt.get("missing_ok")))


def _set_identity(cmd: Node) -> SetIdentity:
    generated, options = None, []
    for item in cmd["def"]["List"]["items"]:
        d = item["DefElem"]
        if d["defname"] == "generated":
            generated = ALWAYS if d["arg"]["Integer"]["ival"] == ord("a") else BY_DEFAULT
        else:
            options.append(d["defname"].upper())
    return SetIdentity(cmd["name"], generated, tuple(options))


def _sequence_name(column: object) -> str | None:
    """An identity column's `SEQUENCE NAME`, taken off its options: pglast's deparser
    writes it as `SEQUENCE_NAME (…)`, which no parser reads."""
    for constraint in getattr(column, "constraints", None) or ():
        options = list(getattr(constraint, "options", None) or ())
        named = sequence_name(options)
        if named is not None:
            constraint.options = tuple(o for o in options if o.defname != "sequence_name") or None
            return named
    return None


def _relation(relation: Node, name_of: NameReader) -> str:
    return name_of(relation.get("schemaname"), relation["relname"])


def _action(cmd: Node, obj, text: str, read_table: ColumnReader, read_expression: ExpressionReader) -> list[Action]:
    subtype = cmd["subtype"]
    cascade = cmd.get("behavior") == "DROP_CASCADE"
    match subtype:
        case "AT_AddColumn":
            named = _sequence_name(obj.def_)
            table = read_table(f"CREATE TABLE __alter ({RawStream()(obj.def_)})")
            column = table.columns[0]
            if named is not None and column.sequence is not None:
                column = replace(column, sequence=replace(column.sequence, name=named))
            keys = [AddKey(KeySpec((column.name,), k.primary, k.name)) for k in table.keys]
            return [AddColumn(column, bool(cmd.get("missing_ok"))), *keys, *(AddCheck(c) for c in table.checks)]
        case "AT_DropColumn":
            return [DropColumn(cmd["name"], bool(cmd.get("missing_ok")), cascade)]
        case "AT_ColumnDefault":
            default = read_expression(RawStream()(obj.def_)) if cmd.get("def") else None
            return [SetDefault(cmd["name"], default)]
        case "AT_SetNotNull" | "AT_DropNotNull":
            return [SetNotNull(cmd["name"], subtype == "AT_SetNotNull")]
        case "AT_AddConstraint":
            c = cmd["def"]["Constraint"]
            if c.get("contype") == "CONSTR_CHECK":
                return [AddCheck(check_spec(c, text, None))]
            if c.get("contype") == "CONSTR_FOREIGN":
                return [AddForeignKey(foreign_key_spec(c, tuple(pg_parse.names(c.get("fk_attrs")))))]
            if c.get("contype") in ("CONSTR_PRIMARY", "CONSTR_UNIQUE") and not c.get("keys"):
                raise SqlError(FEATURE_NOT_SUPPORTED, "ADD CONSTRAINT ... USING INDEX is not supported")
            key = table_keys.key_spec(c, tuple(pg_parse.names(c.get("keys"))))
            if key is None:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"ADD CONSTRAINT {c['contype'].removeprefix('CONSTR_')} "
                                                      "is not supported", hint=_HINT)
            return [AddKey(key)]
        case "AT_DropConstraint":
            return [DropConstraint(cmd["name"], bool(cmd.get("missing_ok")), cascade)]
        case "AT_AddIdentity":
            return [AddIdentity(cmd["name"], obj.def_)]
        case "AT_DropIdentity":
            return [DropIdentity(cmd["name"], bool(cmd.get("missing_ok")))]
        case "AT_SetIdentity":
            return [_set_identity(cmd)]
    what = _REFUSED.get(subtype, subtype.removeprefix("AT_"))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"ALTER TABLE ... {what} is not supported", hint=_HINT)


def _rename(node: Node, name_of: NameReader) -> st.Statement:
    kind = node["renameType"]
    if_exists = bool(node.get("missing_ok"))
    if kind == "OBJECT_COLUMN" and node.get("relationType") in _RENAMED_KINDS:
        return RenameColumn(_relation(node["relation"], name_of), node["subname"], node["newname"], if_exists,
                            _RENAMED_KINDS[node["relationType"]])
    if kind in _RENAMED_KINDS:
        return RenameRelation(_relation(node["relation"], name_of), node["newname"], if_exists,
                              _RENAMED_KINDS[kind])
    what = {"OBJECT_TABCONSTRAINT": "ALTER TABLE ... RENAME CONSTRAINT", "OBJECT_INDEX": "ALTER INDEX ... RENAME",
            "OBJECT_MATVIEW": "ALTER MATERIALIZED VIEW ... RENAME"}.get(kind, "this RENAME")
    raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not supported", hint=_HINT)


def view_reads_column(view_sql: str, column: str, view_columns: list[str]) -> bool:
    """Whether a view's query may read `column` of a table it reads: it names a column so
    called, or takes every column with `*` and has one so called among its own (`*` took
    the columns there were when the view was made). PostgreSQL records which columns a view
    uses; sparkwire keeps the view's text, so a same-named column of another relation
    counts too: the answer errs towards refusing."""
    for kind, node in pg_parse.walk(pg_parse.parse_one(view_sql)):
        if kind == "ColumnRef":
            fields = node.get("fields") or ()
            last = fields[-1] if fields else {}
            if last.get("String", {}).get("sval") == column or ("A_Star" in last and column in view_columns):
                return True
    return False


def view_has_star(view_sql: str) -> bool:
    """Whether a view's query takes every column of something with `*`."""
    return any(kind == "ColumnRef" and "A_Star" in (node.get("fields") or [{}])[-1]
               for kind, node in pg_parse.walk(pg_parse.parse_one(view_sql)))
