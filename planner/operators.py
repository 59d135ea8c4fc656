"""The operator catalog: every operator a query may use, deny by default.

As `planner.functions` for functions: one PostgreSQL 15 operator signature per
entry (its `pg_operator` OID, left and right operand types - none on the left
for a prefix operator - and result type) and the Spark SQL it becomes. An
operator whose name is not listed is PostgreSQL's `42883 operator does not
exist`, raised before Spark sees anything. LIKE, ILIKE and SIMILAR TO are the
operators `~~`, `~~*` and `~` they are in PostgreSQL; IN, BETWEEN and IS
DISTINCT FROM compare with `=`, `<=`/`>=` and `=`. Every entry is used side by
side on sparkwire and PostgreSQL 15 (tests/integration/test_function_catalog.py).
`path(k)` in `spark` is the JSON path sparkwire writes for a key or index.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.pg_functions import float_arithmetic_template as _float
from planner.pg_functions import float_power_template


@dataclass(frozen=True)
class Operator:
    oid: int  # PostgreSQL 15's pg_operator.oid
    name: str
    left: str | None  # None for a prefix operator
    right: str
    result: str
    spark: str  # the Spark SQL it becomes: {0} the left (or only) operand, {1} the right

    @property
    def identity(self) -> str:
        return f"{self.left or 'NONE'} {self.name} {self.right}"


def _op(oid: int, name: str, left: str, right: str, result: str, spark: str) -> Operator:
    return Operator(oid, name, left or None, right, result, spark)


O = _op  # one letter keeps the table below readable

# jsonb - text: PostgreSQL refuses a scalar (jsonb's text of a scalar starts with neither
# bracket) before the UDF is called; NULL in gives NULL.
JSONB_DELETE = ("CASE WHEN {0} IS NULL OR {1} IS NULL OR left({0}, 1) IN ('{', '[') "
                "THEN sparkwire_jsonb_delete({0}, {1}) "
                "ELSE raise_error('sparkwire:22023:cannot delete from scalar') END")


def _jsonb_element(udf: str) -> str:
    """jsonb -> integer / ->> integer: an array's element (negative from the end); index 0
    or -1 of a scalar is the scalar itself (PostgreSQL keeps a scalar as a one-element
    array); an object has no elements."""
    return ("case when startswith({0}, '[') then " + udf + "({0}, array(cast({1} as string))) "
            "when startswith({0}, '{') then null when {1} in (0, -1) then " + udf + "({0}, cast(array() as array<string>)) end")


# Arrays in PostgreSQL's order (array_cmp): element by element, a NULL element after every
# other value (Spark's own order puts it first), then the shorter first.
def _array_order(op: str) -> str:
    def ordered(arg: str) -> str:
        return f"transform({arg}, sw_o -> named_struct('n', sw_o is null, 'v', sw_o))"
    return f"{ordered('{0}')} {op} {ordered('{1}')}"


# a @> b: every element of b is one of a's.
ARRAY_CONTAINS = ("case when {a} is null or {b} is null then null "
                  "else forall({b}, sw_c -> coalesce(array_contains({a}, sw_c), false)) end")

OPERATORS: tuple[Operator, ...] = (
    O(640, "!~", "name", "text", "boolean", "not {0} rlike {1}"),
    O(642, "!~", "text", "text", "boolean", "not {0} rlike {1}"),
    O(1227, "!~*", "name", "text", "boolean", "not {0} rlike concat('(?i)', {1})"),
    O(1229, "!~*", "text", "text", "boolean", "not {0} rlike concat('(?i)', {1})"),
    O(1208, "!~~", "name", "text", "boolean", "not {0} like {1}"),
    O(1212, "!~~", "character", "text", "boolean", "not {0} like {1}"),  # char(n) LIKE sees the padding
    O(1210, "!~~", "text", "text", "boolean", "not {0} like {1}"),
    O(1626, "!~~*", "name", "text", "boolean", "not {0} ilike {1}"),
    O(1630, "!~~*", "character", "text", "boolean", "not {0} ilike {1}"),
    O(1628, "!~~*", "text", "text", "boolean", "not {0} ilike {1}"),
    O(1876, "#", "smallint", "smallint", "smallint", "{0} ^ {1}"),
    O(1882, "#", "integer", "integer", "integer", "{0} ^ {1}"),
    O(1888, "#", "bigint", "bigint", "bigint", "{0} ^ {1}"),
    O(3206, "#>>", "jsonb", "text[]", "text", "sparkwire_jsonb_extract_text({0}, {1})"),
    O(3967, "#>>", "json", "text[]", "text", "get_json_object({0}, path({1}))"),
    O(439, "%", "bigint", "bigint", "bigint", "{0} % {1}"),
    O(529, "%", "smallint", "smallint", "smallint", "{0} % {1}"),
    O(530, "%", "integer", "integer", "integer", "{0} % {1}"),
    O(1762, "%", "numeric", "numeric", "numeric", "{0} % {1}"),
    O(1874, "&", "smallint", "smallint", "smallint", "{0} & {1}"),
    O(1880, "&", "integer", "integer", "integer", "{0} & {1}"),
    O(1886, "&", "bigint", "bigint", "bigint", "{0} & {1}"),
    O(514, "*", "integer", "integer", "integer", "{0} * {1}"),
    O(526, "*", "smallint", "smallint", "smallint", "{0} * {1}"),
    O(544, "*", "smallint", "integer", "integer", "{0} * {1}"),
    O(545, "*", "integer", "smallint", "integer", "{0} * {1}"),
    O(589, "*", "real", "real", "real", _float("*")),
    O(594, "*", "double precision", "double precision", "double precision", _float("*")),
    O(686, "*", "bigint", "bigint", "bigint", "{0} * {1}"),
    O(690, "*", "bigint", "integer", "bigint", "{0} * {1}"),
    O(694, "*", "integer", "bigint", "bigint", "{0} * {1}"),
    O(820, "*", "bigint", "smallint", "bigint", "{0} * {1}"),
    O(824, "*", "smallint", "bigint", "bigint", "{0} * {1}"),
    O(1119, "*", "real", "double precision", "double precision", _float("*")),
    O(1129, "*", "double precision", "real", "double precision", _float("*")),
    O(1760, "*", "numeric", "numeric", "numeric", "{0} * {1}"),
    O(550, "+", "smallint", "smallint", "smallint", "{0} + {1}"),
    O(551, "+", "integer", "integer", "integer", "{0} + {1}"),
    O(552, "+", "smallint", "integer", "integer", "{0} + {1}"),
    O(553, "+", "integer", "smallint", "integer", "{0} + {1}"),
    O(586, "+", "real", "real", "real", _float("+")),
    O(591, "+", "double precision", "double precision", "double precision", _float("+")),
    O(684, "+", "bigint", "bigint", "bigint", "{0} + {1}"),
    O(688, "+", "bigint", "integer", "bigint", "{0} + {1}"),
    O(692, "+", "integer", "bigint", "bigint", "{0} + {1}"),
    O(818, "+", "bigint", "smallint", "bigint", "{0} + {1}"),
    O(822, "+", "smallint", "bigint", "bigint", "{0} + {1}"),
    O(1100, "+", "date", "integer", "date", "{0} + {1}"),
    O(1116, "+", "real", "double precision", "double precision", _float("+")),
    O(1126, "+", "double precision", "real", "double precision", _float("+")),
    O(1758, "+", "numeric", "numeric", "numeric", "{0} + {1}"),
    O(1916, "+", "", "bigint", "bigint", "{0}"),
    O(1917, "+", "", "smallint", "smallint", "{0}"),
    O(1918, "+", "", "integer", "integer", "{0}"),
    O(1919, "+", "", "real", "real", "{0}"),
    O(1920, "+", "", "double precision", "double precision", "{0}"),
    O(1921, "+", "", "numeric", "numeric", "{0}"),
    O(2555, "+", "integer", "date", "date", "{0} + {1}"),
    O(484, "-", "", "bigint", "bigint", "-{0}"),
    O(554, "-", "smallint", "smallint", "smallint", "{0} - {1}"),
    O(555, "-", "integer", "integer", "integer", "{0} - {1}"),
    O(556, "-", "smallint", "integer", "integer", "{0} - {1}"),
    O(557, "-", "integer", "smallint", "integer", "{0} - {1}"),
    O(558, "-", "", "integer", "integer", "-{0}"),
    O(559, "-", "", "smallint", "smallint", "-{0}"),
    O(584, "-", "", "real", "real", "-{0}"),
    O(585, "-", "", "double precision", "double precision", "-{0}"),
    O(587, "-", "real", "real", "real", _float("-")),
    O(592, "-", "double precision", "double precision", "double precision", _float("-")),
    O(685, "-", "bigint", "bigint", "bigint", "{0} - {1}"),
    O(689, "-", "bigint", "integer", "bigint", "{0} - {1}"),
    O(693, "-", "integer", "bigint", "bigint", "{0} - {1}"),
    O(819, "-", "bigint", "smallint", "bigint", "{0} - {1}"),
    O(823, "-", "smallint", "bigint", "bigint", "{0} - {1}"),
    O(1099, "-", "date", "date", "integer", "{0} - {1}"),
    O(1101, "-", "date", "integer", "date", "{0} - {1}"),
    O(1117, "-", "real", "double precision", "double precision", _float("-")),
    O(1127, "-", "double precision", "real", "double precision", _float("-")),
    O(1751, "-", "", "numeric", "numeric", "-{0}"),
    O(1759, "-", "numeric", "numeric", "numeric", "{0} - {1}"),
    O(3240, "=", "jsonb", "jsonb", "boolean", "{0} = {1}"),
    # jsonb's own operators: Python UDFs over the canonical text (planner.jsonb_ops).
    O(3246, "@>", "jsonb", "jsonb", "boolean", "sparkwire_jsonb_contains({0}, {1})"),
    O(3250, "<@", "jsonb", "jsonb", "boolean", "sparkwire_jsonb_contains({1}, {0})"),
    # Array containment and overlap: a NULL element matches nothing (PostgreSQL's
    # array_contain_compare), so a NULL in the contained array makes @> false.
    O(2751, "@>", "anyarray", "anyarray", "boolean", ARRAY_CONTAINS.format(a="{0}", b="{1}")),
    O(2752, "<@", "anyarray", "anyarray", "boolean", ARRAY_CONTAINS.format(a="{1}", b="{0}")),
    O(2750, "&&", "anyarray", "anyarray", "boolean",
      "case when {0} is null or {1} is null then null "
      "else exists({0}, sw_c -> coalesce(array_contains({1}, sw_c), false)) end"),
    O(3247, "?", "jsonb", "text", "boolean", "sparkwire_jsonb_exists({0}, {1})"),
    O(3248, "?|", "jsonb", "text[]", "boolean", "sparkwire_jsonb_exists_any({0}, {1})"),
    O(3249, "?&", "jsonb", "text[]", "boolean", "sparkwire_jsonb_exists_all({0}, {1})"),
    O(3213, "#>", "jsonb", "text[]", "jsonb", "sparkwire_jsonb_extract({0}, {1})"),
    O(3284, "||", "jsonb", "jsonb", "jsonb", "sparkwire_jsonb_concat({0}, {1})"),
    O(3285, "-", "jsonb", "text", "jsonb", JSONB_DELETE),
    O(3398, "-", "jsonb", "text[]", "jsonb", "sparkwire_jsonb_delete_keys({0}, {1})"),
    O(3286, "-", "jsonb", "integer", "jsonb", "sparkwire_jsonb_delete_index({0}, {1})"),
    O(3287, "#-", "jsonb", "text[]", "jsonb", "sparkwire_jsonb_delete_nested({0}, {1})"),
    O(3241, "<>", "jsonb", "jsonb", "boolean", "{0} <> {1}"),
    # A key reads an object only, an index an array only (`'[5, 6]' -> '1'` is NULL where
    # `#> '{1}'` is 6): the canonical text's first character says which it is. Index 0 or -1
    # of a scalar is the scalar (PostgreSQL stores one as a one-element array).
    O(3211, "->", "jsonb", "text", "jsonb",
      "if(startswith({0}, '{'), sparkwire_jsonb_extract({0}, array({1})), null)"),
    O(3212, "->", "jsonb", "integer", "jsonb", _jsonb_element("sparkwire_jsonb_extract")),
    O(3962, "->", "json", "text", "json", "to_json(variant_get(parse_json({0}), path({1})))"),
    O(3964, "->", "json", "integer", "json", "to_json(variant_get(parse_json({0}), path({1})))"),
    O(3477, "->>", "jsonb", "text", "text",
      "if(startswith({0}, '{'), sparkwire_jsonb_extract_text({0}, array({1})), null)"),
    O(3481, "->>", "jsonb", "integer", "text", _jsonb_element("sparkwire_jsonb_extract_text")),
    O(3963, "->>", "json", "text", "text", "get_json_object({0}, path({1}))"),
    O(3965, "->>", "json", "integer", "text", "get_json_object({0}, path({1}))"),
    O(527, "/", "smallint", "smallint", "smallint", "cast({0} div {1} as int)"),
    O(528, "/", "integer", "integer", "integer", "cast({0} div {1} as int)"),
    O(546, "/", "smallint", "integer", "integer", "cast({0} div {1} as int)"),
    O(547, "/", "integer", "smallint", "integer", "cast({0} div {1} as int)"),
    O(588, "/", "real", "real", "real", _float("/")),
    O(593, "/", "double precision", "double precision", "double precision", _float("/")),
    O(687, "/", "bigint", "bigint", "bigint", "cast({0} div {1} as bigint)"),
    O(691, "/", "bigint", "integer", "bigint", "cast({0} div {1} as bigint)"),
    O(695, "/", "integer", "bigint", "bigint", "cast({0} div {1} as bigint)"),
    O(821, "/", "bigint", "smallint", "bigint", "cast({0} div {1} as bigint)"),
    O(825, "/", "smallint", "bigint", "bigint", "cast({0} div {1} as bigint)"),
    O(1118, "/", "real", "double precision", "double precision", _float("/")),
    O(1128, "/", "double precision", "real", "double precision", _float("/")),
    O(1761, "/", "numeric", "numeric", "numeric", "{0} / {1}"),
    O(37, "<", "integer", "bigint", "boolean", "{0} < {1}"),
    O(58, "<", "boolean", "boolean", "boolean", "{0} < {1}"),
    O(95, "<", "smallint", "smallint", "boolean", "{0} < {1}"),
    O(97, "<", "integer", "integer", "boolean", "{0} < {1}"),
    O(255, "<", "name", "text", "boolean", "{0} < {1}"),
    O(261, "<", "text", "name", "boolean", "{0} < {1}"),
    O(412, "<", "bigint", "bigint", "boolean", "{0} < {1}"),
    O(418, "<", "bigint", "integer", "boolean", "{0} < {1}"),
    O(534, "<", "smallint", "integer", "boolean", "{0} < {1}"),
    O(535, "<", "integer", "smallint", "boolean", "{0} < {1}"),
    O(609, "<", "oid", "oid", "boolean", "{0} < {1}"),
    O(622, "<", "real", "real", "boolean", "{0} < {1}"),
    O(660, "<", "name", "name", "boolean", "{0} < {1}"),
    O(664, "<", "text", "text", "boolean", "{0} < {1}"),
    O(672, "<", "double precision", "double precision", "boolean", "{0} < {1}"),
    O(1058, "<", "character", "character", "boolean", "rtrim({0}) < rtrim({1})"),
    O(1072, "<", "anyarray", "anyarray", "boolean", _array_order("<")),
    O(1095, "<", "date", "date", "boolean", "{0} < {1}"),
    O(1110, "<", "time without time zone", "time without time zone", "boolean", "{0} < {1}"),
    O(1122, "<", "real", "double precision", "boolean", "{0} < {1}"),
    O(1132, "<", "double precision", "real", "boolean", "{0} < {1}"),
    O(1322, "<", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} < {1}"),
    O(1754, "<", "numeric", "numeric", "boolean", "{0} < {1}"),
    O(1864, "<", "smallint", "bigint", "boolean", "{0} < {1}"),
    O(1870, "<", "bigint", "smallint", "boolean", "{0} < {1}"),
    O(2062, "<", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} < {1}"),
    O(2345, "<", "date", "timestamp without time zone", "boolean", "{0} < {1}"),
    O(2358, "<", "date", "timestamp with time zone", "boolean", "{0} < {1}"),
    O(2371, "<", "timestamp without time zone", "date", "boolean", "{0} < {1}"),
    O(2384, "<", "timestamp with time zone", "date", "boolean", "{0} < {1}"),
    O(2534, "<", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} < {1}"),
    O(2540, "<", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} < {1}"),
    O(2974, "<", "uuid", "uuid", "boolean", "{0} < {1}"),
    O(1884, "<<", "integer", "integer", "integer", "shiftleft({0}, {1})"),
    O(1890, "<<", "bigint", "integer", "bigint", "shiftleft({0}, {1})"),
    O(80, "<=", "integer", "bigint", "boolean", "{0} <= {1}"),
    O(256, "<=", "name", "text", "boolean", "{0} <= {1}"),
    O(262, "<=", "text", "name", "boolean", "{0} <= {1}"),
    O(414, "<=", "bigint", "bigint", "boolean", "{0} <= {1}"),
    O(420, "<=", "bigint", "integer", "boolean", "{0} <= {1}"),
    O(522, "<=", "smallint", "smallint", "boolean", "{0} <= {1}"),
    O(523, "<=", "integer", "integer", "boolean", "{0} <= {1}"),
    O(540, "<=", "smallint", "integer", "boolean", "{0} <= {1}"),
    O(541, "<=", "integer", "smallint", "boolean", "{0} <= {1}"),
    O(611, "<=", "oid", "oid", "boolean", "{0} <= {1}"),
    O(624, "<=", "real", "real", "boolean", "{0} <= {1}"),
    O(661, "<=", "name", "name", "boolean", "{0} <= {1}"),
    O(665, "<=", "text", "text", "boolean", "{0} <= {1}"),
    O(673, "<=", "double precision", "double precision", "boolean", "{0} <= {1}"),
    O(1059, "<=", "character", "character", "boolean", "rtrim({0}) <= rtrim({1})"),
    O(1074, "<=", "anyarray", "anyarray", "boolean", _array_order("<=")),
    O(1096, "<=", "date", "date", "boolean", "{0} <= {1}"),
    O(1111, "<=", "time without time zone", "time without time zone", "boolean", "{0} <= {1}"),
    O(1124, "<=", "real", "double precision", "boolean", "{0} <= {1}"),
    O(1134, "<=", "double precision", "real", "boolean", "{0} <= {1}"),
    O(1323, "<=", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} <= {1}"),
    O(1694, "<=", "boolean", "boolean", "boolean", "{0} <= {1}"),
    O(1755, "<=", "numeric", "numeric", "boolean", "{0} <= {1}"),
    O(1866, "<=", "smallint", "bigint", "boolean", "{0} <= {1}"),
    O(1872, "<=", "bigint", "smallint", "boolean", "{0} <= {1}"),
    O(2063, "<=", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} <= {1}"),
    O(2346, "<=", "date", "timestamp without time zone", "boolean", "{0} <= {1}"),
    O(2359, "<=", "date", "timestamp with time zone", "boolean", "{0} <= {1}"),
    O(2372, "<=", "timestamp without time zone", "date", "boolean", "{0} <= {1}"),
    O(2385, "<=", "timestamp with time zone", "date", "boolean", "{0} <= {1}"),
    O(2535, "<=", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} <= {1}"),
    O(2541, "<=", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} <= {1}"),
    O(2976, "<=", "uuid", "uuid", "boolean", "{0} <= {1}"),
    O(36, "<>", "integer", "bigint", "boolean", "{0} <> {1}"),
    O(85, "<>", "boolean", "boolean", "boolean", "{0} <> {1}"),
    O(259, "<>", "name", "text", "boolean", "{0} <> {1}"),
    O(265, "<>", "text", "name", "boolean", "{0} <> {1}"),
    O(411, "<>", "bigint", "bigint", "boolean", "{0} <> {1}"),
    O(417, "<>", "bigint", "integer", "boolean", "{0} <> {1}"),
    O(518, "<>", "integer", "integer", "boolean", "{0} <> {1}"),
    O(519, "<>", "smallint", "smallint", "boolean", "{0} <> {1}"),
    O(531, "<>", "text", "text", "boolean", "{0} <> {1}"),
    O(538, "<>", "smallint", "integer", "boolean", "{0} <> {1}"),
    O(539, "<>", "integer", "smallint", "boolean", "{0} <> {1}"),
    O(608, "<>", "oid", "oid", "boolean", "{0} <> {1}"),
    O(621, "<>", "real", "real", "boolean", "{0} <> {1}"),
    O(643, "<>", "name", "name", "boolean", "{0} <> {1}"),
    O(671, "<>", "double precision", "double precision", "boolean", "{0} <> {1}"),
    O(1057, "<>", "character", "character", "boolean", "rtrim({0}) <> rtrim({1})"),
    O(1071, "<>", "anyarray", "anyarray", "boolean", "{0} <> {1}"),
    O(1094, "<>", "date", "date", "boolean", "{0} <> {1}"),
    O(1109, "<>", "time without time zone", "time without time zone", "boolean", "{0} <> {1}"),
    O(1121, "<>", "real", "double precision", "boolean", "{0} <> {1}"),
    O(1131, "<>", "double precision", "real", "boolean", "{0} <> {1}"),
    O(1321, "<>", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} <> {1}"),
    O(1753, "<>", "numeric", "numeric", "boolean", "{0} <> {1}"),
    O(1863, "<>", "smallint", "bigint", "boolean", "{0} <> {1}"),
    O(1869, "<>", "bigint", "smallint", "boolean", "{0} <> {1}"),
    O(2061, "<>", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} <> {1}"),
    O(2350, "<>", "date", "timestamp without time zone", "boolean", "{0} <> {1}"),
    O(2363, "<>", "date", "timestamp with time zone", "boolean", "{0} <> {1}"),
    O(2376, "<>", "timestamp without time zone", "date", "boolean", "{0} <> {1}"),
    O(2389, "<>", "timestamp with time zone", "date", "boolean", "{0} <> {1}"),
    O(2539, "<>", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} <> {1}"),
    O(2545, "<>", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} <> {1}"),
    O(2973, "<>", "uuid", "uuid", "boolean", "{0} <> {1}"),
    O(15, "=", "integer", "bigint", "boolean", "{0} = {1}"),
    O(91, "=", "boolean", "boolean", "boolean", "{0} = {1}"),
    O(93, "=", "name", "name", "boolean", "{0} = {1}"),
    O(94, "=", "smallint", "smallint", "boolean", "{0} = {1}"),
    O(96, "=", "integer", "integer", "boolean", "{0} = {1}"),
    O(98, "=", "text", "text", "boolean", "{0} = {1}"),
    # bytea compares byte by byte, unsigned, as Spark's binary does
    O(1955, "=", "bytea", "bytea", "boolean", "{0} = {1}"),
    O(1956, "<>", "bytea", "bytea", "boolean", "{0} <> {1}"),
    O(1957, "<", "bytea", "bytea", "boolean", "{0} < {1}"),
    O(1958, "<=", "bytea", "bytea", "boolean", "{0} <= {1}"),
    O(1959, ">", "bytea", "bytea", "boolean", "{0} > {1}"),
    O(1960, ">=", "bytea", "bytea", "boolean", "{0} >= {1}"),
    O(2018, "||", "bytea", "bytea", "bytea", "concat({0}, {1})"),
    O(254, "=", "name", "text", "boolean", "{0} = {1}"),
    O(260, "=", "text", "name", "boolean", "{0} = {1}"),
    O(410, "=", "bigint", "bigint", "boolean", "{0} = {1}"),
    O(416, "=", "bigint", "integer", "boolean", "{0} = {1}"),
    O(532, "=", "smallint", "integer", "boolean", "{0} = {1}"),
    O(533, "=", "integer", "smallint", "boolean", "{0} = {1}"),
    O(607, "=", "oid", "oid", "boolean", "{0} = {1}"),
    O(620, "=", "real", "real", "boolean", "{0} = {1}"),
    O(670, "=", "double precision", "double precision", "boolean", "{0} = {1}"),
    O(1054, "=", "character", "character", "boolean", "rtrim({0}) = rtrim({1})"),
    O(1070, "=", "anyarray", "anyarray", "boolean", "{0} = {1}"),
    O(1093, "=", "date", "date", "boolean", "{0} = {1}"),
    O(1108, "=", "time without time zone", "time without time zone", "boolean", "{0} = {1}"),
    O(1120, "=", "real", "double precision", "boolean", "{0} = {1}"),
    O(1130, "=", "double precision", "real", "boolean", "{0} = {1}"),
    O(1320, "=", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} = {1}"),
    O(1752, "=", "numeric", "numeric", "boolean", "{0} = {1}"),
    O(1862, "=", "smallint", "bigint", "boolean", "{0} = {1}"),
    O(1868, "=", "bigint", "smallint", "boolean", "{0} = {1}"),
    O(2060, "=", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} = {1}"),
    O(2347, "=", "date", "timestamp without time zone", "boolean", "{0} = {1}"),
    O(2360, "=", "date", "timestamp with time zone", "boolean", "{0} = {1}"),
    O(2373, "=", "timestamp without time zone", "date", "boolean", "{0} = {1}"),
    O(2386, "=", "timestamp with time zone", "date", "boolean", "{0} = {1}"),
    O(2536, "=", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} = {1}"),
    O(2542, "=", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} = {1}"),
    O(2972, "=", "uuid", "uuid", "boolean", "{0} = {1}"),
    O(59, ">", "boolean", "boolean", "boolean", "{0} > {1}"),
    O(76, ">", "integer", "bigint", "boolean", "{0} > {1}"),
    O(258, ">", "name", "text", "boolean", "{0} > {1}"),
    O(264, ">", "text", "name", "boolean", "{0} > {1}"),
    O(413, ">", "bigint", "bigint", "boolean", "{0} > {1}"),
    O(419, ">", "bigint", "integer", "boolean", "{0} > {1}"),
    O(520, ">", "smallint", "smallint", "boolean", "{0} > {1}"),
    O(521, ">", "integer", "integer", "boolean", "{0} > {1}"),
    O(536, ">", "smallint", "integer", "boolean", "{0} > {1}"),
    O(537, ">", "integer", "smallint", "boolean", "{0} > {1}"),
    O(610, ">", "oid", "oid", "boolean", "{0} > {1}"),
    O(623, ">", "real", "real", "boolean", "{0} > {1}"),
    O(662, ">", "name", "name", "boolean", "{0} > {1}"),
    O(666, ">", "text", "text", "boolean", "{0} > {1}"),
    O(674, ">", "double precision", "double precision", "boolean", "{0} > {1}"),
    O(1060, ">", "character", "character", "boolean", "rtrim({0}) > rtrim({1})"),
    O(1073, ">", "anyarray", "anyarray", "boolean", _array_order(">")),
    O(1097, ">", "date", "date", "boolean", "{0} > {1}"),
    O(1112, ">", "time without time zone", "time without time zone", "boolean", "{0} > {1}"),
    O(1123, ">", "real", "double precision", "boolean", "{0} > {1}"),
    O(1133, ">", "double precision", "real", "boolean", "{0} > {1}"),
    O(1324, ">", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} > {1}"),
    O(1756, ">", "numeric", "numeric", "boolean", "{0} > {1}"),
    O(1865, ">", "smallint", "bigint", "boolean", "{0} > {1}"),
    O(1871, ">", "bigint", "smallint", "boolean", "{0} > {1}"),
    O(2064, ">", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} > {1}"),
    O(2349, ">", "date", "timestamp without time zone", "boolean", "{0} > {1}"),
    O(2362, ">", "date", "timestamp with time zone", "boolean", "{0} > {1}"),
    O(2375, ">", "timestamp without time zone", "date", "boolean", "{0} > {1}"),
    O(2388, ">", "timestamp with time zone", "date", "boolean", "{0} > {1}"),
    O(2538, ">", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} > {1}"),
    O(2544, ">", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} > {1}"),
    O(2975, ">", "uuid", "uuid", "boolean", "{0} > {1}"),
    O(82, ">=", "integer", "bigint", "boolean", "{0} >= {1}"),
    O(257, ">=", "name", "text", "boolean", "{0} >= {1}"),
    O(263, ">=", "text", "name", "boolean", "{0} >= {1}"),
    O(415, ">=", "bigint", "bigint", "boolean", "{0} >= {1}"),
    O(430, ">=", "bigint", "integer", "boolean", "{0} >= {1}"),
    O(524, ">=", "smallint", "smallint", "boolean", "{0} >= {1}"),
    O(525, ">=", "integer", "integer", "boolean", "{0} >= {1}"),
    O(542, ">=", "smallint", "integer", "boolean", "{0} >= {1}"),
    O(543, ">=", "integer", "smallint", "boolean", "{0} >= {1}"),
    O(612, ">=", "oid", "oid", "boolean", "{0} >= {1}"),
    O(625, ">=", "real", "real", "boolean", "{0} >= {1}"),
    O(663, ">=", "name", "name", "boolean", "{0} >= {1}"),
    O(667, ">=", "text", "text", "boolean", "{0} >= {1}"),
    O(675, ">=", "double precision", "double precision", "boolean", "{0} >= {1}"),
    O(1061, ">=", "character", "character", "boolean", "rtrim({0}) >= rtrim({1})"),
    O(1075, ">=", "anyarray", "anyarray", "boolean", _array_order(">=")),
    O(1098, ">=", "date", "date", "boolean", "{0} >= {1}"),
    O(1113, ">=", "time without time zone", "time without time zone", "boolean", "{0} >= {1}"),
    O(1125, ">=", "real", "double precision", "boolean", "{0} >= {1}"),
    O(1135, ">=", "double precision", "real", "boolean", "{0} >= {1}"),
    O(1325, ">=", "timestamp with time zone", "timestamp with time zone", "boolean", "{0} >= {1}"),
    O(1695, ">=", "boolean", "boolean", "boolean", "{0} >= {1}"),
    O(1757, ">=", "numeric", "numeric", "boolean", "{0} >= {1}"),
    O(1867, ">=", "smallint", "bigint", "boolean", "{0} >= {1}"),
    O(1873, ">=", "bigint", "smallint", "boolean", "{0} >= {1}"),
    O(2065, ">=", "timestamp without time zone", "timestamp without time zone", "boolean", "{0} >= {1}"),
    O(2348, ">=", "date", "timestamp without time zone", "boolean", "{0} >= {1}"),
    O(2361, ">=", "date", "timestamp with time zone", "boolean", "{0} >= {1}"),
    O(2374, ">=", "timestamp without time zone", "date", "boolean", "{0} >= {1}"),
    O(2387, ">=", "timestamp with time zone", "date", "boolean", "{0} >= {1}"),
    O(2537, ">=", "timestamp without time zone", "timestamp with time zone", "boolean", "{0} >= {1}"),
    O(2543, ">=", "timestamp with time zone", "timestamp without time zone", "boolean", "{0} >= {1}"),
    O(2977, ">=", "uuid", "uuid", "boolean", "{0} >= {1}"),
    O(1885, ">>", "integer", "integer", "integer", "shiftright({0}, {1})"),
    O(1891, ">>", "bigint", "integer", "bigint", "shiftright({0}, {1})"),
    O(965, "^", "double precision", "double precision", "double precision", float_power_template()),
    O(1038, "^", "numeric", "numeric", "numeric", "power({0}, {1})"),
    O(1875, "|", "smallint", "smallint", "smallint", "{0} | {1}"),
    O(1881, "|", "integer", "integer", "integer", "{0} | {1}"),
    O(1887, "|", "bigint", "bigint", "bigint", "{0} | {1}"),
    O(596, "|/", "", "double precision", "double precision",
      "case when {0} < 0 then raise_error('sparkwire:2201F:cannot take square root of a negative number') "
      "else sqrt({0}) end"),
    # array || array is array_cat, array || element array_append, element || array array_prepend:
    # a NULL array is left out (NULL::int[] || ARRAY[1] is {1}), where Spark's answer is NULL
    O(375, "||", "anycompatiblearray", "anycompatiblearray", "anycompatiblearray",
      "case when {0} is null then {1} when {1} is null then {0} else concat({0}, {1}) end"),
    O(349, "||", "anycompatiblearray", "anycompatible", "anycompatiblearray",
      "array_append(coalesce({0}, array()), {1})"),
    O(374, "||", "anycompatible", "anycompatiblearray", "anycompatiblearray",
      "array_prepend(coalesce({1}, array()), {0})"),
    O(654, "||", "text", "text", "text", "concat({0}, {1})"),
    O(2779, "||", "text", "anynonarray", "text", "concat({0}, {1})"),
    O(2780, "||", "anynonarray", "text", "text", "concat({0}, {1})"),
    O(597, "||/", "", "double precision", "double precision", "sparkwire_float8_cbrt({0})"),
    O(639, "~", "name", "text", "boolean", "{0} rlike {1}"),
    O(641, "~", "text", "text", "boolean", "{0} rlike {1}"),
    O(1877, "~", "", "smallint", "smallint", "~{0}"),
    O(1883, "~", "", "integer", "integer", "~{0}"),
    O(1889, "~", "", "bigint", "bigint", "~{0}"),
    O(1226, "~*", "name", "text", "boolean", "{0} rlike concat('(?i)', {1})"),
    O(1228, "~*", "text", "text", "boolean", "{0} rlike concat('(?i)', {1})"),
    O(1207, "~~", "name", "text", "boolean", "{0} like {1}"),
    O(1211, "~~", "character", "text", "boolean", "{0} like {1}"),
    O(1209, "~~", "text", "text", "boolean", "{0} like {1}"),
    O(1625, "~~*", "name", "text", "boolean", "{0} ilike {1}"),
    O(1629, "~~*", "character", "text", "boolean", "{0} ilike {1}"),
    O(1627, "~~*", "text", "text", "boolean", "{0} ilike {1}"),
)

NAMES: frozenset[str] = frozenset(o.name for o in OPERATORS) | {"!="}  # PostgreSQL reads != as <>


def overloads(name: str) -> tuple[Operator, ...]:
    name = "<>" if name == "!=" else name
    return tuple(o for o in OPERATORS if o.name == name)
