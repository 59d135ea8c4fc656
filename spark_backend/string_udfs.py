"""PostgreSQL's string and regular expression functions that Spark lacks (`planner.pg_strings`,
`planner.pg_regex`), as Python UDFs registered in a Spark session under the names the planner
writes (their modules' UDF_NAMES). PostgreSQL's errors leave the worker as jsonb_udfs' do."""

from __future__ import annotations

from planner import pg_format, pg_regex, pg_strings, pg_to_char, pg_to_char_num, pg_to_number, pg_to_timestamp
from spark_backend.jsonb_udfs import carrying_sqlstate

_TEXT_ARRAY = "array<string>"
# UDF name -> (function, Spark SQL return type)
_UDFS = {
    pg_regex.UDF_NAMES["regexp_replace"]: (pg_regex.regexp_replace, "string"),
    pg_regex.UDF_NAMES["regexp_match"]: (pg_regex.regexp_match, _TEXT_ARRAY),
    pg_regex.UDF_NAMES["regexp_split"]: (pg_regex.regexp_split, _TEXT_ARRAY),
    pg_regex.UDF_NAMES["regexp_like"]: (pg_regex.regexp_like, "boolean"),
    pg_regex.UDF_NAMES["substring"]: (pg_regex.substring, "string"),
    pg_regex.UDF_NAMES["similar_to_escape"]: (pg_regex.similar_to_escape, "string"),
    pg_regex.UDF_NAMES["substring_similar"]: (pg_regex.substring_similar, "string"),
    pg_strings.UDF_NAMES["encode"]: (pg_strings.encode, "string"),
    pg_strings.UDF_NAMES["decode"]: (pg_strings.decode, "binary"),
    pg_strings.UDF_NAMES["like_escape"]: (pg_strings.like_escape, "string"),
    pg_strings.UDF_NAMES["string_to_array"]: (pg_strings.string_to_array, _TEXT_ARRAY),
    pg_strings.UDF_NAMES["chr"]: (pg_strings.pg_chr, "string"),
    pg_format.UDF_NAME: (pg_format.pg_format, "string"),
    pg_to_char.UDF_NAME: (pg_to_char.to_char, "string"),
    pg_to_char_num.UDF_NAME: (pg_to_char_num.from_text, "string"),
    pg_to_number.UDF_NAME: (pg_to_number.from_text, "string"),
    pg_to_timestamp.UDF_NAMES["to_timestamp"]: (pg_to_timestamp.timestamp_text, "string"),
    pg_to_timestamp.UDF_NAMES["to_date"]: (pg_to_timestamp.date_text, "string"),
}


def register(spark) -> None:
    """Register every string UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for name, (function, returns) in _UDFS.items():
        spark.udf.register(name, udf(carrying_sqlstate(function), returns, useArrow=True))
