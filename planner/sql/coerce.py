"""PostgreSQL's typing rules, over the types and catalogs sparkwire has.

What PostgreSQL's parse_coerce.c, parse_func.c and parse_oper.c decide, reduced to
our types: which casts apply implicitly, what type a literal has, which overload of
a function or operator a call means (PostgreSQL's documented algorithm, "Type
Conversion" chapter 10.2/10.3), and the common type of UNION/CASE/COALESCE branches
(10.5). Pure: no catalog of relations, no Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from planner.codecs.text_in import decode_text
from planner.errors import DATATYPE_MISMATCH, UNDEFINED_FUNCTION, SqlError
from planner.functions import Function
from planner.operators import Operator
from planner.sql.plan import Cast, ColRef, Expr, Literal, Map, NotYet, Param, Project, Rel, columns
from planner.types import RECORD as RECORD_TYPE
from planner.types import PgType, SqlType, lookup

AMBIGUOUS_FUNCTION = "42725"

# A string literal or NULL before context gives it a type (PostgreSQL's `unknown`, OID 705).
UNKNOWN = SqlType(PgType("unknown", 705, -2, "STRING", 0))


# A row value (`t` naming a FROM item, `ROW(1, 'x')`): PostgreSQL's pseudo-type `record`.
RECORD = SqlType(RECORD_TYPE)


def named(name: str) -> SqlType:
    """A catalog's type name (`integer`, `text[]`) as a SqlType."""
    if name == "record":
        return RECORD
    is_array = name.endswith("[]")
    base = lookup(name.removesuffix("[]"))
    if base is None:
        raise KeyError(name)
    return SqlType(base, -1, is_array)


BOOLEAN = named("boolean")
INTEGER = named("integer")
BIGINT = named("bigint")
NUMERIC = named("numeric")
TEXT = named("text")

# pg_type.typcategory and typispreferred of our types.
_CATEGORY = {
    "smallint": "N", "integer": "N", "bigint": "N", "numeric": "N", "real": "N",
    "double precision": "N", "oid": "N",
    "text": "S", "character varying": "S", "character": "S", "name": "S", "char": "Z",
    "boolean": "B", "date": "D", "timestamp without time zone": "D",
    "timestamp with time zone": "D", "time without time zone": "D", "interval": "T",
    "bytea": "U", "uuid": "U", "json": "U", "jsonb": "U", "unknown": "X", "record": "P",
}
_PREFERRED = frozenset(("double precision", "oid", "text", "boolean", "timestamp with time zone", "interval"))

# pg_cast entries with castcontext 'i' between our types (source → targets).
_IMPLICIT = {
    "smallint": ("integer", "bigint", "numeric", "real", "double precision", "oid"),
    "integer": ("bigint", "numeric", "real", "double precision", "oid"),
    "bigint": ("numeric", "real", "double precision", "oid"),
    "numeric": ("real", "double precision"),
    "real": ("double precision",),
    "character": ("text", "character varying"),
    "character varying": ("text", "character"),
    "text": ("character", "character varying", "name"),
    "name": ("text",),
    "char": ("text",),
    "date": ("timestamp without time zone", "timestamp with time zone"),
    "timestamp without time zone": ("timestamp with time zone",),
}

POLYMORPHIC = frozenset(("anyelement", "anynonarray", "anycompatible", "anyarray", "anycompatiblearray",
                          '"any"', "any"))


def category(t: SqlType) -> str:
    return "A" if t.is_array else _CATEGORY.get(t.base.name, "U")


def is_preferred(t: SqlType) -> bool:
    return not t.is_array and t.base.name in _PREFERRED


def can_coerce(source: SqlType, target: SqlType) -> bool:
    """Whether `source` converts to `target` implicitly (an unknown literal to anything)."""
    if source == UNKNOWN or _same(source, target):
        return True
    if source.is_array or target.is_array:
        return source.is_array and target.is_array and can_coerce(
            SqlType(source.base), SqlType(target.base))
    return target.base.name in _IMPLICIT.get(source.base.name, ())


