"""Helpers shared by the benchmarks: servers side by side, and figures."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pgserver import PostgresServer
from tests.support import ServerProcess

__all__ = ["PostgresServer", "ServerProcess", "percentile", "report"]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def report(rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'sparkwire':>14}  {'postgresql 15':>14}")
    for name, ours, theirs in rows:
        print(f"{name:<{width}}  {ours:>14}  {theirs:>14}")


def median(values: list[float]) -> float:
    return statistics.median(values)
