"""The one table of value codecs, keyed by type OID and format as asyncpg's and psycopg's are.

Each direction module registers its functions here when it is imported (text_out the text
encoders, binary_out the binary ones, text_in and binary_in the decoders, arrow_out the
whole-column encoders), under the type's name (as psycopg registers adapters), which is
turned into its OID once; an array type has its own OID and its own codec, whose functions
find their element's codec here once per array. planner/codecs/__init__.py imports all of them, so
the table is complete as soon as anything in planner.codecs is imported.

A caller resolves a codec once per column or parameter (`codec(t.oid, fmt)`) and then calls
its functions per value, so the per-value path is one call, not a lookup.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.types import BY_NAME, PSEUDO_TYPES, SqlType

TEXT = 0  # the wire's format codes
BINARY = 1
FORMAT_NAMES = {TEXT: "text", BINARY: "binary"}

Encode = Callable[[SqlType, Any], bytes]  # one non-NULL value → its wire bytes
Decode = Callable[[SqlType, bytes], Any]  # wire bytes → the value (raises PostgreSQL's SqlError)
EncodeColumn = Callable[[SqlType, Any], Any]  # an Arrow column → an Arrow binary array, NULLs kept


class Codec:
    """How values of one type OID travel in one format."""

    __slots__ = ("decode", "encode", "encode_column", "format", "oid")

    def __init__(self, oid: int, fmt: int) -> None:
        self.oid, self.format = oid, fmt
        self.encode: Encode | None = None
        self.decode: Decode | None = None
        self.encode_column: EncodeColumn | None = None

    def __repr__(self) -> str:
        return f"Codec({self.oid}, {FORMAT_NAMES[self.format]})"


# Keyed by (format, type OID): one table per format, indexed by OID, as asyncpg keeps its
# text_codec_map and binary_codec_map. An int-keyed lookup is what a per-value entry point
# (encode_text ...) can afford; a tuple key costs a hash of the tuple every time.
CODECS: tuple[dict[int, Codec], dict[int, Codec]] = ({}, {})

# Base types that have no binary form and travel as text only (by name). None today: every
# type of planner.types has both; a new one without send/recv functions is listed here.
TEXT_ONLY: frozenset[str] = frozenset()


def register(type_name: str, fmt: int, *, array: bool = False, encode: Encode | None = None,
             decode: Decode | None = None, encode_column: EncodeColumn | None = None) -> None:
    """Set the functions given for the type (its array type with `array`) in format `fmt`."""
    base = BY_NAME[type_name] if type_name in BY_NAME else PSEUDO_TYPES[type_name]
    oid = base.array_oid if array else base.oid
    table = CODECS[fmt]
    entry = table.get(oid)
    if entry is None:
        entry = table[oid] = Codec(oid, fmt)
    if encode is not None:
        entry.encode = encode
    if decode is not None:
        entry.decode = decode
    if encode_column is not None:
        entry.encode_column = encode_column


def register_types(fmt: int, *, array: Encode | Decode, encode: dict[str, Encode] | None = None,
                   decode: dict[str, Decode] | None = None) -> None:
    """Register one direction of a format for many types at once: `encode` or `decode` by
    type name for the base types, and `array` (which finds its element's codec here) for
    each one's array type."""
    for name, fn in (encode or {}).items():
        register(name, fmt, encode=fn)
        register(name, fmt, array=True, encode=array)
    for name, fn in (decode or {}).items():
        register(name, fmt, decode=fn)
        register(name, fmt, array=True, decode=array)


def codec(oid: int, fmt: int) -> Codec:
    """The codec of a type OID (a base or an array type) in a format."""
    entry = CODECS[fmt].get(oid) if fmt in (TEXT, BINARY) else None
    if entry is None:
        raise SqlError(FEATURE_NOT_SUPPORTED,
                       f"no {FORMAT_NAMES.get(fmt, str(fmt))} format for type with OID {oid}")
    return entry
