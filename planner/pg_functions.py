"""PostgreSQL's answers where Spark's functions give others.

sqlglot turns a PostgreSQL call into the Spark function of the same name, but
many differ at the edges: Spark's one-argument `log` is the natural logarithm,
`left(s, -2)` is empty, `substr(s, 0, 3)` counts differently, `sqrt(-1)` is NaN
where PostgreSQL raises 2201F, `generate_series(3, 0)` counts down. Each rewrite
here gives the catalogued function (planner.functions) PostgreSQL's result, and
tests/integration/test_function_catalog.py checks them against PostgreSQL 15.

`rewrite` works on one node, knowing nothing of types; `typed` runs once over a
tree that sqlglot has annotated with types, for the answers that depend on them
(a timestamp's date_trunc stays without time zone, concat prints booleans as t/f).

Errors that PostgreSQL raises from inside a function come from Spark's
`raise_error` with a message `sparkwire:<SQLSTATE>:<text>`, which
spark_backend.errors turns back into that SQLSTATE and text.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import sqlglot
from sqlglot import exp

from planner import pg_extract, pg_float, pg_strings
from planner.codecs.text_in import decode_text
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.sql_template import ERROR_PREFIX, pg_error
from planner.sql_template import spark as filled
from planner.types import column_type

# float8 and float4 to text as PostgreSQL's float8out/float4out write them (`1024`, `1e+15`,
# shortest round-trip digits), where Spark's CAST writes Java's (`1024.0`, `1.0E15`): Python
# UDFs (spark_backend.float_udfs) over the encoders' own formatting.
FLOAT_TEXT_UDFS = {"double precision": "sparkwire_float8_text", "real": "sparkwire_float4_text"}


def _guarded(value: exp.Expression, checks: list[tuple[exp.Expression, str, str]]) -> exp.Expression:
    """`value`, unless one of the conditions holds: then PostgreSQL's error."""
    return exp.Case(ifs=[exp.If(this=cond, true=pg_error(code, msg)) for cond, code, msg in checks], default=value)


def _lt(a: exp.Expression, b: float) -> exp.Expression:
    return exp.LT(this=a.copy(), expression=exp.Literal.number(b))


def _eq(a: exp.Expression, b: float) -> exp.Expression:
    return exp.EQ(this=a.copy(), expression=exp.Literal.number(b))


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=[a.copy() for a in args])


_NEGATIVE_LOG = ("2201E", "cannot take logarithm of a negative number")
_ZERO_LOG = ("2201E", "cannot take logarithm of zero")


def _log_checks(x: exp.Expression) -> list[tuple[exp.Expression, str, str]]:
    return [(_lt(x, 0), *_NEGATIVE_LOG), (_eq(x, 0), *_ZERO_LOG)]


def _log(node: exp.Log) -> exp.Expression:
    # PostgreSQL's log(x) is the decimal logarithm; log(b, x) takes the base first, as Spark's.
    base, x = (node.this, node.expression) if node.expression is not None else (None, node.this)
    value = _fn("log10", x) if base is None else _fn("log", base, x)
    checks = _log_checks(x)
    if base is not None:
        checks = _log_checks(base) + checks
    return _guarded(value, checks)


def _ln(node: exp.Ln) -> exp.Expression:
    return _guarded(_fn("ln", node.this), _log_checks(node.this))


def _sqrt(node: exp.Sqrt) -> exp.Expression:
    return _guarded(_fn("sqrt", node.this), [(_lt(node.this, 0), "2201F",
                                              "cannot take square root of a negative number")])


def _pow(node: exp.Pow) -> exp.Expression:
    x, y = node.this, node.expression
    fractional = exp.NEQ(this=y.copy(), expression=_fn("floor", y))
    return _guarded(_fn("power", x, y), [
        (exp.and_(_eq(x, 0), _lt(y, 0)), "2201F", "zero raised to a negative power is undefined"),
        (exp.and_(_lt(x, 0), fractional), "2201F",
         "a negative number raised to a non-integer power yields a complex result"),
    ])


def _length_of(s: exp.Expression) -> exp.Expression:
    return _fn("length", s)


def _left(node: exp.Left) -> exp.Expression:
    """left(s, n): the first n characters; a negative n drops the last -n."""
    s, n = node.this, node.expression
    return exp.If(this=exp.GTE(this=n.copy(), expression=exp.Literal.number(0)), true=_fn("left", s, n),
                  false=_fn("substring", s, exp.Literal.number(1),
                            _fn("greatest", exp.Add(this=_length_of(s), expression=n.copy()),
                                exp.Literal.number(0))))


def _right(node: exp.Right) -> exp.Expression:
    """right(s, n): the last n characters; a negative n drops the first -n."""
    s, n = node.this, node.expression
    return exp.If(this=exp.GTE(this=n.copy(), expression=exp.Literal.number(0)), true=_fn("right", s, n),
                  false=_fn("substring", s, exp.Sub(this=exp.Literal.number(1), expression=n.copy())))


def _substring(node: exp.Substring) -> exp.Expression:
    """substr(s, start[, count]) as sqlglot reads it (see positions)."""
    s, start, count = node.this, node.args.get("start"), node.args.get("length")
    if start is None:
        return node
    out = positions(s, start, count)
    out.meta["pg_substring"] = True  # a text start is a pattern: `typed` tells (_text_substring)
    return out


def positions(s: exp.Expression, start: exp.Expression, count: exp.Expression | None) -> exp.Expression:
    """substr(s, start[, count]): PostgreSQL counts from position `start` even when it is 0
    or negative (those positions are before the string), where Spark counts from the end;
    22011 for a negative count."""
    first = _at_least(start, 1)
    if count is None:
        out = _fn("substring", s, first)
    else:
        # Characters in [start, start + count) that fall at position 1 or after.
        taken = _at_least(exp.Sub(this=exp.Add(this=start.copy(), expression=count.copy()),
                                  expression=first.copy()), 0)
        out = _guarded(_fn("substring", s, first, taken),
                       [(_lt(count, 0), "22011", "negative substring length not allowed")])
    return out


