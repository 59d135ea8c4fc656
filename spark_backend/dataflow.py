"""Running a SUBSCRIBE's micro-batches in Spark.

Each input relation is registered under its planned Spark name either as its
full contents at a timestamp (for the snapshot) or as just a batch of updates;
both carry `__mz_ts` and `__mz_diff`, so the same delta SQL serves both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from planner.dataflow import DIFF as DELTA_DIFF
from planner.dataflow import TS as DELTA_TS
from spark_backend.reads import changes_df, rows_df
from spark_backend.schema import (
    DIFF,
    TS,
    pg_metadata,
    physical,
    storage_arrow_schema,
    storage_spark_ddl,
)
from spark_backend.storage import Store


@dataclass(frozen=True)
class Input:
    """One relation a dataflow reads: its id, Spark name, columns and types."""

    collection_id: str
    spark_name: str
    names: list[str]
    types: list


def _updates_df(spark: SparkSession, rel: Input, updates: pa.Table | None) -> DataFrame:
    ddl = storage_spark_ddl(rel.types)
    if updates is None or updates.num_rows == 0:
        df = spark.createDataFrame([], schema=ddl)
    else:
        df = spark.createDataFrame(updates, schema=ddl)
    return _user_columns(df, rel)


def _user_columns(df: DataFrame, rel: Input) -> DataFrame:
    return df.select(
        *[F.col(physical(i)).alias(n, metadata=pg_metadata(t))
          for i, (n, t) in enumerate(zip(rel.names, rel.types))],
        F.col(TS).alias(DELTA_TS), F.col(DIFF).alias(DELTA_DIFF))


def run_over_snapshot(spark: SparkSession, store: Store, inputs: list[Input], as_of: int,
                      sqls: list[str]) -> list[pa.Table]:
    """Run delta SQL over every input's full contents at `as_of` (as +1 updates)."""
    registered = []
    try:
        for rel in inputs:
            df = rows_df(spark, store, rel.collection_id, rel.names, rel.types, as_of)
            df = df.withColumn(DELTA_TS, F.lit(as_of).cast("bigint")).withColumn(
                DELTA_DIFF, F.lit(1).cast("bigint"))
            df.createOrReplaceTempView(rel.spark_name)
            registered.append(rel.spark_name)
        return [spark.sql(sql).toArrow() for sql in sqls]
    finally:
        for name in registered:
            spark.catalog.dropTempView(name)


def run_over_updates(spark: SparkSession, inputs: list[Input], updates: dict[str, pa.Table],
                     sqls: list[str]) -> list[pa.Table]:
    """Run delta SQL over one micro-batch of updates (the inputs' changes only)."""
    registered = []
    try:
        for rel in inputs:
            _updates_df(spark, rel, updates.get(rel.collection_id)).createOrReplaceTempView(rel.spark_name)
            registered.append(rel.spark_name)
        return [spark.sql(sql).toArrow() for sql in sqls]
    finally:
        for name in registered:
            spark.catalog.dropTempView(name)


def run_over_table(spark: SparkSession, name: str, table: pa.Table, sql: str) -> pa.Table:
    """Run SQL over an Arrow table registered as view `name` (joined updates, say)."""
    spark.createDataFrame(table).createOrReplaceTempView(name)
    try:
        return spark.sql(sql).toArrow()
    finally:
        spark.catalog.dropTempView(name)


def history(spark: SparkSession, store: Store, rel: Input, after: int, upto: int) -> pa.Table:
    """A collection's updates with after < mz_timestamp <= upto, from storage."""
    df = changes_df(spark, store, rel.collection_id, rel.types, upto)
    return df.where(F.col(TS) > after).toArrow().cast(storage_arrow_schema(rel.types))
