"""Client bytes as text, checked as PostgreSQL checks input in the UTF8 encoding.

Pure. Shared by the value codecs (planner.codecs) and the input functions that run in
Spark's workers (planner.jsonb through spark_backend.kafka_decode), which must not import
the server.
"""

from __future__ import annotations

from planner.errors import SqlError

CHARACTER_NOT_IN_REPERTOIRE = "22021"


def decode_utf8(data: bytes) -> str:
    """`data` as text; 22021 naming the first bad byte sequence (or a NUL, which text
    cannot hold), with PostgreSQL's words."""
    try:
        s = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        first = data[e.start]
        n = 1 if first < 0xC0 else 2 if first < 0xE0 else 3 if first < 0xF0 else 4
        bad = " ".join(f"0x{b:02x}" for b in data[e.start : e.start + n])
        raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, f'invalid byte sequence for encoding "UTF8": {bad}') from None
    if "\x00" in s:
        raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, 'invalid byte sequence for encoding "UTF8": 0x00')
    return s


def utf8_length(lead: int) -> int:
    """pg_mblen for UTF-8: how many bytes the character starting with byte `lead` takes (a
    stray continuation byte counts as one)."""
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4
