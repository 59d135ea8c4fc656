"""Durable storage: every collection is a changelog of (row, mz_timestamp, mz_diff).

Layout under the data directory:

    log.jsonl          one JSON record per committed timestamp, fsynced before
                       the write is acknowledged; the only source of truth
    checkpoint.json    the state at some log position, so start-up does not
                       replay history from the beginning
    collections/<id>/  Parquet files; a file belongs to a collection only once
                       a log record names it, so a crash mid-write leaves
                       garbage, never half a transaction

A record holds everything one timestamp changed: catalog operations (opaque
to this module) and one new file per written collection, so a transaction
spanning tables commits atomically. Diffs in commit files are +1 or -1; a
compacted file holds the consolidated sum of the files it replaced (any diff,
never 0), with every update moved forward to the collection's new `since`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from planner.errors import SqlError
from spark_backend.schema import DIFF, TS

log = logging.getLogger("sparkwire.storage")

CHECKPOINT_EVERY = 500  # log records between checkpoints


@dataclass
class DataFile:
    path: str  # relative to the data directory
    min_ts: int
    max_ts: int
    rows: int
    retractions: int


@dataclass
class Collection:
    id: str
    files: list[DataFile] = field(default_factory=list)
    since: int = 0  # reads before this time were compacted away
    upper: int = 0  # the latest timestamp written

    def to_json(self) -> dict:
        return {"id": self.id, "since": self.since, "upper": self.upper,
                "files": [asdict(f) for f in self.files]}

    @classmethod
    def from_json(cls, d: dict) -> Collection:
        return cls(d["id"], [DataFile(**f) for f in d["files"]], d["since"], d["upper"])


@dataclass
class Recovered:
    """What `Store.open` found: the catalog's own records, for it to replay."""

    catalog_snapshot: object | None
    catalog_ops: list[dict]
    last_ts: int


