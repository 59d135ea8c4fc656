"""SQL text → statements.

Standard statements (queries, DML, CREATE TABLE/VIEW) are parsed by sqlglot's
PostgreSQL dialect; the session-level and Materialize statements by small
hand-written parsers over `Scanner`. Anything else is rejected by name with
0A000 rather than misread.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from planner import (
    allowlist,
    alter_syntax,
    copy_syntax,
    ctas_syntax,
    index_syntax,
    multi_assign,
    pg_compat,
    pg_parse,
    prepare_syntax,
    sequence_syntax,
    source_syntax,
    subscribe_syntax,
    table_checks,
    table_foreign_keys,
    table_keys,
    table_sequences,
)
from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.lexer import Scanner, split_statements
from planner.types import SqlType, column_type


def parse(sql: str) -> list[st.Parsed]:
    """Every statement in a query string; raises SqlError on the first bad one."""
    out = []
    for piece in split_statements(sql):
        try:
            stmt = parse_statement(piece.text)
        except SqlError as err:
            if err.position is not None:
                err.position += piece.offset
            raise
        out.append(st.Parsed(stmt, piece.text, piece.offset, param_numbers(stmt)))
    return out


def parse_one(sql: str) -> st.Parsed:
    """Exactly one statement (the extended protocol's Parse allows no more)."""
    parsed = parse(sql)
    if len(parsed) > 1:
        raise SqlError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    return parsed[0] if parsed else st.Parsed(st.Empty(), sql)


def parse_statement(text: str) -> st.Statement:
    s = Scanner(text)
    first = s.peek()
    if first is None:
        return st.Empty()
    if first.kind == "punct" and first.text == "(":
        return _query(text)
    keyword = first.text if first.kind == "word" else ""
    handler = _HANDLERS.get(keyword)
    if handler is None:
        if keyword in _POSTGRES_STATEMENTS:
            raise _unsupported(s)
        raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{first.raw}"', position=first.pos + 1)
    return handler(s)


# Statements PostgreSQL has and sparkwire does not: these get 0A000, anything else 42601.
_POSTGRES_STATEMENTS = frozenset((
    "analyze", "call", "checkpoint", "cluster", "comment", "copy", "do", "grant", "import",
    "load", "lock", "merge", "move", "reassign", "refresh", "reindex",
    "revoke", "security", "vacuum",
))


def _unsupported(s: Scanner) -> SqlError:
    words = []
    for k in range(3):
        w = s.peek(k)
        if w is None or w.kind != "word":
            break
        words.append(w.raw.upper())
    name = " ".join(words[:2] if words and words[0] in ("CREATE", "DROP", "ALTER", "SHOW") else words[:1])
    return SqlError(FEATURE_NOT_SUPPORTED, f"{name} is not supported")


# -- sqlglot-parsed statements -------------------------------------------------------

def _sqlglot(text: str) -> exp.Expression:
    # PostgreSQL's grammar first: its syntax errors, and deny by default - every function,
    # operator and type the statement names must be in our catalogs.
    allowlist.check(text)
    tree = _sqlglot_tree(text)
    _check_commas(text)
    return tree


def _sqlglot_tree(text: str) -> exp.Expression:
    """sqlglot's tree of a statement PostgreSQL's grammar took; 42601 where sqlglot's
    grammar does not take it."""
    try:
        tree = sqlglot.parse_one(_spaced_params(text), read="postgres")
    except ParseError as exc:
        raise _parse_error(text, exc) from exc
    except TokenError as exc:
        raise SqlError(SYNTAX_ERROR, f"syntax error: {exc}") from exc
    except RecursionError:
        raise SqlError(pg_parse.STATEMENT_TOO_COMPLEX, "statement too complex") from None
    if tree is None:
        raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(text) + 1)
    return tree


def _spaced_params(text: str) -> str:
    """`$1,$2` with a space after each placeholder: sqlglot's tokenizer reads `$1,$` as
    the start of a dollar-quoted string (every driver writes `($1,$2)`)."""
    spans = pg_parse.scan_params(text)
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:end])
        out.append(" ")
        last = end
    out.append(text[last:])
    return "".join(out)


