"""Turning a collection's changelog into a Spark DataFrame of its rows at a time.

A read at `as_of` takes the files with updates at or before it and nets out
retractions. Files written without retractions (the common case: inserts and
compacted snapshots) are just a union; only when retractions are present does
the read pay for a multiset difference.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from planner.errors import SqlError
from planner.types import SqlType
from spark_backend.schema import (
    DIFF,
    TS,
    pg_metadata,
    physical,
    storage_arrow_schema,
    storage_spark_ddl,
)
from spark_backend.storage import Store


def changes_df(spark: SparkSession, store: Store, collection_id: str, types: list[SqlType],
               as_of: int, overlay: pa.Table | None = None,
               snapshot: tuple[list, int] | None = None) -> DataFrame:
    """All updates of a collection at or before `as_of`, in physical column names.

    `snapshot` is a `store.files` result to read, when the caller needs the same one."""
    files, since = snapshot or store.files(collection_id, as_of)
    if as_of < since:
        raise SqlError(
            "22000",
            f"timestamp {as_of} is not valid for all inputs: the collection has been "
            f"compacted up to {since}",
        )
    ddl = storage_spark_ddl(types)
    parts: list[DataFrame] = []
    if files:
        df = read_files(spark, store, collection_id, ddl, files)
        if any(f.max_ts > as_of for f in files):
            df = df.where(F.col(TS) <= as_of)
        parts.append(df)
    if overlay is not None and overlay.num_rows:
        parts.append(spark.createDataFrame(overlay, schema=ddl))
    if not parts:
        return empty_df(spark, [*(f"CAST(NULL AS {t.spark}) AS {physical(i)}" for i, t in enumerate(types)),
                                f"CAST(NULL AS BIGINT) AS {TS}", f"CAST(NULL AS BIGINT) AS {DIFF}"])
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def read_files(spark: SparkSession, store: Store, collection_id: str, ddl: str, files: list) -> DataFrame:
    """The files, checked against their checksums first (once per file since start), and read
    with Parquet's page checksums verified: damage is XX001, never a wrong answer."""
    store.verify(collection_id, files)
    return (spark.read.schema(ddl).option("parquet.page.verify-checksum.enabled", "true")
            .parquet(*[store.path(f) for f in files]))


def empty_df(spark: SparkSession, columns: list[str]) -> DataFrame:
    """No rows, of `columns` (SQL expressions, typed NULLs), as a relation Spark's optimizer
    knows to be empty: a join or union with it is planned away. (createDataFrame([]) is an
    RDD to Spark, read by a job of its own each time: for a Kafka table's first batch, one
    job in three.)"""
    return spark.range(1).selectExpr(*columns).where(F.lit(False))


def has_retractions(store: Store, collection_id: str, as_of: int, overlay: pa.Table | None,
                    files: list | None = None) -> bool:
    if files is None:
        files, _ = store.files(collection_id, as_of)
    if any(f.retractions for f in files):
        return True
    if overlay is not None and overlay.num_rows:
        return bool(pc.any(pc.less(overlay.column(DIFF), 0)).as_py())
    return False


def rows_df(spark: SparkSession, store: Store, collection_id: str, names: list[str],
            types: list[SqlType], as_of: int, overlay: pa.Table | None = None,
            snapshot: tuple[list, int] | None = None) -> DataFrame:
    """The relation's rows at `as_of`, with user column names and PostgreSQL types.

    `snapshot` is the files to read, when not the store's (none, for a table not committed)."""
    # One file list for both: a compaction finishing in between would otherwise make
    # the read union retractions it read as if they were rows.
    snapshot = snapshot or store.files(collection_id, as_of)
    changes = changes_df(spark, store, collection_id, types, as_of, overlay, snapshot)
    cols = [physical(i) for i in range(len(types))]
    if has_retractions(store, collection_id, as_of, overlay, snapshot[0]):
        plus = changes.where(F.col(DIFF) > 0).select(*cols)
        minus = changes.where(F.col(DIFF) < 0).select(*cols)
        rows = plus.exceptAll(minus)
    else:
        rows = changes.select(*cols)
    return rows.select(*[
        F.col(physical(i)).alias(name, metadata=pg_metadata(t))
        for i, (name, t) in enumerate(zip(names, types))
    ])


def consolidated_arrow(spark: SparkSession, store: Store, collection_id: str,
                       types: list[SqlType], files: list, since: int) -> pa.Table:
    """The updates of `files` netted out, moved to `since` (for compaction).

    Compaction may fold only the newer, smaller files of a collection, so a
    retraction can outlive the fold when the row it retracts lies in a file left
    out: it stays, as a -1 update, and cancels that row at read time."""
    ddl = storage_spark_ddl(types)
    cols = [physical(i) for i in range(len(types))]
    df = read_files(spark, store, collection_id, ddl, files)
    if any(f.retractions for f in files):
        plus = df.where(F.col(DIFF) > 0).select(*cols)
        minus = df.where(F.col(DIFF) < 0).select(*cols)
        rows = plus.exceptAll(minus).withColumn(DIFF, F.lit(1).cast("bigint")).unionByName(
            minus.exceptAll(plus).withColumn(DIFF, F.lit(-1).cast("bigint")))
    else:
        rows = df.select(*cols).withColumn(DIFF, F.lit(1).cast("bigint"))
    rows = rows.withColumn(TS, F.lit(since).cast("bigint")).select(*cols, TS, DIFF)
    return rows.toArrow().cast(storage_arrow_schema(types))
