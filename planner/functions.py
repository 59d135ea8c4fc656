"""The function catalog: every function a query may call, deny by default.

Each entry is one PostgreSQL 15 function signature that sparkwire accepts: its
`pg_proc` OID, name, argument and result types as PostgreSQL prints them, and
the Spark SQL it becomes (`{0}`, `{1}`, ... stand for the arguments' Spark SQL).
A call whose name (and number of arguments) is not listed here is PostgreSQL's
`42883 function f(...) does not exist`, raised before Spark sees anything
(`planner.allowlist`); `pg_proc` and psql's `\\df` list exactly these entries.

Two kinds of semantics:
- POSTGRES: the function computes what PostgreSQL computes. Every such entry is
  called side by side on sparkwire and a real PostgreSQL 15 with sample
  arguments (tests/integration/test_function_catalog.py).
- SYSTEM: the answer comes from sparkwire's own catalog and session, as it
  would from PostgreSQL's (`version()`, `has_table_privilege()` - there are no
  privileges to lack - `pg_table_size()` of a relation with no PostgreSQL heap).

A signature PostgreSQL has and this list lacks fails with 42883 on purpose: it
is either not yet translated with PostgreSQL's semantics, or Spark would give a
different answer (Spark's `log(x)` is the natural logarithm, PostgreSQL's the
decimal one). "A PostgreSQL front end of our own" extends this list; the
binder will resolve overloads by argument types against it.

Operators are listed the same way in `planner.operators`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from planner import (
    interval_calls,
    json_text,
    jsonb_funcs,
    jsonb_ops,
    jsonb_order,
    pg_float,
    pg_format,
    pg_functions,
    pg_gcd,
    pg_numeric,
    pg_regex,
    pg_strings,
    pg_to_char,
    pg_to_char_num,
    pg_to_number,
    pg_to_timestamp,
)


class Kind(Enum):
    """pg_proc.prokind, with table functions (proretset) apart."""

    SCALAR = "f"
    AGGREGATE = "a"
    WINDOW = "w"
    TABLE = "t"  # returns a set: called in FROM


# The parameter names and defaults of the catalogued functions that a call may name
# arguments of (`make_interval(days => 3)`), as PostgreSQL's pg_proc.proargnames and
# proargdefaults have them: SQL constants.
PARAMETERS: dict[str, tuple[tuple[str, str], ...]] = {
    "make_interval": (("years", "0"), ("months", "0"), ("weeks", "0"), ("days", "0"), ("hours", "0"),
                      ("mins", "0"), ("secs", "0.0")),
}

# Ordered-set aggregates (pg_aggregate.aggkind 'o'): f(direct args) WITHIN GROUP (ORDER BY x),
# x their last argument here.
ORDERED_SET = frozenset({"percentile_cont", "percentile_disc", "mode"})


class Semantics(Enum):
    POSTGRES = "postgres"  # PostgreSQL's answer, tested against PostgreSQL 15
    SYSTEM = "system"  # the answer of sparkwire's own catalog or session


@dataclass(frozen=True)
class Function:
    oid: int  # PostgreSQL 15's pg_proc.oid for this signature
    name: str
    args: tuple[str, ...]  # argument types, as format_type prints them
    result: str
    # The Spark SQL a call becomes, {0}, {1}... standing for the arguments: a unit or an
    # offset that Spark needs as a constant is shown with a sample value ('year', 1);
    # "rewrite" where planner code builds something too long to spell out here.
    spark: str
    kind: Kind = Kind.SCALAR
    semantics: Semantics = Semantics.POSTGRES
    variadic: bool = False  # the last argument repeats: concat(a, b, c, ...)
    defaults: int = 0  # how many trailing arguments may be left out (pg_proc.pronargdefaults)
    schema: str = "pg_catalog"  # found unqualified only there (information_schema's must be named)

    @property
    def identity(self) -> str:
        """`name(type, type)`, as pg_get_function_identity_arguments would say."""
        args = list(self.args)
        if self.variadic and args:
            args[-1] = f"VARIADIC {args[-1]}"
        return f"{self.name}({', '.join(args)})"

    def takes(self, nargs: int) -> bool:
        if self.variadic:
            return nargs >= len(self.args)
        return len(self.args) - self.defaults <= nargs <= len(self.args)


def _entry(kind: Kind, semantics: Semantics = Semantics.POSTGRES):
    def make(oid: int, name: str, args: str, result: str, spark: str, variadic: bool = False,
             defaults: int = 0, schema: str = "pg_catalog") -> Function:
        types = tuple(a.strip() for a in args.split(",")) if args else ()
        return Function(oid, name, types, result, spark, kind, semantics, variadic, defaults, schema)

    return make


F = _entry(Kind.SCALAR)
S = _entry(Kind.SCALAR, Semantics.SYSTEM)
A = _entry(Kind.AGGREGATE)
W = _entry(Kind.WINDOW)
T = _entry(Kind.TABLE)

_STR = pg_strings.TEMPLATES

FUNCTIONS: tuple[Function, ...] = (
    F(1394, "abs", "real", "real", "abs({0})"),
    F(1395, "abs", "double precision", "double precision", "abs({0})"),
    F(1396, "abs", "bigint", "bigint", "abs({0})"),
    F(2058, "age", "timestamp without time zone, timestamp without time zone", "interval", interval_calls.age()),
    F(1199, "age", "timestamp with time zone, timestamp with time zone", "interval", interval_calls.age()),
    # age(x): from the current date's midnight (the transaction's), planner.sql.spark_sql
    F(2059, "age", "timestamp without time zone", "interval", "rewrite"),
    F(1386, "age", "timestamp with time zone", "interval", "rewrite"),
    F(1397, "abs", "integer", "integer", "abs({0})"),
    F(1398, "abs", "smallint", "smallint", "abs({0})"),
    F(1705, "abs", "numeric", "numeric", "abs({0})"),
    A(2335, "array_agg", "anynonarray", "anyarray", "if(size(transform(collect_list(struct({0} as v)), sw_e -> sw_e.v)) = 0, null, transform(collect_list(struct({0} as v)), sw_e -> sw_e.v))"),
    A(4053, "array_agg", "anyarray", "anyarray", "if(size(transform(collect_list(struct({0} as v)), sw_e -> sw_e.v)) = 0, null, transform(collect_list(struct({0} as v)), sw_e -> sw_e.v))"),
    F(378, "array_append", "anycompatiblearray, anycompatible", "anycompatiblearray", "array_append(coalesce({0}, array()), {1})"),
    F(383, "array_cat", "anycompatiblearray, anycompatiblearray", "anycompatiblearray", "case when {0} is null then {1} when {1} is null then {0} else concat({0}, {1}) end"),
    F(3167, "array_remove", "anycompatiblearray, anycompatible", "anycompatiblearray",
      "case when {1} is null then filter({0}, __x -> not __x is null) else array_remove({0}, {1}) end"),
    S(2198, "inet_server_addr", "", "inet", "'<the server's address>'"),
    S(2199, "inet_server_port", "", "integer", "<the server's port>"),
    S(2196, "inet_client_addr", "", "inet", "'<the client's address>'"),
    S(2197, "inet_client_port", "", "integer", "<the client's port>"),
    S(2171, "pg_cancel_backend", "integer", "boolean", "<run by the server: cancels a session's statement>"),
    S(2096, "pg_terminate_backend", "integer, bigint", "boolean", "<run by the server: ends a session>", defaults=1),
    # Sequences' values live in the server (server.sequence_calls): a column's DEFAULT, an
    # INSERT's VALUES, and a SELECT of these calls alone.
    S(1574, "nextval", "regclass", "bigint", "<run by the server: a sequence's next value>"),
    S(1575, "currval", "regclass", "bigint", "<run by the server: the session's last value of a sequence>"),
    S(2559, "lastval", "", "bigint", "<run by the server: the session's last sequence value>"),
    S(1576, "setval", "regclass, bigint", "bigint", "<run by the server: sets a sequence's value>"),
    S(1765, "setval", "regclass, bigint, boolean", "bigint", "<run by the server: sets a sequence's value>"),
    S(2892, "pg_advisory_unlock_all", "", "void", "cast(null as string)"),
    S(1039, "getdatabaseencoding", "", "name", "'UTF8'"),
    T(1686, "pg_get_keywords", "", "record", "rewrite"),
    S(3829, "pg_opfamily_is_visible", "oid", "boolean", "true"),
    S(2093, "pg_conversion_is_visible", "oid", "boolean", "true"),
    S(3758, "pg_ts_config_is_visible", "oid", "boolean", "true"),
    S(3757, "pg_ts_dict_is_visible", "oid", "boolean", "true"),
    S(3756, "pg_ts_parser_is_visible", "oid", "boolean", "true"),
    S(3768, "pg_ts_template_is_visible", "oid", "boolean", "true"),
    S(3403, "pg_statistics_obj_is_visible", "oid", "boolean", "true"),
    F(2176, "array_length", "anyarray, integer", "integer", "if({1} = 1 and size({0}) > 0, size({0}), null)"),
    F(2091, "array_lower", "anyarray, integer", "integer", "if({1} = 1 and size({0}) > 0, 1, null)"),
    F(3277, "array_position", "anycompatiblearray, anycompatible", "integer", 
      # a NULL is found where the array has one, as IS NOT DISTINCT FROM finds it (Spark: NULL)
      "nullif(if({1} is null, array_position(transform({0}, sw_p -> sw_p is null), true), "
      "array_position({0}, {1})), 0)"),
    F(379, "array_prepend", "anycompatible, anycompatiblearray", "anycompatiblearray", "array_prepend(coalesce({1}, array()), {0})"),
    F(384, "array_to_string", "anyarray, text, text", "text", "array_join({0}, {1}, {2})"),
    F(395, "array_to_string", "anyarray, text", "text", "array_join({0}, {1})"),
    F(2092, "array_upper", "anyarray, integer", "integer", "if({1} = 1 and size({0}) > 0, size({0}), null)"),
    F(1620, "ascii", "text", "integer", "ascii({0})"),
    F(872, "initcap", "text", "text", pg_functions.INITCAP),
    F(1602, "atan", "double precision", "double precision", "sparkwire_float8_atan({0})"),
    F(1603, "atan2", "double precision, double precision", "double precision", "sparkwire_float8_atan2({0}, {1})"),
    A(2106, "avg", "interval", "interval", "rewrite"),  # planner.sql.spark_aggregates.interval
    A(2100, "avg", "bigint", "numeric", "avg({0})"),
    A(2101, "avg", "integer", "numeric", "avg({0})"),
    A(2102, "avg", "smallint", "numeric", "avg({0})"),
    A(2103, "avg", "numeric", "numeric", "avg({0})"),
    A(2104, "avg", "real", "double precision", "avg({0})"),
    A(2105, "avg", "double precision", "double precision", "avg({0})"),
    F(1811, "bit_length", "text", "integer", "bit_length({0})"),
    A(2517, "bool_and", "boolean", "boolean", "bool_and({0})"),
    # Ordered-set aggregates: the last argument is the WITHIN GROUP (ORDER BY ...) one.
    A(3974, "percentile_cont", "double precision, double precision", "double precision",
      "percentile_cont({0}) within group (order by {1} nulls last)"),
    A(3972, "percentile_disc", "double precision, anyelement", "anyelement",
      "percentile_disc({0}) within group (order by {1} nulls last)"),
    A(3984, "mode", "anyelement", "anyelement", "mode() within group (order by {0} nulls last)"),
    A(2236, "bit_and", "smallint", "smallint", "bit_and({0})"),
    A(2238, "bit_and", "integer", "integer", "bit_and({0})"),
    A(2240, "bit_and", "bigint", "bigint", "bit_and({0})"),
    A(2237, "bit_or", "smallint", "smallint", "bit_or({0})"),
    A(2239, "bit_or", "integer", "integer", "bit_or({0})"),
    A(2241, "bit_or", "bigint", "bigint", "bit_or({0})"),
    A(6164, "bit_xor", "smallint", "smallint", "bit_xor({0})"),
    A(6165, "bit_xor", "integer", "integer", "bit_xor({0})"),
    A(6166, "bit_xor", "bigint", "bigint", "bit_xor({0})"),
    # The statistics of two variables, as PostgreSQL's float8_regr_* finish them: NULL where a
    # variance they divide by is 0 (Spark's corr gives NaN there).
    A(2829, "corr", "double precision, double precision", "double precision", pg_functions.CORR),
    A(2827, "covar_pop", "double precision, double precision", "double precision", "covar_pop({0}, {1})"),
    A(2828, "covar_samp", "double precision, double precision", "double precision", "covar_samp({0}, {1})"),
    A(2818, "regr_count", "double precision, double precision", "bigint", "regr_count({0}, {1})"),
    A(2822, "regr_avgx", "double precision, double precision", "double precision", "regr_avgx({0}, {1})"),
    A(2823, "regr_avgy", "double precision, double precision", "double precision", "regr_avgy({0}, {1})"),
    A(2819, "regr_sxx", "double precision, double precision", "double precision", "regr_sxx({0}, {1})"),
    A(2820, "regr_syy", "double precision, double precision", "double precision", "regr_syy({0}, {1})"),
    A(2821, "regr_sxy", "double precision, double precision", "double precision", "regr_sxy({0}, {1})"),
    A(2825, "regr_slope", "double precision, double precision", "double precision", "regr_slope({0}, {1})"),
    A(2826, "regr_intercept", "double precision, double precision", "double precision",
      "regr_intercept({0}, {1})"),
    A(2824, "regr_r2", "double precision, double precision", "double precision", "regr_r2({0}, {1})"),
    A(2518, "bool_or", "boolean", "boolean", "bool_or({0})"),
    F(884, "btrim", "text, text", "text", "trim({1} from {0})"),
    F(885, "btrim", "text", "text", "trim({0})"),
    F(3179, "cardinality", "anyarray", "integer", "size({0})"),
    F(1345, "cbrt", "double precision", "double precision", "sparkwire_float8_cbrt({0})"),
    F(1711, "ceil", "numeric", "numeric", "ceil({0})"),
    F(2308, "ceil", "double precision", "double precision", "ceil({0})"),
    F(2167, "ceiling", "numeric", "numeric", "ceil({0})"),
    F(2320, "ceiling", "double precision", "double precision", "ceil({0})"),
    F(1372, "char_length", "character", "integer", "length({0})"),
    F(1381, "char_length", "text", "integer", "length({0})"),
    F(1367, "character_length", "character", "integer", "length({0})"),
    F(1369, "character_length", "text", "integer", "length({0})"),
    S(1216, "col_description", "oid, integer", "text", "cast(null as string)"),
    # concat/concat_ws: as written for a number (made text first); a boolean becomes t/f
    F(3058, "concat", "\"any\"", "text", "concat(coalesce(cast({0} as string), ''))", variadic=True),
    F(3059, "concat_ws", "text, \"any\"", "text", "concat_ws({0}, cast({1} as string))", variadic=True),
    F(1605, "cos", "double precision", "double precision", "sparkwire_float8_cos({0})"),
    F(2463, "cosh", "double precision", "double precision", "sparkwire_float8_cosh({0})"),
    A(2147, "count", "\"any\"", "bigint", "count({0})"),
    A(2803, "count", "", "bigint", "count()"),
    W(3104, "cume_dist", "", "double precision", "cume_dist()"),
    S(861, "current_database", "", "name", "'materialize'"),
    S(1402, "current_schema", "", "name", "'public'"),
    S(1403, "current_schemas", "boolean", "name[]", "if({0}, array('pg_catalog', 'public'), array('public'))"),
    S(2077, "current_setting", "text", "text", "rewrite"),
    S(3294, "current_setting", "text, boolean", "text", "rewrite"),
    F(1172, "date_part", "text, interval", "double precision", "rewrite"),  # planner.pg_extract
    F(1171, "date_part", "text, timestamp with time zone", "double precision", "extract(year from {1})"),
    F(1384, "date_part", "text, date", "double precision", "extract(year from {1})"),
    F(2021, "date_part", "text, timestamp without time zone", "double precision", "extract(year from {1})"),
    F(1217, "date_trunc", "text, timestamp with time zone", "timestamp with time zone", "date_trunc('day', {1})"),
    F(2020, "date_trunc", "text, timestamp without time zone", "timestamp without time zone", "cast(date_trunc('day', {1}) as timestamp_ntz)"),
    F(1218, "date_trunc", "text, interval", "interval", interval_calls.call("trunc", "{0}", "{1}")),
    F(1608, "degrees", "double precision", "double precision", "sparkwire_float8_degrees({0})"),
    # AT TIME ZONE (planner.pg_timezone)
    F(1159, "timezone", "text, timestamp with time zone", "timestamp without time zone", "rewrite"),
    F(2069, "timezone", "text, timestamp without time zone", "timestamp with time zone", "rewrite"),
    F(1026, "timezone", "interval, timestamp with time zone", "timestamp without time zone", "rewrite"),
    F(2070, "timezone", "interval, timestamp without time zone", "timestamp with time zone", "rewrite"),
    W(3102, "dense_rank", "", "bigint", "dense_rank()"),
    F(1973, "div", "numeric, numeric", "numeric", "cast({0} div {1} as decimal(38, 10))"),
    A(2519, "every", "boolean", "boolean", "every({0})"),
    F(1347, "exp", "double precision", "double precision", "sparkwire_float8_exp({0})"),
    F(1732, "exp", "numeric", "numeric", "exp({0})"),
    F(6204, "extract", "text, interval", "numeric", "rewrite"),  # planner.pg_extract
    F(6199, "extract", "text, date", "numeric", "extract(year from {1})"),
    F(6202, "extract", "text, timestamp without time zone", "numeric", "extract(year from {1})"),
    F(6203, "extract", "text, timestamp with time zone", "numeric", "extract(year from {1})"),
    W(3112, "first_value", "anyelement", "anyelement", "first_value({0})"),
    F(1712, "floor", "numeric", "numeric", "floor({0})"),
    F(2309, "floor", "double precision", "double precision", "floor({0})"),
    S(1081, "format_type", "oid, integer", "text", "rewrite"),
    T(1066, "generate_series", "integer, integer, integer", "integer", "rewrite"),
    T(1067, "generate_series", "integer, integer", "integer", "rewrite"),
    T(1068, "generate_series", "bigint, bigint, bigint", "bigint", "rewrite"),
    T(1069, "generate_series", "bigint, bigint", "bigint", "rewrite"),
    T(3259, "generate_series", "numeric, numeric, numeric", "numeric", "rewrite"),
    T(938, "generate_series", "timestamp without time zone, timestamp without time zone, interval",
      "timestamp without time zone", "rewrite"),
    T(939, "generate_series", "timestamp with time zone, timestamp with time zone, interval",
      "timestamp with time zone", "rewrite"),
    T(3260, "generate_series", "numeric, numeric", "numeric", "rewrite"),
    S(3024, "has_any_column_privilege", "name, text, text", "boolean", "true"),
    S(3025, "has_any_column_privilege", "name, oid, text", "boolean", "true"),
    S(3026, "has_any_column_privilege", "oid, text, text", "boolean", "true"),
    S(3027, "has_any_column_privilege", "oid, oid, text", "boolean", "true"),
    S(3028, "has_any_column_privilege", "text, text", "boolean", "true"),
    S(3029, "has_any_column_privilege", "oid, text", "boolean", "true"),
    S(3012, "has_column_privilege", "name, text, text, text", "boolean", "true"),
    S(3013, "has_column_privilege", "name, text, smallint, text", "boolean", "true"),
    S(3014, "has_column_privilege", "name, oid, text, text", "boolean", "true"),
    S(3015, "has_column_privilege", "name, oid, smallint, text", "boolean", "true"),
    S(3016, "has_column_privilege", "oid, text, text, text", "boolean", "true"),
    S(3017, "has_column_privilege", "oid, text, smallint, text", "boolean", "true"),
    S(3018, "has_column_privilege", "oid, oid, text, text", "boolean", "true"),
    S(3019, "has_column_privilege", "oid, oid, smallint, text", "boolean", "true"),
    S(3020, "has_column_privilege", "text, text, text", "boolean", "true"),
    S(3021, "has_column_privilege", "text, smallint, text", "boolean", "true"),
    S(3022, "has_column_privilege", "oid, text, text", "boolean", "true"),
    S(3023, "has_column_privilege", "oid, smallint, text", "boolean", "true"),
    S(2250, "has_database_privilege", "name, text, text", "boolean", "true"),
    S(2251, "has_database_privilege", "name, oid, text", "boolean", "true"),
    S(2252, "has_database_privilege", "oid, text, text", "boolean", "true"),
    S(2253, "has_database_privilege", "oid, oid, text", "boolean", "true"),
    S(2254, "has_database_privilege", "text, text", "boolean", "true"),
    S(2255, "has_database_privilege", "oid, text", "boolean", "true"),
    S(2256, "has_function_privilege", "name, text, text", "boolean", "true"),
    S(2257, "has_function_privilege", "name, oid, text", "boolean", "true"),
    S(2258, "has_function_privilege", "oid, text, text", "boolean", "true"),
    S(2259, "has_function_privilege", "oid, oid, text", "boolean", "true"),
    S(2260, "has_function_privilege", "text, text", "boolean", "true"),
    S(2261, "has_function_privilege", "oid, text", "boolean", "true"),
    S(2268, "has_schema_privilege", "name, text, text", "boolean", "true"),
    S(2269, "has_schema_privilege", "name, oid, text", "boolean", "true"),
    S(2270, "has_schema_privilege", "oid, text, text", "boolean", "true"),
    S(2271, "has_schema_privilege", "oid, oid, text", "boolean", "true"),
    S(2272, "has_schema_privilege", "text, text", "boolean", "true"),
    S(2273, "has_schema_privilege", "oid, text", "boolean", "true"),
    S(2181, "has_sequence_privilege", "name, text, text", "boolean", "true"),
    S(2182, "has_sequence_privilege", "name, oid, text", "boolean", "true"),
    S(2183, "has_sequence_privilege", "oid, text, text", "boolean", "true"),
    S(2184, "has_sequence_privilege", "oid, oid, text", "boolean", "true"),
    S(2185, "has_sequence_privilege", "text, text", "boolean", "true"),
    S(2186, "has_sequence_privilege", "oid, text", "boolean", "true"),
    S(1922, "has_table_privilege", "name, text, text", "boolean", "true"),
    S(1923, "has_table_privilege", "name, oid, text", "boolean", "true"),
    S(1924, "has_table_privilege", "oid, text, text", "boolean", "true"),
    S(1925, "has_table_privilege", "oid, oid, text", "boolean", "true"),
    S(1926, "has_table_privilege", "text, text", "boolean", "true"),
    S(1927, "has_table_privilege", "oid, text", "boolean", "true"),
    S(3138, "has_type_privilege", "name, text, text", "boolean", "true"),
    S(3139, "has_type_privilege", "name, oid, text", "boolean", "true"),
    S(3140, "has_type_privilege", "oid, text, text", "boolean", "true"),
    S(3141, "has_type_privilege", "oid, oid, text", "boolean", "true"),
    S(3142, "has_type_privilege", "text, text", "boolean", "true"),
    S(3143, "has_type_privilege", "oid, text", "boolean", "true"),
    F(3956, "json_array_length", "json", "integer", "rewrite"),
    F(3200, "json_build_object", '"any"', "json", "rewrite", variadic=True),
    F(3201, "json_build_object", "", "json", "'{}'"),
    F(3968, "json_typeof", "json", "text", "rewrite"),
    # json's constructors (planner.json_calls): Python UDFs writing json's text (planner.json_text)
    F(3176, "to_json", "anyelement", "json", "rewrite"),
    F(3155, "row_to_json", "record", "json", "rewrite"),
    F(3156, "row_to_json", "record, boolean", "json", "rewrite"),
    F(3198, "json_build_array", '"any"', "json", "rewrite", variadic=True),
    F(3199, "json_build_array", "", "json", "'[]'"),
    A(3175, "json_agg", "anyelement", "json", "rewrite"),
    F(3207, "jsonb_array_length", "jsonb", "integer", "rewrite"),
    F(3210, "jsonb_typeof", "jsonb", "text", "rewrite"),
    # jsonb's functions (planner.jsonb_calls): Python UDFs over jsonb's text (planner.jsonb_funcs);
    # "rewrite" where the call needs its arguments' PostgreSQL types or defaults filled in.
    F(3787, "to_jsonb", "anyelement", "jsonb", "rewrite"),
    F(3273, "jsonb_build_object", '"any"', "jsonb", "rewrite", variadic=True),
    F(3274, "jsonb_build_object", "", "jsonb", "'{}'"),
    F(3271, "jsonb_build_array", '"any"', "jsonb", "rewrite", variadic=True),
    F(3272, "jsonb_build_array", "", "jsonb", "'[]'"),
    A(3267, "jsonb_agg", "anyelement", "jsonb", "rewrite"),
    A(3270, "jsonb_object_agg", '"any", "any"', "jsonb", "rewrite"),
    T(3931, "jsonb_object_keys", "jsonb", "text", "explode(sparkwire_jsonb_object_keys({0}))"),
    T(3219, "jsonb_array_elements", "jsonb", "jsonb", "explode(sparkwire_jsonb_array_elements({0}))"),
    T(3465, "jsonb_array_elements_text", "jsonb", "text", "explode(sparkwire_jsonb_array_elements_text({0}))"),
    T(3208, "jsonb_each", "jsonb", "record", "explode(sparkwire_jsonb_each({0}))"),
    T(3932, "jsonb_each_text", "jsonb", "record", "explode(sparkwire_jsonb_each_text({0}))"),
    F(3305, "jsonb_set", "jsonb, text[], jsonb, boolean", "jsonb", "rewrite", defaults=1),
    F(3262, "jsonb_strip_nulls", "jsonb", "jsonb", "sparkwire_jsonb_strip_nulls({0})"),
    F(3306, "jsonb_pretty", "jsonb", "text", "sparkwire_jsonb_pretty({0})"),
    F(1175, "justify_hours", "interval", "interval", interval_calls.call("justify_hours", "{0}")),
    F(1295, "justify_days", "interval", "interval", interval_calls.call("justify_days", "{0}")),
    F(2711, "justify_interval", "interval", "interval", interval_calls.call("justify_interval", "{0}")),
    W(3106, "lag", "anyelement", "anyelement", "lag({0})"),
    W(3107, "lag", "anyelement, integer", "anyelement", "lag({0}, 1)"),
    W(3108, "lag", "anycompatible, integer, anycompatible", "anycompatible", "lag({0}, 1, {2})"),
    W(3113, "last_value", "anyelement", "anyelement", "last_value({0})"),
    W(3109, "lead", "anyelement", "anyelement", "lead({0})"),
    W(3110, "lead", "anyelement, integer", "anyelement", "lead({0}, 1)"),
    W(3111, "lead", "anycompatible, integer, anycompatible", "anycompatible", "lead({0}, 1, {2})"),
    F(3060, "left", "text, integer", "text", "if({1} >= 0, left({0}, {1}), substring({0}, 1, greatest(length({0}) + {1}, 0)))"),
    F(1317, "length", "text", "integer", "length({0})"),
    F(1318, "length", "character", "integer", "length({0})"),
    F(1341, "ln", "double precision", "double precision", "sparkwire_float8_ln({0})"),
    F(1734, "ln", "numeric", "numeric", "rewrite"),
    F(1340, "log", "double precision", "double precision", "sparkwire_float8_log10({0})"),
    F(1736, "log", "numeric, numeric", "numeric", "rewrite"),
    F(1741, "log", "numeric", "numeric", "rewrite"),
    F(1194, "log10", "double precision", "double precision", "sparkwire_float8_log10({0})"),
    F(1481, "log10", "numeric", "numeric", "rewrite"),
    F(870, "lower", "text", "text", pg_functions.LOWER),
    F(873, "lpad", "text, integer, text", "text", "lpad({0}, {1}, {2})"),
    F(879, "lpad", "text, integer", "text", "lpad({0}, {1})"),
    F(875, "ltrim", "text, text", "text", "trim(leading {1} from {0})"),
    F(881, "ltrim", "text", "text", "ltrim({0})"),
    F(3464, "make_interval", "integer, integer, integer, integer, integer, integer, double precision",
      "interval", interval_calls.call("make", *(f"{{{i}}}" for i in range(7))), defaults=7),
    A(2050, "max", "anyarray", "anyarray", "max({0})"),
    A(2115, "max", "bigint", "bigint", "max({0})"),
    A(2116, "max", "integer", "integer", "max({0})"),
    A(2117, "max", "smallint", "smallint", "max({0})"),
    A(2118, "max", "oid", "oid", "max({0})"),
    A(2119, "max", "real", "real", "max({0})"),
    A(2120, "max", "double precision", "double precision", "max({0})"),
    A(2128, "max", "interval", "interval", "rewrite"),
    A(2122, "max", "date", "date", "max({0})"),
    A(2123, "max", "time without time zone", "time without time zone", "max({0})"),
    A(2126, "max", "timestamp without time zone", "timestamp without time zone", "max({0})"),
    A(2127, "max", "timestamp with time zone", "timestamp with time zone", "max({0})"),
    A(2129, "max", "text", "text", "max({0})"),
    A(2130, "max", "numeric", "numeric", "max({0})"),
    F(3846, "make_date", "integer, integer, integer", "date", pg_functions.MAKE_DATE),
    # gcd and lcm: Spark has neither (planner.pg_gcd)
    F(5044, "gcd", "integer, integer", "integer", pg_gcd.TEMPLATES["gcd", "integer"]),
    F(5045, "gcd", "bigint, bigint", "bigint", pg_gcd.TEMPLATES["gcd", "bigint"]),
    F(5048, "gcd", "numeric, numeric", "numeric", pg_gcd.TEMPLATES["gcd", "numeric"]),
    F(5046, "lcm", "integer, integer", "integer", pg_gcd.TEMPLATES["lcm", "integer"]),
    F(5047, "lcm", "bigint, bigint", "bigint", pg_gcd.TEMPLATES["lcm", "bigint"]),
    F(5049, "lcm", "numeric, numeric", "numeric", pg_gcd.TEMPLATES["lcm", "numeric"]),
    # A numeric's digits after the point: scale is its display scale, known to the planner
    # where PostgreSQL's rules fix it (planner.sql.spark_sql), else the digits it shows
    F(3281, "scale", "numeric", "integer", pg_functions.MIN_SCALE),
    F(5042, "min_scale", "numeric", "integer", pg_functions.MIN_SCALE),
    F(5043, "trim_scale", "numeric", "numeric", "{0}"),
    F(2311, "md5", "text", "text", "md5({0})"),
    F(2321, "md5", "bytea", "text", "md5({0})"),
    F(3419, "sha224", "bytea", "bytea", "unhex(sha2({0}, 224))"),
    F(3420, "sha256", "bytea", "bytea", "unhex(sha2({0}, 256))"),
    F(3421, "sha384", "bytea", "bytea", "unhex(sha2({0}, 384))"),
    F(3422, "sha512", "bytea", "bytea", "unhex(sha2({0}, 512))"),
    A(2051, "min", "anyarray", "anyarray", "min({0})"),
    A(2131, "min", "bigint", "bigint", "min({0})"),
    A(2132, "min", "integer", "integer", "min({0})"),
    A(2133, "min", "smallint", "smallint", "min({0})"),
    A(2134, "min", "oid", "oid", "min({0})"),
    A(2135, "min", "real", "real", "min({0})"),
    A(2136, "min", "double precision", "double precision", "min({0})"),
    A(2144, "min", "interval", "interval", "rewrite"),
    A(2138, "min", "date", "date", "min({0})"),
    A(2139, "min", "time without time zone", "time without time zone", "min({0})"),
    A(2142, "min", "timestamp without time zone", "timestamp without time zone", "min({0})"),
    A(2143, "min", "timestamp with time zone", "timestamp with time zone", "min({0})"),
    A(2145, "min", "text", "text", "min({0})"),
    A(2146, "min", "numeric", "numeric", "min({0})"),
    F(940, "mod", "smallint, smallint", "smallint", "{0} % {1}"),
    F(941, "mod", "integer, integer", "integer", "{0} % {1}"),
    F(947, "mod", "bigint, bigint", "bigint", "{0} % {1}"),
    F(1728, "mod", "numeric, numeric", "numeric", "{0} % {1}"),
    S(1299, "now", "", "timestamp with time zone", "cast('<the transaction''s start>' as timestamp)"),
    W(3114, "nth_value", "anyelement, integer", "anyelement", "nth_value({0}, 2)"),
    W(3105, "ntile", "integer", "integer", "ntile(2)"),
    S(1215, "obj_description", "oid, name", "text", "cast(null as string)"),
    S(1348, "obj_description", "oid", "text", "cast(null as string)"),
    F(1374, "octet_length", "text", "integer", "octet_length({0})"),
    F(1375, "octet_length", "character", "integer", "octet_length({0})"),  # counts the padding
    W(3103, "percent_rank", "", "double precision", "percent_rank()"),
    S(2026, "pg_backend_pid", "", "integer", "<the session's process id>"),
    S(1264, "pg_char_to_encoding", "name", "integer", "6"),
    S(3815, "pg_collation_is_visible", "oid", "boolean", "true"),
    S(2168, "pg_database_size", "name", "bigint", "cast(0 as bigint)"),
    S(2324, "pg_database_size", "oid", "bigint", "cast(0 as bigint)"),
    S(1597, "pg_encoding_to_char", "integer", "name", "case when {0} is null then cast(null as string) else 'UTF8' end"),
    S(2081, "pg_function_is_visible", "oid", "boolean", "true"),
    S(1387, "pg_get_constraintdef", "oid", "text", "rewrite"),
    S(2508, "pg_get_constraintdef", "oid, boolean", "text", "rewrite"),
    S(1716, "pg_get_expr", "pg_node_tree, oid", "text", "cast({0} as string)"),
    S(2509, "pg_get_expr", "pg_node_tree, oid, boolean", "text", "cast({0} as string)"),
    S(2162, "pg_get_function_arguments", "oid", "text", "rewrite"),
    S(2232, "pg_get_function_identity_arguments", "oid", "text", "rewrite"),
    S(2165, "pg_get_function_result", "oid", "text", "rewrite"),
    S(2098, "pg_get_functiondef", "oid", "text", "cast(null as string)"),
    S(1643, "pg_get_indexdef", "oid", "text", "rewrite"),
    S(2507, "pg_get_indexdef", "oid, integer, boolean", "text", "rewrite"),
    S(3352, "pg_get_partkeydef", "oid", "text", "cast(null as string)"),
    S(1573, "pg_get_ruledef", "oid", "text", "cast(null as string)"),
    S(2504, "pg_get_ruledef", "oid, boolean", "text", "cast(null as string)"),
    S(1665, "pg_get_serial_sequence", "text, text", "text", "cast(null as string)"),
    S(3415, "pg_get_statisticsobjdef", "oid", "text", "cast(null as string)"),
    S(6174, "pg_get_statisticsobjdef_columns", "oid", "text", "cast(null as string)"),
    S(1662, "pg_get_triggerdef", "oid", "text", "cast(null as string)"),
    S(2730, "pg_get_triggerdef", "oid, boolean", "text", "cast(null as string)"),
    S(1642, "pg_get_userbyid", "oid", "name", "case when {0} is null then cast(null as string) else 'materialize' end"),
    S(1640, "pg_get_viewdef", "text", "text", "rewrite"),
    S(1641, "pg_get_viewdef", "oid", "text", "rewrite"),
    S(2505, "pg_get_viewdef", "text, boolean", "text", "rewrite"),
    S(2506, "pg_get_viewdef", "oid, boolean", "text", "rewrite"),
    S(3159, "pg_get_viewdef", "oid, integer", "text", "rewrite"),
    S(2705, "pg_has_role", "name, name, text", "boolean", "true"),
    S(2706, "pg_has_role", "name, oid, text", "boolean", "true"),
    S(2707, "pg_has_role", "oid, name, text", "boolean", "true"),
    S(2708, "pg_has_role", "oid, oid, text", "boolean", "true"),
    S(2709, "pg_has_role", "name, text", "boolean", "true"),
    S(2710, "pg_has_role", "oid, text", "boolean", "true"),
    S(2998, "pg_indexes_size", "regclass", "bigint", "cast(0 as bigint)"),
    S(3810, "pg_is_in_recovery", "", "boolean", "false"),
    S(2855, "pg_is_other_temp_schema", "oid", "boolean", "false"),
    S(2083, "pg_opclass_is_visible", "oid", "boolean", "true"),
    S(2082, "pg_operator_is_visible", "oid", "boolean", "true"),
    S(2560, "pg_postmaster_start_time", "", "timestamp with time zone", "cast('<the transaction''s start>' as timestamp)"),
    S(6121, "pg_relation_is_publishable", "regclass", "boolean", "false"),
    S(2325, "pg_relation_size", "regclass", "bigint", "cast(0 as bigint)"),
    S(2332, "pg_relation_size", "regclass, text", "bigint", "cast(0 as bigint)"),
    S(2288, "pg_size_pretty", "bigint", "text", "rewrite"),
    S(3166, "pg_size_pretty", "numeric", "text", "rewrite"),
    S(2079, "pg_table_is_visible", "oid", "boolean", "not ({0} >= 17000 and {0} < 18000)"),
    S(2997, "pg_table_size", "regclass", "bigint", "cast(0 as bigint)"),
    S(3778, "pg_tablespace_location", "oid", "text", "cast(null as string)"),
    S(2322, "pg_tablespace_size", "oid", "bigint", "cast(0 as bigint)"),
    S(2323, "pg_tablespace_size", "name", "bigint", "cast(0 as bigint)"),
    S(2286, "pg_total_relation_size", "regclass", "bigint", "cast(0 as bigint)"),
    S(2080, "pg_type_is_visible", "oid", "boolean", "true"),
    F(1610, "pi", "", "double precision", "pi()"),
    F(849, "position", "text, text", "integer", "locate({1}, {0})"),  # position(string, substring), as PostgreSQL catalogs it
    F(1346, "pow", "double precision, double precision", "double precision", "rewrite"),
    F(1738, "pow", "numeric, numeric", "numeric", "rewrite"),
    F(1368, "power", "double precision, double precision", "double precision", "rewrite"),
    F(2169, "power", "numeric, numeric", "numeric", "rewrite"),
    F(1282, "quote_ident", "text", "text", "rewrite"),
    F(1283, "quote_literal", "text", "text", pg_strings.TEMPLATES["quote_literal", 1]),
    F(1609, "radians", "double precision", "double precision", "radians({0})"),
    S(1598, "random", "", "double precision", "rand()"),
    W(3101, "rank", "", "bigint", "rank()"),
    F(1622, "repeat", "text, integer", "text", "repeat({0}, {1})"),
    # PostgreSQL's string and regular expression functions that Spark lacks (planner.pg_strings,
    # planner.pg_regex): Python UDFs, or templates around Spark's functions.
    F(2284, "regexp_replace", "text, text, text", "text", _STR["regexp_replace", 3]),
    F(2285, "regexp_replace", "text, text, text, text", "text", _STR["regexp_replace", 4]),
    F(3396, "regexp_match", "text, text", "text[]", _STR["regexp_match", 2]),
    F(3397, "regexp_match", "text, text, text", "text[]", _STR["regexp_match", 3]),
    F(2767, "regexp_split_to_array", "text, text", "text[]", _STR["regexp_split_to_array", 2]),
    F(2768, "regexp_split_to_array", "text, text, text", "text[]", _STR["regexp_split_to_array", 3]),
    T(2765, "regexp_split_to_table", "text, text", "text", _STR["regexp_split_to_table", 2]),
    T(2766, "regexp_split_to_table", "text, text, text", "text", _STR["regexp_split_to_table", 3]),
    F(1637, "like_escape", "text, text", "text", _STR["like_escape", 2]),  # x LIKE p ESCAPE e
    F(1946, "encode", "bytea, text", "text", _STR["encode", 2]),
    F(1947, "decode", "text, text", "bytea", _STR["decode", 2]),
    F(1404, "overlay", "text, text, integer, integer", "text", _STR["overlay", 4]),
    F(1405, "overlay", "text, text, integer", "text", _STR["overlay", 3]),
    F(394, "string_to_array", "text, text", "text[]", _STR["string_to_array", 2]),
    F(376, "string_to_array", "text, text, text", "text[]", _STR["string_to_array", 3]),
    F(1621, "chr", "integer", "text", _STR["chr", 1]),
    # format: %s %I %L %%, positions and widths (planner.pg_format); the front end of our own
    # writes each argument as its output function's text.
    F(3539, "format", 'text, "any"', "text", pg_format.TEMPLATE, variadic=True),
    F(3540, "format", "text", "text", pg_format.TEMPLATE_NO_ARGS),
    F(2073, "substring", "text, text", "text", _STR["substring", 2]),  # substring(s FROM pattern)
    F(2074, "substring", "text, text, text", "text", _STR["substring", 3]),  # substring(s SIMILAR p ESCAPE e)
    F(1987, "similar_to_escape", "text", "text", _STR["similar_to_escape", 1]),  # x SIMILAR TO p
    F(1986, "similar_to_escape", "text, text", "text", _STR["similar_to_escape", 2]),  # ... ESCAPE e
    F(2087, "replace", "text, text, text", "text", "replace({0}, {1}, {2})"),
    F(3062, "reverse", "text", "text", "reverse({0})"),
    F(3061, "right", "text, integer", "text", "if({1} >= 0, right({0}, {1}), substring({0}, 1 - {1}))"),
    F(1342, "round", "double precision", "double precision", "bround({0})"),
    F(1707, "round", "numeric, integer", "numeric", "round({0}, {1})"),
    F(1708, "round", "numeric", "numeric", "round({0})"),
    W(3100, "row_number", "", "bigint", "row_number()"),
    F(874, "rpad", "text, integer, text", "text", "rpad({0}, {1}, {2})"),
    F(880, "rpad", "text, integer", "text", "rpad({0}, {1})"),
    F(876, "rtrim", "text, text", "text", "trim(trailing {1} from {0})"),
    F(882, "rtrim", "text", "text", "rtrim({0})"),
    S(2078, "set_config", "text, text, boolean", "text", "cast({1} as string)"),
    S(1993, "shobj_description", "oid, name", "text", "cast(null as string)"),
    F(1706, "sign", "numeric", "numeric", "sign({0})"),
    F(2310, "sign", "double precision", "double precision", "sign({0})"),
    F(1604, "sin", "double precision", "double precision", "sparkwire_float8_sin({0})"),
    F(2462, "sinh", "double precision", "double precision", "sparkwire_float8_sinh({0})"),
    F(2088, "split_part", "text, text, integer", "text", "split_part({0}, {1}, {2})"),
    F(1344, "sqrt", "double precision", "double precision", "case when {0} < 0 then raise_error('sparkwire:2201f:cannot take square root of a negative number') else sqrt({0}) end"),
    F(1730, "sqrt", "numeric", "numeric", "case when {0} < 0 then raise_error('sparkwire:2201f:cannot take square root of a negative number') else sqrt({0}) end"),
    F(3696, "starts_with", "text, text", "boolean", "startswith({0}, {1})"),
    S(2648, "statement_timestamp", "", "timestamp with time zone", "cast('<the transaction''s start>' as timestamp)"),
    A(2154, "stddev", "bigint", "numeric", "stddev({0})"),
    A(2155, "stddev", "integer", "numeric", "stddev({0})"),
    A(2156, "stddev", "smallint", "numeric", "stddev({0})"),
    A(2157, "stddev", "real", "double precision", "stddev({0})"),
    A(2158, "stddev", "double precision", "double precision", "stddev({0})"),
    A(2159, "stddev", "numeric", "numeric", "stddev({0})"),
    A(2724, "stddev_pop", "bigint", "numeric", "stddev_pop({0})"),
    A(2725, "stddev_pop", "integer", "numeric", "stddev_pop({0})"),
    A(2726, "stddev_pop", "smallint", "numeric", "stddev_pop({0})"),
    A(2727, "stddev_pop", "real", "double precision", "stddev_pop({0})"),
    A(2728, "stddev_pop", "double precision", "double precision", "stddev_pop({0})"),
    A(2729, "stddev_pop", "numeric", "numeric", "stddev_pop({0})"),
    A(2712, "stddev_samp", "bigint", "numeric", "stddev_samp({0})"),
    A(2713, "stddev_samp", "integer", "numeric", "stddev_samp({0})"),
    A(2714, "stddev_samp", "smallint", "numeric", "stddev_samp({0})"),
    A(2715, "stddev_samp", "real", "double precision", "stddev_samp({0})"),
    A(2716, "stddev_samp", "double precision", "double precision", "stddev_samp({0})"),
    A(2717, "stddev_samp", "numeric", "numeric", "stddev_samp({0})"),
    A(3538, "string_agg", "text, text", "text", "listagg({0}, ',')"),
    F(868, "strpos", "text, text", "integer", "locate({1}, {0})"),
    F(877, "substr", "text, integer, integer", "text", "rewrite"),
    F(883, "substr", "text, integer", "text", "substring({0}, if({1} < 1, 1, {1}))"),
    F(936, "substring", "text, integer, integer", "text", "rewrite"),
    F(937, "substring", "text, integer", "text", "substring({0}, if({1} < 1, 1, {1}))"),
    A(2113, "sum", "interval", "interval", "rewrite"),
    A(2107, "sum", "bigint", "numeric", "sum(cast({0} as decimal(38, 0)))"),  # widened: no overflow
    A(2108, "sum", "integer", "bigint", "sum({0})"),
    A(2109, "sum", "smallint", "bigint", "sum({0})"),
    A(2110, "sum", "real", "real", "sum({0})"),
    A(2111, "sum", "double precision", "double precision", "sum({0})"),
    A(2114, "sum", "numeric", "numeric", "sum({0})"),
    F(1606, "tan", "double precision", "double precision", "sparkwire_float8_tan({0})"),
    F(2464, "tanh", "double precision", "double precision", "sparkwire_float8_tanh({0})"),
    # PostgreSQL's format patterns, not Java's (date_format): a UDF over the timestamp's text
    F(2049, "to_char", "timestamp without time zone, text", "text", pg_to_char.TEMPLATES[False]),
    F(1770, "to_char", "timestamp with time zone, text", "text", pg_to_char.TEMPLATES[True]),
    F(1772, "to_char", "numeric, text", "text", pg_to_char_num.TEMPLATES["numeric"]),
    F(1773, "to_char", "integer, text", "text", pg_to_char_num.TEMPLATES["integer"]),
    F(1774, "to_char", "bigint, text", "text", pg_to_char_num.TEMPLATES["bigint"]),
    F(1775, "to_char", "real, text", "text", pg_to_char_num.TEMPLATES["real"]),
    F(1776, "to_char", "double precision, text", "text", pg_to_char_num.TEMPLATES["double precision"]),
    F(2089, "to_hex", "integer", "text", "lower(hex(cast({0} as bigint) & 4294967295))"),
    F(2090, "to_hex", "bigint", "text", "lower(hex({0}))"),
    S(3495, "to_regclass", "text", "regclass", "rewrite"),
    S(4086, "to_regnamespace", "text", "regnamespace", "rewrite"),
    S(3493, "to_regtype", "text", "regtype", "rewrite"),
    # A constant at plan time, the argument's type (planner.typeof); shown as text, not regtype.
    S(1619, "pg_typeof", '"any"', "regtype", "rewrite"),
    # PostgreSQL's patterns read as PostgreSQL reads them (planner.pg_to_number, pg_to_timestamp)
    F(1777, "to_number", "text, text", "numeric", pg_to_number.TEMPLATE),
    F(1780, "to_date", "text, text", "date", pg_to_timestamp.TEMPLATES["to_date"]),
    F(1778, "to_timestamp", "text, text", "timestamp with time zone", pg_to_timestamp.TEMPLATES["to_timestamp"]),
    F(1158, "to_timestamp", "double precision", "timestamp with time zone", "timestamp_micros(cast(round({0} * 1000000) as bigint))"),
    S(2647, "transaction_timestamp", "", "timestamp with time zone", "cast('<the transaction''s start>' as timestamp)"),
    F(878, "translate", "text, text, text", "text", "translate({0}, {1}, {2})"),
    F(1343, "trunc", "double precision", "double precision", "if(isnan({0} % 1), {0}, {0} - {0} % 1)"),
    F(1709, "trunc", "numeric, integer", "numeric", "if({0} >= 0, floor({0}, {1}), ceil({0}, {1}))"),
    F(1710, "trunc", "numeric", "numeric", "if(isnan({0} % 1), {0}, {0} - {0} % 1)"),
    T(2331, "unnest", "anyarray", "anyelement", "explode({0})"),
    T(1192, "generate_subscripts", "anyarray, integer", "integer", "rewrite"),
    T(13208, "_pg_expandarray", "anyarray", "record", "rewrite", schema="information_schema"),
    F(871, "upper", "text", "text", pg_functions.UPPER),
    A(2718, "var_pop", "bigint", "numeric", "var_pop({0})"),
    A(2719, "var_pop", "integer", "numeric", "var_pop({0})"),
    A(2720, "var_pop", "smallint", "numeric", "var_pop({0})"),
    A(2721, "var_pop", "real", "double precision", "var_pop({0})"),
    A(2722, "var_pop", "double precision", "double precision", "var_pop({0})"),
    A(2723, "var_pop", "numeric", "numeric", "var_pop({0})"),
    A(2641, "var_samp", "bigint", "numeric", "variance({0})"),
    A(2642, "var_samp", "integer", "numeric", "variance({0})"),
    A(2643, "var_samp", "smallint", "numeric", "variance({0})"),
    A(2644, "var_samp", "real", "double precision", "variance({0})"),
    A(2645, "var_samp", "double precision", "double precision", "variance({0})"),
    A(2646, "var_samp", "numeric", "numeric", "variance({0})"),
    A(2148, "variance", "bigint", "numeric", "variance({0})"),
    A(2149, "variance", "integer", "numeric", "variance({0})"),
    A(2150, "variance", "smallint", "numeric", "variance({0})"),
    A(2151, "variance", "real", "double precision", "variance({0})"),
    A(2152, "variance", "double precision", "double precision", "variance({0})"),
    A(2153, "variance", "numeric", "numeric", "variance({0})"),
    S(89, "version", "", "text", "'<the server''s version>'"),
    F(320, "width_bucket", "double precision, double precision, double precision, integer", "integer", "width_bucket({0}, {1}, {2}, {3})"),
    F(2170, "width_bucket", "numeric, numeric, numeric, integer", "integer", "width_bucket({0}, {1}, {2}, {3})"),
)

_BY_NAME: dict[str, tuple[Function, ...]] = {}
for _f in FUNCTIONS:
    _BY_NAME[_f.name] = (*_BY_NAME.get(_f.name, ()), _f)


def overloads(name: str) -> tuple[Function, ...]:
    """Every listed signature of `name` (lower case, as PostgreSQL folds it)."""
    return _BY_NAME.get(name, ())


def lookup(name: str, nargs: int, *, in_from: bool = False, schema: str | None = None) -> Function | None:
    """A listed signature of `name` taking `nargs` arguments (a table function when
    called in FROM, any other kind elsewhere), in `schema` (None: pg_catalog, the only
    schema of functions on the search path); None if there is none."""
    candidates = [f for f in _BY_NAME.get(name, ()) if f.takes(nargs) and f.schema == (schema or "pg_catalog")]
    for f in candidates:
        if (f.kind is Kind.TABLE) == in_from:
            return f
    if not in_from:
        # PostgreSQL also takes a set-returning function in the select list.
        for f in candidates:
            if f.kind is Kind.TABLE:
                return f
    return None


# Spark functions that planner code writes around the catalogued ones (ARRAY(SELECT ...),
# array_agg's order and NULLs, JSON paths, CASTs to the storage types, errors with a
# PostgreSQL SQLSTATE) - none of them reachable by name from a client.
_INTERNAL_SPARK = frozenset((
    "any_value", "array", "array_sort", "collect_list", "explode", "get_json_object", "if", "parse_json",
    "raise_error", "sequence", "size", "struct", "named_struct", "to_json", "transform",
    "try_element_at", "variant_get", "json_array_length", "ltrim", "substr", "lower", "trim",
    "coalesce", "nullif", "greatest", "least", "cast", "try_cast", "max", "min", "round", "abs",
    "element_at", "array_contains", "exists", "dayofweek", "timestamp_micros", "floor", "ceil",
    "length", "substring", "concat", "hex", "regexp", "rlike", "like", "ilike", "replace",
    "count", "sum", "array_join", "bround", "log10", "sqrt", "ln", "power", "isnan", "shiftright",
    "shiftleft", "upper", "posexplode", "forall", "array_repeat", "filter", "array_remove", "unhex", "weekday", "unix_micros", "datediff", "log", "decimal",
    "split",  # an int2vector (pg_index.indoption) subscripted: planner.pg_compat
    "chr", "translate", "typeof",  # array::text: planner.pg_functions.array_text_template
    "instr", "regexp_replace",  # a numeric's text without Spark's padding: pg_functions.UNSCALED_NUMERIC_TEXT
    "slice",  # a[i:j]: planner.sql.spark_sql
    "arrays_zip",  # a select list's set-returning functions in lockstep: planner.sql.spark_table_functions
    "make_timestamp", "make_timestamp_ntz", "year",  # date_trunc to a decade, century, millennium: pg_extract
    "grouping_id",  # GROUPING(a, ...) over grouping sets: planner.sql.bind
    "format_string",  # a float's digits as a numeric (printf's %.15g): planner.sql.spark_sql
    "convert_timezone",  # AT TIME ZONE: planner.pg_timezone
    "explode_outer", "inline_outer",  # LEFT JOIN f(…) ON c: planner.sql.spark_table_functions
))

_CALLED = re.compile(r"([a-z_][a-z0-9_]*)\s*\(")


def _spark_names(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(m.group(1) for text in texts for m in _CALLED.finditer(text.lower()))


# The jsonb operators' and functions' UDFs, registered in every Spark session
# (spark_backend.jsonb_udfs), and the generators a jsonb set-returning function becomes.
SPARK_FUNCTIONS: frozenset[str] = (_spark_names(f.spark for f in FUNCTIONS) | _INTERNAL_SPARK
                                   | frozenset(jsonb_ops.UDF_NAMES.values())
                                   | frozenset(jsonb_funcs.UDF_NAMES.values())
                                   | frozenset(json_text.UDF_NAMES.values())
                                   | frozenset(pg_numeric.UDF_NAMES.values())
                                   | frozenset(pg_float.UDF_NAMES.values())
                                   | frozenset(pg_regex.UDF_NAMES.values()) | frozenset(pg_strings.UDF_NAMES.values())
                                   | {pg_to_char.UDF_NAME, pg_to_char_num.UDF_NAME, pg_to_number.UDF_NAME}
                                   | frozenset(pg_to_timestamp.UDF_NAMES.values())
                                   | frozenset(pg_gcd.UDF_NAMES.values())
                                   | frozenset(interval_calls.UDF_NAMES.values()) | {jsonb_order.UDF_NAME}
                                   | frozenset(pg_functions.FLOAT_TEXT_UDFS.values()) | {"inline"})
