"""A Kafka table's consumer: confluent-kafka reading one topic from explicit offsets into
Arrow batches of raw records (RAW_SCHEMA), a lone record at once and a backlog many at a
time; and the questions asked of the broker outside a table's consumer: whether it answers
(when a connection or source is created), and where a source's START OFFSET or START
TIMESTAMP puts each partition."""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager

import pyarrow as pa

log = logging.getLogger("sparkwire.kafka")

RAW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()), pa.field("timestamp", pa.int64()), pa.field("headers", pa.string()),
])
RAW_DDL = "key BINARY, value BINARY, partition INT, offset BIGINT, timestamp BIGINT, headers STRING"

# Records in one Spark batch when there is a backlog. A batch's Spark work has a fixed
# cost (planning, three jobs) and, polled beside the batch before it, the next batch's
# consuming competes with it for the cores; so larger batches go faster (bench_kafka,
# TEXT values, 1e6 messages: 5e5-record batches 377k messages/s, 1e6 467k). The byte
# bound keeps big records from making a batch too large for the driver's memory.
MAX_BATCH = 1_000_000
MAX_BATCH_BYTES = 128 << 20
_CONSUME_CHUNK = 50_000
FILL_WAIT = 2.0  # seconds a batch may wait for records the broker is known to hold
_FILL_SLACK = 1_000
_NO_HEADERS = "[]"


def headers_json(headers: list[tuple[str, bytes | None]] | None) -> str:
    if not headers:
        return _NO_HEADERS
    out = []
    for k, v in headers:
        try:
            value = v.decode("utf-8") if v is not None else None
        except UnicodeDecodeError:
            value = v.hex()
        out.append({"key": k, "value": value})
    return json.dumps(out)


def records_table(msgs: list, timestamps: bool, headers: bool, partition: int | None = None) -> pa.Table:
    """Messages (without errors) as raw records; a record's timestamp and headers only when
    asked for (the loop over the records runs in Python: each field costs), and `partition`
    when every message is known to be from that one."""
    n = len(msgs)
    # One comprehension per field: each is a tight loop, faster than appending to six lists.
    tss = pa.array([m.timestamp()[1] for m in msgs], pa.int64()) if timestamps else pa.nulls(n, pa.int64())
    if headers:
        hdrs = pa.array([headers_json(h) if (h := m.headers()) else _NO_HEADERS for m in msgs], pa.string())
    else:
        hdrs = pa.nulls(n, pa.string())
    return pa.Table.from_arrays([pa.array([m.key() for m in msgs], pa.binary()),
                                 pa.array([m.value() for m in msgs], pa.binary()),
                                 pa.array([m.partition() for m in msgs], pa.int32()) if partition is None
                                 else pa.repeat(pa.scalar(partition, pa.int32()), n),
                                 pa.array([m.offset() for m in msgs], pa.int64()), tss, hdrs],
                                schema=RAW_SCHEMA)