def _check_commas(text: str) -> None:
    """Reject the empty list items sqlglot silently drops (`SELECT a,, b`, `f(a,)`)."""
    words = Scanner(text).words
    for a, b in itertools.pairwise(words):
        if a.kind == "punct" and b.kind == "punct" and (
                (a.text == "," and b.text in (",", ")")) or (a.text == "(" and b.text == ",")):
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{b.raw}"', position=b.pos + 1)
        if a.kind == "punct" and a.text == "," and b.kind == "word" and b.text.lower() in _NOT_AFTER_COMMA:
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{b.raw}"', position=b.pos + 1)


_NOT_AFTER_COMMA = frozenset(("from", "where", "group", "order", "having", "limit", "union"))


def _parse_error(text: str, exc: ParseError) -> SqlError:
    info = exc.errors[0] if exc.errors else {}
    line, col = info.get("line", 1), info.get("col", 1)
    offset = sum(len(row) + 1 for row in text.split("\n")[: line - 1]) + col
    highlight = info.get("highlight") or ""
    start = offset - len(highlight)
    if highlight and not highlight.startswith("SENTINEL") and start < len(text):
        return SqlError(SYNTAX_ERROR, f'syntax error at or near "{highlight}"', position=start + 1)
    return SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(text) + 1)


_QUERY_TYPES = (exp.Query, exp.Values)


def _query(text: str) -> st.Query:
    body, as_of = _split_as_of(text)
    pre = pg_compat.preprocess(body)
    allowlist.check(pre)
    try:
        tree = _sqlglot_tree(pre)
    except SqlError as err:
        if err.sqlstate != SYNTAX_ERROR:
            raise
        # PostgreSQL's grammar took it: the front end of our own binds it from the text;
        # only the older path, which reads sqlglot's tree, cannot run it.
        return st.Query(None, as_of, body, unparsed=err)
    _check_commas(pre)
    if not isinstance(tree, _QUERY_TYPES):
        raise SqlError(SYNTAX_ERROR, "syntax error: expected a query")
    return st.Query(tree, as_of, body)


def _split_as_of(text: str) -> tuple[str, exp.Expression | None]:
    """Materialize's `SELECT ... AS OF <time>` clause, cut off the query."""
    s = Scanner(text)
    depth = 0
    for k, w in enumerate(s.words):
        if w.kind == "punct" and w.text == "(":
            depth += 1
        elif w.kind == "punct" and w.text == ")":
            depth -= 1
        elif depth == 0 and s.is_keyword("as", "of", ahead=k):
            rest = text[s.words[k + 1].pos + 2:].strip().rstrip(";")
            rest = re.sub(r"(?is)^at\s+least\s+", "", rest)
            if not rest:
                raise SqlError(SYNTAX_ERROR, "syntax error at end of input", position=len(text) + 1)
            when, tail = _result_clauses_after(rest)
            body = f"{text[: w.pos]} {tail}" if tail else text[: w.pos]
            return body, _sqlglot(f"SELECT {when}").expressions[0]
    return text, None


def _result_clauses_after(when: str) -> tuple[str, str]:
    """Split `<time> ORDER BY ... LIMIT ...` written after AS OF into the time and the
    clauses, which belong to the query (cut off with the time, they would be lost)."""
    s = Scanner(when)
    depth = 0
    for w in s.words:
        if w.kind == "punct" and w.text in "()":
            depth += 1 if w.text == "(" else -1
        elif depth == 0 and w.kind == "word" and w.text in ("order", "limit", "offset", "fetch"):
            return when[: w.pos].strip(), when[w.pos:]
    return when, ""


def folded_name(node: exp.Expression | str) -> str:
    """A name as PostgreSQL folds it: lower case unless quoted."""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, (exp.Column, exp.Table)):
        return folded_name(node.this)
    return node.name.lower()


def table_name(table: exp.Table) -> str:
    """A referenced relation's name; only the default database and schema exist."""
    schema = table.args.get("db")
    if schema is not None and folded_name(schema) not in ("public", "mz_catalog", "pg_catalog",
                                                     "information_schema", "mz_internal"):
        raise SqlError("3F000", f'unknown schema "{folded_name(schema)}"')
    catalog = table.args.get("catalog")
    if catalog is not None and folded_name(catalog) != "materialize":
        raise SqlError("3D000", f'unknown database "{folded_name(catalog)}"')
    return folded_name(table.this)


_TYPE_SPELLING = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*(?:\(([\d\s,]*)\))?\s*((?:\[\s*\d*\s*\])*)\s*$")


