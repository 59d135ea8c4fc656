"""Kafka records → decoded rows → a table's updates, as Spark work on each micro-batch.

Each batch of raw records polled by the server (kafka_consumer) goes to Spark as one
Parquet file in the data directory's scratch folder (faster than an Arrow hand-over: see
_handed_over); a backlog is read by Spark's own tasks instead (kafka_read). Spark
decodes it (kafka_decode): TEXT and BYTES with its own expressions, JSON and CSV with an
Arrow UDF (Python, in Spark's workers) over just the key or value column. For ENVELOPE
NONE every decoded record is a new row. For ENVELOPE UPSERT the same Spark work picks each
key's winner within the batch by the ORDER BY, reads the table's persisted rows for the
batch's keys (from storage at the latest commit, through the changelog reader that queries
use) and joins the two to decide which winners replace what is stored. The result is the
batch's updates in the storage layout, retractions and insertions, and the few records that
change a key's error state; the server keeps no copy of the table.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from planner.types import SqlType
from spark_backend.kafka_consumer import RAW_DDL
from spark_backend.kafka_contenders import Contest
from spark_backend.kafka_decode import DecodePlan, decode_value, decoder_udf
from spark_backend.kafka_read import Backlog, backlog_df, read_failure
from spark_backend.reads import changes_df, has_retractions
from spark_backend.schema import DIFF, TS, physical, storage_arrow_schema
from spark_backend.storage import Store

# -- the table a batch goes to ----------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A Kafka table as a batch's destination (plain data: it travels to Spark's thread)."""

    collection_id: str
    types: tuple[SqlType, ...]
    sources: tuple[str, ...]  # per table column: the decoded column it holds (__ts, __offset, ...)
    order: tuple[str, ...] = ()  # ENVELOPE UPSERT: the ORDER BY as metadata kinds
    inline_errors: bool = False

    def column_sql(self, i: int, prefix: str = "") -> str:
        """Table column i computed from decoded record columns, cast to its stored type."""
        source = self.sources[i]
        value = f"CAST(timestamp_millis({prefix}__ts) AS TIMESTAMP_NTZ)" if source == "__ts" \
            else f"{prefix}`{source}`"
        return f"CAST({value} AS {self.types[i].spark})"

    def stored(self, source: str) -> int | None:
        return self.sources.index(source) if source in self.sources else None

    def record_columns(self, plan: DecodePlan, raw_value: bool = False) -> list[str]:
        """The decoded columns an upsert batch carries to each key's winner: a record's
        timestamp and headers only when the table stores or orders by them (every column
        rides along through the shuffle and the winner's pick), and the raw value when it
        is decoded only for the winners."""
        meta = ["__tomb", "__err", "__key_raw", "__partition", "__offset", *(["__value_raw"] if raw_value else [])]
        if "__ts" in self.sources or "timestamp" in self.order:
            meta.append("__ts")
        if "__headers" in self.sources:
            meta.append("__headers")
        return [*plan.key_columns, *plan.value_columns, *meta]


@dataclass
class BatchResult:
    """A batch's effect: updates in the storage layout (mz_timestamp still 0), and error changes.

    `errors` maps a key label (upsert) or a record's position (none) to its error
    ({partition, offset, message}), or to None where a record heals the key."""

    updates: pa.Table
    errors: dict[str, dict | None]
    inserted: int = 0
    retracted: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # by step, for the server's debug log
    # ENVELOPE UPSERT: winners that are errors, and (when asked) winners without a persisted
    # row: {__is_err, __key, __key_raw, __err, __partition, __offset}, for `key_errors`.
    events: list[dict] = field(default_factory=list)


_sessions: dict[int, SparkSession] = {}
_sessions_lock = threading.Lock()


