"""Spark's errors, reworded as the PostgreSQL errors a client expects.

Spark 4 errors carry an error class and message parameters; we map the ones a
user can cause to PostgreSQL's SQLSTATE and wording, and replace the internal
view names sparkwire gives tables with the names the user wrote.
"""

from __future__ import annotations

import errno
import re

from planner.errors import SqlError
from planner.sql_template import ERROR_PREFIX

# Storage failures, with PostgreSQL's codes: an I/O error, a full disk, damaged data.
IO_ERROR = "58030"
DISK_FULL = "53100"
DATA_CORRUPTED = "XX001"


class StorageError(SqlError):
    """A write that could not be made durable (never acknowledged, never to come back).

    `fatal`: the store takes no more writes, since after a failed fsync the file system's
    cache no longer says what is on disk; the server stops. `outcome_unknown`: the failed
    write could not even be taken back, so no answer may be given about it."""

    def __init__(self, sqlstate: str, message: str, *, fatal: bool = False, outcome_unknown: bool = False,
                 hint: str | None = None) -> None:
        super().__init__(sqlstate, message, hint=hint)
        self.fatal = fatal or outcome_unknown
        self.outcome_unknown = outcome_unknown


def storage_error(exc: OSError, doing: str, *, fatal: bool = False,
                  outcome_unknown: bool = False) -> StorageError:
    """`could not <doing>: <reason>`, as 53100 for a full disk and 58030 otherwise."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageError(DISK_FULL, f"could not {doing}: {reason}", fatal=fatal,
                            outcome_unknown=outcome_unknown, hint="Free disk space in the data directory.")
    return StorageError(IO_ERROR, f"could not {doing}: {reason}", fatal=fatal, outcome_unknown=outcome_unknown)


class DataCorrupted(SqlError):
    """A data file that is missing or fails its checksum: an error, never a wrong answer."""

    def __init__(self, table: str, path: str, why: str) -> None:
        super().__init__(DATA_CORRUPTED, f'data file {path} of table "{table}" is damaged: {why}',
                         hint="Restore the file from a backup; `sparkwire check --data-dir DIR` lists "
                              "every damaged file.")
        self.table = table
        self.path = path
        self.why = why


# Internal relation names look like __sw_<query>_<table>; users never see them.
INTERNAL_NAME = re.compile(r"`?__sw_\d+_([A-Za-z0-9_]+?)`?(?=\W|$)")


def _clean(text: str) -> str:
    text = INTERNAL_NAME.sub(lambda m: m.group(1), text)
    text = re.sub(r"`spark_catalog`\.`default`\.", "", text)
    return text.replace("`", '"')


def _param(params: dict, *names: str) -> str:
    for name in names:
        if name in params:
            return _clean(str(params[name])).strip('"')
    return "?"


def _first_line(text: str) -> str:
    text = re.sub(r"^\[[A-Z_.]+\]\s*", "", text.strip())
    return _clean(text.split("\n")[0].split(" SQLSTATE:")[0]).strip()


def _unresolved_column(p: dict) -> tuple[str, str]:
    return "42703", f'column "{_param(p, "objectName")}" does not exist'


def _table_not_found(p: dict) -> tuple[str, str]:
    return "42P01", f'relation "{_param(p, "relationName")}" does not exist'


def _routine(p: dict) -> tuple[str, str]:
    # sqlglot writes unknown functions upper case; PostgreSQL folds names to lower.
    return "42883", f"function {_param(p, 'routineName').lower()} does not exist"


# Spark's type names in cast errors, as PostgreSQL spells the type.
_PG_TYPE_NAMES = {"int": "integer", "tinyint": "smallint", "float": "real", "double": "double precision",
                  "decimal": "numeric", "string": "text", "timestamp": "timestamp with time zone",
                  "timestamp_ntz": "timestamp without time zone", "binary": "bytea"}


def _cast_invalid(p: dict) -> tuple[str, str]:
    target = _param(p, "targetType").lower()
    target = _PG_TYPE_NAMES.get(target.split("(")[0], target)
    return "22P02", f'invalid input syntax for type {target}: "{_param(p, "expression").strip(chr(39))}"'


# A cast's target as PostgreSQL names it in "<type> out of range".
_RANGE_NAMES = {'"SMALLINT"': "smallint", '"INT"': "integer", '"BIGINT"': "bigint"}


def _out_of_range(p: dict) -> tuple[str, str]:
    target = _RANGE_NAMES.get(str(p.get("targetType", "")))
    if target is not None:
        return "22003", f"{target} out of range"
    if "precision" in p and "scale" in p:  # a value beyond a numeric(p, s): PostgreSQL's words
        return "22003", "numeric field overflow"
    return "22003", "value out of range" + (
        f": {_param(p, 'value')}" if "value" in p else ""
    )


# The type of a literal as Spark prints it in BINARY_ARITHMETIC_OVERFLOW (32767S, 1L, 5).
_LITERAL_TYPES = {"S": "smallint", "Y": "smallint", "L": "bigint"}


def _binary_overflow(p: dict) -> tuple[str, str]:
    """`32767S + 1S caused overflow`: PostgreSQL names the operands' type instead."""
    value = str(p.get("value1", "")).strip()
    return "22003", f"{_LITERAL_TYPES.get(value[-1:], 'integer')} out of range"


