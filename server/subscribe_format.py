"""Shaping SUBSCRIBE output: plain diffs, WITHIN TIMESTAMP ORDER BY, ENVELOPE UPSERT/DEBEZIUM.

Every output modifier operates on one complete, consolidated timestamp at a
time (the design in Materialize's "subscribe outputs" RFC and its
`ActiveSubscribe` formatter), so this module needs no state between calls:

- `plan_output` checks the modifier against the relation's columns once, when
  the SUBSCRIBE is planned, and returns an `OutputPlan` describing the output
  columns (`names`, `types`) and the column positions the formatter uses;
- `format_timestamp` turns one timestamp's ``(row, diff)`` updates into output
  rows;
- `progress_row` builds the row announcing that a timestamp is complete.

Output columns, as Materialize describes them (`describe_subscribe`):

    diffs, order_by  mz_timestamp [mz_progressed] mz_diff <relation columns>
    upsert           mz_timestamp [mz_progressed] mz_state <keys> <values>
    debezium         mz_timestamp [mz_progressed] mz_state <keys> before_<v>... after_<v>...

Keys come in KEY (...) order, values are the remaining columns in relation
order. `mz_state` is ``upsert``, ``delete``, ``key_violation`` or, for
DEBEZIUM, ``insert``.

Pure: no I/O, no Spark, no asyncio.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from planner.errors import DUPLICATE_COLUMN, SYNTAX_ERROR, UNDEFINED_COLUMN, SqlError
from planner.subscribe_syntax import OrderKey, OutputMode
from planner.types import BY_NAME, SqlType, group_key

__all__ = [
    "OutputPlan",
    "SortKey",
    "format_timestamp",
    "plan_output",
    "progress_row",
    "subscription_label",
]

# PostgreSQL's ambiguous_column and invalid_column_reference; planner.errors does not name them.
_AMBIGUOUS_COLUMN = "42702"
_INVALID_COLUMN_REFERENCE = "42P10"

MZ_TIMESTAMP = "mz_timestamp"
MZ_PROGRESSED = "mz_progressed"
MZ_DIFF = "mz_diff"
MZ_STATE = "mz_state"

_NUMERIC = SqlType(BY_NAME["numeric"])
_BOOLEAN = SqlType(BY_NAME["boolean"])
_BIGINT = SqlType(BY_NAME["bigint"])
_TEXT = SqlType(BY_NAME["text"])

_ENVELOPES = ("upsert", "debezium")


@dataclass(frozen=True)
class SortKey:
    """One WITHIN TIMESTAMP ORDER BY key, resolved to a position."""

    column: int | None  # index into the relation's row; None means mz_diff
    descending: bool
    nulls_first: bool  # already defaulted: NULLS FIRST for DESC, LAST for ASC


@dataclass(frozen=True)
class OutputPlan:
    """Everything `format_timestamp` needs, decided once at planning time."""

    kind: str  # diffs | order_by | upsert | debezium
    progress: bool
    names: tuple[str, ...]  # output column names, in order
    types: tuple[SqlType, ...]  # output column types, parallel to names
    relation_arity: int
    key_indexes: tuple[int, ...] = ()  # upsert/debezium: relation positions, KEY (...) order
    value_indexes: tuple[int, ...] = ()  # upsert/debezium: the other positions, relation order
    sort: tuple[SortKey, ...] = ()  # order_by only

    @property
    def label(self) -> str:
        return _LABELS[self.kind]


_LABELS = {"diffs": "diffs", "order_by": "within_timestamp_order_by",
           "upsert": "envelope_upsert", "debezium": "envelope_debezium"}


def subscription_label(mode: OutputMode) -> str:
    """The metrics label of a SUBSCRIBE's output mode (`OutputMode.label`)."""
    return mode.label


# --------------------------------------------------------------------------- planning


