"""Kafka upsert ingestion: 1e6 keyed messages (1e5 distinct keys) in messages/s, next to
the raw confluent-kafka consume rate of the same topic in the same run; and the lag from
produce to the row reaching a SUBSCRIBE client.

    .venv/bin/python bench/bench_kafka.py [--messages 1000000] [--keys 100000] [--lag 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psycopg
from common import ServerProcess, percentile
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import free_port


def start_broker() -> tuple[subprocess.Popen, int, str]:
    port = free_port()
    data = tempfile.mkdtemp(prefix="sparkwire-kafka-")
    exe = os.path.join(os.path.dirname(sys.executable), "noida-db")
    proc = subprocess.Popen([exe, "start", "--data-dir", data, "--only", "kafka", "--kafka-port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    args = parser.parse_args()
    broker, port, data = start_broker()
    bootstrap = f"127.0.0.1:{port}"
    sw = ServerProcess().start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1,
                                               config={"retention.ms": "-1"})
                                      for t in ("bench", "lag")]).values():
            f.result()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
        for i in range(args.messages):
            producer.produce("bench", key=f"k{i % args.keys}".encode(), value=f'{{"n": {i}}}'.encode())
            if i % 10000 == 0:
                producer.poll(0)
        producer.flush()
        # Raw consume rate: every message read once by a plain consumer.
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "raw", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe(["bench"])
        start, got = time.perf_counter(), 0
        while got < args.messages:
            got += len([m for m in consumer.consume(num_messages=10000, timeout=1.0) if m.error() is None])
        raw_rate = args.messages / (time.perf_counter() - start)
        consumer.close()
        sw.wait_ready()
        with psycopg.connect(sw.dsn, autocommit=True) as c:
            c.execute(f"CREATE CONNECTION k TO KAFKA (BROKER '{bootstrap}')")
            c.execute("CREATE SOURCE bench FROM KAFKA CONNECTION k (TOPIC 'bench')")
            start = time.perf_counter()
            c.execute("CREATE TABLE latest FROM SOURCE bench (REFERENCE \"bench\") KEY FORMAT TEXT "
                      "VALUE FORMAT JSON INCLUDE OFFSET AS o ENVELOPE UPSERT")
            while True:
                done = c.execute("SELECT coalesce(sum(\"offset\"), 0) FROM bench").fetchone()[0]
                if done >= args.messages:
                    break
                time.sleep(0.5)
            ours = args.messages / (time.perf_counter() - start)
            keys = c.execute("SELECT count(*) FROM latest").fetchone()[0]
            c.execute("CREATE SOURCE lag FROM KAFKA CONNECTION k (TOPIC 'lag') KEY FORMAT TEXT VALUE FORMAT TEXT "
                      "ENVELOPE UPSERT")
        lags = lag(sw.dsn, producer, args.lag)
        print(f"{'measure':<44} {'sparkwire':>14} {'raw consume':>14}")
        print(f"{'upsert ingestion, messages/s':<44} {ours:>14,.0f} {raw_rate:>14,.0f}")
        print(f"{'  ratio sparkwire/raw':<44} {ours / raw_rate:>14.2f}")
        print(f"{'distinct keys in the table':<44} {keys:>14,}")
        print(f"{'produce → SUBSCRIBE client p50 ms':<44} {percentile(lags, 50):>14.0f}")
        print(f"{'produce → SUBSCRIBE client p99 ms':<44} {percentile(lags, 99):>14.0f}")
    finally:
        sw.cleanup()
        broker.terminate()
        broker.wait()
        shutil.rmtree(data, ignore_errors=True)


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
