"""Running a SUBSCRIBE's micro-batches in Spark.

Each input relation is registered under its planned Spark name as one of three
sources (`Snapshot`: its full contents at a timestamp; `Batch`: updates the server
holds; `History`: updates read from storage); all carry `__mz_ts` and `__mz_diff`,
so the same delta SQL serves them all. A result is either collected (`run`) or, when
it may not fit in memory, streamed batch by batch (`stream_delta`, a snapshot) or spilled
and read back in chunks (`spill_delta`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from planner.dataflow import DELTA_DIFF, DELTA_TS
from planner.errors import SqlError
from planner.params import literal
from planner.types import BY_NAME, SqlType
from spark_backend import spill
from spark_backend.arrow_stream import BatchStream, streamable
from spark_backend.reads import changes_df, rows_df
from spark_backend.schema import (
    DIFF,
    TS,
    pg_metadata,
    physical,
    storage_spark_ddl,
)
from spark_backend.storage import Store

_VIEW_IDS = itertools.count(1)

_BIGINT = SqlType(BY_NAME["bigint"])


@dataclass(frozen=True)
class Input:
    """One relation a dataflow reads: its id, Spark name, columns and types."""

    collection_id: str
    spark_name: str
    names: list[str]
    types: list


# Batches up to this many rows go to Spark as SQL literals: a VALUES list is a
# LocalRelation, which Spark filters and projects on the driver without a job,
# and whose result collect() returns without the Arrow socket round trip.
# Measured here: ~7 ms for literal VALUES + collect against ~40 ms for
# createDataFrame(arrow) + toArrow; but formatting literals costs ~2 ms a row,
# so only small batches go this way.
SMALL_BATCH = 20


def _updates_df(spark: SparkSession, rel: Input, updates: pa.Table | None) -> DataFrame:
    if updates is None or updates.num_rows <= SMALL_BATCH:
        return spark.sql(_values_sql(rel, updates))
    df = spark.createDataFrame(updates, schema=storage_spark_ddl(rel.types))
    return _user_columns(df, rel)


def _values_sql(rel: Input, updates: pa.Table | None) -> str:
    """The updates as a VALUES list of typed literals, with the relation's column names."""
    names = [*rel.names, DELTA_TS, DELTA_DIFF]
    types = [*rel.types, _BIGINT, _BIGINT]
    if updates is None or updates.num_rows == 0:
        rows = [[None] * len(types)]
        where = " WHERE false"
    else:
        rows = list(zip(*[c.to_pylist() for c in updates.columns]))
        where = ""
    body = ", ".join("(" + ", ".join(literal(v, t).sql("spark") for v, t in zip(row, types)) + ")"
                     for row in rows)
    cols = ", ".join(f"`{n.replace('`', '``')}`" for n in names)
    return f"SELECT * FROM (VALUES {body}) AS v({cols}){where}"


def _result(df: DataFrame, small: bool) -> pa.Table:
    """A small result through collect() (no Arrow socket), a big one through Arrow."""
    if not small:
        return df.toArrow()
    schema = to_arrow_schema(df.schema, timezone="UTC")
    rows = df.collect()
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, schema)], schema=schema)


def _user_columns(df: DataFrame, rel: Input) -> DataFrame:
    return df.select(
        *[F.col(physical(i)).alias(n, metadata=pg_metadata(t))
          for i, (n, t) in enumerate(zip(rel.names, rel.types))],
        F.col(TS).alias(DELTA_TS), F.col(DIFF).alias(DELTA_DIFF))


@dataclass(frozen=True)
class Snapshot:
    """Every input's rows at `as_of`, as +1 updates at `as_of`."""

    as_of: int


@dataclass(frozen=True)
class Batch:
    """Updates the server holds: what commits handed to a subscription."""

    updates: dict[str, pa.Table]


@dataclass(frozen=True)
class History:
    """Updates in storage with after < mz_timestamp <= upto (AS OF in the past, or a
    subscription that fell behind and let go of what commits handed it)."""

    after: int
    upto: int


Source = Snapshot | Batch | History


def estimated_rows(store: Store, inputs: list[Input], source: Source) -> int:
    """At most how many updates `source` holds, from file sizes alone (no Spark job)."""
    if isinstance(source, Batch):
        return sum(t.num_rows for t in source.updates.values())
    total = 0
    for rel in inputs:
        if isinstance(source, Snapshot):
            files, _ = store.files(rel.collection_id, source.as_of)
        else:
            files = [f for f in store.files(rel.collection_id, source.upto)[0] if f.max_ts > source.after]
        total += sum(f.rows for f in files)
    return total


