"""Decoding Kafka keys and values: the formats (TEXT, BYTES, JSON, CSV), how each becomes
table columns, and the record-level errors. Plain functions over bytes and Arrow arrays,
which Spark runs as expressions (TEXT, BYTES) or as an Arrow UDF in its Python workers
(JSON, CSV); no I/O."""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from planner import jsonb


@dataclass(frozen=True)
class DecodePlan:
    """How to decode one table's records: formats and output columns (all plain data, picklable)."""

    key_format: tuple[str, int] | None  # (kind, csv columns)
    value_format: tuple[str, int]
    key_columns: tuple[str, ...]  # decoded key column names
    value_columns: tuple[str, ...]
    inline_errors: bool
    key_required: bool = True  # ENVELOPE UPSERT: a record without a key is an error; else its key is NULL

    def column_names(self) -> list[str]:
        return [*self.key_columns, *self.value_columns, "__tomb", "__err", "__key_raw", "__partition",
                "__offset", "__ts", "__headers"]

    def spark_ddl(self) -> str:
        cols = [f"`{c}` {_spark_type(self.key_format)}" for c in self.key_columns]
        cols += [f"`{c}` {_spark_type(self.value_format)}" for c in self.value_columns]
        cols += ["__tomb BOOLEAN", "__err STRING", "__key_raw BINARY", "__partition INT", "__offset BIGINT",
                 "__ts BIGINT", "__headers STRING"]
        return ", ".join(cols)

    def python_sides(self) -> list[str]:
        """The raw columns ("key", "value") whose format needs Python (JSON, CSV): those are
        decoded by an Arrow UDF in Spark's Python workers, the others by Spark expressions."""
        sides = [("key", self.key_format)] if self.key_columns else []
        return [side for side, fmt in [*sides, ("value", self.value_format)] if fmt[0] not in ("text", "bytes")]

    def decode_sql(self) -> list[str]:
        """`spark_ddl()`'s columns as Spark SQL over a raw batch, where a Python side's
        decoded columns and error are the fields c0, c1, ..., err of a struct `__<side>`."""
        python = self.python_sides()

        def values(side: str, fmt: tuple[str, int], names: tuple[str, ...]) -> list[str]:
            if side in python:
                return [f"__{side}.c{i} AS `{name}`" for i, name in enumerate(names)]
            if fmt[0] == "bytes":
                return [f"{side} AS `{names[0]}`"]
            return [f"CASE WHEN is_valid_utf8({side}) THEN CAST({side} AS STRING) END AS `{names[0]}`"]

        def problem(side: str, fmt: tuple[str, int], missing: str | None) -> str:
            # A NULL key or value (none, or a tombstone) decodes to NULL without an error.
            cases = [f"WHEN {side} IS NULL THEN {missing}"] if missing else []
            if side in python:
                cases.append(f"WHEN __{side}.err IS NOT NULL THEN concat('{side}: ', __{side}.err)")
            elif fmt[0] == "text":
                cases.append(f"WHEN NOT is_valid_utf8({side}) THEN '{side}: {INVALID_UTF8}'")
            return f"CASE {' '.join(cases)} END" if cases else "NULL"

        cols = values("key", self.key_format, self.key_columns) if self.key_columns else []
        cols += values("value", self.value_format, self.value_columns)
        problems = [problem("value", self.value_format, None)]
        if self.key_columns:
            problems.insert(0, problem("key", self.key_format, "'record has no key'" if self.key_required
                                       else None))
        cols += ["value IS NULL AS __tomb", f"nullif(concat_ws('; ', {', '.join(problems)}), '') AS __err",
                 "key AS __key_raw", "partition AS __partition", "offset AS __offset", "timestamp AS __ts",
                 "headers AS __headers"]
        return cols

    def udf_type(self, side: str) -> str:
        return udf_type(self.width(side))

    def width(self, side: str) -> int:
        """The columns one raw key or value decodes into."""
        return len(self.key_columns if side == "key" else self.value_columns)

    def format(self, side: str) -> tuple[str, int]:
        return self.key_format if side == "key" else self.value_format


