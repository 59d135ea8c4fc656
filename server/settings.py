"""Session variables: their defaults, which ones clients are told about, and checks."""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT, SqlError

SERVER_VERSION = "15.0"
SERVER_VERSION_NUM = "150000"


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    reported: bool = False  # sent as ParameterStatus at start-up and on change
    description: str = ""
    allowed: tuple[str, ...] | None = None  # case-insensitive, None = anything
    read_only: bool = False


VARIABLES = {v.name: v for v in [
    Variable("application_name", "", True, "Sets the application name to be reported."),
    Variable("client_encoding", "UTF8", True, "The client's character set encoding.",
             ("utf8", "utf-8", "unicode")),
    Variable("datestyle", "ISO, MDY", True, "Display format for dates and times.",
             ("iso, mdy", "iso", "iso,mdy", "mdy, iso")),
    Variable("timezone", "UTC", True, "The time zone for displaying timestamps.",
             ("utc", "etc/utc", "+00:00", "00:00", "gmt", "z", "0")),
    Variable("integer_datetimes", "on", True, "Datetimes are integer based.", read_only=True),
    Variable("standard_conforming_strings", "on", True, "Backslashes in strings are literal.",
             ("on", "true")),
    Variable("server_version", SERVER_VERSION, True, "The server's version.", read_only=True),
    Variable("server_version_num", SERVER_VERSION_NUM, False, "The server's version as a number.",
             read_only=True),
    Variable("server_encoding", "UTF8", True, "The server's character set encoding.", read_only=True),
    Variable("is_superuser", "off", True, "Whether the user is a superuser.", read_only=True),
    Variable("intervalstyle", "postgres", True, "Display format for intervals.", ("postgres",)),
    Variable("search_path", "public", False, "Schema search order for names."),
    Variable("extra_float_digits", "1", False, "Digits shown for floating point values."),
    Variable("transaction_isolation", "serializable", False, "Isolation level of transactions.",
             ("serializable", "strict serializable", "read committed", "repeatable read")),
    Variable("default_transaction_isolation", "serializable", False, "Default isolation level.",
             ("serializable", "strict serializable", "read committed", "repeatable read")),
    Variable("statement_timeout", "0", False, "Maximum duration of a statement."),
    Variable("idle_in_transaction_session_timeout", "0", False, "Idle transaction timeout."),
    Variable("lock_timeout", "0", False, "Lock wait timeout."),
    Variable("database", "materialize", False, "The current database.", read_only=True),
    Variable("cluster", "default", False, "The current cluster."),
    Variable("bytea_output", "hex", False, "Output format of bytea.", ("hex",)),
    Variable("max_identifier_length", "63", False, "Longest identifier.", read_only=True),
    Variable("sql_frontend", "postgres", False,
             "Which front end plans a query: postgres (planner.sql: PostgreSQL's grammar, binder "
             "and typing; queries it does not cover yet take sqlglot's) or sqlglot (the older one).",
             ("sqlglot", "postgres")),
    # What pg_dump's output sets before restoring: accepted at the values it sets, which
    # change nothing here (no functions, XML, row security policies or tablespaces).
    Variable("check_function_bodies", "on", False, "Check routine bodies during CREATE FUNCTION.",
             ("on", "off", "true", "false")),
    Variable("xmloption", "content", False, "Sets whether XML data is a document or content.",
             ("content", "document")),
    Variable("row_security", "on", False, "Enable row security.", ("on", "off", "true", "false")),
    Variable("default_tablespace", "", False, "Sets the default tablespace to create tables in.", ("",)),
    Variable("default_table_access_method", "heap", False, "Sets the default table access method.",
             ("heap",)),
    Variable("client_min_messages", "notice", False, "Lowest message level sent to clients.",
             ("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error")),
]}

_ALIASES = {"time zone": "timezone", "names": "client_encoding"}

# System-wide flags, set with ALTER SYSTEM and kept in the durable catalog.
SYSTEM_VARIABLES = {
    "enable_within_timestamp_order_by_in_subscribe": "on",
    "enable_envelope_upsert_in_subscribe": "on",
    "enable_envelope_debezium_in_subscribe": "on",
}
_BOOLEAN = {"on": "on", "true": "on", "yes": "on", "1": "on", "t": "on",
            "off": "off", "false": "off", "no": "off", "0": "off", "f": "off"}