def sql_type(dt: exp.DataType) -> SqlType:
    """A sqlglot data type as one of our column types."""
    spelled = dt.sql("postgres")
    m = _TYPE_SPELLING.match(spelled)
    if m is None:
        raise SqlError("42704", f'type "{spelled.lower()}" does not exist')
    name, mods, arrays = m.group(1), m.group(2), m.group(3)
    if arrays.count("[") > 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "multidimensional arrays are not supported")
    modifiers = tuple(int(x) for x in mods.split(",")) if mods else ()
    return column_type(name, modifiers, is_array=bool(arrays))


def _create(s: Scanner) -> st.Statement:
    sourced = source_syntax.parse_create(s)
    if sourced is not None:
        return sourced
    s.expect("create")
    replace = s.accept("or", "replace")
    if s.is_keyword("table") or s.is_keyword("temp", "table") or s.is_keyword("temporary", "table"):
        as_query = ctas_syntax.parse_create_table_as(s.text, parse_statement, _name_of)
        return as_query if as_query is not None else _create_table(s.text)
    if s.is_keyword("view") or s.is_keyword("temp", "view") or s.is_keyword("temporary", "view"):
        return _create_view(s.text, replace)
    if any(s.is_keyword(*w, "sequence") for w in ((), ("temp",), ("temporary",), ("unlogged",))):
        pg_parse.parse_one(s.text)  # PostgreSQL's syntax errors, with their positions
        return sequence_syntax.create_sequence(s.text)
    if s.is_keyword("index") or s.is_keyword("unique", "index"):
        node = pg_parse.parse_one(s.text)["IndexStmt"]
        relation = node["relation"]
        table = _name_of(".".join(p for p in (relation.get("schemaname"), relation["relname"]) if p))
        return index_syntax.create_index(node, table)
    raise _unsupported(Scanner(s.text))


_CONSTRAINTS_OK = (exp.NotNullColumnConstraint, exp.DefaultColumnConstraint)


def _foreign_keys_refused(text: str) -> None:
    """PostgreSQL's grammar knows clauses sqlglot's does not (ON DELETE SET NULL (a)): where
    PostgreSQL accepts the statement, what sparkwire does not support is refused by name
    (0A000) rather than as a syntax error."""
    try:
        create = pg_parse.parse_one(text)
    except SqlError:
        return  # a syntax error to PostgreSQL too
    if "CreateStmt" in create:
        table_foreign_keys.table_foreign_keys(create["CreateStmt"])


def _create_table(text: str) -> st.CreateTable:
    try:
        tree = _sqlglot(table_sequences.without_identity(text))
    except SqlError as err:
        if err.sqlstate == SYNTAX_ERROR:
            _foreign_keys_refused(text)
        raise
    if not isinstance(tree, exp.Create) or not isinstance(tree.this, exp.Schema):
        raise SqlError(SYNTAX_ERROR, "syntax error in CREATE TABLE")
    if tree.expression is not None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TABLE AS is not supported")
    name = table_name(tree.this.this)
    # Keys come from PostgreSQL's own parse tree; sqlglot's gives the columns.
    create = pg_parse.parse_one(text)
    references = table_foreign_keys.table_foreign_keys(create["CreateStmt"]) if "CreateStmt" in create else ()
    keys = table_keys.table_keys(create["CreateStmt"]) if "CreateStmt" in create else ()
    checks = table_checks.table_checks(create["CreateStmt"], text) if "CreateStmt" in create else ()
    generated = table_sequences.column_sequences(text)
    columns = []
    seen = set()
    for cd in tree.this.expressions:
        if not isinstance(cd, exp.ColumnDef):
            continue  # a table constraint: in `keys`
        col = folded_name(cd.this)
        if col in seen:
            raise SqlError("42701", f'column "{col}" specified more than once')
        seen.add(col)
        if cd.args.get("kind") is None:
            raise SqlError(SYNTAX_ERROR, f'column "{col}" has no type')
        not_null, default = False, None
        sequence = generated.get(col)
        for c in cd.args.get("constraints") or []:
            kind = c.args.get("kind")
            if isinstance(kind, exp.NotNullColumnConstraint):
                not_null = not kind.args.get("allow_null")
            elif isinstance(kind, exp.DefaultColumnConstraint):
                default = kind.this
            elif isinstance(kind, (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint)):
                continue  # in `keys`
            elif isinstance(kind, exp.CheckColumnConstraint):
                continue  # in `checks`
            elif isinstance(kind, exp.Reference):
                continue  # in `references`
            else:
                raise SqlError(FEATURE_NOT_SUPPORTED,
                               f"column constraint {c.sql('postgres')} is not supported")
        if sequence is not None:
            # serial stands for its integer type; both kinds of column are NOT NULL.
            typ = column_type(sequence.spec.type, (), is_array=False) if sequence.identity is None \
                else sql_type(cd.args["kind"])
            columns.append(st.ColumnDef(col, typ, True, None, sequence))
            continue
        columns.append(st.ColumnDef(col, sql_type(cd.args["kind"]), not_null, default))
    if not columns:
        raise SqlError(FEATURE_NOT_SUPPORTED, "a table needs at least one column")
    return st.CreateTable(name, tuple(columns), bool(tree.args.get("exists")), keys, checks, references)