def _at_least(value: exp.Expression, floor: int) -> exp.Expression:
    """`value`, or `floor` when it is below: NULL stays NULL (Spark's greatest skips NULLs,
    which made substr('hello', NULL) the whole string)."""
    return exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(floor)),
                  true=exp.Literal.number(floor), false=value.copy())


def _text_substring(node: exp.Expression) -> exp.Expression | None:
    """substring(s FROM pattern [FOR escape]) that `_substring` took for positions, once the
    types show a text start: the pattern forms (planner.pg_regex); None if it is positions."""
    call = node if isinstance(node, exp.Anonymous) else node.args["default"]
    s, start = call.expressions[0], call.expressions[1].args["false"]  # positions' _at_least(start, 1)
    if not _is(start, _T.TEXT, _T.VARCHAR, _T.CHAR):
        return None
    args = [s, start] if call is node else [s, start, node.args["ifs"][0].this.this]
    return pg_strings.template_call(pg_strings.TEMPLATES["substring", len(args)], args)


def _trunc(node: exp.Expression) -> exp.Expression:
    """trunc(x[, n]): towards zero, at n decimal places."""
    x, n = node.this, node.args.get("decimals")
    if n is None:
        # Also right for doubles beyond BIGINT and for NaN and the infinities.
        rest = exp.Mod(this=x.copy(), expression=exp.Literal.number(1))
        return exp.If(this=_fn("isnan", rest), true=x.copy(), false=exp.Sub(this=x.copy(), expression=rest))
    return exp.If(this=exp.GTE(this=x.copy(), expression=exp.Literal.number(0)),
                  true=_fn("floor", x, n), false=_fn("ceil", x, n))


def _to_timestamp(node: exp.UnixToTime) -> exp.Expression:
    """to_timestamp(seconds): with the fraction, which FROM_UNIXTIME drops."""
    micros = exp.Cast(this=_fn("round", exp.Mul(this=node.this.copy(), expression=exp.Literal.number(1000000))),
                      to=exp.DataType.build("BIGINT"))
    return _fn("timestamp_micros", micros)


def _factorial(node: exp.Factorial) -> exp.Expression:
    return _guarded(_fn("factorial", node.this), [
        (_lt(node.this, 0), "22003", "factorial of a negative number is undefined")])


def _array_position(node: exp.ArrayPosition) -> exp.Expression:
    """array_position: NULL when the element is not there (Spark: 0); a NULL is found where
    the array has one, as IS NOT DISTINCT FROM finds it (Spark: NULL)."""
    array, element = node.this, node.expression
    var = exp.to_identifier("sw_p")
    nulls = _fn("transform", array.copy(), exp.Lambda(this=exp.Is(this=exp.column(var), expression=exp.Null()),
                                                      expressions=[var]))
    found = exp.If(this=exp.Is(this=element.copy(), expression=exp.Null()), true=_fn("array_position", nulls, exp.true()),
                   false=_fn("array_position", array, element))
    return exp.Nullif(this=found, expression=exp.Literal.number(0))


def _array_concat(node: exp.Expression) -> exp.Expression:
    """array_cat(a, b) / a || b of arrays: a NULL side is left out (Spark: the result is NULL)."""
    a = node.this
    b = node.expressions[0] if isinstance(node, exp.ArrayConcat) and node.expressions else node.args.get("expression")
    if b is None:
        return node
    return exp.Case(ifs=[exp.If(this=exp.Is(this=a.copy(), expression=exp.Null()), true=b.copy()),
                         exp.If(this=exp.Is(this=b.copy(), expression=exp.Null()), true=a.copy())],
                    default=_fn("concat", a, b))


def _unit(node: exp.Expression) -> str:
    unit = node.this
    return (unit.name if isinstance(unit, (exp.Var, exp.Literal)) else "").lower()


def _extract(node: exp.Extract) -> exp.Expression:
    """EXTRACT / date_part fields that Spark names or counts differently (the older path
    knows no argument types: the others stay Spark's, at Spark's type)."""
    computed = pg_extract.older_path_field(_unit(node), node.expression)
    return computed if computed is not None else node


def one_dimensional(array: exp.Expression) -> exp.Expression:
    """`array`, refused (0A000) when it is written as a multidimensional constructor
    (`ARRAY[[1, 2], [3, 4]]`): sparkwire's arrays have one dimension, and counting or
    bounding the nested form as one would answer wrongly (cardinality 2 for 4 elements)."""
    if isinstance(array, exp.Array) and any(isinstance(e, exp.Array) for e in array.expressions):
        raise SqlError(FEATURE_NOT_SUPPORTED, "multidimensional arrays are not supported")
    return array


def array_bound(array: exp.Expression, dimension: exp.Expression, upper: bool) -> exp.Expression:
    """array_length/array_upper (upper) or array_lower of a one-dimensional array: NULL for an
    empty array and for any dimension but 1 (Spark's SIZE knows no dimensions)."""
    size = exp.ArraySize(this=one_dimensional(array).copy())
    present = exp.and_(_eq(dimension, 1), exp.GT(this=size.copy(), expression=exp.Literal.number(0)))
    return exp.If(this=present, true=size if upper else exp.Literal.number(1), false=exp.Null())


def _array_size(node: exp.ArraySize) -> exp.Expression:
    one_dimensional(node.this)
    dimension = node.args.get("expression")
    return node if dimension is None else array_bound(node.this, dimension, upper=True)


def _array_to_string(node: exp.ArrayToString) -> exp.Expression:
    args = [node.this, node.expression] + ([node.args["null"]] if node.args.get("null") is not None else [])
    return _fn("array_join", *args)