# pg_cast entries with castcontext 'a' between our types, beyond the implicit ones: what
# INSERT and UPDATE convert without being asked (source → targets).
_ASSIGNMENT = {
    "bigint": ("smallint", "integer"),
    "integer": ("smallint",),
    "numeric": ("smallint", "integer", "bigint"),
    "real": ("smallint", "integer", "bigint", "numeric"),
    "double precision": ("smallint", "integer", "bigint", "numeric", "real"),
    "timestamp without time zone": ("date", "time without time zone"),
    "timestamp with time zone": ("date", "time without time zone", "timestamp without time zone"),
    "interval": ("time without time zone",),
    "json": ("jsonb",),
    "jsonb": ("json",),
}


def can_assign(source: SqlType, target: SqlType) -> bool:
    """Whether INSERT or UPDATE stores a `source` value in a `target` column (PostgreSQL's
    assignment coercion: implicit and assignment casts, and any type's text form into a
    string column)."""
    if can_coerce(source, target):
        return True
    if source.is_array or target.is_array:
        return source.is_array and target.is_array and can_assign(SqlType(source.base), SqlType(target.base))
    return category(target) == "S" or target.base.name in _ASSIGNMENT.get(source.base.name, ())


def _same(a: SqlType, b: SqlType) -> bool:
    return a.base.name == b.base.name and a.is_array == b.is_array


def literal_type(value: int | Decimal | str | bool | None) -> SqlType:
    """The type PostgreSQL gives a constant as written: integers by size, other numbers
    numeric, strings and NULL unknown."""
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return INTEGER
        return BIGINT if -(2**63) <= value < 2**63 else NUMERIC
    if isinstance(value, Decimal):
        return NUMERIC
    return UNKNOWN


def common_type(types: Sequence[SqlType], context: str) -> SqlType:
    """The type UNION, CASE, COALESCE, IN and VALUES resolve their branches to (10.5)."""
    known = [t for t in types if t != UNKNOWN]
    if not known:
        return TEXT
    chosen = known[0]
    for t in known[1:]:
        if _same(t, chosen):
            continue
        if category(t) != category(chosen):
            raise SqlError(DATATYPE_MISMATCH,
                           f"{context} types {chosen.display()} and {t.display()} cannot be matched")
        if not is_preferred(chosen) and can_coerce(chosen, t) and not can_coerce(t, chosen):
            chosen = t
    for t in known:
        if not can_coerce(t, chosen):
            raise SqlError(DATATYPE_MISMATCH,
                           f"{context} could not convert type {t.display()} to {chosen.display()}")
    return chosen


# -- overload resolution -----------------------------------------------------------------------

def _accepts(param: str, arg: SqlType) -> bool:
    if param in POLYMORPHIC:
        wants_array = param in ("anyarray", "anycompatiblearray")
        return arg == UNKNOWN or param in ('"any"', "any") or arg.is_array == wants_array or (
            param in ("anyelement", "anycompatible"))
    try:
        return can_coerce(arg, named(param))
    except KeyError:
        return False


def _exact(param: str, arg: SqlType) -> bool:
    if param in POLYMORPHIC or arg == UNKNOWN:
        return False
    try:
        return _same(arg, named(param))
    except KeyError:
        return False


def _preferred_at(param: str) -> bool:
    try:
        return param not in POLYMORPHIC and is_preferred(named(param))
    except KeyError:
        return False


def _category_of(param: str) -> str | None:
    if param in POLYMORPHIC:
        return None
    try:
        return category(named(param))
    except KeyError:
        return None


