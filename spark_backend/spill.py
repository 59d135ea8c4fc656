"""Moving a large result from Spark to the server in bounded chunks.

`collect()` and `toArrow()` hand a whole result to Python at once, and Spark's Arrow
collection writes partitions to its socket from the scheduler's own thread, so a reader
that pauses stalls every job. A result too large for memory is therefore *spilled*:
Spark writes it as Parquet into the data directory's scratch folder (a path every
executor and a Connect server also see), and the server reads it back one row group at a
time, as slowly as its client reads.

A SUBSCRIBE's updates must leave consolidated: a row at most once per timestamp, with
its net diff. Spark adds a 64-bit hash of each row (`__h`) to what it spills; rows whose
hash occurs once in a timestamp are already consolidated and pass straight through as
Arrow; only the rows that share a hash (true duplicates, or a rare collision) are netted
out in Python. A full Spark aggregation would do the same for every row and costs three
to four times a plain scan here (1e6 rows × 3 columns: 5-12 s against 1.5-3 s).
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from planner.dataflow import DELTA_DIFF, DELTA_TS
from planner.types import row_key
from spark_backend import pylist

HASH = "__h"

CHUNK_ROWS = 65_536  # rows per chunk read back, at most
CHUNK_BYTES = 2 << 20  # and about this many bytes (wide rows make smaller chunks)
READ_ROWS = 4096  # rows per read from Parquet; chunks are made of such reads
ROW_GROUP_BYTES = 8 << 20
HASH_BUCKET_ROWS = 4_000_000  # hashes held at once while looking for duplicates (32 MB)

def data_columns(n: int) -> list[str]:
    """Positional names for a result's columns: its own names may repeat (`SELECT a, a`)."""
    return [f"c{i}" for i in range(n)]


def spillable(df: DataFrame) -> bool:
    """Whether every column survives a round trip through Parquet with its type intact
    (intervals, NULL-typed columns, structs and maps do not)."""
    def ok(t: T.DataType) -> bool:
        if isinstance(t, T.ArrayType):
            return ok(t.elementType)
        return isinstance(t, (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType,
                              T.FloatType, T.DoubleType, T.DecimalType, T.StringType, T.BinaryType,
                              T.DateType, T.TimestampType, T.TimestampNTZType)) \
            or type(t).__name__ == "TimeType"
    return all(ok(f.dataType) for f in df.schema.fields)


@dataclass(frozen=True)
class SortKey:
    """How a spilled timestamp's rows are ordered: a data column (None: the diff)."""

    column: int | None
    descending: bool = False
    nulls_first: bool = False


@dataclass
class Spill:
    """A result written by Spark: its files per timestamp, in timestamp order."""

    path: Path
    width: int  # data columns, named c0..c{width-1}, then DELTA_TS, DELTA_DIFF and (unsorted only) HASH
    files: dict[int, list[str]] = field(default_factory=dict)
    sorted: bool = False  # consolidated and ordered by Spark; no HASH column

    @property
    def timestamps(self) -> list[int]:
        return sorted(self.files)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    # -- reading ------------------------------------------------------------------
    def batches(self, ts: int, columns: list[str] | None = None,
                chunk_rows: int = CHUNK_ROWS) -> Iterator[pa.Table]:
        """One timestamp's rows in tables of at most about CHUNK_BYTES (decoded: Parquet's own
        sizes say little, a repeated value is stored once) and `chunk_rows` rows."""
        group: list[pa.RecordBatch] = []
        size = rows = 0
        for path in self.files.get(ts, []):
            reader = pq.ParquetFile(path)
            for batch in reader.iter_batches(batch_size=READ_ROWS, columns=columns, use_threads=False):
                group.append(batch)
                size += batch.nbytes
                rows += batch.num_rows
                if size >= CHUNK_BYTES or rows >= chunk_rows:
                    yield pa.Table.from_batches(group)
                    group, size, rows = [], 0, 0
        if group:
            yield pa.Table.from_batches(group)

    def consolidated(self, ts: int, chunk_rows: int = CHUNK_ROWS) -> Iterator[pa.Table]:
        """One timestamp's updates, consolidated, as tables of c0..c{n-1} and DELTA_DIFF."""
        names = [*data_columns(self.width), DELTA_DIFF]
        if self.sorted:
            for table in self.batches(ts, names, chunk_rows):
                if table.num_rows:
                    yield table
            return
        yield from net_out(self.batches(ts, [*names, HASH], chunk_rows), self._repeated_hashes(ts), names)

    def _repeated_hashes(self, ts: int) -> pa.Array | None:
        """The hashes that occur more than once in a timestamp (None: none do). Hashes are
        looked at a bucket at a time, so that memory stays bounded however many rows there are."""
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in self.files.get(ts, []))
        buckets = max(1, math.ceil(rows / HASH_BUCKET_ROWS))
        found: list[np.ndarray] = []
        for bucket in range(buckets):
            parts = []
            for path in self.files.get(ts, []):
                for batch in pq.ParquetFile(path).iter_batches(batch_size=1 << 20, columns=[HASH],
                                                                use_threads=False):
                    h = batch.column(0).to_numpy(zero_copy_only=False)
                    parts.append(h if buckets == 1 else h[(h % buckets) == bucket])
            if not parts:
                continue
            dup = repeated_values(np.concatenate(parts))
            if dup.size:
                found.append(dup)
        if not found:
            return None
        return pa.array(np.concatenate(found), pa.int64())