def plan_output(mode: OutputMode, names: list[str], types: list[SqlType], progress: bool) -> OutputPlan:
    """Validate `mode` against the relation's columns and describe the output.

    Raises SqlError: 42703 for an unknown KEY or ORDER BY column (mz_diff as a
    KEY included), 42701 for a repeated KEY column, 42702 for a name the
    relation has twice, 42601 for an empty KEY list or an ORDER BY combined
    with an envelope.
    """
    if len(names) != len(types):
        raise ValueError("names and types must be parallel")
    names = list(names)
    types = list(types)
    head_names = [MZ_TIMESTAMP] + ([MZ_PROGRESSED] if progress else [])
    head_types = [_NUMERIC] + ([_BOOLEAN] if progress else [])
    kind = mode.kind

    if kind in ("diffs", "order_by"):
        if mode.keys:
            # An OutputMode is one modifier; keys here means it was built by hand wrongly.
            raise SqlError(SYNTAX_ERROR, "KEY (...) is only valid with ENVELOPE UPSERT or ENVELOPE DEBEZIUM")
        sort: tuple[SortKey, ...] = ()
        if kind == "order_by":
            sort = tuple(_resolve_order_key(k, names) for k in mode.order_by)
        elif mode.order_by:
            raise ValueError("OutputMode(kind='diffs') must not carry ORDER BY keys")
        return OutputPlan(
            kind=kind,
            progress=progress,
            names=tuple(head_names + [MZ_DIFF] + names),
            types=tuple(head_types + [_BIGINT] + types),
            relation_arity=len(names),
            sort=sort,
        )

    if kind not in _ENVELOPES:
        raise ValueError(f"unknown SUBSCRIBE output kind {kind!r}")
    envelope = f"ENVELOPE {kind.upper()}"
    if mode.order_by:
        _reject_order_by_with_envelope(mode, envelope)
    if not mode.keys:
        # Same wording as the parser, which normally catches KEY () first.
        raise SqlError(SYNTAX_ERROR, f"{envelope} needs at least one KEY column")

    key_indexes: list[int] = []
    for key in mode.keys:
        if key == MZ_DIFF and key not in names:
            # Materialize resolves KEY columns against the relation alone, so
            # mz_diff is simply an unknown column there; say why.
            raise SqlError(
                UNDEFINED_COLUMN, f'column "{MZ_DIFF}" does not exist',
                detail=f"{envelope} output has no mz_diff column.",
                hint="All keys must be columns on the underlying relation.")
        index = _resolve_relation_column(key, names, hint="All keys must be columns on the underlying relation.")
        if index in key_indexes:
            raise SqlError(
                DUPLICATE_COLUMN,
                f'column "{key}" specified more than once in SUBSCRIBE {envelope} (KEY (..))',
                hint="List each KEY column at most once.")
        key_indexes.append(index)

    value_indexes = [i for i in range(len(names)) if i not in key_indexes]
    out_names = head_names + [MZ_STATE] + [names[i] for i in key_indexes]
    out_types = head_types + [_TEXT] + [types[i] for i in key_indexes]
    if kind == "upsert":
        out_names += [names[i] for i in value_indexes]
        out_types += [types[i] for i in value_indexes]
    else:
        out_names += [f"before_{names[i]}" for i in value_indexes]
        out_names += [f"after_{names[i]}" for i in value_indexes]
        out_types += [types[i] for i in value_indexes] * 2
    return OutputPlan(
        kind=kind,
        progress=progress,
        names=tuple(out_names),
        types=tuple(out_types),
        relation_arity=len(names),
        key_indexes=tuple(key_indexes),
        value_indexes=tuple(value_indexes),
    )


def _reject_order_by_with_envelope(mode: OutputMode, envelope: str) -> None:
    # Materialize's grammar allows one output modifier. mz_diff gets its own
    # message because it is the one ORDER BY column an envelope's output lacks
    # by construction (Materialize: "invalid ORDER BY in SUBSCRIBE WITHIN
    # TIMESTAMP ORDER BY", hint "All order bys must be output columns.").
    for key in mode.order_by:
        if key.column == MZ_DIFF:
            raise SqlError(
                SYNTAX_ERROR,
                f'invalid ORDER BY in SUBSCRIBE WITHIN TIMESTAMP ORDER BY: column "{MZ_DIFF}" '
                f"is not an output column of {envelope}",
                hint="All order bys must be output columns.")
    raise SqlError(SYNTAX_ERROR, f"WITHIN TIMESTAMP ORDER BY cannot be combined with {envelope}")


def _resolve_order_key(key: OrderKey, names: list[str]) -> SortKey:
    # The columns ORDER BY may name are mz_diff and then the relation's, as Materialize
    # plans it: mz_diff wins a clash with a relation column of the same name, and the
    # ordinal 1 is mz_diff, 2 the relation's first column.
    descending, nulls_first = key.descending, key.effective_nulls_first
    if key.expression:
        raise SqlError(_INVALID_COLUMN_REFERENCE, "invalid ORDER BY in SUBSCRIBE WITHIN TIMESTAMP ORDER BY",
                       hint="Order by mz_diff, a column of the relation, or an ordinal of one.")
    if key.ordinal is not None:
        if not 1 <= key.ordinal <= len(names) + 1:
            raise SqlError(_INVALID_COLUMN_REFERENCE, f"ORDER BY position {key.ordinal} is not in select list")
        if key.ordinal == 1:
            return SortKey(None, descending, nulls_first)
        return SortKey(key.ordinal - 2, descending, nulls_first)
    if key.column == MZ_DIFF:
        return SortKey(None, descending, nulls_first)
    return SortKey(_resolve_relation_column(key.column, names), descending, nulls_first)


def _resolve_relation_column(column: str, names: list[str], hint: str | None = None) -> int:
    count = names.count(column)
    if count == 0:
        raise SqlError(UNDEFINED_COLUMN, f'column "{column}" does not exist', hint=hint)
    if count > 1:
        raise SqlError(_AMBIGUOUS_COLUMN, f'column reference "{column}" is ambiguous')
    return names.index(column)


# --------------------------------------------------------------------------- formatting