def _create_view(text: str, replace: bool) -> st.CreateView:
    tree = _sqlglot(text)
    if not isinstance(tree, exp.Create) or not isinstance(tree.expression, _QUERY_TYPES):
        raise SqlError(SYNTAX_ERROR, "syntax error in CREATE VIEW")
    target = tree.this
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        columns = tuple(folded_name(c) for c in target.expressions)
        target = target.this
    m = re.search(r"(?is)\bas\b\s*(.*)$", text)
    body = m.group(1) if m else tree.expression.sql("postgres")
    return st.CreateView(table_name(target), tree.expression, body.strip().rstrip(";"),
                         columns, replace)


def _insert(s: Scanner) -> st.Insert:
    text = multi_assign.spread(s.text)  # ON CONFLICT ... SET (a, b) = (x, y)
    overriding = _overriding(text)
    tree = _sqlglot(_OVERRIDING.sub(" ", text, count=1) if overriding else text)
    if not isinstance(tree, exp.Insert):
        raise SqlError(SYNTAX_ERROR, "syntax error in INSERT")
    target = tree.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = tuple(folded_name(c) for c in target.expressions)
        target = target.this
    source = tree.expression
    if source is None:
        if not re.search(r"(?is)\bdefault\s+values\b", text) or columns is not None:
            raise SqlError(SYNTAX_ERROR, "syntax error in INSERT")
        source = exp.Values(expressions=[exp.Tuple(expressions=[])])  # DEFAULT VALUES: a row of defaults
    with_ = tree.args.get("with_")
    if with_ is not None and isinstance(source, exp.Query):  # WITH … INSERT … SELECT: the query reads it
        inner = source.args.get("with_")
        if inner is not None:
            with_.set("expressions", [*with_.expressions, *inner.expressions])
        source.set("with_", with_)
    returning = tree.args.get("returning")
    alias = target.args.get("alias")
    return st.Insert(table_name(target), columns, source,
                     tuple(returning.expressions) if returning else (),
                     _on_conflict(tree.args.get("conflict")), folded_name(alias.this) if alias else None,
                     text, overriding)


_OVERRIDING = re.compile(r"(?is)\boverriding\s+(system|user)\s+value\b")


def _overriding(text: str) -> str | None:
    """INSERT's OVERRIDING clause, as PostgreSQL's grammar reads it (sqlglot does not)."""
    if not _OVERRIDING.search(text):
        return None
    override = pg_parse.parse_one(text).get("InsertStmt", {}).get("override")
    return {"OVERRIDING_SYSTEM_VALUE": "system", "OVERRIDING_USER_VALUE": "user"}.get(override)


def _on_conflict(node: exp.OnConflict | None) -> st.OnConflict | None:
    if node is None:
        return None
    if node.args.get("duplicate"):  # MySQL's ON DUPLICATE KEY UPDATE
        raise SqlError(SYNTAX_ERROR, 'syntax error at or near "DUPLICATE"')
    if node.args.get("index_predicate") is not None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "ON CONFLICT (...) WHERE is not supported: there are no partial indexes")
    columns = []
    for key in node.args.get("conflict_keys") or ():
        column = key.this if isinstance(key, exp.Ordered) else key
        if not isinstance(column, (exp.Column, exp.Identifier)):
            raise SqlError(FEATURE_NOT_SUPPORTED, "ON CONFLICT takes column names, not expressions")
        columns.append(folded_name(column))
    constraint = node.args.get("constraint")
    action = node.args.get("action")
    assignments = None
    if action is not None and action.name.upper() == "DO UPDATE":
        assignments = []
        for eq in node.expressions:
            if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
                raise SqlError(SYNTAX_ERROR, "syntax error in ON CONFLICT DO UPDATE SET")
            assignments.append((folded_name(eq.this), eq.expression))
        assignments = tuple(assignments)
    where = node.args.get("where")
    return st.OnConflict(tuple(columns), folded_name(constraint) if constraint is not None else None,
                         assignments, where.this if where is not None else None)