def udf_type(width: int) -> str:
    """The Spark type of a decoded side: its columns c0, c1, ... and the record's error."""
    return "struct<" + ", ".join([f"c{i}: STRING" for i in range(width)] + ["err: STRING"]) + ">"


INVALID_UTF8 = 'invalid byte sequence for encoding "UTF8"'


def _spark_type(fmt: tuple[str, int] | None) -> str:
    return "BINARY" if fmt is not None and fmt[0] == "bytes" else "STRING"


def decode_value(fmt: tuple[str, int], data: bytes) -> list:
    """One key or value in a format, as its column values; raises ValueError on bad input."""
    kind, n = fmt
    if kind == "bytes":
        return [data]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(INVALID_UTF8) from None
    if kind == "text":
        return [text]
    if kind == "json":
        try:
            return [_decode_jsonb(data)]
        except Exception as exc:
            raise ValueError(f"invalid JSON: {getattr(exc, 'message', exc)}") from exc
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) != 1 or len(rows[0]) != n:
        got = len(rows[0]) if len(rows) == 1 else f"{len(rows)} lines"
        raise ValueError(f"expected {n} CSV columns, got {got}")
    return rows[0]


def _decode_jsonb(data: bytes) -> str:
    """PostgreSQL's jsonb input function: the canonical text form that queries compare.

    Parsed by orjson when it is installed and the document has no fraction or exponent
    (which orjson reads as a float, inexact where jsonb keeps every digit): about half the
    cost of the json module with the hooks PostgreSQL's number rules need. Anything it
    refuses, or that writing refuses, goes through the full input function, which has the
    last word and words the errors (tests/unit/test_kafka_decode.py compares the two)."""
    loads = _orjson_loads()
    text = _jsonb_by_orjson(loads, data) if loads is not None else None
    return text if text is not None else jsonb.jsonb_input(data)


def _jsonb_by_orjson(loads, data: bytes) -> str | None:
    try:
        return jsonb.jsonb_text(loads(data))
    except Exception:  # noqa: BLE001 - the input function decides, and words the error
        return None


@functools.cache
def _orjson_loads():
    """orjson.loads, or None when orjson is not installed (an executor without it)."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


def _decode_column(fmt: tuple[str, int], raw: pa.Array, width: int) -> tuple[list[pa.Array], list | None]:
    """Raw keys or values decoded into `width` columns, and each record's error (None when
    every record decoded). A missing key or value (a tombstone) stays NULL."""
    kind = fmt[0]
    if kind == "bytes":
        return [raw], None
    if kind == "text":
        try:
            # One vectorized UTF-8 check for the whole batch; records are only looked at
            # one by one when some record is not UTF-8, to say which.
            return [raw.cast(pa.string())], None
        except pa.ArrowInvalid:
            pass
    cols: list[list] = [[] for _ in range(width)]
    errors: list[str | None] = []
    for data in raw.to_pylist():
        values = [None] * width
        error = None
        if data is not None:
            try:
                values = decode_value(fmt, data)
            except ValueError as exc:
                error = str(exc)
        for col, v in zip(cols, values):
            col.append(v)
        errors.append(error)
    has_errors = any(e is not None for e in errors)
    return [pa.array(c, pa.string()) for c in cols], errors if has_errors else None


def key_label(key: object, raw_key: bytes | None) -> str:
    """How an upsert key is named in error messages and in the table's error state."""
    if key is not None:
        return repr(key.decode("utf-8", "replace") if isinstance(key, bytes) else key)
    return f"raw key {raw_key.hex()}" if raw_key is not None else "no key"


def decode_side(fmt: tuple[str, int], width: int, raw: pa.Array) -> pa.StructArray:
    """Raw keys or values in a format decoded into a struct of `width` columns (c0, c1,
    ...) and `err`: what the Arrow UDF returns to Spark for each batch of records."""
    arrays, errors = _decode_column(fmt, raw, width)
    err = pa.nulls(len(raw), pa.string()) if errors is None else pa.array(errors, pa.string())
    return pa.StructArray.from_arrays([*arrays, err], names=[*(f"c{i}" for i in range(width)), "err"])