def format_timestamp(plan: OutputPlan, ts: int, updates: list[tuple[tuple, int]]) -> list[tuple]:
    """Output rows for one complete, consolidated timestamp.

    `updates` holds ``(row, diff)`` pairs: each row a tuple of the relation's
    values, each row at most once, no diff 0. Rows are tuples matching
    `plan.names`, with `ts` as given for mz_timestamp.
    """
    prefix: tuple = (ts, False) if plan.progress else (ts,)
    kind = plan.kind
    if kind == "diffs":
        return [prefix + (diff,) + tuple(row) for row, diff in updates]
    if kind == "order_by":
        return [prefix + (diff,) + tuple(row) for row, diff in _sorted_updates(plan.sort, updates)]
    return _format_envelope(plan, prefix, updates)


def progress_row(plan: OutputPlan, ts: int) -> tuple:
    """The row saying every update before `ts` has been sent (WITH (PROGRESS) only)."""
    if not plan.progress:
        raise ValueError("progress rows exist only for SUBSCRIBE ... WITH (PROGRESS)")
    return (ts, True) + (None,) * (len(plan.names) - 2)


def _sorted_updates(sort: tuple[SortKey, ...], updates: list[tuple[tuple, int]]) -> list[tuple[tuple, int]]:
    # Ties on the ORDER BY keys are broken by the whole row, then the diff, as
    # Materialize does, so the output does not depend on the order Spark
    # happened to return rows in. Python's sort is stable even with
    # reverse=True, so sorting by the least significant key first and the most
    # significant last yields the lexicographic order with per-key directions,
    # without a comparison function per pair.
    result = sorted(updates, key=lambda u: (_row_key(u[0]), u[1]))
    for key in reversed(sort):
        getter = _diff_of if key.column is None else _column_getter(key.column)
        null_rank = 1 if key.nulls_first == key.descending else -1
        result.sort(key=lambda u, g=getter, n=null_rank: _value_key(g(u), n), reverse=key.descending)
    return result


def _diff_of(update: tuple[tuple, int]) -> Any:
    return update[1]


def _column_getter(index: int) -> Callable[[tuple[tuple, int]], Any]:
    return lambda update: update[0][index]


def _value_key(value: Any, null_rank: int) -> tuple:
    """A sort key for one value: NULL placed by `null_rank`, NaN above every number.

    NULL gets (null_rank,) and every other value (0, ...), so NULL never has to
    be compared with a value; with reverse=True a rank of 1 puts NULLs first,
    -1 last. NaN sorts above all other numbers, as in PostgreSQL, where Python
    would leave it unordered.
    """
    if value is None:
        return (null_rank,)
    if isinstance(value, (list, tuple)):
        # PostgreSQL orders arrays element by element, NULL elements last.
        return (0, 0, tuple(_value_key(v, 1) for v in value))
    if _is_nan(value):
        return (0, 1)
    return (0, 0, value)


def _row_key(row: Sequence[Any]) -> tuple:
    return tuple(_value_key(v, 1) for v in row)


def _is_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal):
        return value.is_nan()
    return False


def _format_envelope(plan: OutputPlan, prefix: tuple, updates: list[tuple[tuple, int]]) -> list[tuple]:
    key_indexes = plan.key_indexes
    value_indexes = plan.value_indexes
    debezium = plan.kind == "debezium"
    nulls = (None,) * len(value_indexes)

    groups: dict[tuple, list[tuple[tuple, int]]] = {}
    for row, diff in updates:
        token = tuple(group_key(row[i]) for i in key_indexes)  # NaN groups with NaN
        groups.setdefault(token, []).append((row, diff))

    def keys_of(row: tuple) -> tuple:
        return tuple(row[i] for i in key_indexes)

    def values_of(row: tuple) -> tuple:
        return tuple(row[i] for i in value_indexes)

    # Keys ascending, NULLS LAST, in KEY (...) order: deterministic, and the
    # order Materialize's envelope output has within a timestamp.
    ordered = sorted(groups.values(), key=lambda g: _row_key(keys_of(g[0][0])))
    out: list[tuple] = []
    for group in ordered:
        # The seed's four cases. A lone update of diff +2 or -2 is two
        # insertions (or deletions) of the same row, so it is not one of the
        # first three and falls through to key_violation.
        if len(group) == 1 and group[0][1] == 1:
            row = group[0][0]
            if debezium:
                out.append(prefix + ("insert",) + keys_of(row) + nulls + values_of(row))
            else:
                out.append(prefix + ("upsert",) + keys_of(row) + values_of(row))
        elif len(group) == 1 and group[0][1] == -1:
            row = group[0][0]
            if debezium:
                out.append(prefix + ("delete",) + keys_of(row) + values_of(row) + nulls)
            else:
                out.append(prefix + ("delete",) + keys_of(row) + nulls)
        elif len(group) == 2 and sorted(d for _, d in group) == [-1, 1]:
            old, new = (group[0][0], group[1][0]) if group[0][1] == -1 else (group[1][0], group[0][0])
            if debezium:
                out.append(prefix + ("upsert",) + keys_of(new) + values_of(old) + values_of(new))
            else:
                out.append(prefix + ("upsert",) + keys_of(new) + values_of(new))
        else:
            row = group[0][0]
            out.append(prefix + ("key_violation",) + keys_of(row) + nulls + (nulls if debezium else ()))
    return out
