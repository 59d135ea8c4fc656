"""Durable storage: every collection is a changelog of (row, mz_timestamp, mz_diff).

Layout under the data directory:

    log.jsonl          one JSON record per line, fsynced before the write it holds is
                       acknowledged; records since the checkpoint, in `seq` order
    checkpoint.json    the state after record `seq`, so start-up does not replay
                       history from the beginning
    collections/<id>/  Parquet files; a file belongs to a collection only once
                       a log record names it, so a crash mid-write leaves
                       garbage, never half a transaction

A record holds everything one timestamp changed: catalog operations (opaque
to this module) and one new file per written collection, so a transaction
spanning tables commits atomically. Diffs in commit files are +1 or -1; a
compacted file holds the consolidated sum of the files it replaced (any diff,
never 0), with every update moved forward to the collection's new `since`.

What makes it tell the truth:

- Every record carries a sequence number `seq` (and its commit timestamp `ts`), the
  checkpoint the `seq` of the last record it holds: start-up applies only the records
  after it, so a crash between writing a checkpoint and emptying the log replays nothing
  twice. (Timestamps alone cannot say it: a compaction's record shares the timestamp of
  the commit before it.)
- Every record and the checkpoint end with a CRC-32 of their JSON (`"crc":"…"`, the last
  field). A last record cut short by a crash (no newline, check failing) was never
  acknowledged and is dropped; any other record that fails its check, or a gap in `seq`,
  stops start-up with the file and offset (`sparkwire check` tells what a recovery to the
  last good record would lose).
- Every data file has Parquet page checksums, and its size and CRC-32 are in the record
  that adopts it; a file is checked against them when it is first read after start
  (`verify`): a damaged or missing one is `XX001`, naming the table and the file.
- A write or fsync that fails is taken back (the log truncated to where the record began,
  and fsynced) before the error is reported, so it never comes back; after a failed fsync
  the store takes no more writes (`failed`), as PostgreSQL stops: what the file system
  caches no longer says what is on disk. A full disk (ENOSPC) while writing is taken back
  and the store carries on.
- Every step that changes the disk goes through `durable_io`, where tests inject faults.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import os
import shutil
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from planner.errors import SqlError
from spark_backend import durable_io
from spark_backend.errors import IO_ERROR, DataCorrupted, StorageError, storage_error
from spark_backend.schema import DIFF, TS

log = logging.getLogger("sparkwire.storage")

CHECKPOINT_EVERY = int(os.environ.get("SPARKWIRE_CHECKPOINT_EVERY", "500"))  # log records between checkpoints
CHECKPOINT_RETRY = 50  # records to wait before trying again after a checkpoint failed
GARBAGE_DELAY = 60.0  # seconds a compacted-away file is kept for reads not pinned (subscriptions)
LOG = "log.jsonl"
CHECKPOINT = "checkpoint.json"
_RECOVERABLE = (errno.ENOSPC, errno.EDQUOT)  # a write refused for want of space: taken back, carry on


# -- framing: a record's JSON with its CRC-32 as the last field ----------------------------

_TAIL = len(b',"crc":"00000000"}')


def frame(record: dict) -> bytes:
    """One line: `record` as compact JSON with `"crc":"<crc32 of that JSON>"` appended."""
    body = json.dumps(record, separators=(",", ":")).encode()
    return b'%s,"crc":"%08x"}\n' % (body[:-1], zlib.crc32(body))


def unframe(line: bytes) -> dict | None:
    """The record of one line (without its newline), or None when its check fails."""
    if len(line) <= _TAIL + 1 or line[-_TAIL:-10] != b',"crc":"' or not line.endswith(b'"}'):
        return None
    body = line[:-_TAIL] + b"}"
    try:
        if int(line[-10:-2], 16) != zlib.crc32(body):
            return None
        record = json.loads(body)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _legacy(line: bytes) -> dict | None:
    """A record written before checksums (plain JSON without "crc"), else None."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "crc" not in record else None


