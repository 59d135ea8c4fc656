"""The jsonb operators' Python UDFs (`planner.jsonb_ops`), registered in a Spark session
under the names the planner writes (`planner.jsonb_ops.UDF_NAMES`).

Arrow-batched: each runs in Spark's Python workers, which import our packages as the
Kafka decoder's do (engine.ship_code for a cluster)."""

from __future__ import annotations

from planner import jsonb_ops

# operation -> Spark SQL return type
_RETURNS = {
    "contains": "boolean", "exists": "boolean", "exists_any": "boolean", "exists_all": "boolean",
    "extract_path": "string", "delete_key": "string", "concat": "string",
}


def register(spark) -> None:
    """Register every jsonb UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for op, name in jsonb_ops.UDF_NAMES.items():
        spark.udf.register(name, udf(getattr(jsonb_ops, op), _RETURNS[op], useArrow=True))
