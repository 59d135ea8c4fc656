"""The jsonb operators' and functions' Python UDFs (`planner.jsonb_ops`,
`planner.jsonb_funcs`) and json's constructors' (`planner.json_text`), registered in a Spark session under the names the planner writes
(their modules' UDF_NAMES).

Arrow-batched: each runs in Spark's Python workers, which import our packages as the
Kafka decoder's do (engine.ship_code for a cluster). A function's SqlError leaves the
worker as an exception whose text is `sparkwire:<SQLSTATE>:<message>`, which
`spark_backend.errors` turns back into the error PostgreSQL would raise."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from planner import json_text, jsonb_funcs, jsonb_ops, jsonb_order
from planner.errors import SqlError
from planner.sql_template import ERROR_PREFIX

# operation -> Spark SQL return type
_RETURNS = {
    "contains": "boolean", "exists": "boolean", "exists_any": "boolean", "exists_all": "boolean",
    "extract_path": "string", "extract_path_text": "string", "delete_key": "string", "concat": "string",
}
_ROWS = "array<struct<key:string,value:string>>"
_FUNC_RETURNS = {
    "object_keys": "array<string>", "array_elements": "array<string>", "array_elements_text": "array<string>",
    "each": _ROWS, "each_text": _ROWS, "each_record": "array<string>", "each_text_record": "array<string>",
}


def carrying_sqlstate(f: Callable[..., Any]) -> Callable[..., Any]:
    """`f`, its SqlError raised as an exception whose text names the SQLSTATE (a Python
    worker's exception reaches the driver as text only)."""

    @functools.wraps(f)
    def call(*args: Any) -> Any:
        try:
            return f(*args)
        except SqlError as err:
            raise ValueError(f"{ERROR_PREFIX}{err.sqlstate}:{err.message}") from None

    return call


def register(spark) -> None:
    """Register every jsonb UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for op, name in jsonb_ops.UDF_NAMES.items():
        spark.udf.register(name, udf(carrying_sqlstate(getattr(jsonb_ops, op)), _RETURNS[op], useArrow=True))
    for op, name in jsonb_funcs.UDF_NAMES.items():
        returns = _FUNC_RETURNS.get(op, "string")
        spark.udf.register(name, udf(carrying_sqlstate(getattr(jsonb_funcs, op)), returns, useArrow=True))
    for op, name in json_text.UDF_NAMES.items():
        spark.udf.register(name, udf(carrying_sqlstate(getattr(json_text, op)), "string", useArrow=True))
    # jsonb's order and equality (1 = 1.0) as bytes Spark compares: comparisons and ORDER BY
    spark.udf.register(jsonb_order.UDF_NAME, udf(carrying_sqlstate(jsonb_order.sort_key), "binary", useArrow=True))