def choose(candidates: Sequence[tuple[str, ...]], args: Sequence[SqlType]) -> int | None:
    """The index of the candidate signature PostgreSQL picks for `args`, or None when no
    candidate fits; raises 42725 when several fit equally well."""
    fitting = [i for i, sig in enumerate(candidates) if _fits(sig, args)]
    if not fitting:
        return None
    exact = [i for i in fitting if all(_exact(p, a) for p, a in zip(candidates[i], args, strict=True))]
    if exact:
        return exact[0]
    known = [a for a in args if a != UNKNOWN]
    if len(args) == 2 and len(known) == 1:
        # 10.2 step 2.a: an unknown operand of a binary operator is taken as the other's type.
        same = [i for i in fitting if all(_exact(p, known[0]) for p in candidates[i])]
        if len(same) == 1:
            return same[0]
    if len(fitting) == 1:
        return fitting[0]
    fitting = _keep_best(fitting, lambda i: sum(_exact(p, a) for p, a in zip(candidates[i], args, strict=True)))
    fitting = _keep_best(fitting, lambda i: sum(_preferred_at(p) and not _exact(p, a)
                                                for p, a in zip(candidates[i], args, strict=True)))
    if len(fitting) > 1 and UNKNOWN in args:
        fitting = _resolve_unknowns(candidates, args, fitting)
    if len(fitting) > 1 and UNKNOWN in args and len({a.base.name for a in known}) == 1:
        assumed = [known[0] if a == UNKNOWN else a for a in args]
        same = [i for i in fitting if _fits(candidates[i], assumed)
                and all(_exact(p, known[0]) or p in POLYMORPHIC for p in candidates[i])]
        if len(same) == 1:
            return same[0]
    if len(fitting) == 1:
        return fitting[0]
    raise SqlError(AMBIGUOUS_FUNCTION, "is not unique")


def _fits(sig: tuple[str, ...], args: Sequence[SqlType]) -> bool:
    """Whether each argument converts to its parameter, and the polymorphic ones agree."""
    return (len(sig) == len(args) and all(_accepts(p, a) for p, a in zip(sig, args, strict=True))
            and _elements(sig, args) is not None)


# PostgreSQL's two families of polymorphic types: anyelement, anyarray and anynonarray stand
# for one element type exactly; anycompatible and anycompatiblearray for the common type of
# their arguments (parse_coerce.c, check_generic_type_consistency).
_FAMILY = {"anyelement": "any", "anynonarray": "any", "anyarray": "any",
           "anycompatible": "compatible", "anycompatiblearray": "compatible"}
_ARRAY_PARAMS = frozenset(("anyarray", "anycompatiblearray"))


def _elements(params: Sequence[str], args: Sequence[SqlType]) -> dict[str, SqlType | None] | None:
    """The element type each polymorphic family in `params` stands for with these
    arguments (None: only unknown arguments gave it), or None when they disagree."""
    given: dict[str, list[SqlType]] = {}
    arrays: set[str] = set()
    for p, a in zip(params, args, strict=False):
        family = _FAMILY.get(p)
        if family is None:
            continue
        given.setdefault(family, [])
        if p in _ARRAY_PARAMS:
            arrays.add(family)
        if a == UNKNOWN:
            continue
        if p in _ARRAY_PARAMS:
            if not a.is_array:
                return None
            given[family].append(SqlType(a.base, a.typmod))
        elif p == "anynonarray" and a.is_array:
            return None
        else:
            given[family].append(a)
    out: dict[str, SqlType | None] = {}
    for family, types in given.items():
        if family in arrays and any(t.is_array for t in types):
            return None  # an element that is an array: sparkwire's arrays have one dimension
        if not types:
            out[family] = None
        elif family == "any":
            if any(not _same(t, types[0]) for t in types):
                return None
            out[family] = common_typmod(types[0], types)
        else:
            try:
                out[family] = common_typmod(common_type(types, "polymorphic"), types)
            except SqlError:
                return None
    return out


def common_typmod(t: SqlType, types: Sequence[SqlType]) -> SqlType:
    """`t`, with the typmod all of `types` share (none when they differ)."""
    same = all(_same(x, t) and x.typmod == t.typmod for x in types)
    return t if same else SqlType(t.base, -1, t.is_array)


