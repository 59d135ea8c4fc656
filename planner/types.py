"""PostgreSQL types sparkwire supports, and how each is stored in Spark.

One registry, keyed by canonical name, alias and OID, so that the parser, the
storage layer and the wire encoders agree on a type without talking to each
other. A column's full type is a `SqlType`: the base type plus PostgreSQL's
type modifier (precision/scale of numeric, length of varchar).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from planner.errors import SqlError


@dataclass(frozen=True)
class PgType:
    """A base PostgreSQL type: catalog facts plus its Spark representation."""

    name: str  # canonical name, as format_type prints it
    oid: int
    typlen: int  # pg_type.typlen: bytes for fixed width, -1 for varlena
    spark: str  # Spark SQL DDL type used in storage
    array_oid: int


_BASE = [
    PgType("boolean", 16, 1, "BOOLEAN", 1000),
    PgType("bytea", 17, -1, "BINARY", 1001),
    PgType("bigint", 20, 8, "BIGINT", 1016),
    PgType("smallint", 21, 2, "SMALLINT", 1005),
    PgType("integer", 23, 4, "INT", 1007),
    PgType("text", 25, -1, "STRING", 1009),
    PgType("jsonb", 3802, -1, "STRING", 3807),
    PgType("json", 114, -1, "STRING", 199),
    PgType("real", 700, 4, "FLOAT", 1021),
    PgType("double precision", 701, 8, "DOUBLE", 1022),
    PgType("character", 1042, -1, "STRING", 1014),
    PgType("character varying", 1043, -1, "STRING", 1015),
    PgType("date", 1082, 4, "DATE", 1182),
    PgType("time without time zone", 1083, 8, "TIME(6)", 1183),
    PgType("timestamp without time zone", 1114, 8, "TIMESTAMP_NTZ", 1115),
    PgType("timestamp with time zone", 1184, 8, "TIMESTAMP", 1185),
    # Spark has no type holding months, days and microseconds together, so a
    # PostgreSQL interval is kept as its canonical text.
    PgType("interval", 1186, 16, "STRING", 1187),
    PgType("numeric", 1700, -1, "DECIMAL(38,10)", 1231),
    PgType("uuid", 2950, 16, "STRING", 2951),
    PgType("oid", 26, 4, "BIGINT", 1028),
    PgType("name", 19, 64, "STRING", 1003),
    PgType("char", 18, 1, "STRING", 1002),
]

BY_NAME: dict[str, PgType] = {t.name: t for t in _BASE}
# A pseudo-type: the type of a row value (`ROW(1, 'x')`, a whole-row reference `t`), which no
# column of a table may have. Its values reach the wire as record_out's text, computed in Spark
# (planner.sql.spark_records), so it travels in the text format only.
RECORD = PgType("record", 2249, -1, "STRING", 2287)
PSEUDO_TYPES: dict[str, PgType] = {RECORD.name: RECORD}
BY_OID: dict[int, PgType] = {t.oid: t for t in _BASE}

# Other spellings of a type name → the name PostgreSQL displays.
ALIASES = {
    "bool": "boolean",
    "int2": "smallint",
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "float4": "real",
    "float8": "double precision",
    "float": "double precision",
    "double": "double precision",
    "decimal": "numeric",
    "varchar": "character varying",
    "char": "character",
    "bpchar": "character",
    "string": "text",
    "time": "time without time zone",
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
}

# Types a user may give a table column (the others exist for catalog results).
COLUMN_TYPES = frozenset(
    n for n in BY_NAME if n not in ("oid", "name", "char", "json")
) | {"json"}

NUMERIC_MAX_PRECISION = 1000  # PostgreSQL's
# Spark's decimals hold at most 38 digits: a numeric(p, s) with p over that is stored and
# computed as DECIMAL(38, s), and a value needing more digits is refused (22003) rather
# than rounded.
STORED_MAX_PRECISION = 38


@dataclass(frozen=True)
class SqlType:
    """A column type: a base type and PostgreSQL's typmod (-1 when none)."""

    base: PgType
    typmod: int = -1
    is_array: bool = False
    # An unconstrained numeric result whose digits after the point PostgreSQL's rules fix
    # statically (10.10 * 2 prints 20.20): printed with exactly these, where a stored
    # unconstrained numeric prints its value's own digits. Not part of the type's identity.
    display_scale: int | None = field(default=None, compare=False)
    # An unconstrained numeric result whose scale PostgreSQL picks value by value (a
    # division, avg, sqrt ...: planner.pg_numeric): its values arrive as PostgreSQL's text
    # (a Spark STRING) and are printed as they are. Not part of the type's identity either.
    per_value_scale: bool = field(default=False, compare=False)

    @property
    def oid(self) -> int:
        return self.base.array_oid if self.is_array else self.base.oid

    @property
    def precision_scale(self) -> tuple[int, int] | None:
        """numeric's (precision, scale) when declared."""
        if self.base.name != "numeric" or self.typmod < 0:
            return None
        raw = self.typmod - 4
        return raw >> 16, raw & 0xFFFF

    @property
    def stored_precision_scale(self) -> tuple[int, int] | None:
        """The (precision, scale) a declared numeric is stored and computed with."""
        ps = self.precision_scale
        return (min(ps[0], STORED_MAX_PRECISION), ps[1]) if ps is not None else None

    @property
    def fixed_scale(self) -> int | None:
        """The digits after the point every value of a numeric prints with, if fixed."""
        ps = self.precision_scale
        return ps[1] if ps is not None else self.display_scale

    @property
    def max_length(self) -> int | None:
        """varchar(n)/char(n)'s n when declared."""
        if self.base.name in ("character varying", "character") and self.typmod >= 0:
            return self.typmod - 4
        return None

    @property
    def spark(self) -> str:
        ps = self.stored_precision_scale
        if ps:
            inner = f"DECIMAL({ps[0]},{ps[1]})"
        elif self.per_value_scale:
            inner = "STRING"
        elif self.display_scale is not None:
            inner = f"DECIMAL(38,{self.display_scale})"
        else:
            inner = self.base.spark
        return f"ARRAY<{inner}>" if self.is_array else inner

    def display(self) -> str:
        """The name `format_type` would print, e.g. numeric(10,2)."""
        ps = self.precision_scale
        name = self.base.name
        if ps:
            name = f"numeric({ps[0]},{ps[1]})"
        elif self.max_length is not None:
            name = f"{name}({self.max_length})"
        return name + ("[]" if self.is_array else "")

    def to_json(self) -> dict:
        return {"name": self.base.name, "typmod": self.typmod, "array": self.is_array}

    @classmethod
    def from_json(cls, d: dict) -> SqlType:
        return cls(BY_NAME[d["name"]], d["typmod"], d.get("array", False))