_CLAUSE_NAMES = {"returning": "RETURNING", "with": "WITH", "with_": "WITH", "order": "ORDER BY",
                 "limit": "LIMIT", "tables": "a list of tables", "cluster": "CLUSTER"}


def _refuse_unhandled(tree: exp.Expression, verb: str, handled: set[str]) -> None:
    """A clause this statement does not carry out must be an error, not silently dropped."""
    for key, value in tree.args.items():
        if key not in handled and value not in (None, [], False):
            clause = _CLAUSE_NAMES.get(key, key.upper())
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{verb} ... {clause} is not supported")


def _with(s: Scanner) -> st.Statement:
    """WITH … and a query, or INSERT, UPDATE or DELETE reading the WITH list's queries."""
    try:
        node = pg_parse.parse_one(s.text)
    except SqlError:
        node = {"SelectStmt": {}}  # Materialize's AS OF, or an error _query reports
    handler = {"InsertStmt": _insert, "UpdateStmt": _update, "DeleteStmt": _delete}.get(pg_parse.node_type(node))
    return handler(s) if handler is not None else _query(s.text)


def _update(s: Scanner) -> st.Update:
    text = multi_assign.spread(s.text)  # SET (a, b) = (x, y) as SET a = x, b = y
    tree = _sqlglot(text)
    if not isinstance(tree, exp.Update):
        raise SqlError(SYNTAX_ERROR, "syntax error in UPDATE")
    _refuse_unhandled(tree, "UPDATE", {"this", "expressions", "where", "from", "from_", "returning", "with_"})
    assignments = []
    for eq in tree.expressions:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
            raise SqlError(SYNTAX_ERROR, f"syntax error in SET clause: {eq.sql('postgres')}")
        assignments.append((folded_name(eq.this), eq.expression))
    where = tree.args.get("where")
    alias = tree.this.alias or None
    returning = tree.args.get("returning")
    return st.Update(table_name(tree.this), alias, tuple(assignments),
                     where.this if where is not None else None, tuple(returning.expressions) if returning else (),
                     text, tree.args.get("from_") or tree.args.get("from"), tree.args.get("with_"))


def _delete(s: Scanner) -> st.Delete:
    tree = _sqlglot(s.text)
    if not isinstance(tree, exp.Delete):
        raise SqlError(SYNTAX_ERROR, "syntax error in DELETE")
    _refuse_unhandled(tree, "DELETE", {"this", "where", "using", "returning", "with_"})
    where = tree.args.get("where")
    where = where.this if where is not None else None
    if tree.args.get("using"):
        target = tree.this.alias_or_name
        for item in tree.args["using"]:
            if isinstance(item, exp.Table) and item.alias_or_name == target:
                raise SqlError("42712", f'table name "{target}" specified more than once')
        # DELETE … USING u WHERE c: each row of the table at most once, whatever rows of u it
        # matches, as WHERE EXISTS (SELECT FROM u WHERE c) has it (planner.sql.dml too)
        where = exp.Exists(this=exp.select("1").from_(*tree.args["using"]).where(where))
    returning = tree.args.get("returning")
    return st.Delete(table_name(tree.this), tree.this.alias or None, where,
                     tuple(returning.expressions) if returning else (), s.text, tree.args.get("with_"))


def _truncate(s: Scanner) -> st.Truncate:
    """TRUNCATE, read by PostgreSQL's grammar."""
    node = pg_parse.parse_one(s.text)
    if pg_parse.node_type(node) != "TruncateStmt":
        raise SqlError(SYNTAX_ERROR, "syntax error in TRUNCATE")
    names = []
    for rel in node["TruncateStmt"]["relations"]:
        rv = rel["RangeVar"]
        schema = rv.get("schemaname")
        names.append(table_name(exp.Table(this=exp.to_identifier(rv["relname"], quoted=True),
                                          db=exp.to_identifier(schema, quoted=True) if schema else None)))
    return st.Truncate(tuple(dict.fromkeys(names)), bool(node["TruncateStmt"].get("restart_seqs")),
                       node["TruncateStmt"].get("behavior") == "DROP_CASCADE")


# -- hand-parsed statements ---------------------------------------------------------

