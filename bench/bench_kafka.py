"""Kafka upsert ingestion: 1e6 keyed messages (1e5 distinct keys) in messages/s, next to
the raw confluent-kafka consume rate of the same topic in the same run; and the lag from
produce to the row reaching a SUBSCRIBE client.

    .venv/bin/python bench/bench_kafka.py [--messages 1000000] [--keys 100000] [--lag 100]
                                          [--formats json,text]

The topic (2 partitions) holds keys `k<i % keys>` and JSON values `{"n": <i>}`. Each
format in --formats is one upsert table (KEY FORMAT TEXT VALUE FORMAT <format> INCLUDE
OFFSET ENVELOPE UPSERT) on its own source, created after the messages were produced and
timed from CREATE TABLE until its source's progress reaches the end of the topic, one
table at a time. JSON values are decoded by Python in Spark's workers (PostgreSQL's jsonb
text form); TEXT by Spark's own expressions. The raw rate is one plain confluent-kafka
consumer reading the whole topic, before and after sparkwire's ingestion. The floor
(--no-floor to skip) is the least Spark work per batch, timed in this process after
the server has finished: see spark_floor.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psycopg
from common import ServerProcess, machine_note, percentile
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import free_port


def start_broker() -> tuple[subprocess.Popen, int, str]:
    port = free_port()
    data = tempfile.mkdtemp(prefix="sparkwire-kafka-")
    exe = os.path.join(os.path.dirname(sys.executable), "noida-db")
    proc = subprocess.Popen([exe, "start", "--data-dir", data, "--only", "kafka", "--kafka-port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port, data
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("broker did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--lag", type=int, default=100)
    parser.add_argument("--formats", default="json,text")
    parser.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the least Spark work per record (see spark_floor)")
    args = parser.parse_args()
    formats = [f.strip().lower() for f in args.formats.split(",") if f.strip()]
    broker, port, data = start_broker()
    bootstrap = f"127.0.0.1:{port}"
    sw = ServerProcess().start()
    admin = producer = None
    try:
        sw.wait_ready()  # Spark's cold start must not overlap the raw consumer's timing
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1,
                                               config={"retention.ms": "-1"})
                                      for t in ("bench", "lag")]).values():
            f.result()
        print(machine_note("bench_kafka"), flush=True)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
        start = time.perf_counter()
        for i in range(args.messages):
            produce(producer, "bench", f"k{i % args.keys}".encode(), f'{{"n": {i}}}'.encode())
        producer.flush()
        print(f"produced {args.messages:,} messages in {time.perf_counter() - start:.1f} s", flush=True)
        raw_before = raw_consume_rate(bootstrap, "bench", args.messages)
        rates: dict[str, float] = {}
        keys: dict[str, int] = {}
        with psycopg.connect(sw.dsn, autocommit=True) as c:
            c.execute(f"CREATE CONNECTION k TO KAFKA (BROKER '{bootstrap}')")
            for fmt in formats:
                c.execute(f"CREATE SOURCE bench_{fmt} FROM KAFKA CONNECTION k (TOPIC 'bench')")
                start = time.perf_counter()
                c.execute(f'CREATE TABLE latest_{fmt} FROM SOURCE bench_{fmt} (REFERENCE "bench") '
                          f"KEY FORMAT TEXT VALUE FORMAT {fmt.upper()} INCLUDE OFFSET AS o ENVELOPE UPSERT")
                while True:
                    done = c.execute(f'SELECT coalesce(sum("offset"), 0) FROM bench_{fmt}').fetchone()[0]
                    if done >= args.messages:
                        break
                    time.sleep(0.5)
                rates[fmt] = args.messages / (time.perf_counter() - start)
                keys[fmt] = c.execute(f"SELECT count(*) FROM latest_{fmt}").fetchone()[0]
                print(f"{fmt}: {rates[fmt]:,.0f} messages/s, {keys[fmt]:,} keys", flush=True)
                c.execute(f"DROP SOURCE bench_{fmt} CASCADE")  # its table must not compete with the next
            c.execute("CREATE SOURCE lag FROM KAFKA CONNECTION k (TOPIC 'lag') KEY FORMAT TEXT VALUE FORMAT TEXT "
                      "ENVELOPE UPSERT")
        # Raw again, after: load from elsewhere on the machine moves both; compare with the better one.
        raw_after = raw_consume_rate(bootstrap, "bench", args.messages)
        raw_rate = max(raw_before, raw_after)
        lags = lag(sw.dsn, producer, args.lag)
        floor = spark_floor(bootstrap, "bench", args.messages) if args.floor else None
        print(f"{'measure':<44} {'sparkwire':>14} {'raw consume':>14}")
        for fmt in formats:
            print(f"{f'upsert ingestion ({fmt.upper()} values), messages/s':<44} {rates[fmt]:>14,.0f} "
                  f"{raw_rate:>14,.0f}")
            print(f"{'  ratio sparkwire/raw (goal >= 0.50)':<44} {rates[fmt] / raw_rate:>14.3f}")
            print(f"{'  distinct keys in the table':<44} {keys[fmt]:>14,}")
        if floor is not None:
            print(f"{'floor: Spark in, one shuffle, out; messages/s':<44} {floor:>14,.0f} {raw_rate:>14,.0f}")
            print(f"{'  ratio floor/raw':<44} {floor / raw_rate:>14.3f}")
        print(f"{'raw consume before / after, messages/s':<44} {'':>14} "
              f"{f'{raw_before:,.0f} / {raw_after:,.0f}':>14}")
        print(f"{'produce → SUBSCRIBE client p50 ms':<44} {percentile(lags, 50):>14.0f}")
        print(f"{'produce → SUBSCRIBE client p99 ms':<44} {percentile(lags, 99):>14.0f}")
        print(machine_note("done"), flush=True)
    finally:
        admin = producer = None  # their clients would keep calling the stopped broker
        sw.cleanup()
        os.killpg(broker.pid, signal.SIGTERM)  # the wrapper runs the broker as its child
        broker.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the child may still be writing its data file
            try:
                os.killpg(broker.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        shutil.rmtree(data, ignore_errors=True)


def produce(producer: Producer, topic: str, key: bytes, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, key=key, value=value)
            producer.poll(0)
            return
        except BufferError:  # the client's queue is full: let deliveries drain it
            producer.poll(0.05)


def raw_consume_rate(bootstrap: str, topic: str, total: int) -> float:
    """Messages/s of a plain confluent-kafka consumer reading every message once, assigned
    its partitions from the beginning as sparkwire's consumer is (no group join to wait for)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "raw", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    start, got = time.perf_counter(), 0
    while got < total:
        got += sum(1 for m in consumer.consume(num_messages=10000, timeout=1.0) if m.error() is None)
    rate = total / (time.perf_counter() - start)
    consumer.close()
    return rate