def _array_remove(node: exp.ArrayRemove) -> exp.Expression:
    """array_remove(a, NULL) removes the NULLs (Spark's answer would be NULL)."""
    array, element = node.this, node.expression
    element_var = exp.to_identifier("__x")
    not_null = exp.Lambda(this=exp.Not(this=exp.Is(this=exp.column(element_var), expression=exp.Null())),
                          expressions=[element_var])
    return exp.Case(ifs=[exp.If(this=exp.Is(this=element.copy(), expression=exp.Null()),
                                true=_fn("filter", array, not_null))], default=_fn("array_remove", array, element))


# initcap: PostgreSQL capitalizes the first letter of each run of letters and digits
# (anything else separates words); Spark only after white space. A letter is a character
# whose upper and lower case differ.
INITCAP = ("element_at(transform(array({0}), sw_s -> array_join(transform(split(sw_s, ''), (c, i) -> "
           "case when i > 0 and (upper(substring(sw_s, i, 1)) <> lower(substring(sw_s, i, 1)) "
           "or substring(sw_s, i, 1) between '0' and '9') then lower(c) else upper(c) end), '')), 1)")


def _initcap(node: exp.Initcap) -> exp.Expression:
    return filled(INITCAP, node.this)


# bytea as text is its hex form, \x and two lower-case digits a byte (Spark would decode it).
BYTEA_TEXT = "concat(chr(92), 'x', lower(hex({0})))"


def _bytea_text(cast: exp.Cast) -> exp.Expression:
    return exp.Cast(this=_fn("concat", _fn("chr", exp.Literal.number(92)), exp.Literal.string("x"),
                             exp.Lower(this=_fn("hex", cast.this))), to=cast.to.copy())


# upper/lower as PostgreSQL's (towupper/towlower of each character under C.UTF-8), where Java's
# full case mapping differs: upper('ß') is 'ß', not 'SS' (a character whose uppercase is
# several stays itself, or takes its one-character mapping: ᾳ is ᾼ), lower('Σ') is always σ
# (Java writes ς at a word's end) and lower('İ') is i. Such characters are swapped for
# private-use ones around Spark's upper/lower, only in a value that holds one (a value that
# also holds those private-use characters would have them swapped back).
_UPPER_FROM = "\u00df\u0149\u01f0\u0390\u03b0\u0587\u1e96\u1e97\u1e98\u1e99\u1e9a\u1f50\u1f52\u1f54\u1f56\u1f80\u1f81\u1f82\u1f83\u1f84\u1f85\u1f86\u1f87\u1f88\u1f89\u1f8a\u1f8b\u1f8c\u1f8d\u1f8e\u1f8f\u1f90\u1f91\u1f92\u1f93\u1f94\u1f95\u1f96\u1f97\u1f98\u1f99\u1f9a\u1f9b\u1f9c\u1f9d\u1f9e\u1f9f\u1fa0\u1fa1\u1fa2\u1fa3\u1fa4\u1fa5\u1fa6\u1fa7\u1fa8\u1fa9\u1faa\u1fab\u1fac\u1fad\u1fae\u1faf\u1fb2\u1fb3\u1fb4\u1fb6\u1fb7\u1fbc\u1fc2\u1fc3\u1fc4\u1fc6\u1fc7\u1fcc\u1fd2\u1fd3\u1fd6\u1fd7\u1fe2\u1fe3\u1fe4\u1fe6\u1fe7\u1ff2\u1ff3\u1ff4\u1ff6\u1ff7\u1ffc\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06\ufb13\ufb14\ufb15\ufb16\ufb17"
_UPPER_TO = "\u00df\u0149\u01f0\u0390\u03b0\u0587\u1e96\u1e97\u1e98\u1e99\u1e9a\u1f50\u1f52\u1f54\u1f56\u1f88\u1f89\u1f8a\u1f8b\u1f8c\u1f8d\u1f8e\u1f8f\u1f88\u1f89\u1f8a\u1f8b\u1f8c\u1f8d\u1f8e\u1f8f\u1f98\u1f99\u1f9a\u1f9b\u1f9c\u1f9d\u1f9e\u1f9f\u1f98\u1f99\u1f9a\u1f9b\u1f9c\u1f9d\u1f9e\u1f9f\u1fa8\u1fa9\u1faa\u1fab\u1fac\u1fad\u1fae\u1faf\u1fa8\u1fa9\u1faa\u1fab\u1fac\u1fad\u1fae\u1faf\u1fb2\u1fbc\u1fb4\u1fb6\u1fb7\u1fbc\u1fc2\u1fcc\u1fc4\u1fc6\u1fc7\u1fcc\u1fd2\u1fd3\u1fd6\u1fd7\u1fe2\u1fe3\u1fe4\u1fe6\u1fe7\u1ff2\u1ffc\u1ff4\u1ff6\u1ff7\u1ffc\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06\ufb13\ufb14\ufb15\ufb16\ufb17"
_LOWER_FROM, _LOWER_TO = "\u0130\u03a3", "i\u03c3"


def _case_template(name: str, special: str, mapped: str) -> str:
    held = "".join(chr(0xE000 + i) for i in range(len(special)))
    return (f"case when {{0}} rlike '[{special}]' then translate({name}(translate({{0}}, '{special}', '{held}')), "
            f"'{held}', '{mapped}') else {name}({{0}}) end")


UPPER = _case_template("upper", _UPPER_FROM, _UPPER_TO)
LOWER = _case_template("lower", _LOWER_FROM, _LOWER_TO)


def _cased(template: str) -> Callable:
    return lambda node: filled(template, node.this)


# make_date(year, month, day): PostgreSQL's 22008 with its text for a day that does not exist
# (Spark's make_date would fail with its own words) and for year 0; years before 1 (BC) and
# after 9999 are 0A000 (PostgreSQL has them; sparkwire's dates do not).
MAKE_DATE = (
    "case when {0} is null or {1} is null or {2} is null then null "
    "when {0} < 0 or {0} > 9999 then "
    "raise_error('sparkwire:0a000:make_date of a year before 1 or after 9999 is not supported') "
    "when {0} > 0 and not try_make_timestamp_ntz({0}, {1}, {2}, 0, 0, 0) is null "
    "then cast(try_make_timestamp_ntz({0}, {1}, {2}, 0, 0, 0) as date) "
    "else raise_error(concat('sparkwire:22008:date field value out of range: ', "
    "format_string('%d-%02d-%02d', {0}, {1}, {2}))) end")