def batch_session(spark: SparkSession) -> SparkSession:
    """The SparkSession for Kafka batches: the server's, with one optimizer rule off.

    Spark turns a batch handed over from Arrow into a local relation, and its optimizer
    then evaluates projections over it on the driver, row by row and interpreted
    (ConvertToLocalRelation), once per query that refers to it. Without that rule the
    same work runs as generated code in tasks on every core: measured here, a 2e5-record
    batch decodes and picks its winners about twice as fast. A session of its own keeps
    the setting away from every other query (same SparkContext, same cache)."""
    with _sessions_lock:
        session = _sessions.get(id(spark))
        if session is None:
            try:
                session = spark.newSession()
            except Exception:  # noqa: BLE001 - Spark Connect shares one session: keep the rule there
                session = spark
            else:
                # Settings made at run time on the server's session (not in the SparkConf
                # a new session starts from); static ones cannot be set and need not be.
                for key, value in spark.conf.getAll.items():
                    if key.startswith("spark.sql.") and session.conf.isModifiable(key):
                        session.conf.set(key, value)
                excluded = [r for r in (session.conf.get("spark.sql.optimizer.excludedRules", "") or "").split(",")
                            if r.strip()]
                session.conf.set("spark.sql.optimizer.excludedRules", ",".join(
                    [*excluded, "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"]))
            _sessions[id(spark)] = session
        return session


# Rows per row group of a batch's hand-over file. Spark splits a file among its cores by
# bytes, but a split reads only the row groups whose middle falls in it: one row group
# (pyarrow's default up to 1Mi rows) decodes and pre-aggregates a whole batch on one core.
HANDOVER_ROW_GROUP = 65_536


def write_handover(raw: pa.Table, path: str | Path) -> None:
    """A batch as the Parquet file Spark reads it from: as plainly as Parquet allows
    (measured for a 5e5-record batch: 24 ms, against 84 ms with the default dictionaries
    and statistics, which nothing reads here), in row groups Spark can split."""
    pq.write_table(raw, path, compression="none", use_dictionary=False, write_statistics=False,
                   row_group_size=HANDOVER_ROW_GROUP)


Records = pa.Table | Backlog  # a batch: polled records, or offset ranges for Spark to read


@contextmanager
def _handed_over(spark: SparkSession, store: Store, raw: Records, plan: DecodePlan,
                 check_values: bool = False, contest: Contest | None = None) -> Iterator[DataFrame]:
    """The batch's raw records as a DataFrame, for as long as the block runs.

    A Backlog is read by Spark's tasks (kafka_read), which also decode what needs Python
    (see _decoded) and, given the `contest` of an upsert, pass on only the records that can
    still decide a key's winner (kafka_contenders). Polled records go to Spark as a Parquet
    file in the data directory's scratch folder rather than through createDataFrame:
    Spark's vectorized Parquet reader takes a 5e5-record batch 2-4x faster than the Arrow
    hand-over through the driver, which turns the batch into one local relation and splits
    it on the JVM side (bench_kafka's floor measures both). The file is not fsynced: it is read back at once and a crash
    loses nothing that the durable offsets would not replay."""
    if isinstance(raw, Backlog):
        decoders = tuple((side, plan.format(side), plan.width(side), check_values and side == "value")
                         for side in plan.python_sides())
        try:
            yield backlog_df(spark, dataclasses.replace(raw, decoders=decoders, contest=contest))
        except Exception as exc:
            reason = read_failure(exc)
            if reason is None:
                raise
            raise RuntimeError(reason) from exc  # what the table's status shows, not a traceback
        return
    path = store.scratch / f"kafka-{uuid.uuid4().hex}.parquet"
    write_handover(raw, path)
    try:
        yield spark.read.schema(RAW_DDL).parquet(str(path))
    finally:
        path.unlink(missing_ok=True)


def _decoded(plan: DecodePlan, df: DataFrame, values_later: bool = False) -> DataFrame:
    """The records decoded. `values_later`: Python-decoded values are only checked (their
    columns NULL), for `_decode_values` to decode once each key's winner is known. A side
    that needs Python is decoded by an Arrow UDF, unless the reader has (a column __<side>)."""
    sides = [side for side in plan.python_sides() if f"__{side}" not in df.columns]
    if sides:
        df = df.select("*", *[decoder_udf(plan, side, check_only=values_later and side == "value")(F.col(side))
                              .alias(f"__{side}") for side in sides])
    return df.selectExpr(*plan.decode_sql(), *(["value AS __value_raw"] if values_later else []))