def system_value(name: str, value: str | None) -> str:
    """A checked value for a system flag (None resets it to its default)."""
    if name not in SYSTEM_VARIABLES:
        raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
    if value is None:
        return SYSTEM_VARIABLES[name]
    normal = _BOOLEAN.get(value.strip().lower())
    if normal is None:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f'parameter "{name}" requires a Boolean value, got "{value}"')
    return normal


def command_line_options(options: str) -> list[tuple[str, str | None]]:
    """The settings in a startup packet's `options` (libpq's `options=` / PGOPTIONS):
    `-c name=value` and `--name=value`, as PostgreSQL reads them; `\\ ` is a space in a value.
    A setting without `=value` comes back with None."""
    words = [w.replace("\0", " ") for w in options.replace("\\ ", "\0").split()]
    out: list[tuple[str, str | None]] = []
    for i, word in enumerate(words):
        if word == "-c" and i + 1 < len(words):
            setting = words[i + 1]
        elif word.startswith("-c") and len(word) > 2 or word.startswith("--"):
            setting = word[2:]
        else:
            continue
        name, eq, value = setting.partition("=")
        out.append((name.replace("-", "_"), value if eq else None))
    return out


class Settings:
    """One session's variables."""

    def __init__(self, startup: dict[str, str]) -> None:
        self.values: dict[str, str] = {n: v.default for n, v in VARIABLES.items()}
        self.startup_errors: list[SqlError] = []
        for key, value in startup.items():
            name = key.lower()
            if name not in ("user", "database", "replication", "options") and name in VARIABLES:
                self._set_at_startup(name, value)
        # What `options` names must exist, as PostgreSQL insists (a bare startup parameter
        # it does not know is passed over, above, as drivers send a few of their own).
        for name, value in command_line_options(startup.get("options", "")):
            if value is None:
                self.startup_errors.append(SqlError("42601", f"--{name.replace('_', '-')} requires a value"))
            elif _ALIASES.get(name.lower(), name.lower()) not in VARIABLES:
                self.startup_errors.append(SqlError(UNDEFINED_OBJECT,
                                                    f'unrecognized configuration parameter "{name}"'))
            else:
                self._set_at_startup(name, value)

    def _set_at_startup(self, name: str, value: str) -> None:
        """A start-up setting; a bad one is reported (as a warning) and leaves the default."""
        try:
            self.set(name, value)
        except SqlError as err:
            self.startup_errors.append(err)

    @staticmethod
    def variable(name: str) -> Variable:
        var = VARIABLES.get(_ALIASES.get(name.lower(), name.lower()))
        if var is None:
            raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        return var

    def get(self, name: str) -> str:
        return self.values[self.variable(name).name]

    def set(self, name: str, value: str | None) -> Variable:
        var = self.variable(name)
        if var.read_only:
            raise SqlError("55P02", f'parameter "{var.name}" cannot be changed')
        if value is None:
            value = var.default
        if var.name == "client_encoding":
            # PostgreSQL ignores all but letters and digits in an encoding name;
            # asyncpg sends client_encoding='utf-8' with the quotes.
            value = "".join(ch for ch in value if ch.isalnum()).upper()
        if var.allowed is not None and value.strip().lower() not in var.allowed:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f'invalid value for parameter "{var.name}": "{value}"',
                           hint=f"Allowed values: {', '.join(var.allowed)}.")
        if var.name == "timezone":
            value = "UTC"
        self.values[var.name] = value
        return var

    def reset(self, name: str) -> list[Variable]:
        if name == "all":
            changed = [v for v in VARIABLES.values()
                       if not v.read_only and self.values[v.name] != v.default]
            for v in changed:
                self.values[v.name] = v.default
            return changed
        return [self.set(name, None)]

    def reported(self) -> list[tuple[str, str]]:
        """(Name, value) of every reported variable, spelled as PostgreSQL does."""
        return [(_DISPLAY.get(v.name, v.name), self.values[v.name])
                for v in VARIABLES.values() if v.reported]


_DISPLAY = {"datestyle": "DateStyle", "timezone": "TimeZone", "intervalstyle": "IntervalStyle"}


def display_name(name: str) -> str:
    return _DISPLAY.get(name, name)
