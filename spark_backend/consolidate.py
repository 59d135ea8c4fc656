"""Netting out a changelog's updates with Arrow alone, for compaction of small files.

A Spark job with a shuffle costs seconds of both cores here; folding a few
thousand updates in pyarrow costs milliseconds. Column types pyarrow cannot
group by (arrays, say) return None, and the caller asks Spark instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_backend.schema import DIFF, TS


def consolidate(updates: pa.Table, since: int) -> pa.Table | None:
    """`updates` (row columns, TS, DIFF) netted out per row and moved to `since`, as ±1
    updates; None when a column's type cannot be grouped by."""
    cols = [c for c in updates.column_names if c not in (TS, DIFF)]
    if any(_ungroupable(updates.schema.field(c).type) for c in cols):
        return None
    try:
        summed = updates.select([*cols, DIFF]).group_by(cols, use_threads=False).aggregate([(DIFF, "sum")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    net = summed.column(f"{DIFF}_sum")
    summed = summed.filter(pc.not_equal(net, 0))
    net = summed.column(f"{DIFF}_sum").to_numpy(zero_copy_only=False)
    # Storage keeps one record per unit of multiplicity: n copies of a row are n rows.
    take = np.repeat(np.arange(len(net)), np.abs(net))
    rows = summed.select(cols).take(pa.array(take, pa.int64()))
    diffs = np.repeat(np.sign(net), np.abs(net)).astype(np.int64)
    out = rows.append_column(TS, pa.array(np.full(len(take), since, np.int64)))
    return out.append_column(DIFF, pa.array(diffs, pa.int64())).cast(updates.schema)


def _ungroupable(t: pa.DataType) -> bool:
    # Floats: grouping compares bits, so -0.0 and 0.0 (and NaNs) would not meet as Spark's
    # exceptAll makes them; leave those tables to Spark.
    return (pa.types.is_nested(t) or pa.types.is_floating(t) or pa.types.is_dictionary(t)
            or pa.types.is_null(t))