def _decode_values(plan: DecodePlan, winners: DataFrame) -> DataFrame:
    """The winners' value columns decoded from their raw value, which then goes."""
    decoded = winners.withColumn("__value", decoder_udf(plan, "value")(F.col("__value_raw")))
    for i, name in enumerate(plan.value_columns):
        decoded = decoded.withColumn(name, F.col(f"__value.c{i}"))
    # The full decoder has the last word: a winner the check let through but that does not
    # decode is an error, never a row with no value.
    decoded = decoded.withColumn("__err", F.expr("coalesce(__err, concat('value: ', __value.err))"))
    return decoded.drop("__value", "__value_raw")


def _updates(rows: pa.Table, types: tuple[SqlType, ...], diff: int) -> pa.Table:
    n = rows.num_rows
    table = rows.append_column(TS, pa.array([0] * n, pa.int64())).append_column(
        DIFF, pa.array([diff] * n, pa.int64()))
    return table.rename_columns([*(physical(i) for i in range(len(types))), TS, DIFF]).cast(
        storage_arrow_schema(list(types)))


def append_batch(spark: SparkSession, plan: DecodePlan, raw: Records, target: Target, store: Store) -> BatchResult:
    """ENVELOPE NONE: every record that decodes is a new row; the others are errors."""
    spark = batch_session(spark)
    cols = [f"{target.column_sql(i)} AS {physical(i)}" for i in range(len(target.types))]
    with _handed_over(spark, store, raw, plan) as df:
        out = _decoded(plan, df).selectExpr(*cols, "__err", "__partition", "__offset").toArrow()
    ok = pc.is_null(out.column("__err"))
    rows = out.filter(ok).select([physical(i) for i in range(len(target.types))])
    errors = {f"offset {r['__partition']}/{r['__offset']}":
              {"partition": r["__partition"], "offset": r["__offset"], "message": r["__err"]}
              for r in out.filter(pc.invert(ok)).select(["__err", "__partition", "__offset"]).to_pylist()}
    return BatchResult(_updates(rows, target.types, +1), errors, inserted=rows.num_rows)


SMALL_BATCH = 1_000  # records; see upsert_batch
_names = itertools.count()
# A batch reads only its keys' rows when the table's changelog has more than this many
# rows per record in the batch (measured: the key filter's broadcast of a 2e5-record
# batch cost more than netting a 3e5-row changelog whole).
RESTRICT_RATIO = 4