def _drop(s: Scanner) -> st.Statement:
    other = source_syntax.parse_drop(s)
    if other is not None:
        return other
    s.expect("drop")
    kind_word = s.peek()
    if s.accept("table"):
        kind = "TABLE"
    elif s.accept("view"):
        kind = "VIEW"
    elif s.accept("sequence"):
        kind = "SEQUENCE"
    elif s.accept("index"):
        concurrently = s.accept("concurrently")
        if_exists = s.accept("if", "exists")
        names = [_name_of(s.qualified_name())]
        while s.accept_punct(","):
            names.append(_name_of(s.qualified_name()))
        if not s.accept("cascade"):
            s.accept("restrict")
        s.expect_end()
        return st.DropIndex(tuple(names), if_exists, concurrently)
    else:
        raise _unsupported(Scanner(s.text)) if kind_word else s.error("expected TABLE or VIEW")
    if_exists = s.accept("if", "exists")
    # The names as PostgreSQL's grammar reads them: a quoted name keeps its case.
    node = pg_parse.parse_one(s.text)["DropStmt"]
    parts = [pg_parse.names(o["List"]["items"]) for o in node["objects"]]
    names = [_relation_name(p[-2] if len(p) > 1 else None, p[-1]) for p in parts]
    return st.Drop(kind, tuple(names), if_exists, node.get("behavior") == "DROP_CASCADE")


def _relation_name(schema: str | None, name: str) -> str:
    """A relation named in PostgreSQL's parse tree (already case-folded), its schema checked."""
    return table_name(exp.Table(this=exp.to_identifier(name, quoted=True),
                                db=exp.to_identifier(schema, quoted=True) if schema else None))


def _default_expression(text: str) -> exp.Expression:
    """A DEFAULT expression, read as CREATE TABLE reads one."""
    return _sqlglot(f"SELECT {text}").expressions[0]


def _name_of(qualified: str) -> str:
    parts = qualified.split(".")
    return table_name(exp.Table(this=exp.to_identifier(parts[-1]),
                                db=exp.to_identifier(parts[-2]) if len(parts) > 1 else None))


def _begin(s: Scanner) -> st.Begin:
    s.next()
    if s.text.lower().lstrip().startswith("start"):
        s.expect("transaction")
    else:
        s.accept("transaction") or s.accept("work")
    return st.Begin(_isolation_level(s))


_ISOLATION_LEVELS = ("serializable", "strict serializable", "repeatable read", "read committed",
                     "read uncommitted")


def _isolation_level(s: Scanner) -> str | None:
    """The ISOLATION LEVEL among the transaction modes, if named (READ ONLY/WRITE and
    DEFERRABLE are accepted and have no effect). Every transaction here is serializable;
    the level is kept only so that SHOW transaction_isolation reports what was asked."""
    level = None
    while not s.at_end():
        if not s.accept("isolation", "level"):
            s.next()
            continue
        level = next((lv for lv in _ISOLATION_LEVELS if s.accept(*lv.split())), None)
        if level is None:
            w = s.peek()
            raise s.error(f'syntax error at or near "{w.raw}"' if w else "syntax error at end of input")
    return level


def _commit(s: Scanner) -> st.Commit:
    s.next()
    s.accept("transaction") or s.accept("work")
    s.expect_end()
    return st.Commit()


def _rollback(s: Scanner) -> st.Statement:
    s.next()
    s.accept("transaction") or s.accept("work")
    if s.accept("to"):
        s.accept("savepoint")
        name = s.ident("savepoint name")
        s.expect_end()
        return st.RollbackToSavepoint(name)
    s.expect_end()
    return st.Rollback()


def _listen(s: Scanner) -> st.Listen:
    s.expect("listen")
    channel = s.ident("channel name")
    s.expect_end()
    return st.Listen(channel)


def _unlisten(s: Scanner) -> st.Unlisten:
    s.expect("unlisten")
    channel = None if s.accept_punct("*") else s.ident("channel name")
    s.expect_end()
    return st.Unlisten(channel)


def _notify(s: Scanner) -> st.Notify:
    s.expect("notify")
    channel = s.ident("channel name")
    payload = ""
    if s.accept_punct(","):
        w = s.next()
        if w.kind != "string":
            raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)
        payload = w.text
    s.expect_end()
    return st.Notify(channel, payload)


def _savepoint(s: Scanner) -> st.Savepoint:
    s.expect("savepoint")
    name = s.ident("savepoint name")
    s.expect_end()
    return st.Savepoint(name)