def _raised(p: dict) -> tuple[str, str]:
    """An error planner.pg_functions raises inside a Spark expression: `sparkwire:<SQLSTATE>:<text>`."""
    text = str(p.get("errorMessage", ""))
    if text.startswith(ERROR_PREFIX):
        code, _, message = text[len(ERROR_PREFIX):].partition(":")
        return code.upper(), message
    return "P0001", text


_BY_CLASS = {
    "USER_RAISED_EXCEPTION": _raised,
    "UNRESOLVED_COLUMN": _unresolved_column,
    "TABLE_OR_VIEW_NOT_FOUND": _table_not_found,
    "UNRESOLVED_ROUTINE": _routine,
    "CAST_INVALID_INPUT": _cast_invalid,
    "CAST_OVERFLOW": _out_of_range,
    "CAST_OVERFLOW_IN_TABLE_INSERT": _out_of_range,
    "NUMERIC_VALUE_OUT_OF_RANGE": _out_of_range,
    "NUMERIC_OUT_OF_SUPPORTED_RANGE": _out_of_range,
    "ARITHMETIC_OVERFLOW": lambda p: ("22003", "value out of range: overflow"),
    "BINARY_ARITHMETIC_OVERFLOW": _binary_overflow,
    "DIVIDE_BY_ZERO": lambda p: ("22012", "division by zero"),
    "INTERVAL_DIVIDED_BY_ZERO": lambda p: ("22012", "division by zero"),
}

# Errors Spark raises on an executor reach us wrapped ("Exception thrown in awaitResult"),
# their class only in the cause chain's text; these are found there, by class name.
# PostgreSQL recurses until the recursive term gives no row; Spark stops at its limits: the
# iterations spark_backend.engine sets (its default of 100 stopped common queries), the rows
# Spark's default allows.
RECURSION_LEVELS = 10_000  # spark.sql.cteRecursionLevelLimit
RECURSION_ROWS = 1_000_000  # spark.sql.cteRecursionRowLimit (Spark's default)

_BY_CAUSE = {
    "SCALAR_SUBQUERY_TOO_MANY_ROWS": ("21000", "more than one row returned by a subquery used as an expression"),
    "RECURSION_LEVEL_LIMIT_EXCEEDED": ("54001", (f"WITH RECURSIVE ran more iterations than the {RECURSION_LEVELS:,} "
                                                "Spark allows")),
    "RECURSION_ROW_LIMIT_EXCEEDED": ("54001", f"WITH RECURSIVE gave more rows than the {RECURSION_ROWS:,} Spark allows"),
    # PostgreSQL allows these (planner.sql.bind_recursive checks its own rules); Spark's loop does not
    "INVALID_RECURSIVE_REFERENCE": ("0A000", ("the recursive term of a WITH RECURSIVE query cannot group, sort or "
                                             "use a window function over the previous iteration's rows")),
}
_CAUSE_CLASS = re.compile(r"\[([A-Z][A-Z_]+)(?:\.[A-Z_]+)?\]")


# A raise_error of ours inside a subquery Spark ran apart from the query (a scalar subquery).
_WRAPPED_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (" + re.escape(ERROR_PREFIX) + r".*?)(?: SQLSTATE: |\n|$)")


# Errors of _BY_CLASS whose PostgreSQL words need no message parameters; and the one whose
# parameters the wrapped text spells out.
_PLAIN_CLASSES = frozenset({"DIVIDE_BY_ZERO", "INTERVAL_DIVIDED_BY_ZERO", "ARITHMETIC_OVERFLOW"})
_WRAPPED_CAST = re.compile(r'\[CAST_INVALID_INPUT\] The value (.*?) of the type "\w+" cannot be cast to '
                           r'("\w+")')


_AWAIT = "Exception thrown in awaitResult"


def _out_of_resources(text: str) -> tuple[str, str] | None:
    """Spark out of memory, or past its time to broadcast a join's side (a join of many
    tables on a loaded machine): PostgreSQL's classes 53 and 57, said plainly."""
    if "OutOfMemoryError" in text or "Not enough memory to build and broadcast" in text:
        return ("53200", "out of memory: Spark ran out of memory running the query")
    if "Could not execute broadcast in" in text:
        return ("57014", ("canceling statement: Spark could not broadcast a side of a join in time "
                         "(spark.sql.broadcastTimeout)"))
    return None


