"""Crash-consistency checking of the durable store, without Spark.

`DiskModel` is a `durable_io` injector: it counts the store's durable steps, stops a workload
at the Nth (`SimulatedCrash`, as a process crash leaves the page cache: every write done is
there) or fails it (an OSError, as a full or failing disk does), and keeps what a power loss
would leave — each file's content as of its last fsync, each directory's entries as of its last
fsync — to put the directory in that state (`lose_power`), optionally with the log's unsynced
tail half written (a torn record).

`Workload` drives a Store as the coordinator does (commits spanning collections, catalog
operations, deletes, a checkpoint every few records, compactions, a DROP) and keeps what was
acknowledged, what was reported failed, and what was under way when it stopped. `check`
reopens the directory and compares: every acknowledged write present exactly once, nothing
reported failed present, the write under way all there or not at all, the catalog's
operations each once.
"""

from __future__ import annotations

import errno
import itertools
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from planner.types import column_type
from spark_backend import durable_io, storage
from spark_backend.consolidate import consolidate
from spark_backend.durable_io import SimulatedCrash, Step
from spark_backend.errors import StorageError
from spark_backend.schema import DIFF, TS, storage_arrow_schema
from spark_backend.storage import Store

SCHEMA = storage_arrow_schema([column_type("bigint")])