def param_types(params: Sequence[str], args: Sequence[SqlType]) -> list[SqlType | None]:
    """Each parameter's type for these arguments, polymorphic ones resolved as PostgreSQL's
    enforce_generic_type_consistency does (None for "any": the argument as it is). An
    anyelement family given only unknown arguments is PostgreSQL's 42804; an anycompatible
    one is text."""
    elements = _elements(params, args)
    if elements is None:
        raise SqlError(DATATYPE_MISMATCH, "arguments declared polymorphic are not all alike")
    out: list[SqlType | None] = []
    for p in params:
        family = _FAMILY.get(p)
        if family is None:
            out.append(None if p in POLYMORPHIC else named(p))
            continue
        element = elements[family]
        if element is None:
            if family == "any":
                raise SqlError(DATATYPE_MISMATCH, "could not determine polymorphic type because input has type "
                                                  "unknown")
            element = TEXT
        out.append(SqlType(element.base, element.typmod, True) if p in _ARRAY_PARAMS else element)
    return out


def _keep_best(indices: list[int], score) -> list[int]:
    best = max(score(i) for i in indices)
    return [i for i in indices if score(i) == best]


def _resolve_unknowns(candidates: Sequence[tuple[str, ...]], args: Sequence[SqlType],
                      fitting: list[int]) -> list[int]:
    """10.2 step 3.e: at each unknown argument, prefer the string category if any
    candidate takes it, else the one category all candidates take, then its preferred type."""
    for pos, arg in enumerate(args):
        if arg != UNKNOWN:
            continue
        cats = {_category_of(candidates[i][pos]) for i in fitting}
        want = "S" if "S" in cats else (next(iter(cats)) if len(cats) == 1 else None)
        if want is None:
            continue
        kept = [i for i in fitting if _category_of(candidates[i][pos]) == want]
        preferred = [i for i in kept if _preferred_at(candidates[i][pos])]
        fitting = preferred or kept or fitting
    return fitting


def resolve_function(name: str, overloads: Sequence[Function], args: Sequence[SqlType]) -> Function:
    """The catalogued signature a call of `name` means, or PostgreSQL's 42883."""
    call = _call_text(name, args)
    index = _pick([expand_args(f, len(args)) for f in overloads], args, "function",
                  f"function {call} is not unique", f"function {call} does not exist")
    return overloads[index]


def expand_args(f: Function, nargs: int) -> tuple[str, ...]:
    """A signature's parameter types for a call with `nargs` arguments (variadic and
    defaulted parameters spelled out; a signature that cannot take them never fits)."""
    if f.variadic and nargs >= len(f.args):
        return f.args[:-1] + (f.args[-1],) * (nargs - len(f.args) + 1)
    if len(f.args) - f.defaults <= nargs <= len(f.args):
        return f.args[:nargs]
    return ("-",) * (nargs + 1)  # never fits


def resolve_operator(name: str, overloads: Sequence[Operator], args: Sequence[SqlType]) -> Operator:
    """The catalogued operator `name` means for these operands (one for a prefix
    operator), or PostgreSQL's 42883."""
    shown = _op_text(name, args)
    index = _pick([((o.left,) if o.left else ()) + (o.right,) for o in overloads], args, "operator",
                  f"operator is not unique: {shown}", f"operator does not exist: {shown}")
    return overloads[index]


def _pick(signatures: list[tuple[str, ...]], args: Sequence[SqlType], noun: str, not_unique: str,
          missing: str) -> int:
    """`choose`, with PostgreSQL's errors and hints when no signature or several fit."""
    try:
        index = choose(signatures, args)
    except SqlError as err:
        raise SqlError(AMBIGUOUS_FUNCTION, not_unique, hint=f"Could not choose a best candidate {noun}. "
                                                            "You might need to add explicit type casts.") from err
    if index is None:
        raise SqlError(UNDEFINED_FUNCTION, missing, hint=f"No {noun} matches the given name and argument types. "
                                                         "You might need to add explicit type casts.")
    return index