def _history_df(spark: SparkSession, store: Store, rel: Input, source: History) -> DataFrame:
    files, since = store.files(rel.collection_id, source.upto)
    files = [f for f in files if f.max_ts > source.after]
    if since > source.after:
        raise SqlError("22000", f"Timestamp ({source.after}) is not valid for all inputs: "
                                f"[Antichain {{ elements: [{since}] }}]",
                       detail="History the subscription still needed was compacted.")
    df = changes_df(spark, store, rel.collection_id, rel.types, source.upto, snapshot=(files, since))
    return _user_columns(df.where(F.col(TS) > source.after), rel)


def _register(spark: SparkSession, store: Store | None, inputs: list[Input], source: Source) -> list[str]:
    registered = []
    try:
        for rel in inputs:
            if isinstance(source, Snapshot):
                df = rows_df(spark, store, rel.collection_id, rel.names, rel.types, source.as_of)
                df = df.withColumn(DELTA_TS, F.lit(source.as_of).cast("bigint")).withColumn(
                    DELTA_DIFF, F.lit(1).cast("bigint"))
            elif isinstance(source, History):
                df = _history_df(spark, store, rel, source)
            else:
                df = _updates_df(spark, rel, source.updates.get(rel.collection_id))
            df.createOrReplaceTempView(rel.spark_name)
            registered.append(rel.spark_name)
    except BaseException:
        _drop(spark, registered)
        raise
    return registered


def _drop(spark: SparkSession, names: list[str]) -> None:
    for name in names:
        spark.catalog.dropTempView(name)


def run(spark: SparkSession, store: Store, inputs: list[Input], source: Source,
        sqls: list[str]) -> list[pa.Table]:
    """Run delta SQL over `source` (each input registered under its Spark name) and
    collect each result: for results that fit in memory (see `spill_delta` otherwise)."""
    registered = _register(spark, store, inputs, source)
    try:
        small = isinstance(source, Batch) and sum(t.num_rows for t in source.updates.values()) <= SMALL_BATCH
        return [_result(spark.sql(sql), small) for sql in sqls]
    finally:
        _drop(spark, registered)


def describe(spark: SparkSession, inputs: list[Input], sqls: list[str]) -> list[pa.Schema]:
    """The Arrow schemas of delta SQL results, without running a job."""
    registered = _register(spark, None, inputs, Batch({}))
    try:
        return [to_arrow_schema(spark.sql(sql).schema, timezone="UTC") for sql in sqls]
    finally:
        _drop(spark, registered)


def spill_delta(spark: SparkSession, store: Store, inputs: list[Input], source: Source, sql: str,
                order: tuple[spill.SortKey, ...] | None = None, name: str = "spill") -> spill.Spill | None:
    """Run delta SQL over `source` and spill its result under the store's scratch folder
    (in a folder whose name starts with `name`), to be read back in chunks
    (spark_backend.spill); None when a column's type cannot be spilled, and the caller
    collects instead."""
    registered = _register(spark, store, inputs, source)
    try:
        df = spark.sql(sql)
        if not spill.spillable(df):
            return None
        single = source.as_of if isinstance(source, Snapshot) else None
        if isinstance(source, Batch):
            stamps = {ts for t in source.updates.values() for ts in t.column("mz_timestamp").to_pylist()}
            single = stamps.pop() if len(stamps) == 1 else None
        scratch = store.scratch / "subscribe"
        scratch.mkdir(parents=True, exist_ok=True)
        return spill.write(df, scratch / f"{name}-{next(_VIEW_IDS)}", single, order)
    finally:
        _drop(spark, registered)


# Rows a snapshot's second pass serves per Spark job: enough that the job's fixed cost is
# small beside its rows, few enough that the first rows go out soon: the first job's rows are
# all computed before any is sent (1e7 rows: the scan's 16 pieces stay 16; 1e6 rows: 4 jobs
# instead of 16; at 500,000 rows a job the first of 1e6 rows went out 0.2-0.3 s later).
ROWS_PER_JOB = 250_000