def make_date(args: list[exp.Expression]) -> exp.Expression:
    """make_date on the older path (the front end fills the catalog's template)."""
    return filled(MAKE_DATE, *args)


CORR = "if(regr_sxx({0}, {1}) = 0 or regr_syy({0}, {1}) = 0, null, corr({0}, {1}))"


def _exact_percentile(node: exp.Expression) -> exp.Expression:
    """percentile_cont/percentile_disc as Spark's exact ones: sqlglot writes its own
    PercentileCont for Spark as PERCENTILE_APPROX, an estimate."""
    name = "percentile_cont" if isinstance(node, exp.PercentileCont) else "percentile_disc"
    return exp.Anonymous(this=name, expressions=[node.this.copy()])


def exact_percentiles(tree: exp.Expression) -> exp.Expression:
    """`tree` with every percentile_cont/percentile_disc made Spark's exact one."""
    return tree.transform(lambda n: _exact_percentile(n) if isinstance(n, (exp.PercentileCont, exp.PercentileDisc))
                          else n)


def _corr(node: exp.Corr) -> exp.Expression:
    """corr(y, x) is NULL where a variance is 0, as float8_corr's (Spark's is NaN)."""
    y, x = node.this, node.expression
    sxx = exp.Anonymous(this="regr_sxx", expressions=[y.copy(), x.copy()])
    syy = exp.Anonymous(this="regr_syy", expressions=[y.copy(), x.copy()])
    zero = exp.Literal.number(0)
    flat = exp.or_(exp.EQ(this=sxx, expression=zero.copy()), exp.EQ(this=syy, expression=zero.copy()))
    return exp.If(this=flat, true=exp.Null(), false=exp.Corr(this=y.copy(), expression=x.copy()))


_REWRITES: dict[type, Callable] = {
    exp.Upper: _cased(UPPER),
    exp.Lower: _cased(LOWER),
    exp.Corr: _corr,
    exp.PercentileCont: _exact_percentile,
    exp.PercentileDisc: _exact_percentile,
    exp.Initcap: _initcap,
    exp.ArrayRemove: _array_remove,
    exp.Log: _log,
    exp.Ln: _ln,
    exp.Sqrt: _sqrt,
    exp.Pow: _pow,
    exp.Left: _left,
    exp.Right: _right,
    exp.Substring: _substring,
    exp.Trunc: _trunc,
    exp.UnixToTime: _to_timestamp,
    exp.Factorial: _factorial,
    exp.ArrayPosition: _array_position,
    exp.ArrayConcat: _array_concat,
    exp.Extract: _extract,
    exp.ArrayToString: _array_to_string,
    exp.ArraySize: _array_size,
}


def rewrite(node: exp.Expression) -> exp.Expression:
    """PostgreSQL's semantics for one function call, where Spark's differ."""
    strings = pg_strings.sqlglot_rewrite(node)
    if strings is not None:
        return strings
    make = _REWRITES.get(type(node))
    return make(node) if make is not None else node


def spark_to_json(arg: exp.Expression) -> exp.Expression:
    """Spark's to_json, written by a rewrite here: marked, so that it is not taken for a call
    of PostgreSQL's to_json (FRONT_END_ONLY), which only the front end of our own runs."""
    node = exp.Anonymous(this="to_json", expressions=[arg])
    node.meta["rewrite"] = True
    return node


def _json_scalar(value: exp.Expression) -> exp.Expression:
    """A value as JSON text: Spark's to_json of a one-element array, brackets cut off."""
    text = spark_to_json(exp.Array(expressions=[value.copy()]))
    return _fn("substring", text, exp.Literal.number(2), exp.Sub(this=_fn("length", text), expression=exp.Literal.number(2)))


def json_build_object(args: list[exp.Expression]) -> exp.Expression:
    """json_build_object(k1, v1, ...): `{"k1" : v1, ...}` as PostgreSQL writes it (keys as text)."""
    if len(args) % 2:
        return pg_error("22023", "argument list must have even number of elements")
    pairs = []
    for i in range(0, len(args), 2):
        key = _json_scalar(exp.Cast(this=args[i].copy(), to=exp.DataType.build("TEXT")))
        key = exp.Case(ifs=[exp.If(this=exp.Is(this=args[i].copy(), expression=exp.Null()),
                                   true=pg_error("22023", f"argument {i + 1} cannot be null"))], default=key)
        pairs.append(exp.DPipe(this=exp.DPipe(this=key, expression=exp.Literal.string(" : ")),
                               expression=_json_scalar(args[i + 1])))
    if not pairs:
        return exp.Literal.string("{}")
    body = _fn("concat_ws", exp.Literal.string(", "), *pairs)
    return exp.DPipe(this=exp.DPipe(this=exp.Literal.string("{"), expression=body), expression=exp.Literal.string("}"))


# -- with types -----------------------------------------------------------------------------

_T = exp.DataType.Type


def _type(node: exp.Expression) -> exp.DataType | None:
    t = node.type
    return t if isinstance(t, exp.DataType) and t.this != _T.UNKNOWN else None


def _is(node: exp.Expression, *types: exp.DataType.Type) -> bool:
    t = _type(node)
    return t is not None and t.this in types


def _is_float(node: exp.Expression) -> bool:
    """A double or real value. Not a literal: sqlglot types 2.5 as DOUBLE where PostgreSQL
    reads a numeric."""
    return not isinstance(node, exp.Literal) and _is(node, _T.DOUBLE, _T.FLOAT)


def _bool_text(value: exp.Expression) -> exp.Expression:
    """A boolean as its PostgreSQL output: t or f."""
    return exp.Case(ifs=[exp.If(this=value.copy(), true=exp.Literal.string("t")),
                         exp.If(this=exp.Not(this=value.copy()), true=exp.Literal.string("f"))])