@dataclass
class DataFile:
    path: str  # relative to the data directory
    min_ts: int
    max_ts: int
    rows: int
    retractions: int
    bytes: int | None = None  # the file's size and CRC-32 (None: written before checksums)
    crc: int | None = None


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


# -- reading the log back ----------------------------------------------------------------

@dataclass
class Damage:
    """Where the log or checkpoint fails its checks, and what lies after that point."""

    file: Path
    offset: int
    length: int
    reason: str
    records_after: list[dict] = field(default_factory=list)  # readable records after it
    bytes_after: int = 0

    def describe(self) -> str:
        return (f"{self.file} is damaged at byte offset {self.offset} ({self.length} bytes): {self.reason}; "
                f"{self.bytes_after} bytes follow it")


@dataclass
class Scan:
    """The durable state as found on disk, read without changing anything."""

    checkpoint: dict | None = None
    records: list[dict] = field(default_factory=list)  # the records the checkpoint lacks, in order
    skipped: int = 0  # records the checkpoint already holds
    size: int = 0  # of the log
    good_bytes: int = 0  # where the last good record ends
    torn: int = 0  # bytes of a final record cut short (dropped)
    unterminated: bool = False  # the last good record lacks its newline
    legacy: bool = False  # written before checksums
    damage: Damage | None = None


def _read_checkpoint(path: Path, found: Scan) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    state = unframe(data.rstrip(b"\n"))
    if state is None:
        state = _legacy(data)
        if state is None or "last_ts" not in state:
            found.damage = Damage(path, 0, len(data), "its checksum does not match")
            return
        found.legacy = True
    found.checkpoint = state


def scan(root: Path) -> Scan:
    """Read checkpoint and log and check them; nothing on disk changes."""
    found = Scan()
    _read_checkpoint(root / CHECKPOINT, found)
    if found.damage is not None:
        return found
    ckpt_seq = found.checkpoint.get("seq") if found.checkpoint else 0  # None: a legacy checkpoint
    ckpt_ts = found.checkpoint["last_ts"] if found.checkpoint else 0
    path = root / LOG
    data = path.read_bytes() if path.exists() else b""
    found.size = len(data)
    pos = 0
    expected: int | None = None  # the seq the next record must have
    framed = False
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        line = data[pos:end].rstrip(b"\n")
        record = unframe(line)
        salvaged = record is None and nl < 0 and len(line) > 1 and unframe(line[:-1]) is not None
        if salvaged:
            # A whole last record whose newline is damaged: kept (its check passes), and
            # given a newline at start-up.
            record, end = unframe(line[:-1]), end - 1
        is_framed = record is not None
        reason = "its checksum does not match"
        if is_framed:
            framed = True
            seq = record.get("seq")
            if not isinstance(seq, int):
                record, reason = None, "it has no sequence number"
            elif expected is None and ckpt_seq is not None and seq > ckpt_seq + 1:
                record, reason = None, (f"records {ckpt_seq + 1} to {seq - 1} are missing (the checkpoint "
                                        f"holds up to record {ckpt_seq})")
            elif expected is not None and seq != expected:
                record, reason = None, f"record {seq} follows record {expected - 1}"
        elif not framed:
            record = _legacy(line)
            if record is not None:
                found.legacy = True
        if record is None:
            if nl < 0 and not is_framed:  # the last line, cut short: a write the crash interrupted
                found.torn = len(data) - pos
            else:
                found.damage = Damage(path, pos, end - pos, reason, _readable(data[end:]), len(data) - end)
            break
        if nl < 0:
            found.unterminated = True
        if is_framed:
            expected = record["seq"] + 1
            if ckpt_seq is not None and record["seq"] <= ckpt_seq:
                found.skipped += 1
            else:
                found.records.append(record)
        elif "compact" in record or record.get("ts", 0) > ckpt_ts:
            found.records.append(record)  # legacy: what the checkpoint lacks is after its timestamp
        else:
            found.skipped += 1
        pos = end
        if salvaged:
            break
    found.good_bytes = pos
    return found