def net_out(tables: Iterable[pa.Table], repeated: pa.Array | None, names: list[str]) -> Iterator[pa.Table]:
    """Tables of `names` and HASH, consolidated: rows whose hash is not in `repeated` pass
    straight through as Arrow; the others are netted out in Python and come last."""
    held: dict[tuple, list] = {}  # rows sharing a hash: token → [row, net diff]
    schema = None
    for table in tables:
        schema = schema or table.select(names).schema
        if repeated is not None:
            shared = pc.is_in(table.column(HASH), value_set=repeated)
            if pc.any(shared).as_py():
                _hold(table.filter(shared).select(names), held)
                table = table.filter(pc.invert(shared))
        if table.num_rows:
            yield table.select(names)
    rows = [(row, n) for row, n in held.values() if n]
    if rows:
        columns = pylist.columns([(*row, n) for row, n in rows], len(schema))
        yield pa.Table.from_arrays([pylist.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)


def repeated_values(hashes: np.ndarray) -> np.ndarray:
    """The values that occur more than once in `hashes` (sorted in place)."""
    return repeats(hashes)[0]


def repeats(hashes: np.ndarray) -> tuple[np.ndarray, int]:
    """The values that occur more than once in `hashes` (sorted in place), and how many of
    its entries hold one of them."""
    hashes.sort()
    same = hashes[1:] == hashes[:-1]
    found = np.unique(hashes[1:][same])
    return found, int(np.count_nonzero(same)) + found.size


def tolerable_repeats(rows: int) -> int:
    """How many of `rows` rows may share a 32-bit hash before netting them out in Python
    costs more than another pass: what distinct rows collide by chance (about rows² / 2³²)
    and a chunk's worth besides."""
    return CHUNK_ROWS + rows * rows // (1 << 32)


def _hold(table: pa.Table, held: dict[tuple, list]) -> None:
    columns = [pylist.values(c) for c in table.columns]
    for r in range(table.num_rows):
        row = tuple(c[r] for c in columns[:-1])
        key = row_key(row)
        entry = held.get(key)
        if entry is None:
            held[key] = [row, columns[-1][r]]
        else:
            entry[1] += columns[-1][r]


# -- writing (runs in Spark) ------------------------------------------------------------


def write(df: DataFrame, path: Path, single_ts: int | None,
          order: tuple[SortKey, ...] | None = None) -> Spill:
    """Spill `df` (data columns, then DELTA_TS and DELTA_DIFF) into the new folder `path`.

    Without `order`, rows are written as they are with their hash, to be consolidated
    while they are read back. With `order` (WITHIN TIMESTAMP ORDER BY, envelopes), Spark
    consolidates them and sorts each timestamp's rows by `order`, so they can be read back
    in that order. `single_ts`: every row is known to be at that timestamp (a snapshot)."""
    width = len(df.columns) - 2
    names = data_columns(width)
    df = df.toDF(*names, DELTA_TS, DELTA_DIFF)
    writer_options = {"compression": "none", "parquet.block.size": str(ROW_GROUP_BYTES)}
    if order is None:
        hashed = F.xxhash64(*[F.col(n) for n in names]) if names else F.lit(0).cast("bigint")
        df = df.withColumn(HASH, hashed)
    else:
        df = df.groupBy(*names, DELTA_TS).agg(F.sum(DELTA_DIFF).alias(DELTA_DIFF)).where(F.col(DELTA_DIFF) != 0)
        keys = [F.col(DELTA_TS).asc()]
        for key in order:
            col = F.col(DELTA_DIFF if key.column is None else names[key.column])
            if key.descending:
                keys.append(col.desc_nulls_first() if key.nulls_first else col.desc_nulls_last())
            else:
                keys.append(col.asc_nulls_first() if key.nulls_first else col.asc_nulls_last())
        df = df.orderBy(*keys)
    try:
        if single_ts is not None:
            df.drop(DELTA_TS).write.options(**writer_options).parquet(str(path))
            files = {single_ts: _parquet_files(path)}
        elif order is None:
            df.write.options(**writer_options).partitionBy(DELTA_TS).parquet(str(path))
            files = {int(d.name.split("=", 1)[1]): _parquet_files(d)
                     for d in path.iterdir() if d.is_dir() and d.name.startswith(f"{DELTA_TS}=")}
        else:
            # A global sort keeps its order across part files, not across partition folders.
            df.write.options(**writer_options).parquet(str(path))
            files = _split_sorted_by_ts(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return Spill(path, width, {ts: fs for ts, fs in files.items() if fs}, sorted=order is not None)


def _parquet_files(folder: Path) -> list[str]:
    # Part files are numbered by partition: their names give a sorted result's order.
    return sorted(str(p) for p in folder.glob("part-*.parquet"))


def _split_sorted_by_ts(path: Path) -> dict[int, list[str]]:
    """A globally sorted spill's files per timestamp: each file is split where its DELTA_TS
    changes, into files of its own (the rows stay in order)."""
    out: dict[int, list[str]] = {}
    for n, source in enumerate(_parquet_files(path)):
        table = pq.read_table(source, columns=[DELTA_TS])
        if table.num_rows == 0:
            continue
        ts_values = np.unique(table.column(DELTA_TS).to_numpy())
        if len(ts_values) == 1:
            out.setdefault(int(ts_values[0]), []).append(source)
            continue
        whole = pq.ParquetFile(source)
        for ts in ts_values:
            target = path / f"split-{n:05d}-{int(ts)}.parquet"
            with pq.ParquetWriter(target, whole.schema_arrow) as writer:
                for batch in whole.iter_batches(batch_size=CHUNK_ROWS):
                    part = batch.filter(pc.equal(batch.column(DELTA_TS), pa.scalar(int(ts), pa.int64())))
                    if part.num_rows:
                        writer.write_batch(part)
            out.setdefault(int(ts), []).append(str(target))
    return out
