"""WITH RECURSIVE … UNION, computed as PostgreSQL's executor does it (nodeRecursiveunion.c),
one Spark query per iteration: the non-recursive term's distinct rows are the result and the
first working table; each iteration runs the recursive term over the working table, and its
rows not already in the result (nor repeated) are added and become the next working table;
the loop ends when an iteration adds none. Spark's own recursive CTE keeps repeated rows, so
a cycle in the data would never end there.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from planner.errors import SqlError
from planner.sql.spark_sql import Fixpoint
from spark_backend.errors import RECURSION_LEVELS

STATEMENT_TOO_COMPLEX = "54001"

LEVEL_LIMIT = "spark.sql.cteRecursionLevelLimit"  # the same limit as Spark's own loop


def materialize(spark: SparkSession, fx: Fixpoint) -> DataFrame:
    """The rows of `fx`, computed now (each iteration's rows checkpointed, so that the
    plans do not grow with the iterations)."""
    limit = int(spark.conf.get(LEVEL_LIMIT, str(RECURSION_LEVELS)))
    result = spark.sql(fx.base).distinct().localCheckpoint()
    work = result
    try:
        for _ in range(limit):
            work.createOrReplaceTempView(fx.work)
            added = spark.sql(fx.step).subtract(result).localCheckpoint()
            if added.isEmpty():
                return result
            result = result.union(added).localCheckpoint()
            work = added
    finally:
        spark.catalog.dropTempView(fx.work)
    raise SqlError(STATEMENT_TOO_COMPLEX, f"WITH RECURSIVE ran more iterations than the {limit:,} Spark allows")


def describe(spark: SparkSession, fx: Fixpoint) -> DataFrame:
    """No rows, with the columns `fx` has: for describing a statement without running it."""
    return spark.sql(fx.base).limit(0)
