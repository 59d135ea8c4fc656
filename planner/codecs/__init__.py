"""PostgreSQL wire forms of values: result encoding and Bind parameter parsing.

One module per direction and form: text_out (encode_text), binary_out (encode_binary),
text_in (decode_text), binary_in (decode_binary), arrow_out (whole Arrow columns:
encode_text_arrow, encode_binary_arrow, encode_*_column), datarow (encode_rows); interval
holds PostgreSQL's interval syntax and base what they all share. Each direction registers
its functions in registry.CODECS, keyed by format and type OID; callers resolve
`registry.codec(t.oid, fmt)` once per column and call its encode/decode/encode_column.

Query results arrive from Spark as Arrow; these modules produce the exact bytes
PostgreSQL 15's output/send functions would (DateStyle ISO, TimeZone UTC,
IntervalStyle postgres, extra_float_digits 1), and parses client parameters as
the matching input/recv functions do, raising the SQLSTATE PostgreSQL raises.

The Python value of each type, as Arrow's ``to_pylist`` yields it and as the
decoders return it:

- boolean ``bool``; smallint, integer, bigint, oid ``int``; real, double ``float``
- numeric ``Decimal``; bytea ``bytes``
- text, varchar, character, name, "char", json, jsonb, uuid, interval ``str``
  (uuid, interval and jsonb in PostgreSQL's canonical text form)
- date ``date``; time ``time``; timestamp naive ``datetime``; timestamptz aware
  UTC ``datetime``
- arrays ``list`` (nested lists for more than one dimension, None for NULL)

Pure: no I/O.
"""

# Every direction registers itself on import: importing any codec module fills the whole
# registry (the modules are imported here, in dependency order, for that alone).
from planner.codecs import text_out, text_in, binary_out, binary_in, arrow_out  # noqa: F401, I001