def upsert_batch(spark: SparkSession, plan: DecodePlan, raw: Records, target: Target, store: Store, as_of: int,
                 keys_in_error: bool) -> BatchResult:
    """ENVELOPE UPSERT: each key's winner in the batch, against the table's persisted row.

    Within the batch a key's winner is its greatest record by the ORDER BY, except that
    an error record (a value or key that cannot be decoded) overrides every record of the
    key before it by offset. The winners are joined with the table's rows for the same
    keys, read from storage at `as_of` (the latest commit: the batch's runner is the
    table's only writer, so nothing changes them before the batch commits). A winner
    replaces the persisted row when it is newer by the ORDER BY (a column that is not
    stored compares as older than any record), when it is an error (a new error always
    overrides), or when an error of the key came before it in the batch. A replaced row
    is retracted; a winner is inserted unless it is a tombstone or an error.

    A key in an error state has no persisted row (the error retracted it), so its next
    winner always wins. Which winners heal such a key is decided by the caller, from the
    winners without a persisted row that are returned when `keys_in_error` is set.
    """
    spark = batch_session(spark)
    n = next(_names)
    views = {name: f"__sw_kafka_{name}_{n}" for name in ("batch", "winners", "stored")}
    key = plan.key_columns[0]
    # A key that cannot be decoded (NULL) is told apart by its raw bytes, so that each
    # such record keeps its own error; with INLINE errors it is one NULL key like any other.
    kid = "CAST(NULL AS BINARY)" if target.inline_errors else f"CASE WHEN `{key}` IS NULL THEN __key_raw END"
    started = time.perf_counter()
    small = isinstance(raw, pa.Table) and raw.num_rows <= SMALL_BATCH
    snapshot = store.files(target.collection_id, as_of)
    # The stored rows are restricted to the batch's keys only when the table is much larger
    # than the batch (_stored_rows): then decoding a small batch's keys a second time costs
    # little.
    restrict = not small and raw.num_rows * RESTRICT_RATIO < sum(f.rows for f in snapshot[0])
    # A JSON value is only checked before each key's winner is known, and decoded for the
    # winners: putting a document in jsonb's canonical form costs several times more than
    # parsing it, and a backlog holds several records per key. A backlog's readers do both,
    # decoding only their contenders (kafka_read).
    check_values = plan.value_format[0] == "json"
    values_later = check_values and not isinstance(raw, Backlog)
    text_sides = tuple(side for side, fmt in (("key", plan.key_format), ("value", plan.value_format))
                       if fmt is not None and fmt[0] == "text")
    contest = Contest("timestamp" in target.order, plan.key_required, text_sides)
    with _handed_over(spark, store, raw, plan, check_values, contest) as records:
        if small:
            # A few records (what a lone new record is): one partition, so that neither the
            # winners' aggregation nor the netting of stored rows nor the join needs a
            # shuffle, and the batch is one Spark stage rather than a job per exchange.
            records = records.coalesce(1)
        elif restrict and isinstance(raw, Backlog):
            # Read from the broker once, though the batch's records are read twice.
            records = records.localCheckpoint()
        decoded = _decoded(plan, records, values_later).selectExpr(
            *(f"`{c}`" for c in target.record_columns(plan, raw_value=values_later)), f"{kid} AS __kid")
        seconds = {"to_spark": time.perf_counter() - started}
        part = f"`{key}`, __kid"
        try:
            decoded.createOrReplaceTempView(views["batch"])
            if "timestamp" in target.order:
                order = ", ".join({"timestamp": "__ts DESC", "offset": "__offset DESC"}[k] for k in target.order)
                if "__offset DESC" not in order:
                    order += ", __offset DESC"
                # Both windows share one partitioning by key: Spark shuffles the batch once.
                winners = spark.sql(f"""
                    WITH marked AS (
                        SELECT *, max(CASE WHEN __err IS NOT NULL THEN __offset END) OVER (PARTITION BY {part})
                                  AS __eoff
                        FROM {views['batch']}),
                    kept AS (
                        SELECT * FROM marked
                        WHERE __err IS NULL AND (__eoff IS NULL OR __offset > __eoff)
                           OR __err IS NOT NULL AND __offset = __eoff),
                    ranked AS (
                        SELECT *, row_number() OVER (PARTITION BY {part} ORDER BY __err IS NULL DESC, {order})
                                  AS __rn
                        FROM kept)
                    SELECT * EXCEPT (__rn, __eoff), __eoff IS NOT NULL AND __err IS NULL AS __after_error
                    FROM ranked WHERE __rn = 1""")
            else:
                # Ordered by offset alone, a key's winner is its last record, error or not
                # (an error at the same offset of another partition wins the tie, as in the
                # windows above): one hash aggregation, cheaper than sorting the batch.
                winners = spark.sql(f"""
                    SELECT __w.*, __e IS NOT NULL AND __w.__err IS NULL AS __after_error
                    FROM (SELECT max_by(struct(*), struct(__offset, __err IS NOT NULL)) AS __w,
                                 max(CASE WHEN __err IS NOT NULL THEN __offset END) AS __e
                          FROM {views['batch']} GROUP BY {part})""")
            if values_later:
                winners = _decode_values(plan, winners)
            winners.createOrReplaceTempView(views["winners"])
            kpos = target.stored(key)
            stored_df = _stored_rows(spark, store, target, as_of, snapshot, kpos,
                                     decoded.select(F.col(f"`{key}`").alias("__k")) if restrict else None,
                                     batch_keys(plan, raw) if small else None)
            stored_df.createOrReplaceTempView(views["stored"])
            is_err = "false" if target.inline_errors else "w.__err IS NOT NULL"
            pairs = []
            for kind in target.order or ("offset",):
                incoming, source = ("w.__ts", "__ts") if kind == "timestamp" else ("w.__offset", "__offset")
                pos = target.stored(source)
                if pos is None:
                    persisted = "-1"  # not stored: any record of the key is newer
                elif kind == "timestamp":
                    persisted = f"unix_millis(CAST(p.__o{pos} AS TIMESTAMP))"
                else:
                    persisted = f"p.__o{pos}"
                pairs.append((incoming, persisted))
            width = len(target.types)
            unstored = "NOT __has_stored" if keys_in_error else "false"
            # One partition on both sides: a hash join needs no exchange, a broadcast would.
            hint = "/*+ SHUFFLE_HASH(p) */" if small else ""
            result = spark.sql(f"""
                SELECT * FROM (
                    SELECT {', '.join(f'{target.column_sql(i)} AS __n{i}' for i in range(width))},
                           {', '.join(f'__o{i}' for i in range(width))},
                           __wins AND __has_stored AS __retract,
                           __wins AND NOT __is_err AND NOT __tomb AS __insert,
                           __is_err OR {unstored} AS __event,
                           __is_err, `{key}` AS __key, __key_raw, __err, __partition, __offset
                    FROM (
                        SELECT {hint} w.*, p.*, {is_err} AS __is_err, p.__present IS NOT NULL AS __has_stored,
                               {is_err} OR p.__present IS NULL OR w.__after_error OR {_newer(pairs)} AS __wins
                        FROM {views['winners']} w LEFT JOIN {views['stored']} p ON w.`{key}` <=> p.__o{kpos})
                ) WHERE __retract OR __insert OR __event""").toArrow()
            seconds["jobs"] = time.perf_counter() - started - seconds["to_spark"]
        finally:
            for view in views.values():
                spark.catalog.dropTempView(view)
    plus = result.filter(result.column("__insert")).select([f"__n{i}" for i in range(width)])
    minus = result.filter(result.column("__retract")).select([f"__o{i}" for i in range(width)])
    events = result.filter(result.column("__event")).select(
        ["__is_err", "__key", "__key_raw", "__err", "__partition", "__offset"]).to_pylist()
    updates = pa.concat_tables([_updates(plus, target.types, +1), _updates(minus, target.types, -1)])
    seconds["from_spark"] = time.perf_counter() - started - seconds["to_spark"] - seconds["jobs"]
    return BatchResult(updates, {}, inserted=plus.num_rows, retracted=minus.num_rows, seconds=seconds,
                       events=events)


