"""COPY ... TO STDOUT data: rows → PostgreSQL's text, CSV or binary COPY format.

Pure: typed rows in, the bytes of CopyData messages out, as PostgreSQL's
CopyOneRowTo writes them - text with backslash escapes and `\\N`, CSV quoted where
a field needs it, binary with the `PGCOPY` signature and each value in its type's
binary send format.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import pyarrow as pa

from planner.types import SqlType
from server import values
from server.copy_format import BAD_COPY_FILE_FORMAT, CopyDataError, CopyOptions, ParsedCopy

BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_BINARY_HEADER = BINARY_SIGNATURE + struct.pack("!ii", 0, 0)  # flags, header extension length
_BINARY_TRAILER = struct.pack("!h", -1)
_NULL_FIELD = struct.pack("!i", -1)


class CopyOut:
    """The encoder of one COPY ... TO STDOUT."""

    def __init__(self, options: CopyOptions, types: list[SqlType]) -> None:
        self.options = options
        self.types = types
        self.binary = options.format == "binary"
        self.delimiter = options.delimiter_char()
        self.null = options.null if options.null is not None else ("\\N" if options.format == "text" else "")
        self.quote = options.quote
        self.escape = options.escape if options.escape is not None else options.quote
        special = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}
        special.setdefault(self.delimiter, "\\" + self.delimiter)
        self._text_escapes = str.maketrans(special)
        self._needs_quotes = (self.delimiter, self.quote, "\n", "\r")

    @property
    def overall_format(self) -> int:
        """CopyOutResponse's format: 1 for binary, 0 for text and CSV."""
        return 1 if self.binary else 0

    def start(self, names: list[str]) -> bytes:
        """What comes before the first row: the binary header, or a header line of names."""
        if self.binary:
            return _BINARY_HEADER
        if self.options.header:
            return self._line([self._csv(n) if self.options.format == "csv" else self._text(n) for n in names])
        return b""

    def end(self) -> bytes:
        return _BINARY_TRAILER if self.binary else b""

    def row(self, row: tuple) -> bytes:
        if self.binary:
            parts = [struct.pack("!h", len(row))]
            for t, v in zip(self.types, row):
                if v is None:
                    parts.append(_NULL_FIELD)
                else:
                    data = values.encode_binary(t, v)
                    parts.append(struct.pack("!i", len(data)) + data)
            return b"".join(parts)
        csv = self.options.format == "csv"
        fields = []
        for t, v in zip(self.types, row):
            if v is None:
                fields.append(self.null)
            else:
                text = values.encode_text(t, v).decode()
                fields.append(self._csv(text) if csv else self._text(text))
        return self._line(fields)

    def rows(self, rows: Iterable[tuple]) -> list[bytes]:
        return [self.row(r) for r in rows]

    def _line(self, fields: list[str]) -> bytes:
        return (self.delimiter.join(fields) + "\n").encode()

    def _text(self, value: str) -> str:
        return value.translate(self._text_escapes)

    def _csv(self, value: str) -> str:
        """Quoted when it holds the delimiter, the quote or a line break, is the NULL string
        (so that it reads back as a value), or is `\\.` (the old end-of-data marker)."""
        if value == self.null or value == "\\." or any(c in value for c in self._needs_quotes):
            inner = value.replace(self.escape, self.escape + self.escape) if self.escape != self.quote else value
            inner = inner.replace(self.quote, self.escape + self.quote)
            return f"{self.quote}{inner}{self.quote}"
        return value


def parse_binary(data: bytes, types: list[SqlType], names: list[str]) -> ParsedCopy:
    """COPY ... FROM STDIN (FORMAT binary) data in the form text COPY data is parsed to."""
    rows = binary_rows(data, types)
    return ParsedCopy([pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))], None, None, 1)


def binary_rows(data: bytes, types: list[SqlType]) -> list[list[str | None]]:
    """COPY ... FROM STDIN (FORMAT binary) data as each field's text form (None for NULL),
    for the same input path as text COPY: every value is decoded with its column type's
    binary receive function, then written as text."""
    if not data.startswith(BINARY_SIGNATURE) or len(data) < len(_BINARY_HEADER):
        raise CopyDataError(BAD_COPY_FILE_FORMAT, "COPY file signature not recognized", 1)
    flags, extension = struct.unpack_from("!ii", data, len(BINARY_SIGNATURE))
    if flags & 0xFFFF0000 & ~(1 << 16) or flags & (1 << 16):
        raise CopyDataError(BAD_COPY_FILE_FORMAT, "invalid COPY file header (WITH OIDS)", 1)
    pos = len(_BINARY_HEADER) + extension
    rows: list[list[str | None]] = []
    while True:
        if pos + 2 > len(data):
            raise CopyDataError(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data", len(rows) + 1)
        (count,) = struct.unpack_from("!h", data, pos)
        pos += 2
        if count == -1:
            return rows
        if count != len(types):
            raise CopyDataError(BAD_COPY_FILE_FORMAT, f"row field count is {count}, expected {len(types)}",
                                len(rows) + 1)
        row: list[str | None] = []
        for t in types:
            if pos + 4 > len(data):
                raise CopyDataError(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data", len(rows) + 1)
            (size,) = struct.unpack_from("!i", data, pos)
            pos += 4
            if size == -1:
                row.append(None)
                continue
            if size < 0 or pos + size > len(data):
                raise CopyDataError(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data", len(rows) + 1)
            value = values.decode_binary(t, data[pos:pos + size])
            pos += size
            row.append(values.encode_text(t, value).decode())
        rows.append(row)