_BYTEA = column_type("bytea")
_SAME_TEXT_TYPES = (_T.INT, _T.BIGINT, _T.SMALLINT, _T.TINYINT, _T.DECIMAL)  # Spark prints them as PostgreSQL


# Catalogued functions the older path (sqlglot's tree) does not translate: they need the
# front end's types and scales (to_char's pattern, besides, is rewritten by sqlglot).
FRONT_END_ONLY = frozenset({"to_char", "gcd", "lcm", "scale", "min_scale", "trim_scale", "to_number", "to_date",
                            "age", "justify_hours", "justify_days", "justify_interval", "make_interval",
                            "to_json", "json_agg", "json_build_array", "row_to_json",
                            "timezone",  # AT TIME ZONE: its zone read at planning (planner.pg_timezone)
                            "sha224", "sha256", "sha384", "sha512"})  # sqlglot's tree drops the unhex
# sqlglot's nodes for the calls whose PostgreSQL pattern it rewrites (to_char, to_date, to_number,
# to_timestamp(text, text)), and for justify_* (front end only, as FRONT_END_ONLY's), by the
# name the error gives
_PATTERN_CALLS = {exp.TimeToStr: "to_char", exp.StrToDate: "to_date", exp.StrToTime: "to_timestamp",
                  exp.ToNumber: "to_number", exp.JustifyHours: "justify_hours", exp.JustifyDays: "justify_days",
                  exp.JustifyInterval: "justify_interval", exp.MakeInterval: "make_interval",
                  exp.JSONArrayAgg: "json_agg", exp.SHA2Digest: "sha256"}


def typed(tree: exp.Expression) -> None:
    """Rewrites that need the operands' types (the tree is annotated; changed in place)."""
    for cast in list(tree.find_all(exp.Cast)):
        if cast.to.this in (_T.BINARY, _T.VARBINARY) and isinstance(cast.this, exp.Literal) and cast.this.is_string:
            # '\x0102'::bytea is two bytes, read by bytea's input function (Spark's cast
            # takes the text's own bytes); first, so that a cast of it to text sees them
            value = _fn("unhex", exp.Literal.string(decode_text(_BYTEA, cast.this.this.encode()).hex()))
            value.type = exp.DataType.build("BINARY")
            cast.replace(value)
    for node in list(tree.walk()):
        if node.meta.get("pg_substring"):
            text_form = _text_substring(node)
            if text_form is not None:
                node.replace(text_form)
        elif node.meta.get("pg_format"):
            node.replace(_format_call(node))
        elif type(node) in _PATTERN_CALLS or (isinstance(node, exp.Anonymous) and node.name.lower() in FRONT_END_ONLY
                                              and not node.meta.get("rewrite")):
            # sqlglot has already turned a PostgreSQL pattern into strftime's, which does not
            # map back one to one; these run on the front end of our own only
            name = _PATTERN_CALLS.get(type(node)) or node.name.lower()
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{name} is not supported in a query with a system catalog, "
                                                  "a GROUPS or EXCLUDE window frame, WITH ORDINALITY or ROWS FROM")
        elif isinstance(node, (exp.Concat, exp.ConcatWs)):
            for arg in list(node.expressions):
                text = _output_text(arg)
                if text is not None:
                    arg.replace(text)
        elif isinstance(node, exp.TimestampTrunc) and (_is(node.this, _T.INTERVAL) or isinstance(node.this, exp.Column)
                                                       and _is(node.this, _T.TEXT, _T.VARCHAR)):
            # an interval (kept as text) is truncated by the front end's UDF (pg_interval.trunc);
            # Spark's date_trunc would read the text as a timestamp
            raise SqlError(FEATURE_NOT_SUPPORTED, "date_trunc of an interval is not supported in a query with "
                                                  "WITH RECURSIVE, LATERAL, a set-returning function or a system "
                                                  "catalog")
        elif isinstance(node, exp.TimestampTrunc) and _is(node.this, _T.TIMESTAMPNTZ):
            # Spark's DATE_TRUNC gives a TIMESTAMP (with time zone) even for one without.
            node.replace(exp.Cast(this=node.copy(), to=exp.DataType.build("TIMESTAMP_NTZ")))
        elif isinstance(node, exp.Round) and node.args.get("decimals") is None and _is_float(node.this):
            node.replace(_fn("bround", node.this))  # round half to even, as C's rint
        elif isinstance(node, exp.Hex):
            value = node.this
            if _is(value, _T.INT, _T.SMALLINT, _T.TINYINT):  # a negative int4 in 32-bit two's complement
                value = exp.BitwiseAnd(this=exp.Cast(this=value.copy(), to=exp.DataType.build("BIGINT")),
                                       expression=exp.Literal.number(4294967295))
            node.replace(exp.Lower(this=_fn("hex", value)))
        elif isinstance(node, exp.Sub) and _is(node.this, _T.DATE) and _is(node.expression, _T.DATE):
            node.replace(_fn("datediff", node.this, node.expression))  # days, an integer
        elif isinstance(node, exp.Extract) and _is(node.expression, _T.DATE) \
                and _unit(node) in ("hour", "minute", "second", "milliseconds", "microseconds"):
            node.replace(pg_error("0A000", f'unit "{_unit(node)}" not supported for type date'))
        elif isinstance(node, exp.Cast) and node.to.this in (_T.TEXT, _T.VARCHAR) and (
                _is(node.this, _T.ARRAY) or node.this.meta.get("pg_array")):
            node.replace(_array_text(node))
        elif isinstance(node, exp.Cast) and node.to.this in (_T.TEXT, _T.VARCHAR) \
                and _is(node.this, _T.BINARY, _T.VARBINARY):
            node.replace(_bytea_text(node))
        elif isinstance(node, exp.DPipe) and (_is(node.this, _T.ARRAY) or _is(node.expression, _T.ARRAY)):
            node.replace(_array_concat(node))
        elif isinstance(node, exp.Div) and _wide_decimal(node.this) and _wide_decimal(node.expression):
            node.replace(_decimal_division(node))
        elif (call := _float_function(node)) is not None:
            node.replace(call)


