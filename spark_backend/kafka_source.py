"""Kafka records → decoded rows → upserted winners, as Spark work on each micro-batch.

The consumer (confluent-kafka) runs on a thread; each batch of raw records is
handed to Spark, which decodes them (a Python function over Arrow batches,
run by Spark's workers) and, for ENVELOPE UPSERT, picks each key's winner
within the batch by the ORDER BY. Comparing winners with the persisted state
happens on the server, which keeps each key's current row.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

log = logging.getLogger("sparkwire.kafka")

RAW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()), pa.field("timestamp", pa.int64()), pa.field("headers", pa.string()),
])


@dataclass(frozen=True)
class DecodePlan:
    """How to decode one table's records: formats and output columns (all plain data, picklable)."""

    key_format: tuple[str, int] | None  # (kind, csv columns)
    value_format: tuple[str, int]
    key_columns: tuple[str, ...]  # decoded key column names
    value_columns: tuple[str, ...]
    inline_errors: bool
    key_required: bool = True  # ENVELOPE UPSERT: a record without a key is an error; else its key is NULL

    def spark_ddl(self) -> str:
        cols = [f"`{c}` {_spark_type(self.key_format)}" for c in self.key_columns]
        cols += [f"`{c}` {_spark_type(self.value_format)}" for c in self.value_columns]
        cols += ["__tomb BOOLEAN", "__err STRING", "__key_raw BINARY", "__partition INT", "__offset BIGINT",
                 "__ts BIGINT", "__headers STRING"]
        return ", ".join(cols)


def _spark_type(fmt: tuple[str, int] | None) -> str:
    return "BINARY" if fmt is not None and fmt[0] == "bytes" else "STRING"


def decode_value(fmt: tuple[str, int], data: bytes) -> list:
    """One key or value in a format, as its column values; raises ValueError on bad input."""
    kind, n = fmt
    if kind == "bytes":
        return [data]
    text = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    if kind == "text":
        return [text]
    if kind == "json":
        from planner.types import BY_NAME, SqlType
        from server.values import decode_text

        try:
            return [decode_text(SqlType(BY_NAME["jsonb"]), data)]
        except Exception as exc:
            raise ValueError(f"invalid JSON: {getattr(exc, 'message', exc)}") from exc
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) != 1 or len(rows[0]) != n:
        got = len(rows[0]) if len(rows) == 1 else f"{len(rows)} lines"
        raise ValueError(f"expected {n} CSV columns, got {got}")
    return rows[0]


def make_decoder(plan: DecodePlan) -> Callable:
    """A function for DataFrame.mapInArrow: raw record batches → decoded batches."""

    def decode(batches):
        for batch in batches:
            cols = {name: batch.column(name).to_pylist() for name in RAW_SCHEMA.names}
            out: dict[str, list] = {c: [] for c in (*plan.key_columns, *plan.value_columns)}
            tomb, err = [], []
            for i in range(batch.num_rows):
                problems = []
                key_vals = [None] * len(plan.key_columns)
                if plan.key_columns:
                    raw_key = cols["key"][i]
                    if raw_key is None:
                        if plan.key_required:
                            problems.append("record has no key")
                    else:
                        try:
                            key_vals = decode_value(plan.key_format, raw_key)
                        except ValueError as exc:
                            problems.append(f"key: {exc}")
                raw_value = cols["value"][i]
                value_vals = [None] * len(plan.value_columns)
                if raw_value is not None:
                    try:
                        value_vals = decode_value(plan.value_format, raw_value)
                    except ValueError as exc:
                        problems.append(f"value: {exc}")
                for name, v in zip(plan.key_columns, key_vals):
                    out[name].append(v)
                for name, v in zip(plan.value_columns, value_vals):
                    out[name].append(v)
                tomb.append(raw_value is None)
                err.append("; ".join(problems) if problems else None)
            arrays = [pa.array(out[c], pa.binary() if plan.key_format and plan.key_format[0] == "bytes"
                               else pa.string()) for c in plan.key_columns]
            arrays += [pa.array(out[c], pa.binary() if plan.value_format[0] == "bytes" else pa.string())
                       for c in plan.value_columns]
            arrays += [pa.array(tomb, pa.bool_()), pa.array(err, pa.string()),
                       pa.array(cols["key"], pa.binary()), pa.array(cols["partition"], pa.int32()),
                       pa.array(cols["offset"], pa.int64()), pa.array(cols["timestamp"], pa.int64()),
                       pa.array(cols["headers"], pa.string())]
            names = [*plan.key_columns, *plan.value_columns, "__tomb", "__err", "__key_raw", "__partition",
                     "__offset", "__ts", "__headers"]
            yield pa.RecordBatch.from_arrays(arrays, names=names)

    return decode