def _newer(pairs: list[tuple[str, str]]) -> str:
    """SQL for: the incoming values are greater than the persisted ones, compared in order."""
    if not pairs:
        return "false"
    (a, b), rest = pairs[0], pairs[1:]
    return f"({a} > {b} OR ({a} = {b} AND {_newer(rest)}))"


def _stored_rows(spark: SparkSession, store: Store, target: Target, as_of: int, snapshot: tuple[list, int], kpos: int,
                 keys: DataFrame | None = None, key_values: list | None = None) -> DataFrame:
    """The table's rows at `as_of` (its files: `snapshot`) whose key (column `kpos`) is
    in the batch, as columns __o0, __o1, ... and __present.

    Read through the same changelog as queries. `keys` (column __k), given when the batch
    is small next to the table, are applied before retractions are netted out, so the cost
    follows the rows of those keys; a batch about as large as the table reads it all
    (broadcasting its keys would cost more than the rows it could skip). `key_values`,
    the keys of a small batch decoded beforehand, filter the rows as literals instead,
    read as one partition (see upsert_batch)."""
    changes = changes_df(spark, store, target.collection_id, list(target.types), as_of, snapshot=snapshot)
    cols = [physical(i) for i in range(len(target.types))]
    mine = changes
    if key_values is not None:
        column = F.col(physical(kpos))
        known = [k for k in key_values if k is not None]
        wanted = column.isin(known) if known else F.lit(False)
        if len(known) < len(key_values):
            wanted = wanted | column.isNull()
        mine = changes.where(wanted).coalesce(1)
    elif keys is not None:
        mine = changes.join(F.broadcast(keys), changes[physical(kpos)].eqNullSafe(keys["__k"]), "left_semi")
    if has_retractions(store, target.collection_id, as_of, None, snapshot[0]):
        mine = mine.groupBy(*cols).agg(F.sum(DIFF).alias("__n")).where("__n > 0")
    return mine.select(*[F.col(c).alias(f"__o{i}") for i, c in enumerate(cols)], F.lit(True).alias("__present"))


def batch_keys(plan: DecodePlan, raw: pa.Table) -> list:
    """A batch's distinct keys as Spark decodes them (None for one that cannot be decoded)."""
    out = set()
    for data in set(raw.column("key").to_pylist()):
        try:
            out.add(decode_value(plan.key_format, data)[0] if data is not None else None)
        except ValueError:
            out.add(None)
    return list(out)