class Consumer:
    """A confluent-kafka consumer for one table, from explicit offsets (no consumer group state)."""

    def __init__(self, config: dict, topic: str, offsets: dict[int, int], timestamps: bool = True,
                 headers: bool = True) -> None:
        from confluent_kafka import Consumer as KConsumer

        self.topic = topic
        self.offsets = dict(offsets)
        # A record's timestamp and headers are read only for a table that uses them: the
        # loop over the records is the one part of a batch that runs in the server's Python.
        self.timestamps = timestamps
        self.headers = headers
        self.errors: list[str] = []
        conf = {**config, "group.id": f"sparkwire-{id(self)}", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "enable.partition.eof": False,
                # librdkafka's default prefetch (queued.min.messages 1e5 per partition), not a
                # whole batch: poll() waits for a backlog's records anyway, and a 1e6-record
                # queue cost 0.6-0.8 core-µs per message more in the client and 0.4 in the
                # broker, and consumed slower (bench/RESULTS.md).
                "error_cb": lambda err: self.errors.append(str(err))}
        self.consumer = KConsumer(conf)
        self.partitions: set[int] = set()
        self._leaders: dict[int, int] = {}  # broker id → one partition it leads
        self._paused = False
        # Whether the last poll took every record the broker held: then fetching is paused
        # until the next poll, and there is nothing to poll for while a batch runs.
        self.caught_up = False
        self.remaining = 0  # records past the last poll, by the watermarks the client knew then
        # Whether the last poll stopped waiting for records the broker was known to hold
        # because its fill_wait ran out (offsets without a record, or a slow broker).
        self.fill_timed_out = False
        # Whether it leaves the records to Spark's tasks (stand_aside): then it fetches
        # nothing until take_over, and only answers questions about the topic.
        self.aside = False
        self._assigned = False

    def refresh_partitions(self) -> None:
        """Learn the topic's partitions; a consumer not standing aside fetches from each."""
        meta = self.consumer.list_topics(self.topic, timeout=5)
        topic = meta.topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise RuntimeError(f'topic "{self.topic}" does not exist')
        found = set(topic.partitions)
        # A partition without a leader has nobody to wake.
        self._leaders = {part.leader: p for p, part in topic.partitions.items() if part.leader >= 0}
        if found != self.partitions:
            if self._assigned:
                # The partitions read so far go on from where the polls left them, not from
                # where they started.
                self.offsets.update({tp.partition: tp.offset for tp in self.consumer.position(self._topic_partitions())
                                     if tp.offset >= 0})
            self.partitions = found
            if not self.aside:
                self._assign()

    def stand_aside(self) -> None:
        """Fetch nothing (Spark's tasks read the backlog: kafka_read); what was prefetched goes."""
        self.aside = True
        if self._assigned:
            self.consumer.unassign()
            self._assigned = self._paused = self.caught_up = False

    def take_over(self, offsets: dict[int, int]) -> None:
        """Fetch again, from `offsets` (each partition's next offset to ingest)."""
        self.aside = False
        self.offsets.update(offsets)
        self._assign()

    def _assign(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self._fetching(True)  # librdkafka keeps a partition's pause across assignments
        self.consumer.assign([TopicPartition(self.topic, p, self.offsets.get(p, OFFSET_BEGINNING))
                              for p in sorted(self.partitions)])
        self._assigned = True

    def _topic_partitions(self) -> list:
        from confluent_kafka import TopicPartition

        return [TopicPartition(self.topic, p) for p in sorted(self.partitions)]

    def poll(self, max_records: int = MAX_BATCH, timeout: float = 0.2,
             max_bytes: int = MAX_BATCH_BYTES, fill_wait: float = FILL_WAIT) -> pa.Table:
        """The records that are here now, up to `max_records` and about `max_bytes`; waits
        up to `timeout` for a first one.

        A lone record is returned as soon as it arrives (what a SUBSCRIBE waits for); with a
        backlog, everything the client has prefetched is taken at once, so that the fixed
        cost of a Spark batch is shared by many records. Records taken up to the end, it
        stops fetching until the next poll (see _fetching)."""
        self._fetching(True)
        self.fill_timed_out = False
        first = self.consumer.poll(timeout)
        if first is None:
            # Nothing to ingest, so no batch to keep the cores for: an idle table goes on
            # polling, and pausing between its polls would only delay the next record.
            self.caught_up = True
            return RAW_SCHEMA.empty_table()
        chunks = [self._records([first])]
        records, size = chunks[0].num_rows, chunks[0].nbytes
        # Records the broker is known to hold beyond this one: while fewer than those have
        # arrived, wait a little for the client's next fetch rather than cut the batch
        # short (a 20-record batch costs the same Spark work as a full one). Offsets without
        # a record (transaction markers, compaction) make this an overestimate: hence the
        # slack, and the bounded wait.
        waiting = min(max_records, 1 + self.backlog()) - _FILL_SLACK
        deadline = time.monotonic() + fill_wait
        while records < max_records and size < max_bytes:
            wanted = min(_CONSUME_CHUNK, max_records - records)
            if records < waiting:
                # consume() returns when it has all it was asked for or at its timeout: asked
                # for more than the broker still holds, it would wait out the whole timeout.
                wanted, wait = min(wanted, waiting - records), max(0.0, deadline - time.monotonic())
            else:
                wait = 0
            more = self.consumer.consume(num_messages=wanted, timeout=wait)
            if wait and time.monotonic() >= deadline:
                self.fill_timed_out = True
            if not more:
                break
            chunks.append(self._records(more))
            records += chunks[-1].num_rows
            size += chunks[-1].nbytes
        self.remaining = self.backlog()
        self.caught_up = self.remaining == 0
        if self.caught_up:
            self._fetching(False)
        return pa.concat_tables(chunks)

    def _fetching(self, on: bool) -> None:
        """Resume or pause fetching from every partition.

        A caught-up consumer keeps asking the broker for more, and a broker that answers
        an empty fetch at once, rather than holding it for fetch.wait.max.ms as Kafka does,
        is asked thousands of times a second: measured with noida-db, a core between the
        client and the broker, taken from the Spark work of the batch just polled. Paused
        (only when nothing is left to prefetch: librdkafka drops what it prefetched), the
        client fetches nothing until the next poll resumes it after the last record polled."""
        if self._paused != on or not self.partitions:
            return  # already as asked
        from confluent_kafka import TopicPartition

        (self.consumer.resume if on else self.consumer.pause)(self._topic_partitions())
        self._paused = not on
        if on:
            # librdkafka acts on a resume when the leader's broker thread next wakes up, up
            # to a second later when it had nothing to fetch (measured: a record produced
            # after a resume arrived 0.2-1 s late). A request to each leader wakes it now.
            for p in self._leaders.values():
                try:
                    self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=1, cached=False)
                except Exception as exc:  # noqa: BLE001 - the resume still happens, later
                    log.debug("kafka partition %s: no watermarks: %s", p, exc)

    def backlog(self) -> int:
        """Records past the consumer's position, by the high watermarks its fetches reported."""
        total = 0
        for tp in self.consumer.position(self._topic_partitions()):
            low, high = self.consumer.get_watermark_offsets(tp, cached=True)
            if high < 0:  # not fetched from yet: one round trip
                try:
                    low, high = self.consumer.get_watermark_offsets(tp, timeout=1, cached=False)
                except Exception as exc:  # noqa: BLE001 - unknown: the batch is not held for it
                    log.debug("kafka watermark of partition %s unknown: %s", tp.partition, exc)
                    continue
            # A partition not read from yet has no position: it starts at its assigned offset.
            start = tp.offset if tp.offset >= 0 else self.offsets.get(tp.partition, low)
            if high >= 0 and start >= 0:
                total += max(0, high - start)
        return total

    def _records(self, msgs: list) -> pa.Table:
        good = [m for m in msgs if m.error() is None]
        if len(good) < len(msgs):
            self.errors.extend(str(m.error()) for m in msgs if m.error() is not None)
        return records_table(good, self.timestamps, self.headers)

    def lag(self, next_offsets: dict[int, int], ask_broker: bool) -> int | None:
        """Messages in the topic not yet ingested: the sum over partitions of the high
        watermark minus the next offset to ingest. Without `ask_broker`, from the high
        watermarks the client learnt with its last fetches (no round trip); None when a
        partition's is not known yet."""
        ranges = self.unread(next_offsets, ask_broker)
        return None if ranges is None else sum(end - start for start, end in ranges.values())

    def unread(self, next_offsets: dict[int, int], ask_broker: bool) -> dict[int, tuple[int, int]] | None:
        """By partition, the offsets not yet ingested, [next offset, high watermark); as lag."""
        ranges = {}
        for tp in self._topic_partitions():
            low, high = self.consumer.get_watermark_offsets(tp, timeout=2, cached=not ask_broker)
            if high < 0:
                return None
            start = next_offsets.get(tp.partition)
            if start is None:
                start = max(low, 0)  # nothing ingested yet: from the first record kept
            ranges[tp.partition] = (start, max(start, high))
        return ranges

    def close(self) -> None:
        self.consumer.close()


