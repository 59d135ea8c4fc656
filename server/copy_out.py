"""COPY ... TO STDOUT in PostgreSQL's text format, a column at a time.

Each row is one CopyData message: fields in their text form, tab-separated, `\\N` for
NULL, backslash, tab, newline and carriage return escaped, ending in a newline. Built
with Arrow compute over whole columns (as server.values.encode_rows builds DataRows), so
a large result or a SUBSCRIBE snapshot costs no Python call per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner.types import SqlType
from server import values

# Types whose text form never holds a backslash, tab, newline or carriage return.
_PLAIN = {"boolean", "smallint", "integer", "bigint", "oid", "real", "double precision", "numeric",
          "date", "time without time zone", "timestamp without time zone", "timestamp with time zone",
          "bytea", "uuid", "interval"}
_ESCAPES = ((b"\\", b"\\\\"), (b"\t", b"\\t"), (b"\n", b"\\n"), (b"\r", b"\\r"))
_MAX_ROWS = 1 << 16  # per join, well inside Arrow's 2 GiB binary offsets for ordinary rows


def copy_text(types: list[SqlType], table: pa.Table) -> bytes:
    """CopyData messages for every row of `table` (columns in `types` order)."""
    out = []
    for start in range(0, table.num_rows, _MAX_ROWS):
        out.append(_messages(types, table.slice(start, _MAX_ROWS)))
    return b"".join(out)


def _messages(types: list[SqlType], table: pa.Table) -> bytes:
    n = table.num_rows
    if n == 0:
        return b""
    fields = []
    for i, t in enumerate(types):
        text = values.encode_text_arrow(t, table.column(i))
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
