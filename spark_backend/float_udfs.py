"""float8 and float4 to text as PostgreSQL writes them, as Python UDFs registered in a Spark
session under the names the planner writes (planner.pg_functions.FLOAT_TEXT_UDFS): the
wire encoders' own formatting (planner.codecs.text_out), so a value cast to text in a
query reads as the same value sent as a column does."""

from __future__ import annotations

from planner.codecs.text_out import float4_text, float8_text
from planner.pg_functions import FLOAT_TEXT_UDFS

_FORMATS = {"double precision": float8_text, "real": float4_text}


def _nullable(fmt):
    def call(x: float | None) -> str | None:
        return None if x is None else fmt(x)
    return call


def register(spark) -> None:
    """Register both UDFs in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for type_name, name in FLOAT_TEXT_UDFS.items():
        spark.udf.register(name, udf(_nullable(_FORMATS[type_name]), "string", useArrow=True))