def _wrapped_cause(text: str) -> tuple[str, str] | None:
    raised = _WRAPPED_RAISED.search(text)
    if raised is not None:
        return _raised({"errorMessage": raised.group(1)})
    cast = _WRAPPED_CAST.search(text)
    if cast is not None:
        return _cast_invalid({"expression": cast.group(1), "targetType": cast.group(2)})
    for name in _CAUSE_CLASS.findall(text):
        if name in _PLAIN_CLASSES:
            return _BY_CLASS[name]({})
        if name in _BY_CAUSE:
            return _BY_CAUSE[name]
    return None


# Spark SQLSTATEs that are not PostgreSQL's, mapped to the nearest one.
_SQLSTATE = {
    "42K09": "42804",  # DATATYPE_MISMATCH
    "42K0E": "42803",  # grouping errors
    "42803": "42803",
    "42000": "42601",
    "22546": "22P02",
}


# A data file Spark could not read: `[FAILED_READ_FILE.<why>] ... file:///<dir>/collections/<id>/<f>.parquet`.
_DATA_FILE = re.compile(r"collections/([^/\s]+)/([^/\s]+?\.parquet)")
_CAUSE = re.compile(r"^Caused by: [\w.$]+(?:Exception|Error): (.+)$", re.MULTILINE)


def damaged_file(exc: BaseException) -> DataCorrupted | None:
    """A Spark failure to read one of our data files (a page checksum that fails, a file cut
    short or missing), as XX001; its `table` is the collection id, for the caller to name."""
    text = str(exc)
    if "FAILED_READ_FILE" not in text:
        return None
    m = _DATA_FILE.search(text)
    if m is None:
        return None
    causes = _CAUSE.findall(text)
    why = "the file is missing" if "FILE_NOT_EXIST" in text else causes[-1] if causes else "Spark could not read it"
    why = re.sub(r"file:\S*/collections/[^/\s]+/[^/\s]+?\.parquet", "the file", why).strip()
    return DataCorrupted(m.group(1), f"collections/{m.group(1)}/{m.group(2)}", why)


# A Python worker's exception, as its traceback's last line shows it.
_UDF_RAISED = re.compile(r"^ValueError: " + re.escape(ERROR_PREFIX) + r"([0-9A-Z]{5}):(.*)$", re.MULTILINE)


def _java_message(text: str) -> str | None:
    """The Java exception's own message in py4j's `An error occurred while calling o47.x.` text."""
    m = re.search(r"^: [\w.$]+: (.+)$", text, re.MULTILINE)
    return m.group(1) if m else None


def translate_spark_error(exc: BaseException) -> SqlError:
    """The SqlError to send for an exception raised by a Spark call."""
    if isinstance(exc, OSError):
        return storage_error(exc, "read the data directory")
    damaged = damaged_file(exc)
    if damaged is not None:
        return damaged
    raised = _UDF_RAISED.search(str(exc))
    if raised is not None:  # a jsonb UDF's PostgreSQL error (spark_backend.jsonb_udfs)
        return SqlError(raised.group(1), raised.group(2))
    error_class = _call(exc, "getCondition") or _call(exc, "getErrorClass") or ""
    params = _call(exc, "getMessageParameters") or {}
    top = error_class.split(".")[0]
    if top in _BY_CLASS:
        code, message = _BY_CLASS[top](params)
        return SqlError(code, message)
    if top in _BY_CAUSE:
        return SqlError(*_BY_CAUSE[top])
    sqlstate = _call(exc, "getSqlState") or ""
    text = str(exc)
    cause = _wrapped_cause(text)
    if cause is not None:
        return SqlError(*cause)
    if text.startswith("An error occurred while calling"):  # py4j's words, not the error's
        text = _java_message(text) or text
    resources = _out_of_resources(str(exc))
    if resources is not None:
        return SqlError(*resources)
    message = _first_line(text) or type(exc).__name__
    if message.startswith(_AWAIT):  # a wrapper's words: the innermost cause says what failed
        causes = _CAUSE.findall(str(exc))
        message = causes[-1].strip() if causes else message
    if top.startswith("DATATYPE_MISMATCH") or error_class.startswith("DATATYPE_MISMATCH"):
        return SqlError("42804", message)
    if len(sqlstate) == 5:
        return SqlError(_SQLSTATE.get(sqlstate, sqlstate), message)
    if "Py4JNetworkError" in type(exc).__name__ or "Connection refused" in message:
        return SqlError("58000", f"Spark is unreachable: {message}")
    return SqlError("XX000", message)


def _call(exc: BaseException, name: str):
    method = getattr(exc, name, None)
    if method is None:
        return None
    try:
        return method()
    except Exception:  # noqa: BLE001 - older error objects lack the details
        return None