# The digits after the point a numeric needs (min_scale): those its text has before its
# trailing zeros
MIN_SCALE = "length(regexp_extract(cast({0} as string), '[.]([0-9]*?)0*$', 1))"
# A numeric's text without the trailing zeros of its Spark scale ({0}: its text)
UNSCALED_NUMERIC_TEXT = "CASE WHEN instr({0}, '.') > 0 THEN regexp_replace({0}, '[.]?0+$', '') ELSE {0} END"


def _numeric_constant(node: exp.Expression) -> str | None:
    """The digits of a numeric constant (2.50, -1e3) as PostgreSQL prints it, else None:
    sqlglot types 2.50 as DOUBLE, whose text would be 2.5."""
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if not (isinstance(literal, exp.Literal) and literal.is_number):
        return None
    digits = f"{Decimal(literal.this):f}"
    return f"-{digits}" if negative and Decimal(digits) else digits


def _output_text(arg: exp.Expression) -> exp.Expression | None:
    """A concat/concat_ws argument as its type's output function writes it, where Spark's
    own text of it would differ (None: it is the same)."""
    constant = _numeric_constant(arg)
    to_text = exp.Cast(this=arg.copy(), to=exp.DataType.build("STRING"))
    if constant is not None:
        return exp.Literal.string(constant)
    if _is(arg, _T.BOOLEAN):
        return _bool_text(arg)
    if _wide_decimal(arg):  # an unconstrained numeric: its digits without Spark's scale's zeros
        return filled(UNSCALED_NUMERIC_TEXT, to_text)
    if _is(arg, *_SAME_TEXT_TYPES):
        # Spark writes coalesce(n, '') for it: n must be text first, or '' is read as a number
        return to_text
    if _is(arg, _T.ARRAY) or arg.meta.get("pg_array"):
        return _array_text(to_text)
    if _is(arg, _T.BINARY, _T.VARBINARY):
        return _bytea_text(to_text)
    if _is(arg, _T.DOUBLE):
        return _fn(FLOAT_TEXT_UDFS["double precision"], arg.copy())
    if _is(arg, _T.FLOAT):
        return _fn(FLOAT_TEXT_UDFS["real"], arg.copy())
    if _is(arg, _T.TIMESTAMP, _T.TIMESTAMPLTZ, _T.TIMESTAMPTZ):
        return _fn("concat", to_text, exp.Literal.string("+00"))  # the session's TimeZone, always UTC
    return None


def _float_function(node: exp.Expression) -> exp.Expression | None:
    """A float8 function as the C library computes it (planner.pg_float), else None: exp, ln
    and log10 of a numeric are numeric functions."""
    if not isinstance(node, exp.Func):
        return None
    name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    if isinstance(node, exp.Anonymous):
        args = list(node.expressions)
    else:
        args = [v for k in node.arg_types if isinstance(v := node.args.get(k), exp.Expression)]
    if name == "log" and len(args) == 2 and isinstance(args[0], exp.Literal) and args[0].this == "10":
        name, args = "log10", args[1:]  # log10(x) and log(x), as _log writes them
    if name not in pg_float.UDF_NAMES:
        return None
    if name in ("exp", "ln", "log10") and not (len(args) == 1 and _is_float(args[0])):
        return None
    return _fn(pg_float.UDF_NAMES[name], *(a if _is(a, _T.DOUBLE) else exp.Cast(this=a.copy(), to=exp.DataType.build("DOUBLE"))
                                           for a in args))


def _format_call(node: exp.Anonymous) -> exp.Expression:
    """format(fmt, args...) on the sqlglot path: each argument as its output function's text
    where the type tells it (t/f, float8out, integers and text as Spark writes them)."""
    texts = []
    for arg in node.expressions[1].expressions:
        if _is(arg, _T.BOOLEAN):
            texts.append(_bool_text(arg))
        elif _is_float(arg):
            name = FLOAT_TEXT_UDFS["real" if _is(arg, _T.FLOAT) else "double precision"]
            texts.append(_fn(name, arg))
        elif _is(arg, _T.TEXT, _T.VARCHAR, _T.INT, _T.BIGINT, _T.SMALLINT, _T.TINYINT, _T.NULL) and not (
                isinstance(arg, exp.Literal) and not arg.is_string and not arg.name.lstrip("-").isdigit()):
            texts.append(exp.Cast(this=arg.copy(), to=exp.DataType.build("STRING")))
        else:
            raise SqlError(FEATURE_NOT_SUPPORTED, "format() of this argument type is not supported here")
    array = exp.Cast(this=exp.Array(expressions=texts), to=exp.DataType.build("ARRAY<STRING>"))
    return _fn(node.name, node.expressions[0], array)


def _wide_decimal(node: exp.Expression) -> bool:
    """An unconstrained numeric (DECIMAL(38, 10) here): Spark would divide two of them at
    scale 6 (its precision-loss rule), PostgreSQL gives at least 16 significant digits."""
    t = _type(node)
    if t is None or t.this != _T.DECIMAL:
        return False
    params = t.expressions
    return bool(params) and int(params[0].name) >= 30


def _decimal_division(node: exp.Div) -> exp.Expression:
    """In double precision, as a numeric with 16 decimal places."""
    quotient = exp.Div(this=exp.Cast(this=node.this.copy(), to=exp.DataType.build("DOUBLE")),
                       expression=exp.Cast(this=node.expression.copy(), to=exp.DataType.build("DOUBLE")))
    return exp.Cast(this=quotient, to=exp.DataType.build("DECIMAL(38, 16)"))


# Float arithmetic: PostgreSQL raises 22003 where a finite operation overflows to ±Infinity
# (or, for * and /, underflows to 0); Spark returns the IEEE value. The operands are bound
# once in a one-element transform() so that nested arithmetic does not copy them.
_INF = "CAST('Infinity' AS DOUBLE)"
_OVERFLOW = f"raise_error('{ERROR_PREFIX}22003:value out of range: overflow')"
_UNDERFLOW = f"raise_error('{ERROR_PREFIX}22003:value out of range: underflow')"


