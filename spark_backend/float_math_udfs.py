"""PostgreSQL's float8 functions computed with the C library as PostgreSQL's are
(planner.pg_float), as Python UDFs registered in a Spark session under the names the
planner writes (planner.pg_float.UDF_NAMES). PostgreSQL's errors leave the worker as
jsonb_udfs' do."""

from __future__ import annotations

from collections.abc import Callable

from planner.pg_float import FUNCTIONS, UDF_NAMES
from spark_backend.jsonb_udfs import carrying_sqlstate


def _nullable(fn: Callable[..., float]) -> Callable[..., float | None]:
    def call(*args: float | None) -> float | None:
        return None if any(a is None for a in args) else fn(*args)
    return call


def register(spark) -> None:
    """Register every float8 UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for name, udf_name in UDF_NAMES.items():
        spark.udf.register(udf_name, udf(carrying_sqlstate(_nullable(FUNCTIONS[name])), "double", useArrow=True))
