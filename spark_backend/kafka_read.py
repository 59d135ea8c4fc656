"""A Kafka table's backlog read by Spark's tasks: a Python data source whose input
partitions are offset ranges of the topic's partitions, each read by a confluent-kafka
consumer in one of Spark's Python workers into Arrow batches of raw records (RAW_SCHEMA).

Why: the server's consumer is one thread, and a backlog consumed there is consumed before
Spark can start on it, on about one of the cores. Read as Spark work, a backlog is read by
as many consumers as there are cores (or executors), straight into the batch's first
stage, and nothing passes through the server's Python (bench/RESULTS.md, Kafka section).
The ranges are fixed by the server before the batch runs, from the table's durable
offsets to the high watermarks, so the batch's effect and its next offsets are known to
be those records, however often Spark reruns a task. Keys or values in a format decoded in
Python (JSON, CSV) are decoded by the reader too, as the Arrow UDF would (kafka_decode):
they are in Python already, and need not go to the JVM and back for it. For ENVELOPE
UPSERT, a reader passes on only the records that can still decide a key's winner
(kafka_contenders): with several records per key, most of a backlog never reaches the JVM.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from spark_backend.kafka_consumer import RAW_DDL, records_table
from spark_backend.kafka_contenders import Contest, kept
from spark_backend.kafka_decode import check_side, decode_side, udf_type

FORMAT = "sparkwire_kafka"
# Offsets per task when a range is cut to keep every core busy: smaller slices cost a
# consumer (a connection and its first fetch) each for little work.
MIN_SLICE = 20_000
_CHUNK = 50_000
# Records a reader holds before it drops those that cannot win (kafka_contenders.kept):
# each drop sorts what is held, and what is held is in the worker's memory.
PRUNE_ROWS = 250_000
PRUNE_BYTES = 64 << 20
# How long a task waits for the next record of its range before it gives up, which fails
# the batch: the table then stalls and retries from its durable offsets.
READ_STALL = 30.0


@dataclass(frozen=True)
class Backlog:
    """Records of a topic to be read by Spark: [start, end) offsets by partition."""

    config: dict
    topic: str
    ranges: tuple[tuple[int, int, int], ...]  # (partition, start, end)
    timestamps: bool = True
    headers: bool = True
    # Raw columns the reader decodes: (side, (format, csv columns), width, check only),
    # each into a column `__<side>` of the Arrow UDF's type (kafka_decode.DecodePlan.udf_type).
    # With a `contest`, a side checked only is decoded in full for the contenders.
    decoders: tuple[tuple[str, tuple[str, int], int, bool], ...] = field(default=())
    # ENVELOPE UPSERT: readers pass on only each key's contenders for the winner.
    contest: Contest | None = None

    @property
    def num_rows(self) -> int:
        """The offsets in the ranges: the records, unless some offsets hold none."""
        return sum(end - start for _, start, end in self.ranges)

    def next_offsets(self) -> dict[str, int]:
        """Each partition's next offset once the backlog is ingested (the catalog's form)."""
        return {str(p): end for p, _, end in self.ranges}


def backlog_ranges(ranges: dict[int, tuple[int, int]], max_records: int) -> tuple[tuple[int, int, int], ...]:
    """Ranges with records, cut down in proportion to hold at most `max_records` offsets."""
    total = sum(end - start for start, end in ranges.values())
    share = min(1.0, max_records / total) if total else 1.0
    out = []
    for p, (start, end) in sorted(ranges.items()):
        if end > start:
            out.append((p, start, start + max(1, int((end - start) * share))))
    return tuple(out)


def slices(ranges: tuple[tuple[int, int, int], ...], tasks: int) -> list[tuple[int, int, int]]:
    """The ranges cut into about `tasks` slices of at least MIN_SLICE offsets, so that a
    backlog in fewer partitions than cores is still read on every core."""
    total = sum(end - start for _, start, end in ranges)
    size = max(MIN_SLICE, -(-total // max(1, tasks)))
    out = []
    for p, start, end in ranges:
        pieces = max(1, round((end - start) / size))
        step = -(-(end - start) // pieces)
        out.extend((p, s, min(end, s + step)) for s in range(start, end, step))
    return out


class _Slice(InputPartition):
    def __init__(self, partition: int, start: int, end: int) -> None:
        super().__init__((partition, start, end))
        self.partition, self.start, self.end = partition, start, end


class KafkaBacklogSource(DataSource):
    """Options: `topic`; `slices`, JSON [[partition, start, end], ...]; `timestamps` and
    `headers` ("true" to read them); `decoders`, Backlog.decoders as JSON; and the client
    settings as JSON in `client.secret.config`, a name that Spark's redaction pattern
    (spark.redaction.regex) matches, should Spark print the options anywhere (EXPLAIN does
    not): it can hold a SASL password or a TLS key."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RAW_DDL + "".join(f", __{side} {udf_type(width)}" for side, _, width, _ in
                                 json.loads(self.options.get("decoders", "[]")))

    def reader(self, schema) -> DataSourceReader:
        return _Reader(dict(self.options))