@dataclass
class SnapshotStream:
    """A snapshot's result served in two passes: the 32-bit hash of every row (to find the
    rows that may repeat, which must be netted out), then the rows themselves (c0..c{n-1},
    DIFF and HASH), both batch by batch as they are read.

    Equal rows have equal hashes over any of their columns, so the hash may cover only the
    narrow ones (numbers, dates, times), which Spark reads without decoding the strings: a
    table with an integer id pays about half a full pass. `choices` holds that choice first
    and every column after it, for when the narrow columns repeat too often; the reader
    takes the hashes of one choice after another (`hashes`) and keeps one (`choose`). Each
    pass is planned only when asked for (about 0.1 s a plan): `df` was analyzed while the
    inputs' views existed and needs them no more."""

    df: DataFrame  # c0..c{n-1}, DELTA_TS, DELTA_DIFF
    choices: list[list[str]]
    width: int
    parallel: int = 1  # the cores Spark has
    rows: BatchStream | None = None
    _opened: list[BatchStream] = field(default_factory=list)

    def _hash(self, index: int) -> Column:
        # A 32-bit hash: the first pass holds one per row (4 bytes), and a collision only
        # means two distinct rows are netted out in Python rather than passed through.
        columns = self.choices[index]
        return (F.hash(*[F.col(n) for n in columns]) if columns else F.lit(0)).alias(spill.HASH)

    def _open(self, df: DataFrame) -> BatchStream:
        stream = BatchStream(df.sparkSession, df)
        self._opened.append(stream)
        return stream

    def hashes(self, index: int) -> BatchStream:
        """The hashes of choice `index`. They are all read before the first row goes out, so
        their pass gains nothing from the scan's small pieces: one partition per core is a
        job per core, not one per piece (each job costs 35-45 ms; 16 of them were most of a
        1e6-row snapshot's extra time over a SELECT)."""
        return self._open(self.df.select(self._hash(index)).coalesce(self.parallel))

    def choose(self, index: int, rows: int) -> None:
        """Serve the rows with the hash of choice `index`, whose pass read `rows` hashes, in
        pieces of about ROWS_PER_JOB (at least one per core) rather than one job per piece of
        the scan, which a small snapshot pays 35-45 ms a job for."""
        names = spill.data_columns(self.width)
        self.rows = self._open(self.df.select(*names, DELTA_DIFF, self._hash(index)))
        self.rows.coalesce(max(self.parallel, -(-rows // ROWS_PER_JOB)))

    def close(self) -> None:
        for stream in self._opened:
            stream.close()


# Spark types whose values Parquet stores at a fixed width: hashing only these skips decoding
# the rest. Integers, dates and times first (ids, keys, event times: they tell rows apart most
# often), else floats and decimals; a boolean repeats too much to be worth a pass of its own.
_NARROW = ((T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DateType, T.TimestampType,
            T.TimestampNTZType),
           (T.FloatType, T.DoubleType, T.DecimalType))


def _hash_choices(names: list[str], fields: list[T.StructField]) -> list[list[str]]:
    """The columns each hash pass covers, cheapest first, all of them last."""
    for kinds in _NARROW:
        narrow = [n for n, f in zip(names, fields) if isinstance(f.dataType, kinds)]
        if narrow:
            return [narrow, names] if len(narrow) < len(names) else [names]
    return [names]


def stream_delta(spark: SparkSession, store: Store, inputs: list[Input], source: Snapshot,
                 sql: str) -> SnapshotStream | None:
    """Delta SQL over a snapshot, to be read a batch at a time (spark_backend.arrow_stream);
    None when it cannot be streamed (Spark Connect, a column type), and the caller spills."""
    registered = _register(spark, store, inputs, source)
    try:
        df = spark.sql(sql)
        if not streamable(spark, df):
            return None
        width = len(df.columns) - 2
        names = spill.data_columns(width)
        df = df.toDF(*names, DELTA_TS, DELTA_DIFF)
        choices = _hash_choices(names, df.schema.fields[:width])
        return SnapshotStream(df, choices, width, max(1, spark.sparkContext.defaultParallelism))
    finally:
        _drop(spark, registered)


def timestamps(spark: SparkSession, store: Store, inputs: list[Input], source: History) -> list[int]:
    """The timestamps at which any input changed within `source` (for recompute)."""
    found: set[int] = set()
    for rel in inputs:
        df = _history_df(spark, store, rel, source)
        found.update(r[0] for r in df.select(DELTA_TS).distinct().collect())
    return sorted(found)


def run_over_table(spark: SparkSession, name: str, table: pa.Table, sql: str) -> pa.Table:
    """Run SQL over an Arrow table registered as view `name` (joined updates, say)."""
    # Temp views are shared by every thread of the session: two subscriptions' batches
    # running at once must not replace each other's view, so each call gets its own name.
    unique = f"{name}_{next(_VIEW_IDS)}"
    spark.createDataFrame(table).createOrReplaceTempView(unique)
    try:
        return _result(spark.sql(re.sub(rf"\b{re.escape(name)}\b", unique, sql)), table.num_rows <= SMALL_BATCH)
    finally:
        spark.catalog.dropTempView(unique)