class DiskModel:
    """Counts durable steps; crashes or fails one; knows what a power loss would keep."""

    def __init__(self, root: Path, crash_at: int | None = None, fail_at: tuple[int, ...] = (),
                 err: int = errno.EIO) -> None:
        self.root = root
        self.count = 0
        self.steps: list[Step] = []
        self.crash_at = crash_at
        self.fail_at = set(fail_at)
        self.err = err
        self.crashed = False
        self._ids = itertools.count()
        self.current: dict[str, int] = {}  # path → file identity
        self.durable: dict[str, int] = {}  # path → file identity, as of its directory's last fsync
        self.synced: dict[int, bytes] = {}  # file identity → content as of its last fsync
        self.dirs: set[str] = set()
        self.durable_dirs: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(root):
            if Path(dirpath).name == "scratch":
                continue
            self.dirs.add(dirpath)
            self.durable_dirs.add(dirpath)
            for name in filenames:
                path = os.path.join(dirpath, name)
                fid = next(self._ids)
                self.current[path] = self.durable[path] = fid
                self.synced[fid] = Path(path).read_bytes()

    def before(self, step: Step) -> None:
        self.count += 1
        self.steps.append(step)
        if self.count == self.crash_at:
            self.crashed = True
            raise SimulatedCrash(f"crash before step {self.count} ({step.kind} {step.path})")
        if self.count in self.fail_at:
            raise OSError(self.err, f"{os.strerror(self.err)} (injected)", step.path)

    def after(self, step: Step) -> None:
        path = step.path
        if step.kind == "create":
            fid = next(self._ids)
            self.current[path] = fid
            self.synced[fid] = b""
        elif step.kind == "fsync":
            if path not in self.current:  # opened without a step (the log, when new)
                self.current[path] = next(self._ids)
            self.synced[self.current[path]] = Path(path).read_bytes()
        elif step.kind == "fsync_dir":
            # The directory's entries as they are now become durable (files made without a
            # step of their own, the log and the store's folders, included).
            for entry in os.scandir(path):
                if entry.is_dir():
                    self.dirs.add(entry.path)
                    self.durable_dirs.add(entry.path)
                    continue
                if entry.path not in self.current:
                    self.current[entry.path] = fid = next(self._ids)
                    self.synced[fid] = b""
                self.durable[entry.path] = self.current[entry.path]
            for p in [p for p in self.durable if os.path.dirname(p) == path and p not in self.current]:
                del self.durable[p]
        elif step.kind == "rename":
            self.current[step.target] = self.current.pop(path)
        elif step.kind == "unlink":
            self.current.pop(path, None)
        elif step.kind == "mkdir":
            self.dirs.add(path)

    def lose_power(self, torn: bool = False) -> None:
        """Put the directory in the state a power loss now would leave."""
        real = {}
        for dirpath, _, filenames in os.walk(self.root):
            for name in filenames:
                real[os.path.join(dirpath, name)] = Path(dirpath, name).read_bytes()
        for path in real:
            if "/scratch/" not in path:
                os.unlink(path)
        log_path = str(self.root / storage.LOG)
        for path, fid in self.durable.items():
            parent = os.path.dirname(path)
            if parent not in self.durable_dirs:
                continue
            content = self.synced.get(fid, b"")
            now = real.get(path, b"")
            if torn and path == log_path and len(now) > len(content) and now.startswith(content):
                content = now[:len(content) + (len(now) - len(content)) // 2]
            os.makedirs(parent, exist_ok=True)
            Path(path).write_bytes(content)
        for d in sorted(self.dirs - self.durable_dirs, reverse=True):
            if os.path.isdir(d) and not os.listdir(d):
                os.rmdir(d)


class Stop(Exception):
    """The workload stops as the server would: the store refused further writes."""


@dataclass
class Commit:
    ops: list[dict]
    rows: dict[str, list[tuple[int, int]]]  # collection → (id, diff)


@dataclass
class Workload:
    """Commits, checkpoints and compactions against a Store, with what was acknowledged."""

    acked: list[Commit] = field(default_factory=list)
    failed: list[Commit] = field(default_factory=list)  # reported failed: must never appear
    open_outcome: Commit | None = None  # under way when it stopped, or of unknown outcome

    PLAN = (
        [{"op": "create_collection", "collection": "a"}, {"op": "create_collection", "collection": "b"}],
        {"a": [(1, 1), (2, 1), (3, 1)]},
        {"a": [(4, 1), (5, 1)], "b": [(100, 1), (101, 1)]},
        {"a": [(2, -1), (6, 1)]},
        {"b": [(102, 1)]},
        "compact a",
        {"a": [(7, 1)], "b": [(101, -1)]},
        [{"op": "drop_collection", "collection": "b"}, {"op": "create_collection", "collection": "c"}],
        {"c": [(200, 1)], "a": [(8, 1)]},
        {"a": [(3, -1), (9, 1)]},
        "compact a",
        {"a": [(10, 1)], "c": [(201, 1)]},
    )

    def alive(self, commits: list[Commit]) -> set[str]:
        out: set[str] = set()
        for c in commits:
            for op in c.ops:
                if op["op"] == "create_collection":
                    out.add(op["collection"])
                elif op["op"] == "drop_collection":
                    out.discard(op["collection"])
        return out

    def run(self, store: Store) -> None:
        ts = itertools.count(1000)
        for step in self.PLAN:
            if step == "compact a":
                self.compact(store, "a")
            elif isinstance(step, list):
                self.commit(store, next(ts), Commit(step, {}))
            else:
                alive = self.alive(self.acked)
                self.commit(store, next(ts), Commit([], {k: v for k, v in step.items() if k in alive}))

    def commit(self, store: Store, ts: int, c: Commit) -> None:
        tables = {cid: pa.table({"c0": pa.array([i for i, _ in rows], pa.int64()),
                                 TS: pa.array([ts] * len(rows), pa.int64()),
                                 DIFF: pa.array([d for _, d in rows], pa.int64())}, schema=SCHEMA)
                  for cid, rows in c.rows.items()}
        self.open_outcome = c
        try:
            store.commit(ts, c.ops, tables)
        except StorageError as err:
            if not err.outcome_unknown:
                self.failed.append(c)
                self.open_outcome = None
            if store.failed:
                raise Stop from err
            return
        self.acked.append(c)
        self.open_outcome = None
        if store.checkpoint_due():
            try:
                store.checkpoint({"ops": [op for a in self.acked for op in a.ops]})
            except StorageError as err:
                if store.failed:
                    raise Stop from err

    def compact(self, store: Store, cid: str) -> None:
        files = store.files_to_compact(cid, store.last_ts)
        if len(files) < 2:
            return
        since = max(f.max_ts for f in files)
        table = consolidate(store.read_local(files, SCHEMA, cid), since)
        new = None
        try:
            new = store.write_compacted(cid, since, table)
            store.finish_compaction(cid, since, files, new)
        except StorageError as err:
            if not err.outcome_unknown:
                store.abandon_compaction(new)
            if store.failed:
                raise Stop from err
            return
        store.collect_garbage()


@dataclass
class Verdict:
    lost: int = 0
    duplicated: int = 0
    resurrected: int = 0
    wrong: int = 0
    problems: list[str] = field(default_factory=list)
    with_open_outcome: bool = False  # the write under way (or of unknown outcome) is there

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.resurrected or self.wrong)