class _Reader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.topic = options["topic"]
        self.config = json.loads(options["client.secret.config"])
        self.parts = [tuple(s) for s in json.loads(options["slices"])]
        self.timestamps = options.get("timestamps") == "true"
        self.headers = options.get("headers") == "true"
        self.decoders = [(side, tuple(fmt), width, check) for side, fmt, width, check in
                         json.loads(options.get("decoders", "[]"))]
        contest = json.loads(options.get("contest", "null"))
        self.contest = None if contest is None else Contest(contest[0], contest[1], tuple(contest[2]))

    def partitions(self) -> list[InputPartition]:
        return [_Slice(*s) for s in self.parts]

    def read(self, partition: _Slice) -> Iterator[pa.RecordBatch]:
        tables = (self._decoded(table) for table in read_range(
            self.config, self.topic, partition.partition, partition.start, partition.end,
            self.timestamps, self.headers))
        if self.contest is not None:
            tables = (self._decoded_in_full(table) for table in contenders_of(tables, self.contest))
        for table in tables:
            yield from table.to_batches()

    def _decoded(self, table: pa.Table) -> pa.Table:
        for side, fmt, width, check in self.decoders:
            raw = table.column(side).combine_chunks()
            table = table.append_column(f"__{side}", (check_side if check else decode_side)(fmt, width, raw))
        return table

    def _decoded_in_full(self, table: pa.Table) -> pa.Table:
        """A side that was only checked (kafka_decode.check_side: enough to pick the
        contenders) decoded in full, now for just the contenders."""
        for side, fmt, width, check in self.decoders:
            if check:
                at = table.column_names.index(f"__{side}")
                table = table.set_column(at, f"__{side}", decode_side(fmt, width, table.column(side).combine_chunks()))
        return table


def contenders_of(tables: Iterator[pa.Table], contest: Contest, rows: int = PRUNE_ROWS,
                  nbytes: int = PRUNE_BYTES) -> Iterator[pa.Table]:
    """The records of a slice that can still decide their key's winner, dropping the others
    whenever `rows` records or `nbytes` bytes are held. What is left after a drop is passed
    on when it is still over half of that (keys mostly distinct: holding it would not pay)."""
    held: list[pa.Table] = []
    count = size = 0
    for table in tables:
        held.append(table)
        count, size = count + table.num_rows, size + table.nbytes
        if count >= rows or size >= nbytes:
            left = kept(pa.concat_tables(held), contest)
            if left.num_rows * 2 > rows or left.nbytes * 2 > nbytes:
                yield left
                held, count, size = [], 0, 0
            else:
                held, count, size = [left], left.num_rows, left.nbytes
    if held:
        yield kept(pa.concat_tables(held), contest)


def read_range(config: dict, topic: str, partition: int, start: int, end: int, timestamps: bool,
               headers: bool, stall: float = READ_STALL) -> Iterator[pa.Table]:
    """The records of offsets [start, end) of one partition, in Arrow tables of RAW_SCHEMA.

    Offsets that hold no record (transaction markers, compaction) are passed over: the read
    ends when the consumer's position reaches `end`. Raises when no record comes for
    `stall` seconds, naming the partition, the offsets and the client's last error."""
    from confluent_kafka import Consumer, TopicPartition

    errors: list[str] = []
    consumer = Consumer({**config, "group.id": "sparkwire-backlog", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": False,
                         "error_cb": lambda err: errors.append(str(err))})
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position, progressed = start, time.monotonic()
        while position < end:
            msgs = consumer.consume(num_messages=min(_CHUNK, end - position), timeout=0.5)
            failed = [m for m in msgs if m.error() is not None]
            good = [m for m in msgs if m.error() is None] if failed else msgs
            errors.extend(str(m.error()) for m in failed)
            if good and good[-1].offset() >= end:  # offsets without records before the end
                good = [m for m in good if m.offset() < end]
            if good:
                yield records_table(good, timestamps, headers, partition)
                position, progressed = good[-1].offset() + 1, time.monotonic()
            if len(good) < len(msgs) or not msgs:
                # Past the end, or nothing yet: where the client's fetches have got to
                # tells a range that ends in offsets without records from a slow broker.
                fetched = consumer.position([TopicPartition(topic, partition)])[0].offset
                position = max(position, fetched)
            if position < end and time.monotonic() - progressed > stall:
                last = f"; the client's last error: {errors[-1]}" if errors else ""
                raise RuntimeError(f'kafka topic "{topic}" partition {partition}: no record after offset '
                                   f"{position - 1} in {stall:.0f} s, {end - position} more expected "
                                   f"up to offset {end - 1}{last}")
    finally:
        consumer.close()


_FAILURE = re.compile(r"RuntimeError: (kafka topic .*)")


def read_failure(exc: BaseException) -> str | None:
    """read_range's reason for failing, out of the Spark error that carries it (with the
    worker's traceback), or None for another failure."""
    found = _FAILURE.search(str(exc))
    return found.group(1) if found else None


def source_options(backlog: Backlog, tasks: int) -> dict[str, str]:
    """The data source's options for a backlog read by about `tasks` tasks."""
    contest = None if backlog.contest is None else dataclasses.astuple(backlog.contest)
    return {"topic": backlog.topic, "slices": json.dumps(slices(backlog.ranges, tasks)),
            "timestamps": str(backlog.timestamps).lower(), "headers": str(backlog.headers).lower(),
            "decoders": json.dumps(backlog.decoders), "contest": json.dumps(contest),
            "client.secret.config": json.dumps(backlog.config)}


def backlog_df(spark: SparkSession, backlog: Backlog) -> DataFrame:
    """The backlog's raw records as a DataFrame read by Spark's tasks (one per slice)."""
    # Registered with every backlog, which costs little: a session may be new (Spark Connect
    # reconnects), and a registration belongs to its session.
    spark.dataSource.register(KafkaBacklogSource)
    tasks = int(spark.conf.get("spark.default.parallelism", "2") or 2)
    return spark.read.format(FORMAT).options(**source_options(backlog, tasks)).load()