def float_arithmetic_template(op: str) -> str:
    """The Spark template (`{0}`, `{1}`) of a float4/float8 `+ - * /` with PostgreSQL's errors."""
    r = f"sw_f.a {op} sw_f.b"
    overflow = f"abs({r}) = {_INF} AND abs(sw_f.a) <> {_INF}"
    if op != "/":
        overflow += f" AND abs(sw_f.b) <> {_INF}"
    checks = f"WHEN {overflow} THEN {_OVERFLOW} "
    if op == "*":
        checks += f"WHEN {r} = 0 AND sw_f.a <> 0 AND sw_f.b <> 0 THEN {_UNDERFLOW} "
    elif op == "/":
        checks += f"WHEN {r} = 0 AND sw_f.a <> 0 AND abs(sw_f.b) <> {_INF} THEN {_UNDERFLOW} "
    return (f"element_at(transform(array(named_struct('a', {{0}}, 'b', {{1}})), "
            f"sw_f -> CASE {checks}ELSE {r} END), 1)")


# float8 → float4 (`{0}` the float8, `{1}` its cast): PostgreSQL's float84 raises 22003
# where the value is out of float4's range; Spark's cast gives Infinity or 0.
FLOAT4_NARROWING = (f"CASE WHEN abs({{1}}) = {_INF} AND abs({{0}}) <> {_INF} THEN {_OVERFLOW} "
                    f"WHEN {{1}} = 0 AND {{0}} <> 0 THEN {_UNDERFLOW} ELSE {{1}} END")


def float_power_template() -> str:
    """The Spark template of float8 `^` with PostgreSQL's dpow: its domain errors (2201F),
    overflow and underflow (22003), and pow(1, NaN) = 1, where Spark's power is Java's."""
    r = "power(sw_p.a, sw_p.b)"
    finite = f"abs(sw_p.a) <> {_INF} AND abs(sw_p.b) <> {_INF}"
    return ("element_at(transform(array(named_struct('a', {0}, 'b', {1})), sw_p -> CASE "
            f"WHEN sw_p.a = 0 AND sw_p.b < 0 THEN raise_error('{ERROR_PREFIX}2201F:zero raised to a negative "
            "power is undefined') "
            f"WHEN sw_p.a < 0 AND sw_p.b <> rint(sw_p.b) THEN raise_error('{ERROR_PREFIX}2201F:a negative number "
            "raised to a non-integer power yields a complex result') "
            "WHEN sw_p.a = 1 THEN CAST(1 AS DOUBLE) "
            f"WHEN abs({r}) = {_INF} AND {finite} THEN {_OVERFLOW} "
            f"WHEN {r} = 0 AND sw_p.a <> 0 AND {finite} THEN {_UNDERFLOW} "
            f"ELSE {r} END), 1)")


_FLOAT_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
_FLOAT_TYPES = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}


def _float_typed(e: exp.Expression) -> bool:
    while isinstance(e, (exp.Paren, exp.Neg)):
        e = e.this
    return not isinstance(e, exp.Literal) and e.type is not None and e.type.this in _FLOAT_TYPES


def mark_user_arithmetic(tree: exp.Expression) -> None:
    """Mark the arithmetic the user wrote, before rewrites add their own (which cannot
    overflow, and whose catalogued text must stay as it is)."""
    for node in tree.find_all(*_FLOAT_OPS):
        node.meta["pg_arithmetic"] = True


def checked_float_arithmetic(node: exp.Expression) -> exp.Expression:
    """A sqlglot-typed `a op b` of floats the user wrote, with PostgreSQL's overflow errors;
    anything else as is."""
    op = _FLOAT_OPS.get(type(node))
    if op is None or not node.meta.get("pg_arithmetic") or node.type is None or node.type.this not in _FLOAT_TYPES:
        return node
    if not any(_float_typed(side) for side in (node.this, node.expression)):
        return node  # sqlglot types a constant like 2.0 as DOUBLE; PostgreSQL's is numeric
    return filled(float_arithmetic_template(op), node.this, node.expression)


# char(n): Spark's CHAR(n) in a cast is a plain string, neither padded nor compared as
# PostgreSQL's bpchar is. PostgreSQL pads it to n, ignores trailing spaces when comparing,
# strips them when converting to text, and LIKE sees the padded value.
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def _is_char(e: exp.Expression) -> bool:
    return e.type is not None and e.type.this == exp.DataType.Type.CHAR


def _rtrim(e: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="rtrim", expressions=[e.copy()])


def _is_type(e: exp.Expression, kind: exp.DataType.Type) -> bool:
    return e.type is not None and e.type.this == kind


def date_arithmetic(tree: exp.Expression) -> None:
    """`date ± interval` is a timestamp in PostgreSQL (Spark's stays a date): the date is made
    a timestamp first; `date - date` is a number of days (Spark's is an interval). In a
    sqlglot-typed tree (in place)."""
    for op in list(tree.find_all(exp.Add, exp.Sub)):
        sides = (op.this, op.expression)
        dates = [_is_type(s, exp.DataType.Type.DATE) for s in sides]
        untyped = [isinstance(s, exp.Literal) and s.is_string for s in sides]  # PostgreSQL's unknown
        if isinstance(op, exp.Sub) and all(d or u for d, u in zip(dates, untyped)) and any(dates):
            op.replace(_fn("datediff", *[s.copy() if d else exp.Cast(this=s.copy(), to=exp.DataType.build("DATE"))
                                         for s, d in zip(sides, dates)]))
            continue
        interval = [isinstance(s, exp.Interval) or _is_type(s, exp.DataType.Type.INTERVAL) for s in sides]
        for i, side in enumerate(sides):
            if interval[1 - i] and _is_type(side, exp.DataType.Type.DATE) and (i == 0 or isinstance(op, exp.Add)):
                side.replace(exp.Cast(this=side.copy(), to=exp.DataType.build("TIMESTAMP_NTZ")))