class Store:
    """The durable log and the collections' file lists. Callers serialize commits."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.root = Path(data_dir).resolve()
        self.collections: dict[str, Collection] = {}
        self.last_ts = 0
        self._log_file = None
        self._records_since_checkpoint = 0
        self._lock = threading.Lock()  # guards file lists against compaction threads
        self._garbage: list[tuple[float, Path]] = []

    # -- start-up -------------------------------------------------------------
    def open(self) -> Recovered:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "collections").mkdir(exist_ok=True)
        snapshot = None
        ckpt = self.root / "checkpoint.json"
        if ckpt.exists():
            state = json.loads(ckpt.read_text())
            snapshot = state["catalog"]
            self.last_ts = state["last_ts"]
            self.collections = {c["id"]: Collection.from_json(c) for c in state["collections"]}
        ops: list[dict] = []
        log_path = self.root / "log.jsonl"
        good_bytes = 0
        if log_path.exists():
            with open(log_path, "rb") as f:
                for line in f:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        break  # a torn final record was never acknowledged
                    if not line.endswith(b"\n"):
                        break
                    good_bytes += len(line)
                    self._apply(record)
                    ops.extend(record.get("catalog", []))
                    self._records_since_checkpoint += 1
            os.truncate(log_path, good_bytes)
        self._log_file = open(log_path, "ab")  # noqa: SIM115 - open for the server's life
        self._remove_unreferenced_files()
        shutil.rmtree(self.scratch, ignore_errors=True)  # hand-off files of batches a crash cut short
        self.scratch.mkdir()
        return Recovered(snapshot, ops, self.last_ts)

    @property
    def scratch(self) -> Path:
        """A folder for files that live only while one piece of Spark work reads them.

        Inside the data directory because Spark's executors (and a Connect server) read
        the same paths as the server does; emptied at every start."""
        return self.root / "scratch"

    def _remove_unreferenced_files(self) -> None:
        live = {f.path for c in self.collections.values() for f in c.files}
        base = self.root / "collections"
        for path in base.glob("*/*.parquet"):
            if str(path.relative_to(self.root)) not in live:
                path.unlink()
        for d in base.iterdir():
            if d.is_dir() and d.name not in self.collections and not any(d.iterdir()):
                d.rmdir()

    # -- commits -------------------------------------------------------------
    def write_file(self, collection_id: str, ts: int, updates: pa.Table) -> DataFile:
        """Write one immutable data file (durably) that a later commit may adopt."""
        folder = self.root / "collections" / collection_id
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{ts}-{uuid.uuid4().hex[:12]}.parquet"
        path = folder / name
        # Row groups of 128k rows let Spark read a big file with one task per core.
        pq.write_table(updates, path, compression="zstd" if updates.num_rows > 10000 else "none",
                       row_group_size=131072)
        _fsync_file(path)
        _fsync_dir(folder)
        ts_col = updates.column(TS)
        retractions = pc.sum(pc.less(updates.column(DIFF), 0).cast(pa.int64())).as_py() or 0
        return DataFile(
            str(path.relative_to(self.root)),
            pc.min(ts_col).as_py() if updates.num_rows else ts,
            pc.max(ts_col).as_py() if updates.num_rows else ts,
            updates.num_rows,
            retractions,
        )

    def commit(self, ts: int, catalog_ops: list[dict], writes: dict[str, pa.Table]) -> None:
        """Make one timestamp's catalog changes and writes durable, all or nothing."""
        if ts <= self.last_ts:
            raise SqlError("XX000", f"timestamp {ts} is not after {self.last_ts}")
        files = {cid: asdict(self.write_file(cid, ts, t)) for cid, t in writes.items()
                 if t.num_rows}
        record = {"ts": ts, "catalog": catalog_ops, "files": files}
        self._append(record)
        with self._lock:
            self._apply(record)

    def _append(self, record: dict) -> None:
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        self._log_file.write(data)
        self._log_file.flush()
        os.fsync(self._log_file.fileno())
        self._records_since_checkpoint += 1

    def _apply(self, record: dict) -> None:
        """Fold one log record into the in-memory state (at start-up and commit)."""
        ts = record.get("ts", self.last_ts)
        for op in record.get("catalog", []):
            if op.get("op") == "create_collection":
                self.collections[op["collection"]] = Collection(op["collection"], since=ts, upper=ts)
            elif op.get("op") == "drop_collection":
                gone = self.collections.pop(op["collection"], None)
                if gone is not None:
                    self._garbage.extend((0.0, self.root / f.path) for f in gone.files)
        for cid, f in record.get("files", {}).items():
            coll = self.collections[cid]
            coll.files.append(DataFile(**f))
            coll.upper = max(coll.upper, f["max_ts"])
        if "compact" in record:
            c = record["compact"]
            coll = self.collections.get(c["collection"])
            if coll is not None:
                removed = set(c["removed"])
                kept = [f for f in coll.files if f.path not in removed]
                new = [DataFile(**c["file"])] if c.get("file") else []
                coll.files = new + kept
                coll.since = max(coll.since, c["since"])
                self._garbage.extend((time.monotonic() + 60.0, self.root / p) for p in removed)
        self.last_ts = max(self.last_ts, ts)

    def checkpoint_due(self) -> bool:
        return self._records_since_checkpoint >= CHECKPOINT_EVERY

    def checkpoint(self, catalog_snapshot: object) -> None:
        """Fold the log into checkpoint.json and start a fresh log."""
        with self._lock:
            state = {"last_ts": self.last_ts, "catalog": catalog_snapshot,
                     "collections": [c.to_json() for c in self.collections.values()]}
        tmp = self.root / "checkpoint.json.tmp"
        tmp.write_text(json.dumps(state))
        _fsync_file(tmp)
        os.replace(tmp, self.root / "checkpoint.json")
        _fsync_dir(self.root)
        self._log_file.close()
        self._log_file = open(self.root / "log.jsonl", "wb")  # noqa: SIM115 - as above
        os.fsync(self._log_file.fileno())
        self._records_since_checkpoint = 0

    def close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    # -- reads -------------------------------------------------------------
    def files(self, collection_id: str, as_of: int) -> tuple[list[DataFile], int]:
        """The files a read at `as_of` needs, and the collection's since."""
        with self._lock:
            coll = self.collections[collection_id]
            chosen = [f for f in coll.files if f.min_ts <= as_of]
            return chosen, coll.since

    def path(self, f: DataFile) -> str:
        return str(self.root / f.path)

    # -- compaction ------------------------------------------------------------
    def compaction_candidates(self, frontier: int, max_files: int = 8,
                              retraction_ok: Callable[[str], bool] = lambda cid: True) -> list[str]:
        """Collections whose files before `frontier` are worth folding together: more than
        `max_files` in the tier to merge, or retractions there (when `retraction_ok` allows,
        a rate limit: netting them out is worth it only now and then)."""
        out = []
        with self._lock:
            for coll in self.collections.values():
                tier = _small_tier([f for f in coll.files if f.max_ts <= frontier])
                if len(tier) > max_files or (
                        len(tier) > 1 and any(f.retractions for f in tier) and retraction_ok(coll.id)):
                    out.append(coll.id)
        return out

    def files_to_compact(self, collection_id: str, frontier: int) -> list[DataFile]:
        with self._lock:
            coll = self.collections.get(collection_id)
            return _small_tier([f for f in coll.files if f.max_ts <= frontier]) if coll else []

    def write_compacted(self, collection_id: str, since: int, consolidated: pa.Table) -> dict | None:
        """Write the file a compaction will adopt (outside the write lock: it can be big)."""
        if not consolidated.num_rows:
            return None
        new = asdict(self.write_file(collection_id, since, consolidated))
        new["min_ts"] = new["max_ts"] = since
        return new

    def finish_compaction(self, collection_id: str, since: int, removed: list[DataFile],
                          new: dict | None) -> None:
        """Swap `removed` for `new` (from write_compacted), their consolidated contents."""
        record = {"ts": self.last_ts, "compact": {
            "collection": collection_id, "since": since,
            "removed": [f.path for f in removed], "file": new}}
        self._append(record)
        with self._lock:
            if collection_id in self.collections:
                self._apply(record)

    def read_local(self, files: list[DataFile], schema: pa.Schema) -> pa.Table:
        """Files read with pyarrow alone (small compactions skip Spark)."""
        return pa.concat_tables([pq.read_table(self.root / f.path).cast(schema) for f in files])

    def abandon_compaction(self, new: dict | None) -> None:
        if new is not None:
            self._garbage.append((0.0, self.root / new["path"]))

    def collect_garbage(self) -> None:
        """Delete files no read can still be using."""
        now = time.monotonic()
        keep = []
        for due, path in self._garbage:
            if due <= now:
                path.unlink(missing_ok=True)
            else:
                keep.append((due, path))
        self._garbage = keep


# A file joins the tier being merged while it is at most this many rows, or at most
# twice the rows gathered so far: small files fold together often, and a big
# compacted file is rewritten only when what lies on top of it has grown to a good
# share of it (size-tiered), so compaction costs O(change), not O(table), per run.
TIER_FLOOR_ROWS = 10_000


def _small_tier(old: list[DataFile]) -> list[DataFile]:
    chosen: list[DataFile] = []
    total = 0
    for f in sorted(old, key=lambda f: f.rows):
        if chosen and f.rows > max(TIER_FLOOR_ROWS, 2 * total):
            break
        chosen.append(f)
        total += f.rows
    return chosen


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    _fsync_file(path)
