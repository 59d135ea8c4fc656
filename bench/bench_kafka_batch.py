"""The Spark part of Kafka upsert ingestion alone: `upsert_batch` over generated records,
outside the server (no broker, no consumer, no event loop), next to the least Spark work
for the same batches, in one SparkSession with the server's settings.

    .venv/bin/python bench/bench_kafka_batch.py [--messages 1000000] [--keys 100000]
                                                [--batch 500000] [--rounds 6]

Records as bench_kafka.py produces them (keys `k<i % keys>`, values `{"n": <i>}`, two
partitions by key), upserted into a table `KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE
OFFSET ENVELOPE UPSERT` in a fresh store each round, a batch at a time, each committed
before the next as the server does. The floor picks each key's last record of the same
batches with one aggregation and nothing else (bench_kafka.py's Parquet floor). Each round
prints messages/s and CPU per message (this process and its JVM): the first rounds show
the JVM compiling, the later ones what a long-running server spends.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
import zlib

import pyarrow as pa
from bench_kafka import FLOOR_QUERY
from common import machine_note, tree_cpu_seconds
from pyspark.sql import SparkSession

from planner.types import BY_NAME, SqlType
from spark_backend import kafka_batch as kb
from spark_backend.engine import _SPARK_CONF
from spark_backend.kafka_consumer import MAX_BATCH, RAW_SCHEMA
from spark_backend.kafka_decode import DecodePlan
from spark_backend.schema import TS
from spark_backend.storage import Store


def records(messages: int, keys: int) -> pa.Table:
    """The raw records of a 2-partition topic, partition by partition in offset order."""
    by_partition: list[list[int]] = [[], []]
    for i in range(messages):
        by_partition[zlib.crc32(f"k{i % keys}".encode()) % 2].append(i)
    rows = [(p, offset, i) for p, ids in enumerate(by_partition) for offset, i in enumerate(ids)]
    return pa.table({
        "key": pa.array([f"k{i % keys}".encode() for _, _, i in rows], pa.binary()),
        "value": pa.array([f'{{"n": {i}}}'.encode() for _, _, i in rows], pa.binary()),
        "partition": pa.array([p for p, _, _ in rows], pa.int32()),
        "offset": pa.array([o for _, o, _ in rows], pa.int64()),
        "timestamp": pa.nulls(len(rows), pa.int64()),
        "headers": pa.nulls(len(rows), pa.string()),
    }, schema=RAW_SCHEMA)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=MAX_BATCH)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    raw = records(args.messages, args.keys)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[*]").appName("bench-kafka-batch")
    for key, value in _SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._gateway.proc.pid

    def cpu_seconds() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime + tree_cpu_seconds(jvm)

    text = SqlType(BY_NAME["text"])
    plan = DecodePlan(("text", 0), ("text", 0), ("key",), ("text",), False)
    target = kb.Target("t", (text, text, SqlType(BY_NAME["bigint"])), ("key", "text", "__offset"))
    folder = tempfile.mkdtemp(prefix="sparkwire-bench-batch-")

    def upsert() -> None:
        store = Store(os.path.join(folder, f"store-{time.perf_counter_ns()}"))
        store.open()
        store.commit(1, [{"op": "create_collection", "collection": "t"}], {})
        for ts, offset in enumerate(range(0, raw.num_rows, args.batch), start=2):
            result = kb.upsert_batch(spark, plan, raw.slice(offset, args.batch), target, store, ts - 1, False)
            updates = result.updates
            updates = updates.set_column(updates.schema.get_field_index(TS), TS,
                                         pa.array([ts] * updates.num_rows, pa.int64()))
            store.commit(ts, [], {"t": updates})
        store.close()

    batch_session = kb.batch_session(spark)

    def floor() -> None:
        for offset in range(0, raw.num_rows, args.batch):
            path = os.path.join(folder, f"{time.perf_counter_ns()}.parquet")
            kb.write_handover(raw.slice(offset, args.batch).select(["key", "value", "offset"]), path)
            batch_session.read.parquet(path).createOrReplaceTempView("floor_batch")
            batch_session.sql(FLOOR_QUERY).toArrow()

    print(machine_note("bench_kafka_batch"), flush=True)
    print(f"{args.messages:,} records, {args.keys:,} keys, batches of {args.batch:,}; "
          "per round: messages/s and CPU core-µs per message (this process + its JVM)")
    try:
        for round_ in range(1, args.rounds + 1):
            figures = []
            for work in (upsert, floor):
                used, start = cpu_seconds(), time.perf_counter()
                work()
                seconds = time.perf_counter() - start
                figures.append(f"{args.messages / seconds:>10,.0f} {(cpu_seconds() - used) / args.messages * 1e6:>6.2f}")
            print(f"round {round_}:  upsert_batch {figures[0]}   floor {figures[1]}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(machine_note("done"), flush=True)


if __name__ == "__main__":
    main()