def contents(store: Store) -> dict[str, Counter]:
    out = {}
    for cid in store.collections:
        files, _ = store.files(cid, 2**62)
        store.verify(cid, files)
        net: Counter = Counter()
        for f in files:
            t = pq.read_table(store.path(f), page_checksum_verification=True)
            for i, d in zip(t.column("c0").to_pylist(), t.column(DIFF).to_pylist()):
                net[i] += d
        out[cid] = +net
    return out


def expected(commits: list[Commit], w: Workload) -> dict[str, Counter]:
    out: dict[str, Counter] = {cid: Counter() for cid in w.alive(commits)}
    for c in commits:
        for cid, rows in c.rows.items():
            if cid in out:
                for i, d in rows:
                    out[cid][i] += d
    return {k: +v for k, v in out.items()}


def check(root: Path, w: Workload) -> Verdict:
    """Reopen `root` and compare what is there with what the workload was told."""
    v = Verdict()
    store = Store(root)
    try:
        try:
            recovered = store.open()
        except Exception as exc:  # noqa: BLE001 - counted as a wrong outcome
            v.wrong += 1
            v.problems.append(f"recovery failed: {exc}")
            return v
        snapshot = recovered.catalog_snapshot or {"ops": []}
        ops = snapshot["ops"] + recovered.catalog_ops
        try:
            got = contents(store)
        except Exception as exc:  # noqa: BLE001 - a file the state names is missing or damaged
            v.lost += 1
            v.problems.append(f"cannot read what was recovered: {exc}")
            return v
        candidates = [w.acked] + ([w.acked + [w.open_outcome]] if w.open_outcome is not None else [])
        best: Verdict | None = None
        for commits in candidates:
            want = expected(commits, w)
            want_ops = [op for c in commits for op in c.ops]
            cand = Verdict()
            for cid in set(want) | set(got):
                have, should = got.get(cid, Counter()), want.get(cid, Counter())
                for i in set(have) | set(should):
                    if have[i] < should[i]:
                        cand.lost += should[i] - have[i]
                    elif have[i] > should[i]:
                        if any(i in {r for r, _ in f.rows.get(cid, [])} for f in w.failed):
                            cand.resurrected += have[i] - should[i]
                        elif should[i]:
                            cand.duplicated += have[i] - should[i]
                        else:
                            cand.wrong += have[i]
            if ops != want_ops:
                cand.wrong += 1
                cand.problems.append(f"catalog operations {ops} != {want_ops}")
            if cand.ok:
                cand.with_open_outcome = commits is not w.acked
                return cand
            cand.problems.append(f"contents {dict(got)} != {dict(want)}")
            best = best or cand
        return best
    finally:
        store.close()


def run_point(root: Path, mode: str, n: int, checkpoint_every: int = 3) -> tuple[Verdict, Workload, DiskModel]:
    """One workload on a fresh `root`, stopped or failed at durable step `n` as `mode` says
    (crash, power, torn, eio, enospc, eio2), then checked after a restart — and again after one
    more commit and restart, so the recovered log is known to take new records."""
    old_every, old_delay = storage.CHECKPOINT_EVERY, storage.GARBAGE_DELAY
    storage.CHECKPOINT_EVERY, storage.GARBAGE_DELAY = checkpoint_every, 0.0
    root.mkdir(parents=True, exist_ok=True)
    model = DiskModel(root, crash_at=n if mode in ("crash", "power", "torn") else None,
                      fail_at={"eio": (n,), "enospc": (n,), "eio2": (n, n + 1)}.get(mode, ()),
                      err=errno.ENOSPC if mode == "enospc" else errno.EIO)
    w = Workload()
    store = Store(root)
    durable_io.arm(model)
    try:
        try:
            store.open()
            w.run(store)
        except (SimulatedCrash, Stop):
            pass
        except OSError:  # a fault in start-up itself: the server would not have started
            pass
        finally:
            durable_io.arm(None)
            store.close()
        if model.crashed and mode in ("power", "torn"):
            model.lose_power(torn=mode == "torn")
        verdict = check(root, w)
        if verdict.ok:
            if verdict.with_open_outcome:
                w.acked.append(w.open_outcome)
            w.open_outcome = None
            again = Store(root)
            again.open()
            if "a" in again.collections:
                w.commit(again, again.last_ts + 1, Commit([], {"a": [(999, 1)]}))
            again.close()
            verdict = check(root, w)
        return verdict, w, model
    finally:
        durable_io.arm(None)
        storage.CHECKPOINT_EVERY, storage.GARBAGE_DELAY = old_every, old_delay


def count_steps(root: Path) -> list[Step]:
    _, _, model = run_point(root, "count", 0)
    return model.steps
