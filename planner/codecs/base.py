"""What every codec shares: epochs, ranges, struct packers, the input-syntax error.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Sequence
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_HALF_UP,
    Context,
)
from typing import Any

import pyarrow as pa

from planner.errors import SqlError
from planner.types import SqlType

Column = Sequence["bytes | None"] | pa.Array | pa.ChunkedArray

UTC = _dt.UTC
PG_EPOCH_DATE = _dt.date(2000, 1, 1)
PG_EPOCH = _dt.datetime(2000, 1, 1)
PG_EPOCH_UTC = _dt.datetime(2000, 1, 1, tzinfo=UTC)
UNIX_TO_PG_DAYS = 10957
UNIX_TO_PG_US = UNIX_TO_PG_DAYS * 86_400_000_000
US_PER_DAY = 86_400_000_000

# Only ASCII whitespace counts, as with C's isspace() in PostgreSQL's parsers.
WS = " \t\n\r\f\v"

# Decimal's default context (28 digits) would round or refuse wide numerics.
DEC_CTX = Context(prec=2000, rounding=ROUND_HALF_UP, Emax=MAX_EMAX, Emin=MIN_EMIN)

INT_RANGES = {
    "smallint": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
STRING_TYPES = frozenset(
    ("text", "character varying", "character", "name", "char", "json", "jsonb", "uuid", "interval",
     "record")  # a row value: record_out's text already (planner.sql.spark_records)
)

pack_i16 = struct.Struct(">h").pack
pack_i32 = struct.Struct(">i").pack
pack_i64 = struct.Struct(">q").pack
pack_u32 = struct.Struct(">I").pack
pack_f32 = struct.Struct(">f").pack
pack_f64 = struct.Struct(">d").pack
pack_interval = struct.Struct(">qii").pack


def syntax(type_name: str, s: str, code: str = "22P02") -> SqlError:
    return SqlError(code, f'invalid input syntax for type {type_name}: "{s}"')


def element(t: SqlType) -> SqlType:
    return SqlType(t.base, t.typmod)

def array_dims(values: Sequence[Any]) -> list[int]:
    """Dimensions of a (possibly nested) list, checking it is rectangular."""
    dims = [len(values)]
    probe: Any = values
    while probe and isinstance(probe[0], (list, tuple)):
        probe = probe[0]
        dims.append(len(probe))
    if len(dims) > 1 and 0 in dims:
        raise SqlError("22P02", "malformed array literal", detail="Multidimensional arrays must have "
                       "sub-arrays with matching dimensions.")

    def check(vals: Sequence[Any], depth: int) -> None:
        if len(vals) != dims[depth]:
            raise SqlError("2202E", "multidimensional arrays must have array expressions "
                           "with matching dimensions")
        for v in vals:
            if depth + 1 < len(dims):
                if not isinstance(v, (list, tuple)):
                    raise SqlError("2202E", "multidimensional arrays must have array "
                                   "expressions with matching dimensions")
                check(v, depth + 1)
            elif isinstance(v, (list, tuple)):
                raise SqlError("2202E", "multidimensional arrays must have array expressions "
                               "with matching dimensions")

    if len(dims) > 1:
        check(values, 0)
    return dims