def spark_batch(spark, plan: DecodePlan, raw: pa.Table, upsert_order: tuple[str, ...] | None) -> pa.Table:
    """Decode a batch in Spark; for upsert, keep each key's winner (and its last error)."""
    df = spark.createDataFrame(raw, schema="key BINARY, value BINARY, partition INT, offset BIGINT, "
                                           "timestamp BIGINT, headers STRING")
    decoded = df.mapInArrow(make_decoder(plan), plan.spark_ddl())
    if upsert_order is None:
        return decoded.orderBy("__partition", "__offset").toArrow()
    view = f"__sw_kafka_{threading.get_ident()}"
    if plan.key_columns:
        # Keys that cannot be decoded (NULL key column) are told apart by their raw bytes.
        decoded = decoded.selectExpr("*", f"CASE WHEN `{plan.key_columns[0]}` IS NULL THEN __key_raw END AS __kid")
    decoded.createOrReplaceTempView(view)
    try:
        keys = [f"`{c}`" for c in plan.key_columns] + ["__kid"] if plan.key_columns else ["__key_raw"]
        order = ", ".join({"timestamp": "__ts DESC", "offset": "__offset DESC"}[k] for k in upsert_order)
        if "__offset DESC" not in order:
            order += ", __offset DESC"
        same_key = " AND ".join(f"r.{k} <=> e.{k}" for k in keys)
        part = ", ".join(keys)
        sql = f"""
            WITH errs AS (
                SELECT {part}, max(__offset) AS __eoff FROM {view} WHERE __err IS NOT NULL GROUP BY {part}),
            oks AS (
                SELECT r.*, e.__eoff IS NOT NULL AS __after_error FROM {view} r LEFT JOIN errs e ON {same_key}
                WHERE r.__err IS NULL AND (e.__eoff IS NULL OR r.__offset > e.__eoff)),
            ranked AS (
                SELECT *, row_number() OVER (PARTITION BY {part} ORDER BY {order}) AS __rn FROM oks)
            SELECT * EXCEPT (__rn) FROM ranked WHERE __rn = 1
            UNION ALL
            SELECT r.*, false AS __after_error FROM {view} r JOIN errs e ON {same_key} AND r.__offset = e.__eoff
            WHERE NOT EXISTS (SELECT 1 FROM oks o WHERE {same_key.replace('r.', 'o.')})
        """
        return spark.sql(sql).toArrow()
    finally:
        spark.catalog.dropTempView(view)


def headers_json(headers) -> str | None:
    if not headers:
        return json.dumps([])
    out = []
    for k, v in headers:
        try:
            value = v.decode("utf-8") if v is not None else None
        except UnicodeDecodeError:
            value = v.hex()
        out.append({"key": k, "value": value})
    return json.dumps(out)


class Consumer:
    """A confluent-kafka consumer for one table, from explicit offsets (no consumer group state)."""

    def __init__(self, config: dict, topic: str, offsets: dict[int, int]) -> None:
        from confluent_kafka import Consumer as KConsumer

        self.topic = topic
        self.offsets = dict(offsets)
        self.errors: list[str] = []
        conf = {**config, "group.id": f"sparkwire-{id(self)}", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "enable.partition.eof": False,
                "error_cb": lambda err: self.errors.append(str(err))}
        self.consumer = KConsumer(conf)
        self.partitions: set[int] = set()

    def refresh_partitions(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        meta = self.consumer.list_topics(self.topic, timeout=5)
        topic = meta.topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise RuntimeError(f'topic "{self.topic}" does not exist')
        found = set(topic.partitions)
        if found != self.partitions:
            self.partitions = found
            self.consumer.assign([TopicPartition(self.topic, p, self.offsets.get(p, OFFSET_BEGINNING))
                                  for p in sorted(found)])

    def poll(self, max_records: int = 5000, timeout: float = 0.2) -> pa.Table:
        msgs = self.consumer.consume(num_messages=max_records, timeout=timeout)
        keys, values, parts, offs, tss, hdrs = [], [], [], [], [], []
        for msg in msgs:
            if msg.error() is not None:
                self.errors.append(str(msg.error()))
                continue
            keys.append(msg.key())
            values.append(msg.value())
            parts.append(msg.partition())
            offs.append(msg.offset())
            tss.append(msg.timestamp()[1])
            hdrs.append(headers_json(msg.headers()))
        return pa.Table.from_arrays([pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                                     pa.array(parts, pa.int32()), pa.array(offs, pa.int64()),
                                     pa.array(tss, pa.int64()), pa.array(hdrs, pa.string())],
                                    schema=RAW_SCHEMA)

    def close(self) -> None:
        self.consumer.close()


def check_broker(config: dict, timeout: float = 5.0) -> list[str]:
    """Topic names, or an error if the broker cannot be reached."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**config})
    meta = admin.list_topics(timeout=timeout)
    return sorted(meta.topics)