def _readable(data: bytes) -> list[dict]:
    return [r for r in (unframe(line) for line in data.split(b"\n")) if r is not None]


class Store:
    """The durable log and the collections' file lists. Callers serialize commits."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.root = Path(data_dir).resolve()
        self.collections: dict[str, Collection] = {}
        self.last_ts = 0
        self.seq = 0  # of the last record written
        self.failed: str | None = None  # why the store takes no more writes
        self.label: Callable[[str], str] = lambda cid: cid  # a collection's name, for messages
        self._log_fd: int | None = None
        self._log_size = 0
        self._records_since_checkpoint = 0
        self._lock = threading.Lock()  # guards file lists against compaction threads
        self._garbage: list[tuple[float, int, Path]] = []  # (due, generation, path)
        self._generation = 0  # bumped each time files become garbage
        self._readers: dict[int, int] = {}  # reading() token → generation when it began
        self._tokens = itertools.count()
        self._verified: set[str] = set()  # data files whose checksum was checked since start

    @property
    def log_path(self) -> Path:
        return self.root / LOG

    # -- start-up -------------------------------------------------------------
    def open(self) -> Recovered:
        """Recover the state the checkpoint and log hold. A damaged log or checkpoint raises
        `StorageDamaged` before anything on disk changes; a torn last record is dropped."""
        for d in (self.root, self.root / "collections"):
            if not d.is_dir():
                d.mkdir(parents=True, exist_ok=True)
                durable_io.fsync_dir(d.parent)
        found = scan(self.root)
        if found.damage is not None:
            raise StorageDamaged(found.damage)
        if found.legacy:
            log.warning("the data directory was written before checksums; the next checkpoint adds them",
                        extra={"event": "legacy_log", "data_dir": str(self.root)})
        snapshot = None
        if found.checkpoint is not None:
            state = found.checkpoint
            snapshot = state["catalog"]
            self.last_ts = state["last_ts"]
            self.seq = state.get("seq", 0)
            self.collections = {c["id"]: Collection.from_json(c) for c in state["collections"]}
        ops: list[dict] = []
        for record in found.records:
            self.apply_record(record)
            ops.extend(record.get("catalog", []))
            self.seq = record.get("seq", self.seq + 1)
        self._records_since_checkpoint = found.skipped + len(found.records)
        self._log_fd = durable_io.open_append(self.log_path)
        self._log_size = found.good_bytes
        if found.torn:
            log.warning("dropped a torn last log record (a write cut short by a crash, never acknowledged)",
                        extra={"event": "torn_record", "file": str(self.log_path), "offset": found.good_bytes,
                               "bytes": found.torn})
            durable_io.truncate(self._log_fd, found.good_bytes, self.log_path)
            durable_io.fsync(self._log_fd, self.log_path)
        if found.unterminated:  # a whole last record without its newline: give it one
            durable_io.truncate(self._log_fd, found.good_bytes, self.log_path)
            durable_io.write(self._log_fd, b"\n", self.log_path)
            durable_io.fsync(self._log_fd, self.log_path)
            self._log_size += 1
        durable_io.fsync_dir(self.root)  # the log's entry, if it was just made
        durable_io.unlink(self.root / (CHECKPOINT + ".tmp"))
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
                durable_io.unlink(path)
        for d in base.iterdir():
            if d.is_dir() and d.name not in self.collections and not any(d.iterdir()):
                d.rmdir()

    # -- commits -------------------------------------------------------------
    def _writable(self) -> None:
        if self.failed is not None:
            raise StorageError(IO_ERROR, f"no more writes are accepted after a storage error ({self.failed}); "
                                         "restart the server to recover", fatal=True)

    def _fail(self, why: str) -> None:
        if self.failed is None:
            self.failed = why
            log.critical("storage failed: no more writes are accepted",
                         extra={"event": "storage_failed", "reason": why, "data_dir": str(self.root)})

    def write_file(self, collection_id: str, ts: int, updates: pa.Table) -> DataFile:
        """Write one immutable data file (durably) that a later commit may adopt."""
        self._writable()
        folder = self.root / "collections" / collection_id
        name = f"{ts}-{uuid.uuid4().hex[:12]}.parquet"
        path = folder / name
        rel = str(path.relative_to(self.root))
        buf = pa.BufferOutputStream()
        # Row groups of 128k rows let Spark read a big file with one task per core.
        pq.write_table(updates, buf, compression="zstd" if updates.num_rows > 10000 else "none",
                       row_group_size=131072, write_page_checksum=True)
        data = buf.getvalue()
        try:
            if not folder.is_dir() and durable_io.mkdir(folder):
                durable_io.fsync_dir(folder.parent)
            fd = durable_io.create(path)
        except OSError as exc:
            raise self._error(exc, f"create data file {rel}") from None
        try:
            try:
                durable_io.write(fd, data, path)
            except OSError as exc:
                raise self._error(exc, f"write data file {rel}") from None
            try:
                durable_io.fsync(fd, path)
            except OSError as exc:
                raise self._error(exc, f"fsync data file {rel}", fatal=True) from None
        except StorageError:
            with contextlib.suppress(OSError):
                durable_io.unlink(path)
            raise
        finally:
            os.close(fd)
        try:
            durable_io.fsync_dir(folder)
        except OSError as exc:
            raise self._error(exc, f"fsync directory {folder.relative_to(self.root)}", fatal=True) from None
        ts_col = updates.column(TS)
        retractions = pc.sum(pc.less(updates.column(DIFF), 0).cast(pa.int64())).as_py() or 0
        return DataFile(
            rel,
            pc.min(ts_col).as_py() if updates.num_rows else ts,
            pc.max(ts_col).as_py() if updates.num_rows else ts,
            updates.num_rows,
            retractions,
            data.size,
            zlib.crc32(data),
        )

    def _error(self, exc: OSError, doing: str, fatal: bool = False) -> StorageError:
        err = storage_error(exc, doing, fatal=fatal)
        if fatal:
            self._fail(err.message)
        return err

    def commit(self, ts: int, catalog_ops: list[dict], writes: dict[str, pa.Table]) -> None:
        """Make one timestamp's catalog changes and writes durable, all or nothing."""
        self._writable()
        if ts <= self.last_ts:
            raise SqlError("XX000", f"timestamp {ts} is not after {self.last_ts}")
        files: dict[str, dict] = {}
        try:
            for cid, t in writes.items():
                if t.num_rows:
                    files[cid] = asdict(self.write_file(cid, ts, t))
        except StorageError:
            self._discard(f["path"] for f in files.values())  # no record names them
            raise
        record = {"ts": ts, "catalog": catalog_ops, "files": files}
        self._append(record)
        with self._lock:
            self.apply_record(record)

    def _discard(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._garbage.extend((0.0, -1, self.root / p) for p in paths)

    def _append(self, record: dict) -> None:
        """Write one record durably, or take it back and raise StorageError."""
        self._writable()
        data = frame({"seq": self.seq + 1, **record})
        start = self._log_size
        try:
            durable_io.write(self._log_fd, data, self.log_path)
        except OSError as exc:
            self._take_back(start, exc, "write to the log", fatal=exc.errno not in _RECOVERABLE)
        try:
            durable_io.fsync(self._log_fd, self.log_path)
        except OSError as exc:
            self._take_back(start, exc, "fsync the log", fatal=True)
        self._log_size = start + len(data)
        self.seq += 1
        self._records_since_checkpoint += 1

    def _take_back(self, start: int, exc: OSError, doing: str, fatal: bool) -> None:
        """Cut the log back to `start` (durably) after a failed write or fsync; raise."""
        try:
            durable_io.truncate(self._log_fd, start, self.log_path)
            durable_io.fsync(self._log_fd, self.log_path)
        except OSError as again:
            self._fail(f"could not {doing} ({exc.strerror}), nor take the record back ({again.strerror})")
            with contextlib.suppress(OSError):
                if os.fstat(self._log_fd).st_size == start:  # none of it was written
                    raise storage_error(exc, doing, fatal=True) from None
            raise storage_error(exc, f"{doing} (and the record may or may not be there)",
                                outcome_unknown=True) from None
        raise self._error(exc, doing, fatal=fatal) from None

    def apply_record(self, record: dict) -> None:
        """Fold one log record into the in-memory state (at start-up and commit, and in
        `sparkwire check`, which rebuilds the state offline)."""
        ts = record.get("ts", self.last_ts)
        for op in record.get("catalog", []):
            if op.get("op") == "create_collection":
                self.collections[op["collection"]] = Collection(op["collection"], since=ts, upper=ts)
            elif op.get("op") == "drop_collection":
                gone = self.collections.pop(op["collection"], None)
                if gone is not None:
                    self._make_garbage([f.path for f in gone.files], 0.0)
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
                new = [DataFile(**c["file"])] if c.get("file") and not any(
                    f.path == c["file"]["path"] for f in kept) else []
                coll.files = new + kept
                coll.since = max(coll.since, c["since"])
                self._make_garbage(sorted(removed), time.monotonic() + GARBAGE_DELAY)
        self.last_ts = max(self.last_ts, ts)

    def _make_garbage(self, paths: list[str], due: float) -> None:
        self._garbage.extend((due, self._generation, self.root / p) for p in paths)
        self._generation += 1

    def checkpoint_due(self) -> bool:
        return self._records_since_checkpoint >= CHECKPOINT_EVERY

    def checkpoint(self, catalog_snapshot: object) -> None:
        """Fold the log into checkpoint.json and empty the log.

        A failure before the new checkpoint is in place changes nothing durable (tried again
        CHECKPOINT_RETRY records later); after it, the store takes no more writes."""
        self._writable()
        with self._lock:
            state = {"seq": self.seq, "last_ts": self.last_ts, "catalog": catalog_snapshot,
                     "collections": [c.to_json() for c in self.collections.values()]}
        data = frame(state)
        tmp = self.root / (CHECKPOINT + ".tmp")
        try:
            fd = durable_io.create(tmp, exclusive=False)
            try:
                durable_io.write(fd, data, tmp)
                durable_io.fsync(fd, tmp)
            finally:
                os.close(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                durable_io.unlink(tmp)
            self._records_since_checkpoint = CHECKPOINT_EVERY - CHECKPOINT_RETRY
            raise storage_error(exc, "write a checkpoint") from None
        try:
            durable_io.rename(tmp, self.root / CHECKPOINT)
            durable_io.fsync_dir(self.root)
        except OSError as exc:
            raise self._error(exc, "put the new checkpoint in place", fatal=True) from None
        # From here a crash leaves the checkpoint and the records it already holds, which
        # start-up skips by their seq.
        try:
            durable_io.truncate(self._log_fd, 0, self.log_path)
            durable_io.fsync(self._log_fd, self.log_path)
        except OSError as exc:
            raise self._error(exc, "empty the log after a checkpoint", fatal=True) from None
        self._log_size = 0
        self._records_since_checkpoint = 0

    def close(self) -> None:
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None

    # -- reads -------------------------------------------------------------
    def files(self, collection_id: str, as_of: int) -> tuple[list[DataFile], int]:
        """The files a read at `as_of` needs, and the collection's since."""
        with self._lock:
            coll = self.collections[collection_id]
            chosen = [f for f in coll.files if f.min_ts <= as_of]
            return chosen, coll.since

    def holds(self, collection_id: str, files: Iterable[DataFile]) -> bool:
        """Whether the collection still has every one of `files` (a rewrite by ALTER TABLE
        replaces them all: a compaction of the old ones must not land in the new)."""
        with self._lock:
            coll = self.collections.get(collection_id)
            have = {f.path for f in coll.files} if coll is not None else set()
            return all(f.path in have for f in files)

    def path(self, f: DataFile) -> str:
        return str(self.root / f.path)

    def verify(self, collection_id: str, files: Iterable[DataFile]) -> None:
        """Check each file's size and CRC-32 against its record, the first time it is read
        since start; DataCorrupted (XX001) names the table and the file."""
        for f in files:
            if f.path in self._verified or f.crc is None:
                continue
            why = file_damage(self.root, f)
            if why is not None:
                log.error("damaged data file", extra={"event": "data_corrupted", "file": f.path,
                                                      "collection": collection_id, "reason": why})
                raise DataCorrupted(self.label(collection_id), f.path, why)
            self._verified.add(f.path)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """While inside, no file this read may use is deleted by `collect_garbage`."""
        token = next(self._tokens)
        with self._lock:
            self._readers[token] = self._generation
        try:
            yield
        finally:
            with self._lock:
                del self._readers[token]

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
                self.apply_record(record)

    def read_local(self, files: list[DataFile], schema: pa.Schema, collection_id: str = "") -> pa.Table:
        """Files read with pyarrow alone (small compactions skip Spark), checked first."""
        self.verify(collection_id, files)
        return pa.concat_tables([pq.read_table(self.root / f.path, page_checksum_verification=True).cast(schema)
                                 for f in files])

    def read_columns(self, files: list[DataFile], columns: list[str], collection_id: str = "") -> pa.Table:
        """Some columns of `files`, with pyarrow alone, checked first (an empty table of
        those columns when there are no files)."""
        self.verify(collection_id, files)
        parts = [pq.read_table(self.root / f.path, columns=columns, page_checksum_verification=True)
                 for f in files]
        if not parts:
            return pa.table({c: pa.array([], pa.int64()) for c in columns})
        return pa.concat_tables(parts, promote_options="permissive")

    def abandon_compaction(self, new: dict | None) -> None:
        if new is not None:
            self._discard([new["path"]])

    def collect_garbage(self) -> None:
        """Delete files no read can still be using: past their delay, and made garbage before
        every read still under way (`reading`) began."""
        now = time.monotonic()
        with self._lock:
            oldest = min(self._readers.values(), default=self._generation)
            due = [g for g in self._garbage if g[0] <= now and g[1] < oldest]
            self._garbage = [g for g in self._garbage if not (g[0] <= now and g[1] < oldest)]
        for _, _, path in due:
            with contextlib.suppress(OSError):
                durable_io.unlink(path)
            self._verified.discard(str(path.relative_to(self.root)))


class StorageDamaged(Exception):
    """The log or checkpoint fails its checks somewhere other than a torn last record."""

    def __init__(self, damage: Damage) -> None:
        data_dir = damage.file.parent
        if damage.file.name == CHECKPOINT:
            how = "restore the data directory from a backup."
        else:
            how = (f"`sparkwire check --data-dir {data_dir}` reports what a recovery to the last good record "
                   f"would lose ({len(damage.records_after)} readable records follow the damage); "
                   f"`sparkwire check --data-dir {data_dir} --recover-to-last-good` does it, keeping the "
                   "damaged log and the data files only it names in a damaged-* folder; or restore the "
                   "data directory from a backup.")
        super().__init__(f"{damage.describe()}. The server will not start on a damaged log: {how}")
        self.damage = damage


def file_damage(root: Path, f: DataFile) -> str | None:
    """What is wrong with a data file against its record (None: nothing)."""
    try:
        with open(root / f.path, "rb") as fh:
            crc, size = 0, 0
            while chunk := fh.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
    except FileNotFoundError:
        return "the file is missing"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if f.bytes is not None and size != f.bytes:
        return f"it is {size} bytes long, {f.bytes} were written"
    if f.crc is not None and crc != f.crc:
        return f"its checksum is {crc:08x}, {f.crc:08x} was written"
    return None


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