def check_side(fmt: tuple[str, int], width: int, raw: pa.Array) -> pa.StructArray:
    """`decode_side`'s errors without its values (all NULL): whether each record decodes,
    for records that only take part in choosing a key's winner. JSON only: parsing tells
    whether PostgreSQL's jsonb input accepts a document, and writing its canonical text
    (what costs most) is left to the winners. What parsing misses, a \\u0000 or a lone
    surrogate in a string (which needs a \\u escape) and nesting too deep to write back,
    sends a document through the full decoder."""
    nulls = [pa.nulls(len(raw), pa.string()) for _ in range(width)]
    names = [*(f"c{i}" for i in range(width)), "err"]
    check = _json_check()
    values = raw.to_pylist()
    full = _needs_full_decoder(raw)
    if not any(full) and _all_parse(check, values):
        return pa.StructArray.from_arrays([*nulls, pa.nulls(len(raw), pa.string())], names=names)
    errors: list[str | None] = []
    for data, in_full in zip(values, full):
        error = None
        if data is not None:
            try:
                if in_full:
                    _decode_jsonb(data)
                else:
                    check(data)
            except Exception:  # noqa: BLE001 - the full decoder words the error
                try:
                    decode_value(fmt, data)
                except ValueError as exc:
                    error = str(exc)
        errors.append(error)
    return pa.StructArray.from_arrays([*nulls, pa.array(errors, pa.string())], names=names)


def _all_parse(check, values: list) -> bool:
    """Whether every document parses: the usual batch, in one tight loop (the record-by-
    record loop of check_side, which words errors, runs only when some document does not)."""
    try:
        for data in values:
            if data is not None:
                check(data)
    except Exception:  # noqa: BLE001 - any refusal: check_side looks again, one by one
        return False
    return True


def _needs_full_decoder(raw: pa.Array) -> list[bool]:
    """Documents that parsing cannot vouch for (see check_side): a \\u escape, or more than
    _CHECK_NESTING brackets. Vectorized: most batches have none."""
    escapes = pc.match_substring(raw, "\\u")
    long = pc.greater(pc.binary_length(raw), _CHECK_NESTING)
    if pc.any(long).as_py():
        brackets = pc.add(pc.count_substring(raw, "["), pc.count_substring(raw, "{"))
        escapes = pc.or_(escapes, pc.and_(long, pc.greater(brackets, _CHECK_NESTING)))
    return pc.fill_null(escapes, False).to_pylist()


@functools.cache
def _json_check():
    """A function that raises on a document PostgreSQL's json input rejects (bytes in).

    orjson when it is installed: a strict RFC 8259 parser in native code, about 6x faster per
    record than the json module with the hooks that PostgreSQL's number rules need. Everything
    it accepts, PostgreSQL's json input accepts too (checked against a list of edge cases and
    random documents: trailing content, NaN, control characters, leading zeros, BOMs); what
    it rejects that PostgreSQL would not (integers past 64 bits) goes on to the full decoder,
    which has the last word. What neither catches is routed around it (see check_side)."""
    loads = _orjson_loads()
    if loads is None:  # an executor without it: the json module, slower
        return lambda data: jsonb.parse_json(data.decode("utf-8"))
    return loads


_CHECK_NESTING = 100  # brackets in a document past which check_side decodes it in full


def decoder_udf(plan: DecodePlan, side: str, check_only: bool = False):
    """An Arrow UDF decoding one raw column: only that column travels to Python and back.
    `check_only`: only each record's error (see check_side)."""
    from pyspark.sql.functions import arrow_udf

    fmt, width = plan.format(side), plan.width(side)
    work = check_side if check_only else decode_side

    def decode(raw: pa.Array) -> pa.Array:
        return work(fmt, width, raw)

    return arrow_udf(decode, plan.udf_type(side))
