"""Errors that reach a client as an ErrorResponse.

Every failure a user can cause is a `SqlError` carrying the SQLSTATE PostgreSQL
would use, so the session layer never has to guess a code from a message.
"""

from __future__ import annotations


class SqlError(Exception):
    """An error with a SQLSTATE, sent to the client; the session carries on."""

    def __init__(
        self,
        sqlstate: str,
        message: str,
        *,
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
        severity: str = "ERROR",
        where: str | None = None,
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.detail = detail
        self.hint = hint
        self.position = position
        self.severity = severity
        self.where = where  # CONTEXT: where the error happened (`COPY t, line 3, column a: "x"`)


# The codes sparkwire raises, named as in PostgreSQL's errcodes.txt.
SYNTAX_ERROR = "42601"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
UNDEFINED_OBJECT = "42704"
INVALID_SCHEMA_NAME = "3F000"
UNDEFINED_FUNCTION = "42883"
DUPLICATE_TABLE = "42P07"
DUPLICATE_OBJECT = "42710"
DUPLICATE_COLUMN = "42701"
DUPLICATE_ALIAS = "42712"
DATATYPE_MISMATCH = "42804"
CANNOT_COERCE = "42846"
INVALID_TEXT_REPRESENTATION = "22P02"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
STRING_DATA_RIGHT_TRUNCATION = "22001"
DIVISION_BY_ZERO = "22012"
INVALID_PARAMETER_VALUE = "22023"
DATA_EXCEPTION = "22000"
NOT_NULL_VIOLATION = "23502"
FEATURE_NOT_SUPPORTED = "0A000"
GENERATED_ALWAYS = "428C9"  # a value given to a GENERATED ALWAYS identity column
PROTOCOL_VIOLATION = "08P01"
INVALID_PASSWORD = "28P01"
INVALID_AUTHORIZATION = "28000"
INVALID_CATALOG_NAME = "3D000"
QUERY_CANCELED = "57014"
ADMIN_SHUTDOWN = "57P01"
IN_FAILED_TRANSACTION = "25P02"
ACTIVE_SQL_TRANSACTION = "25001"
NO_ACTIVE_SQL_TRANSACTION = "25P01"
INVALID_CURSOR_NAME = "34000"
DUPLICATE_CURSOR = "42P03"
INVALID_PREPARED_STATEMENT = "26000"
DUPLICATE_PREPARED_STATEMENT = "42P05"
DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
WRONG_OBJECT_TYPE = "42809"
UNDEFINED_PARAMETER = "42704"
CANT_CHANGE_RUNTIME_PARAM = "55P02"
INTERNAL_ERROR = "XX000"
INSUFFICIENT_PRIVILEGE = "42501"
PROGRAM_LIMIT_EXCEEDED = "54000"
CONFIGURATION_LIMIT_EXCEEDED = "53400"
