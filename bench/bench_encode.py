"""Throughput of the result hot path: Arrow columns -> text -> DataRow bytes.

Not a test. Run: .venv/bin/python bench/bench_encode.py [rows]
Encodes a table of (integer, text, unconstrained numeric stored as
decimal(38,10)) columns, 10% NULLs in text, and prints rows/s for each stage.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.codecs.arrow_out import encode_binary_arrow, encode_text_arrow, encode_text_column
from planner.codecs.datarow import encode_rows
from planner.types import SqlType, lookup


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(42)
    ints = pa.array(rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32))
    names = pa.array(
        [None if i % 10 == 0 else f"customer-{i}" for i in range(n)], pa.string()
    )
    # Unscaled integers with scale 10: prices with 0-4 real fractional digits.
    cents = rng.integers(-(10**9), 10**9, n, dtype=np.int64) * 10**6
    dec = pa.array(
        [Decimal(int(c)).scaleb(-10) for c in cents], pa.decimal128(38, 10)
    )
    return pa.table({"id": ints, "name": names, "amount": dec})


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    table = make_table(n)
    types = [
        SqlType(lookup("integer")),
        SqlType(lookup("text")),
        SqlType(lookup("numeric")),
    ]
    cols = table.columns

    def report(label: str, seconds: float) -> None:
        print(f"{label:<48} {seconds:7.3f} s  {n / seconds:>12,.0f} rows/s")

    print(f"{n:,} rows x 3 columns (int4, text, numeric)")
    for t, c in zip(types, cols):
        s, _ = best_of(lambda t=t, c=c: encode_text_arrow(t, c))
        report(f"  encode_text_arrow {t.base.name}" + (" (zero-copy)" if s < 1e-3 else ""), s)

    s, lists = best_of(lambda: [encode_text_column(t, c) for t, c in zip(types, cols)])
    report("encode_text_column (lists), 3 cols", s)
    s, data = best_of(lambda: encode_rows(lists))
    report("encode_rows(lists)", s)
    s, _ = best_of(lambda: encode_rows([encode_text_column(t, c) for t, c in zip(types, cols)]))
    report("TOTAL text: encode_text_column + encode_rows", s)
    s, data2 = best_of(lambda: encode_rows([encode_text_arrow(t, c) for t, c in zip(types, cols)]))
    report("TOTAL text: encode_text_arrow + encode_rows", s)
    assert data == data2
    s, _ = best_of(lambda: encode_rows([encode_binary_arrow(t, c) for t, c in zip(types, cols)]))
    report("TOTAL binary: encode_binary_arrow + encode_rows", s)

    def batched(batch: int = 8192) -> int:
        # As a connection streams a result: one slice of rows per socket write.
        total = 0
        for lo in range(0, n, batch):
            part = [encode_text_column(t, c.slice(lo, batch)) for t, c in zip(types, cols)]
            total += len(encode_rows(part))
        return total

    s, size = best_of(batched)
    assert size == len(data)
    report("TOTAL text, 8192-row batches (lists)", s)
    print(f"DataRow bytes (text): {len(data):,}")


if __name__ == "__main__":
    main()