def _release(s: Scanner) -> st.ReleaseSavepoint:
    s.expect("release")
    s.accept("savepoint")
    name = s.ident("savepoint name")
    s.expect_end()
    return st.ReleaseSavepoint(name)


def _set(s: Scanner) -> st.Statement:
    s.expect("set")
    local = s.accept("local")
    if not local:
        s.accept("session")
    # SET [SESSION] TRANSACTION ... and SET SESSION CHARACTERISTICS AS TRANSACTION ... (pgjdbc's
    # setTransactionIsolation): every transaction is serializable here, whatever is asked.
    if s.accept("transaction") or s.accept("characteristics", "as", "transaction") \
            or s.accept("session", "characteristics", "as", "transaction"):
        _isolation_level(s)  # checked; every transaction is serializable here
        return st.SetTransaction()
    if not local and s.accept("constraints"):
        return _set_constraints(s)
    if s.accept("time", "zone"):
        name = "timezone"
    else:
        name = s.qualified_name().lower()
        if not (s.accept("to") or s.accept_punct("=")):
            raise s.error("expected TO or =")
    if s.accept("default"):
        s.expect_end()
        return st.SetVariable(name, None, local)
    values = [_setting_value(s)]
    while s.accept_punct(","):
        values.append(_setting_value(s))
    s.expect_end()
    return st.SetVariable(name, ", ".join(values), local)


def _set_constraints(s: Scanner) -> st.SetConstraints:
    names: list[tuple[str | None, str]] | None = None
    if not s.accept("all"):
        names = []
        while True:
            schema, name = None, s.ident("constraint name")
            if s.accept_punct("."):
                schema, name = name, s.ident("constraint name")
            names.append((schema, name))
            if not s.accept_punct(","):
                break
    if s.accept("deferred"):
        deferred = True
    elif s.accept("immediate"):
        deferred = False
    else:
        raise s.error("syntax error at end of input" if s.at_end() else "expected DEFERRED or IMMEDIATE")
    s.expect_end()
    return st.SetConstraints(None if names is None else tuple(names), deferred)


def _setting_value(s: Scanner) -> str:
    w = s.next()
    if w.kind == "punct" and w.text == "-":
        return "-" + s.next().text
    if w.kind in ("string", "number", "word", "qident"):
        return w.text if w.kind != "word" else w.raw
    raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{w.raw}"', position=w.pos + 1)


def _reset(s: Scanner) -> st.ResetVariable:
    s.expect("reset")
    name = "all" if s.accept("all") else s.qualified_name().lower()
    s.expect_end()
    return st.ResetVariable(name)


_SHOW_OBJECTS = ("tables", "views", "schemas", "databases", "objects", "sources", "secrets",
                 "connections")


def _show(s: Scanner) -> st.Statement:
    s.expect("show")
    for kind in _SHOW_OBJECTS:
        if s.accept(kind):
            if s.accept("from") or s.accept("in"):
                s.qualified_name()  # only one schema exists
            s.expect_end()
            return st.ShowObjects(kind)
    if s.accept("columns"):
        if not (s.accept("from") or s.accept("in")):
            raise s.error("expected FROM")
        name = _name_of(s.qualified_name())
        s.expect_end()
        return st.ShowColumns(name)
    if s.accept("create"):
        kind = s.ident("object type").upper()
        if kind not in ("TABLE", "VIEW", "SOURCE", "CONNECTION"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"SHOW CREATE {kind} is not supported")
        name = _name_of(s.qualified_name())
        s.expect_end()
        return st.ShowCreate(kind, name)
    if s.accept("time", "zone"):
        s.expect_end()
        return st.ShowVariable("timezone")
    if s.accept("transaction", "isolation", "level"):
        s.expect_end()
        return st.ShowVariable("transaction_isolation")
    name = "all" if s.accept("all") else s.qualified_name().lower()
    s.expect_end()
    return st.ShowVariable(name)


def _alter(s: Scanner) -> st.Statement:
    swap = source_syntax.parse_alter_table(s)
    if swap is not None:
        return swap
    if s.is_keyword("alter", "table") or s.is_keyword("alter", "view"):
        return alter_syntax.parse_alter(s.text, _create_table, _default_expression, _relation_name)
    if s.is_keyword("alter", "sequence"):
        pg_parse.parse_one(s.text)
        return sequence_syntax.alter_sequence(s.text)
    s.expect("alter")
    if not s.accept("system"):
        raise _unsupported(Scanner(s.text))
    if s.accept("reset"):
        name = s.qualified_name().lower()
        s.expect_end()
        return st.AlterSystem(name, None)
    s.expect("set")
    name = s.qualified_name().lower()
    if not (s.accept("to") or s.accept_punct("=")):
        raise s.error("expected TO or =")
    if s.accept("default"):
        s.expect_end()
        return st.AlterSystem(name, None)
    value = _setting_value(s)
    s.expect_end()
    return st.AlterSystem(name, value)