def check_broker(config: dict, timeout: float = 5.0) -> list[str]:
    """Topic names, or an error if the broker cannot be reached."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**config})
    meta = admin.list_topics(timeout=timeout)
    return sorted(meta.topics)


@contextmanager
def _metadata_consumer(config: dict, topic: str, timeout: float):
    """A client for questions about `topic`, and the topic's partition numbers in order."""
    from confluent_kafka import Consumer as KConsumer

    consumer = KConsumer({**config, "group.id": "sparkwire-metadata", "enable.auto.commit": False})
    try:
        yield consumer, sorted(consumer.list_topics(topic, timeout=timeout).topics[topic].partitions)
    finally:
        consumer.close()


def end_offsets(config: dict, topic: str, timeout: float = 10.0) -> list[int]:
    """The next offset to be written in partitions 0, 1, ... of `topic` (high watermarks)."""
    from confluent_kafka import TopicPartition

    with _metadata_consumer(config, topic, timeout) as (consumer, partitions):
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1] for p in partitions]


def offsets_at(config: dict, topic: str, ms: int, timeout: float = 10.0) -> list[int]:
    """For partitions 0, 1, ... of `topic`: the earliest offset whose timestamp is at or after
    `ms` (milliseconds since the epoch), or the partition's end offset when there is none."""
    from confluent_kafka import TopicPartition

    with _metadata_consumer(config, topic, timeout) as (consumer, partitions):
        found = consumer.offsets_for_times([TopicPartition(topic, p, ms) for p in partitions], timeout=timeout)
        offsets = []
        for tp in found:
            if tp.error is not None:
                raise RuntimeError(f"partition {tp.partition}: {tp.error}")
            if tp.offset < 0:  # no record that late: from the end
                tp.offset = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=timeout)[1]
            offsets.append(tp.offset)
        return offsets
