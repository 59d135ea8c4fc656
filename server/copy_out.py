"""COPY ... TO STDOUT data: rows → PostgreSQL's text, CSV or binary COPY format.

Pure: typed rows in, the bytes of CopyData messages out, as PostgreSQL's
CopyOneRowTo writes them - text with backslash escapes and `\\N`, CSV quoted where
a field needs it, binary with the `PGCOPY` signature and each value in its type's
binary send format. Text with the default delimiter and NULL string (every bare
SUBSCRIBE, and COPY TO without options) is built with Arrow compute over whole columns,
as planner.codecs.datarow.encode_rows builds DataRows, so a large result costs no Python call
per value; the other formats go a row at a time.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner.codecs.binary_in import decode_binary
from planner.codecs.registry import BINARY, TEXT, codec
from planner.types import SqlType
from server.copy_format import BAD_COPY_FILE_FORMAT, CopyDataError, CopyOptions, ParsedCopy
from spark_backend import pylist

BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_BINARY_HEADER = BINARY_SIGNATURE + struct.pack("!ii", 0, 0)  # flags, header extension length
_BINARY_TRAILER = struct.pack("!h", -1)
_NULL_FIELD = struct.pack("!i", -1)

# Types whose text form never holds a character COPY's text format escapes.
_PLAIN = {"boolean", "smallint", "integer", "bigint", "oid", "real", "double precision", "numeric",
          "date", "time without time zone", "timestamp without time zone", "timestamp with time zone",
          "uuid", "interval"}
# CopyAttributeOutText's escapes (the delimiter, a tab here, among them).
_ESCAPES = ((b"\\", b"\\\\"), (b"\t", b"\\t"), (b"\n", b"\\n"), (b"\r", b"\\r"),
            (b"\b", b"\\b"), (b"\f", b"\\f"), (b"\v", b"\\v"))
_MAX_ROWS = 1 << 16  # per join, well inside Arrow's 2 GiB binary offsets for ordinary rows


def copy_data(payload: bytes) -> bytes:
    """One CopyData message."""
    return b"d" + struct.pack("!i", len(payload) + 4) + payload


class CopyOut:
    """The encoder of one COPY ... TO STDOUT."""

    def __init__(self, options: CopyOptions, types: list[SqlType]) -> None:
        self.options = options
        self.types = types
        self.binary = options.format == "binary"
        # Each column's value encoder, resolved once: a row is then one call per value.
        self._encoders = [codec(t.oid, BINARY if self.binary else TEXT).encode for t in types]
        self.delimiter = options.delimiter_char()
        self.null = options.null if options.null is not None else ("\\N" if options.format == "text" else "")
        self.quote = options.quote
        self.escape = options.escape if options.escape is not None else options.quote
        special = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}
        special.setdefault(self.delimiter, "\\" + self.delimiter)
        self._text_escapes = str.maketrans(special)
        self._needs_quotes = (self.delimiter, self.quote, "\n", "\r")
        self._vectorized = options.format == "text" and self.delimiter == "\t" and self.null == "\\N"
        self._pending = b""  # the binary header, until the first row

    @property
    def overall_format(self) -> int:
        """CopyOutResponse's format: 1 for binary, 0 for text and CSV."""
        return 1 if self.binary else 0

    def row(self, row: tuple) -> bytes:
        if self.binary:
            parts = [struct.pack("!h", len(row))]
            for t, enc, v in zip(self.types, self._encoders, row):
                if v is None:
                    parts.append(_NULL_FIELD)
                else:
                    data = enc(t, v)
                    parts.append(struct.pack("!i", len(data)) + data)
            return b"".join(parts)
        csv = self.options.format == "csv"
        fields = []
        for t, enc, v in zip(self.types, self._encoders, row):
            if v is None:
                fields.append(self.null)
            else:
                text = enc(t, v).decode()
                fields.append(self._csv(text) if csv else self._text(text))
        return self._line(fields)

    def header(self, names: list[str]) -> bytes:
        """CopyData before the first row: the header line (CSV/text HEADER). The binary
        header is not sent alone: as PostgreSQL does, it travels with the first row (or
        the trailer), since psycopg reads binary COPY a message at a time."""
        if self.binary:
            self._pending = _BINARY_HEADER
            return b""
        if not self.options.header:
            return b""
        csv = self.options.format == "csv"
        return copy_data(self._line([self._csv(n) if csv else self._text(n) for n in names]))

    def messages(self, table: pa.Table) -> bytes:
        """CopyData messages for every row of `table` (columns in `types` order)."""
        if table.num_rows == 0:
            return b""
        if self._vectorized:
            return copy_text(self.types, table)
        rows = pylist.rows([pylist.values(c) for c in table.columns]) if table.num_columns else [()] * table.num_rows
        out = [copy_data(self._pending + self.row(rows[0]))]
        self._pending = b""
        out.extend(copy_data(self.row(r)) for r in rows[1:])
        return b"".join(out)

    def trailer(self) -> bytes:
        """CopyData after the last row: the binary trailer (with the header, if no row came)."""
        end = self._pending + (_BINARY_TRAILER if self.binary else b"")
        self._pending = b""
        return copy_data(end) if end else b""

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


def copy_text(types: list[SqlType], table: pa.Table) -> bytes:
    """CopyData messages in text format (tab, `\\N`) for every row of `table`."""
    out = []
    for start in range(0, table.num_rows, _MAX_ROWS):
        out.append(_text_messages(types, table.slice(start, _MAX_ROWS)))
    return b"".join(out)


def _text_messages(types: list[SqlType], table: pa.Table) -> bytes:
    n = table.num_rows
    if n == 0:
        return b""
    fields = []
    for i, t in enumerate(types):
        text = codec(t.oid, TEXT).encode_column(t, table.column(i))
        if t.is_array or t.base.name not in _PLAIN:
            for old, new in _ESCAPES:
                text = pc.replace_substring(text, old, new)
        fields.append(text.fill_null(b"\\N"))
    line = pc.binary_join_element_wise(*fields, b"\t") if fields else pa.array([b""] * n, pa.binary())
    line = pc.binary_join_element_wise(line, pa.scalar(b"", pa.binary()), b"\n")
    lengths = pc.binary_length(line).to_numpy(zero_copy_only=False).astype(np.int64)
    header = np.empty(n, dtype=[("tag", "u1"), ("len", ">i4")])
    header["tag"] = ord("d")
    header["len"] = lengths + 4
    offsets = np.arange(0, (n + 1) * 5, 5, dtype=np.int32)
    head = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(header.view(np.uint8))])
    framed = pc.binary_join_element_wise(head, line, b"")
    data = framed.buffers()[2]
    offs = np.frombuffer(framed.buffers()[1], dtype=np.int32, count=n + 1, offset=framed.offset * 4)
    return data.to_pybytes()[offs[0]:offs[-1]]


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
    to_text = [codec(t.oid, TEXT).encode for t in types]  # resolved once, called per value
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
        for t, enc in zip(types, to_text):
            if pos + 4 > len(data):
                raise CopyDataError(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data", len(rows) + 1)
            (size,) = struct.unpack_from("!i", data, pos)
            pos += 4
            if size == -1:
                row.append(None)
                continue
            if size < 0 or pos + size > len(data):
                raise CopyDataError(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data", len(rows) + 1)
            value = decode_binary(t, data[pos:pos + size])
            pos += size
            row.append(enc(t, value).decode())
        rows.append(row)