def spark_floor(bootstrap: str, topic: str, total: int, batch: int = 200_000) -> float:
    """Messages/s of the least Spark work an upsert batch can do, in a SparkSession of this
    process with the server's settings: the raw records (read beforehand, untimed) go to
    Spark from Arrow in batches of sparkwire's size, each key's last record is picked
    with one shuffle, and the winners come back as Arrow. No decoding, no persisted rows,
    no commit: what sparkwire's ingestion could at best approach on this machine."""
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from spark_backend.engine import _SPARK_CONF
    from spark_backend.kafka_source import batch_session

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "floor", "enable.auto.commit": False})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    tables, got = [], 0
    while got < total:
        msgs = [m for m in consumer.consume(num_messages=min(batch, total - got), timeout=1.0) if m.error() is None]
        got += len(msgs)
        if msgs:
            tables.append(pa.table({"key": pa.array([m.key() for m in msgs], pa.binary()),
                                    "value": pa.array([m.value() for m in msgs], pa.binary()),
                                    "offset": pa.array([m.offset() for m in msgs], pa.int64())}))
    consumer.close()
    raw = pa.concat_tables(tables)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[*]").appName("bench-floor")
    for key, value in _SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = batch_session(builder.getOrCreate())
    query = ("SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY key ORDER BY offset DESC) AS rn "
             "FROM floor_batch) WHERE rn = 1")
    try:
        for warm in range(2):  # JIT and first-job costs are not the floor
            spark.createDataFrame(raw.slice(0, batch)).createOrReplaceTempView("floor_batch")
            spark.sql(query).toArrow()
        start = time.perf_counter()
        for offset in range(0, raw.num_rows, batch):
            spark.createDataFrame(raw.slice(offset, batch)).createOrReplaceTempView("floor_batch")
            spark.sql(query).toArrow()
        return raw.num_rows / (time.perf_counter() - start)
    finally:
        spark.stop()


def lag(dsn: str, producer: Producer, n: int) -> list[float]:
    seen: dict[str, float] = {}
    ready = threading.Event()

    def reader() -> None:
        with psycopg.connect(dsn) as c:
            cur = c.cursor()
            cur.execute("BEGIN")
            cur.execute("DECLARE c CURSOR FOR SUBSCRIBE lag WITH (SNAPSHOT = false)")
            ready.set()
            while len(seen) < n:
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                now = time.perf_counter()
                for row in cur.fetchall():
                    seen.setdefault(row[2], now)

    threading.Thread(target=reader, daemon=True).start()
    ready.wait()
    out = []
    for i in range(n):
        key = f"lag{i}"
        producer.produce("lag", key=key.encode(), value=b"x")
        producer.flush()
        sent = time.perf_counter()
        deadline = sent + 60
        while key not in seen and time.perf_counter() < deadline:
            time.sleep(0.002)
        out.append((seen.get(key, deadline) - sent) * 1000)
        time.sleep(0.05)
    return out


if __name__ == "__main__":
    main()