def lookup(name: str) -> PgType | None:
    """A base type by any of its names, case-insensitively."""
    key = " ".join(name.lower().split())
    return BY_NAME.get(ALIASES.get(key, key))


def column_type(name: str, modifiers: tuple[int, ...] = (), is_array: bool = False) -> SqlType:
    """Resolve a declared column type, checking its modifiers as PostgreSQL does."""
    base = lookup(name)
    if base is None or base.name not in COLUMN_TYPES:
        raise SqlError("42704", f'type "{name}" does not exist')
    if name.lower() == "float" and modifiers:
        # float(p): real up to 24 bits of precision, double precision up to 53 (pandas writes FLOAT(53)).
        bits = modifiers[0]
        if len(modifiers) > 1 or not 1 <= bits <= 53:
            raise SqlError("22023", f"precision for type float must be {'at least 1 bit' if bits < 1 else 'less than 54 bits'}")
        return SqlType(BY_NAME["real" if bits <= 24 else "double precision"], -1, is_array)
    if base.name == "numeric":
        return SqlType(base, _numeric_typmod(modifiers), is_array)
    if base.name in ("character varying", "character"):
        if len(modifiers) > 1:
            raise SqlError("42601", f"invalid type modifier for type {base.name}")
        if modifiers:
            n = modifiers[0]
            if n < 1:
                raise SqlError("22023", f"length for type {base.name} must be at least 1")
            return SqlType(base, n + 4, is_array)
        if base.name == "character":
            return SqlType(base, 5, is_array)  # char means char(1)
        return SqlType(base, -1, is_array)
    if modifiers and base.name not in ("time without time zone", "timestamp without time zone",
                                       "timestamp with time zone"):
        raise SqlError("42601", f"type modifier is not allowed for type {base.name}")
    return SqlType(base, -1, is_array)


def _numeric_typmod(modifiers: tuple[int, ...]) -> int:
    if not modifiers:
        return -1
    if len(modifiers) > 2:
        raise SqlError("42601", "invalid NUMERIC type modifier")
    precision = modifiers[0]
    scale = modifiers[1] if len(modifiers) == 2 else 0
    if not 1 <= precision <= NUMERIC_MAX_PRECISION:
        raise SqlError(
            "22023",
            f"NUMERIC precision {precision} must be between 1 and {NUMERIC_MAX_PRECISION}",
        )
    if not 0 <= scale <= precision:
        raise SqlError("22023", f"NUMERIC scale {scale} must be between 0 and precision {precision}")
    if scale > STORED_MAX_PRECISION:
        raise SqlError("0A000", f"NUMERIC scale {scale} is not supported",
                       detail=f"sparkwire keeps at most {STORED_MAX_PRECISION} digits of a numeric, "
                              f"all of them after the point at most.")
    return ((precision << 16) | scale) + 4


class _NaN:
    """The one value every NaN groups as (see `group_key`)."""

    def __repr__(self) -> str:
        return "NaN"


_NAN_KEY = _NaN()


def group_key(value: object) -> object:
    """A hashable stand-in equal exactly when PostgreSQL's = groups the values together:
    NaN equals NaN (Python's float NaN equals nothing, not even itself), -0.0 equals 0.0
    (as in Python), arrays compare element by element."""
    if isinstance(value, float):
        return _NAN_KEY if value != value else value  # noqa: PLR0124 - NaN is the one value != itself
    if isinstance(value, (list, tuple)):
        return tuple(group_key(v) for v in value)
    if isinstance(value, Decimal) and value.is_nan():
        return _NAN_KEY
    return value


def row_key(row: tuple) -> tuple:
    """`group_key` of every value of a row."""
    return tuple(group_key(v) for v in row)