def _discard(s: Scanner) -> st.Discard:
    s.expect("discard")
    what = s.ident("ALL, PLANS, SEQUENCES or TEMP").lower()
    if what not in ("all", "plans", "sequences", "temp", "temporary"):
        raise SqlError(SYNTAX_ERROR, f'syntax error at or near "{what}"')
    s.expect_end()
    return st.Discard(what)


def _deallocate(s: Scanner) -> st.Deallocate:
    # psycopg sends DEALLOCATE ALL after ROLLBACK or DROP once it has prepared statements.
    s.expect("deallocate")
    s.accept("prepare")
    name = None if s.accept("all") else s.ident("prepared statement name")
    s.expect_end()
    return st.Deallocate(name)


def _explain(s: Scanner) -> st.Explain:
    s.expect("explain")
    rest = s.rest()
    inner = parse_statement(rest)
    if isinstance(inner, subscribe_syntax.Subscribe):
        return subscribe_syntax.ExplainSubscribe(inner)
    if not isinstance(inner, st.Query):
        raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN is only supported for queries and SUBSCRIBE")
    return st.Explain(inner)


def _dml(fn: Callable[[Scanner], st.Statement]) -> Callable[[Scanner], st.Statement]:
    return fn


def _select(s: Scanner) -> st.Statement:
    into = ctas_syntax.split_select_into(s, _name_of)
    if into is None:
        return _query(s.text)
    query = _query(into[0])
    if query.as_of is not None:
        raise SqlError(SYNTAX_ERROR, "SELECT ... INTO cannot read AS OF a timestamp")
    return st.CreateTableAs(into[1], query, select_into=True)


_HANDLERS: dict[str, Callable[[Scanner], st.Statement]] = {
    "select": _select,
    "with": _with,
    "values": lambda s: _query(s.text),
    "table": lambda s: _query(s.text),
    "insert": _insert,
    "update": _update,
    "delete": _delete,
    "truncate": _truncate,
    "create": _create,
    "drop": _drop,
    "begin": _begin,
    "start": _begin,
    "commit": _commit,
    "end": _commit,
    "rollback": _rollback,
    "abort": _rollback,
    "savepoint": _savepoint,
    "release": _release,
    "listen": _listen,
    "unlisten": _unlisten,
    "notify": _notify,
    "set": _set,
    "reset": _reset,
    "show": _show,
    "discard": _discard,
    "deallocate": _deallocate,
    "prepare": lambda s: prepare_syntax.parse_prepare(s, parse_statement, sql_type),
    "execute": lambda s: prepare_syntax.parse_execute(s, _sqlglot),
    "alter": _alter,
    "explain": _explain,
    "subscribe": lambda s: subscribe_syntax.parse_subscribe(s, parse_statement),
    "declare": lambda s: subscribe_syntax.parse_declare(s, parse_statement),
    "fetch": subscribe_syntax.parse_fetch,
    "close": subscribe_syntax.parse_close,
    "copy": lambda s: copy_syntax.parse_copy(s, parse_statement),
}


def param_numbers(stmt: st.Statement) -> list[int]:
    """The $n parameters a statement uses, for ParameterDescription."""
    trees: list[exp.Expression] = []
    for value in vars(stmt).values():
        if isinstance(value, exp.Expression):
            trees.append(value)
        elif isinstance(value, tuple):
            for v in value:
                if isinstance(v, exp.Expression):
                    trees.append(v)
                elif isinstance(v, tuple):
                    trees.extend(x for x in v if isinstance(x, exp.Expression))
    numbers = set()
    if isinstance(stmt, st.Query) and stmt.ast is None:
        numbers = {int(stmt.text[a + 1:b]) for a, b in pg_parse.scan_params(stmt.text)}
    for tree in trees:
        for p in tree.find_all(exp.Parameter):
            if isinstance(p.this, exp.Literal) and not p.this.is_string:
                numbers.add(int(p.this.this))
    return sorted(numbers)