_TEXT_TYPES = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR)


def timestamptz_text(tree: exp.Expression) -> None:
    """A timestamptz as text carries the offset of the session's TimeZone, always UTC here
    (timestamptz_out: `2026-01-05 10:20:30+00`; Spark's cast leaves it out), in a
    sqlglot-typed tree (in place)."""
    for cast in list(tree.find_all(exp.Cast)):
        arg = cast.this
        if cast.to.this in _TEXT_TYPES and _is_type(arg, exp.DataType.Type.TIMESTAMPTZ):
            arg.replace(_fn("concat", exp.Cast(this=arg.copy(), to=exp.DataType.build("STRING")),
                            exp.Literal.string("+00")))


def series_values(start: exp.Expression, end: exp.Expression, step: exp.Expression | None = None) -> exp.Expression:
    """The values of generate_series as an array: none when `end` lies the other way from
    `start` (Spark's sequence would count back, or fail), PostgreSQL's error for a zero step."""
    step = step if step is not None else exp.Literal.number(1)
    upward = exp.and_(exp.GT(this=step.copy(), expression=exp.Literal.number(0)),
                      exp.LTE(this=start.copy(), expression=end.copy()))
    downward = exp.and_(exp.LT(this=step.copy(), expression=exp.Literal.number(0)),
                        exp.GTE(this=start.copy(), expression=end.copy()))
    sequence = exp.Anonymous(this="sequence", expressions=[start.copy(), end.copy(), step.copy()])
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=step.copy(), expression=exp.Literal.number(0)),
               true=pg_error("22023", "step size cannot equal zero")),
        exp.If(this=exp.or_(upward, downward), true=sequence)],
        default=exp.Anonymous(this="array", expressions=[]))


def char_semantics(tree: exp.Expression) -> None:
    """Give a sqlglot-typed tree's char(n) values PostgreSQL's meaning (in place)."""
    for cmp in list(tree.find_all(*_COMPARISONS)):
        for side in (cmp.this, cmp.expression):
            if _is_char(side):
                side.replace(_rtrim(side))
    for op in list(tree.find_all(exp.DPipe)):  # || takes char(n) as text: without the padding
        for side in (op.this, op.expression):
            if _is_char(side):
                side.replace(_rtrim(side))
    for length in list(tree.find_all(exp.Length)):  # length(char(n)) does not count the padding
        if _is_char(length.this):
            length.this.replace(_rtrim(length.this))
    for cast in list(tree.find_all(exp.Cast)):
        inner = cast.this
        if _is_char(inner) and cast.to.this in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR):
            cast.set("this", _rtrim(inner))
    for cast in reversed(list(tree.find_all(exp.Cast))):
        size = cast.to.find(exp.DataTypeParam)
        if cast.to.this == exp.DataType.Type.VARCHAR and size is not None:
            cast.replace(varchar_cut(cast.this.copy(), int(size.name)))
            continue
        if cast.to.this != exp.DataType.Type.CHAR:
            continue
        size = cast.to.find(exp.DataTypeParam)
        n = int(size.name) if size is not None else 1
        padded = exp.Anonymous(this="rpad", expressions=[
            exp.Cast(this=cast.this.copy(), to=exp.DataType.build("STRING")), exp.Literal.number(n),
            exp.Literal.string(" ")])
        cast.replace(padded)


def varchar_cut(value: exp.Expression, n: int) -> exp.Expression:
    """An explicit cast to varchar(n): the text cut to n characters (Spark's VARCHAR(n) in a
    cast is a plain string)."""
    return exp.Anonymous(this="substr", expressions=[exp.Cast(this=value, to=exp.DataType.build("STRING")),
                                                     exp.Literal.number(1), exp.Literal.number(n)])


# An array as text is PostgreSQL's array_out: {a,b,NULL}, an element quoted (" and \
# escaped) when it is empty, NULL, or holds a brace, comma, quote, backslash or white space.
# Spark's CAST(array AS STRING) writes [a, b, null]. Elements whose text Spark writes as
# PostgreSQL does (told apart by Spark's typeof, so no static type is needed); others are
# refused (0A000) rather than printed differently.
_SAME_TEXT = "('string', 'int', 'bigint', 'smallint', 'tinyint', 'date')"
_SPECIAL = "concat('{},\"', chr(92), ' ', chr(9), chr(10), chr(11), chr(12), chr(13))"
_ELEMENT = ("CASE WHEN typeof(sw_e) = 'boolean' THEN substr(CAST(sw_e AS STRING), 1, 1) "
            f"WHEN typeof(sw_e) IN {_SAME_TEXT} OR typeof(sw_e) LIKE 'decimal%' OR typeof(sw_e) LIKE 'char%' "
            "OR typeof(sw_e) LIKE 'varchar%' THEN CAST(sw_e AS STRING) "
            "ELSE raise_error('sparkwire:0A000:this array type cannot be cast to text yet') END")


def array_text_template() -> str:
    """The Spark template (`{0}` the array) of `array::text`, PostgreSQL's array_out."""
    s = _ELEMENT
    quoted = (f"concat('\"', replace(replace({s}, chr(92), concat(chr(92), chr(92))), '\"', "
              f"concat(chr(92), '\"')), '\"')")
    needs = f"{s} = '' OR upper({s}) = 'NULL' OR length(translate({s}, {_SPECIAL}, '')) < length({s})"
    return (f"concat('{{', array_join(transform({{0}}, sw_e -> CASE WHEN sw_e IS NULL THEN 'NULL' "
            f"WHEN {needs} THEN {quoted} ELSE {s} END), ','), '}}')")


def _array_text(cast: exp.Cast) -> exp.Expression:
    tree = sqlglot.parse_one(array_text_template().replace("{0}", "__a0"), read="spark")
    arr = cast.this
    return tree.transform(lambda n: arr.copy() if isinstance(n, exp.Column) and n.name == "__a0" else n)