def result_type(result: str, params: Sequence[str], args: Sequence[SqlType]) -> SqlType:
    """A signature's result type, with polymorphic results resolved from the arguments."""
    if result not in POLYMORPHIC:
        try:
            return named(result)
        except KeyError:  # void, inet, record, ...: the sqlglot path shapes the calls that give them
            raise NotYet(f"a result of type {result} is not covered by this front end yet") from None
    family = _FAMILY.get(result)
    elements = _elements(params, args) or {}
    element = elements.get(family) if family is not None else None
    if element is None:  # "any", or a family its arguments did not fix: as an argument
        for p, a in zip(params, args, strict=False):
            if p in POLYMORPHIC and a != UNKNOWN:
                element = SqlType(a.base, a.typmod)  # an array argument gives its element type
    element = element or TEXT
    if result in _ARRAY_PARAMS:
        return SqlType(element.base, element.typmod, True)
    return element


def _call_text(name: str, args: Sequence[SqlType]) -> str:
    return f"{name}({', '.join(a.display() for a in args)})"


def _op_text(name: str, args: Sequence[SqlType]) -> str:
    if len(args) == 1:
        return f"{name} {args[0].display()}"
    return f"{args[0].display()} {name} {args[1].display()}"


# -- expressions of a type ----------------------------------------------------------------------

def to_type(e: Expr, target: SqlType, context: str | None = None) -> Expr:
    """`e` as `target`, by an implicit cast (an unknown literal takes the type outright)."""
    if e.type == target or (e.type.base == target.base and e.type.is_array == target.is_array
                            and target.typmod < 0):
        return e
    if not can_coerce(e.type, target):
        what = f"{context} must be type {target.display()}, not type {e.type.display()}" if context else (
            f"cannot cast type {e.type.display()} to {target.display()} implicitly")
        raise SqlError("42804", what)
    if isinstance(e, Literal) and e.type == UNKNOWN:
        return typed_literal(e, target)
    if isinstance(e, Param) and e.type == UNKNOWN:
        return Param(e.number, target)
    return Cast(e, target)


def typed_literal(e: Literal, target: SqlType) -> Literal:
    """An unknown literal given its type: read by the type's input function now, as
    PostgreSQL does (so `'x'::integer` is 22P02 before anything runs)."""
    if e.value is None:
        return Literal(None, target)
    return Literal(decode_text(target, str(e.value).encode()), target)


CANNOT_COERCE = "42846"
_STRINGS = frozenset(("text", "character varying", "character", "name"))


def explicit_cast(arg: Expr, target: SqlType) -> Expr:
    """`arg::target`."""
    if isinstance(arg, Literal) and arg.type == UNKNOWN:
        if target.max_length is not None and not target.is_array and arg.value is not None:
            # An explicit cast cuts the text to the length ('abcd'::char(2) is 'ab'), where
            # the input function alone (an assignment) would refuse it with 22001.
            arg = Literal(str(arg.value)[:target.max_length], arg.type)
        return typed_literal(arg, target)
    if arg.type == RECORD and target != RECORD and (target.is_array or target.base.name not in _STRINGS):
        # a row value casts to a string type only (by its output function)
        raise SqlError(CANNOT_COERCE, f"cannot cast type record to {target.display()}")
    return Cast(arg, target) if arg.type != target else arg


def cast_columns(rel: Rel, types: list[SqlType]) -> Rel:
    """`rel` with its columns coerced to `types` (a set operation's branch to the common types)."""
    cols = columns(rel)
    if all(c.type == t for c, t in zip(cols, types, strict=True)):
        return rel
    width = len(cols)
    exprs = tuple(to_type(ColRef(0, i, c.type), t) for i, (c, t) in enumerate(zip(cols, types, strict=True)))
    return Project(Map(rel, exprs, tuple(c.name for c in cols)), tuple(range(width, 2 * width)),
                   tuple(c.name for c in cols))
