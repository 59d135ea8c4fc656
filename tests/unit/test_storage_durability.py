"""The store under faults, without Spark: idempotent recovery, failed writes taken back,
checksums on the log, the checkpoint and the data files, `sparkwire check`, and the
crash-consistency suite over every durable step (tests/storage_faults.py)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner.errors import SqlError
from planner.types import column_type
from spark_backend import storage
from spark_backend.schema import DIFF, TS, storage_arrow_schema
from spark_backend.storage import Store

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = storage_arrow_schema([column_type("bigint")])


def updates(ids: list[int], ts: int, diff: int = 1) -> pa.Table:
    return pa.table({"c0": pa.array(ids, pa.int64()), TS: pa.array([ts] * len(ids), pa.int64()),
                     DIFF: pa.array([diff] * len(ids), pa.int64())}, schema=SCHEMA)


def rows(store: Store, cid: str = "a") -> Counter:
    """The collection's rows at the latest time, read straight from its files."""
    files, _ = store.files(cid, 2**62)
    net: Counter = Counter()
    for f in files:
        t = pq.read_table(store.path(f))
        for i, d in zip(t.column("c0").to_pylist(), t.column(DIFF).to_pylist()):
            net[i] += d
    return +net


def fresh(path: Path, commits: int = 0) -> Store:
    """A store with collection "a" and `commits` one-row commits (rows 1..commits at ts 2..)."""
    store = Store(path)
    store.open()
    store.commit(1, [{"op": "create_collection", "collection": "a"}], {})
    for i in range(1, commits + 1):
        store.commit(i + 1, [], {"a": updates([i], i + 1)})
    return store


def reopen(path: Path) -> tuple[Store, storage.Recovered]:
    store = Store(path)
    return store, store.open()


def failed_commit(store: Store, ts: int, row: int) -> SqlError:
    """The error of a one-row commit that must fail."""
    with pytest.raises(SqlError) as failed:
        store.commit(ts, [], {"a": updates([row], ts)})
    return failed.value


def log_lines(path: Path) -> list[bytes]:
    return (path / "log.jsonl").read_bytes().splitlines(keepends=True)


# -- idempotent recovery -----------------------------------------------------------------

def test_a_crash_between_the_checkpoint_and_emptying_the_log_replays_nothing_twice(tmp_path):
    """The checkpoint is in place but the log still holds the records it folded in (the
    crash came before the log was emptied): start-up must skip them, not add every row again."""
    store = fresh(tmp_path)
    store.checkpoint({"items": "opaque"})  # the table was created before an earlier checkpoint
    for i in range(1, 6):
        store.commit(i + 1, [{"op": "opaque", "n": i}], {"a": updates([i], i + 1)})
    before = (tmp_path / "log.jsonl").read_bytes()
    store.checkpoint({"items": "opaque", "ops": 5})
    store.close()
    (tmp_path / "log.jsonl").write_bytes(before)
    store, recovered = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})
    assert recovered.catalog_snapshot == {"items": "opaque", "ops": 5}
    assert recovered.catalog_ops == []  # the checkpoint's catalog has them: not again
    store.commit(10, [], {"a": updates([6], 10)})
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1})
    store.close()


def test_a_compaction_record_is_replayed_once(tmp_path):
    store = fresh(tmp_path)
    store.checkpoint(None)
    for i in range(1, 5):
        store.commit(i + 1, [], {"a": updates([i], i + 1)})
    files = store.files_to_compact("a", store.last_ts)
    folded = store.read_local(files, SCHEMA)
    new = store.write_compacted("a", store.last_ts, folded.set_column(
        folded.schema.get_field_index(TS), TS, pa.array([store.last_ts] * folded.num_rows, pa.int64())))
    store.finish_compaction("a", store.last_ts, files, new)
    before = (tmp_path / "log.jsonl").read_bytes()
    store.checkpoint(None)
    store.close()
    (tmp_path / "log.jsonl").write_bytes(before)
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    assert len(store.collections["a"].files) == 1
    store.close()


# -- failed writes ----------------------------------------------------------------------

def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def test_a_failed_log_fsync_is_reported_taken_back_and_never_comes_back(tmp_path, monkeypatch):
    store = fresh(tmp_path, 1)
    real_fsync = os.fsync
    armed = [True]

    def fsync(fd: int) -> None:
        if armed[0] and _fd_path(fd).endswith("log.jsonl"):
            armed[0] = False
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    failed = failed_commit(store, 3, 2)
    assert failed.sqlstate == "58030"
    assert "could not fsync the log" in failed.message
    assert rows(store) == Counter({1: 1})
    # After a failed fsync the store takes no more writes (the server stops), ...
    assert failed_commit(store, 4, 3).sqlstate == "58030"
    store.close()
    # ... and after a restart the failed write is not there.
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1})
    store.commit(5, [], {"a": updates([4], 5)})
    assert rows(store) == Counter({1: 1, 4: 1})
    store.close()


@pytest.mark.parametrize("partial", [False, True], ids=["nothing-written", "half-written"])
def test_a_full_disk_while_writing_the_log_leaves_no_bytes_behind(tmp_path, monkeypatch, partial):
    """ENOSPC: the write fails with 53100, none of its bytes go out with the next record, and
    the store carries on once there is room."""
    store = fresh(tmp_path, 1)
    real_write = os.write
    armed = [True]

    def write(fd: int, data) -> int:
        if armed[0] and _fd_path(fd).endswith("log.jsonl"):
            if partial and len(data) > 1:
                armed[0] = "next"
                return real_write(fd, bytes(data)[:len(data) // 2])
            armed[0] = False
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    failed = failed_commit(store, 3, 2)
    assert failed.sqlstate == "53100"
    assert "No space left on device" in failed.message
    store.commit(4, [], {"a": updates([3], 4)})
    store.close()
    assert len(log_lines(tmp_path)) == 3
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 3: 1})
    store.close()


def test_a_full_disk_while_writing_a_data_file_fails_the_write_only(tmp_path, monkeypatch):
    store = fresh(tmp_path, 1)
    real_write = os.write

    def write(fd: int, data) -> int:
        if _fd_path(fd).endswith(".parquet"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    assert failed_commit(store, 3, 2).sqlstate == "53100"
    assert store.failed is None
    monkeypatch.setattr(os, "write", real_write)
    store.commit(4, [], {"a": updates([3], 4)})
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 3: 1})
    assert len(list((tmp_path / "collections" / "a").glob("*.parquet"))) == 2  # no half-written file
    store.close()


def test_a_read_only_data_directory_is_refused_at_start(tmp_path, monkeypatch):
    fresh(tmp_path, 1).close()
    real_open = os.open

    def ro_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)
    with pytest.raises(OSError) as refused:
        Store(tmp_path).open()
    assert refused.value.errno == errno.EROFS


# -- checksums: the log and the checkpoint ----------------------------------------------------

def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_one_bad_byte_in_the_middle_of_the_log_stops_start_up(tmp_path):
    fresh(tmp_path, 60).close()
    lines = log_lines(tmp_path)
    offset = sum(len(line) for line in lines[:20]) + 30  # inside record 21
    _flip(tmp_path / "log.jsonl", offset)
    before = (tmp_path / "log.jsonl").read_bytes()
    files = sorted((tmp_path / "collections" / "a").glob("*.parquet"))
    with pytest.raises(Exception) as damaged:
        Store(tmp_path).open()
    assert isinstance(damaged.value, storage.StorageDamaged)
    message = str(damaged.value)
    assert "log.jsonl" in message and f"offset {offset - 30}" in message
    assert "sparkwire check" in message and "--recover-to-last-good" in message
    # Nothing was changed: the log is whole and no data file was removed.
    assert (tmp_path / "log.jsonl").read_bytes() == before
    assert sorted((tmp_path / "collections" / "a").glob("*.parquet")) == files


def test_a_torn_last_record_is_dropped(tmp_path, caplog):
    fresh(tmp_path, 5).close()
    data = (tmp_path / "log.jsonl").read_bytes()
    last = log_lines(tmp_path)[-1]
    (tmp_path / "log.jsonl").write_bytes(data[:-len(last) // 2])
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    assert "torn" in caplog.text
    assert (tmp_path / "log.jsonl").read_bytes() == data[:-len(last)]
    store.commit(20, [], {"a": updates([7], 20)})
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1, 7: 1})
    store.close()


def test_a_bad_byte_in_the_last_whole_record_is_damage_not_a_torn_tail(tmp_path):
    """An acknowledged last record ends with its newline: a bad byte in it is damage (the
    record would otherwise be lost without a word)."""
    fresh(tmp_path, 5).close()
    size = (tmp_path / "log.jsonl").stat().st_size
    _flip(tmp_path / "log.jsonl", size - 40)
    with pytest.raises(Exception) as damaged:
        Store(tmp_path).open()
    assert isinstance(damaged.value, storage.StorageDamaged)


def test_a_damaged_newline_after_the_last_record_keeps_the_record(tmp_path):
    fresh(tmp_path, 5).close()
    size = (tmp_path / "log.jsonl").stat().st_size
    _flip(tmp_path / "log.jsonl", size - 1)
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})
    store.commit(20, [], {"a": updates([7], 20)})
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store)[7] == 1 and len(rows(store)) == 6
    store.close()


def test_a_missing_record_is_damage(tmp_path):
    fresh(tmp_path, 5).close()
    lines = log_lines(tmp_path)
    (tmp_path / "log.jsonl").write_bytes(b"".join(lines[:2] + lines[3:]))
    with pytest.raises(Exception) as damaged:
        Store(tmp_path).open()
    assert isinstance(damaged.value, storage.StorageDamaged)
    assert "record 4 follows record 2" in str(damaged.value)


def test_a_damaged_checkpoint_stops_start_up(tmp_path):
    store = fresh(tmp_path, 3)
    store.checkpoint({"catalog": "x"})
    store.close()
    _flip(tmp_path / "checkpoint.json", 20)
    with pytest.raises(Exception) as damaged:
        Store(tmp_path).open()
    assert isinstance(damaged.value, storage.StorageDamaged)
    assert "checkpoint.json" in str(damaged.value) and "backup" in str(damaged.value)


def test_records_carry_seq_ts_and_crc_and_the_checkpoint_its_last_seq(tmp_path):
    store = fresh(tmp_path, 2)
    lines = log_lines(tmp_path)
    records = [json.loads(line) for line in lines]  # still plain JSON, one object a line
    assert [(r["seq"], r["ts"]) for r in records] == [(1, 1), (2, 2), (3, 3)]
    assert all(len(r["crc"]) == 8 for r in records)
    store.checkpoint(None)
    store.close()
    state = json.loads((tmp_path / "checkpoint.json").read_bytes())
    assert (state["seq"], state["last_ts"]) == (3, 3) and "crc" in state
    assert (tmp_path / "log.jsonl").read_bytes() == b""


def test_a_data_directory_written_before_checksums_is_read(tmp_path):
    """Logs and checkpoints of earlier versions (no seq, no crc) still open; new records and
    the next checkpoint have them."""
    coll = tmp_path / "collections" / "a"
    coll.mkdir(parents=True)
    pq.write_table(updates([1, 2], 5), coll / "5-old.parquet")
    pq.write_table(updates([3], 7), coll / "7-old.parquet")
    f5 = {"path": "collections/a/5-old.parquet", "min_ts": 5, "max_ts": 5, "rows": 2, "retractions": 0}
    f7 = {"path": "collections/a/7-old.parquet", "min_ts": 7, "max_ts": 7, "rows": 1, "retractions": 0}
    (tmp_path / "checkpoint.json").write_text(json.dumps(
        {"last_ts": 5, "catalog": None, "collections": [{"id": "a", "since": 1, "upper": 5, "files": [f5]}]}))
    old = [{"ts": 5, "catalog": [], "files": {"a": f5}}, {"ts": 7, "catalog": [], "files": {"a": f7}}]
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1})
    store.commit(9, [], {"a": updates([4], 9)})
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    store.checkpoint(None)
    store.close()
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    store.close()


# -- checksums: data files ----------------------------------------------------------------

@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_a_damaged_data_file_is_XX001_naming_the_table_and_file(tmp_path, damage):
    store = fresh(tmp_path)
    store.commit(2, [], {"a": updates(list(range(1000)), 2)})
    store.close()
    store, _ = reopen(tmp_path)
    store.label = lambda cid: {"a": "accounts"}[cid]
    (f,) = store.files("a", 10)[0]
    path = tmp_path / f.path
    if damage == "flipped":
        for offset in (200, 201, 202):
            _flip(path, offset)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:f.bytes // 2])
    else:
        path.unlink()
    with pytest.raises(SqlError) as err:
        store.verify("a", [f])
    assert err.value.sqlstate == "XX001"
    assert f.path in err.value.message and '"accounts"' in err.value.message
    with pytest.raises(SqlError):
        store.read_local([f], SCHEMA, "a")
    store.close()


def test_data_files_carry_page_checksums(tmp_path):
    store = fresh(tmp_path, 1)
    (f,) = store.files("a", 10)[0]
    data = bytearray((tmp_path / f.path).read_bytes())
    # A bad byte in a data page fails the page's own check too (what Spark verifies).
    page = data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00")  # row id 1, int64 little-endian
    data[page] ^= 0x04
    (tmp_path / f.path).write_bytes(bytes(data))
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(tmp_path / f.path, page_checksum_verification=True)
    store.close()


def test_files_a_read_may_use_are_kept_until_it_finishes(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "GARBAGE_DELAY", 0.0)
    store = fresh(tmp_path, 3)
    files = store.files_to_compact("a", store.last_ts)
    with store.reading():
        new = store.write_compacted("a", store.last_ts, store.read_local(files, SCHEMA, "a"))
        store.finish_compaction("a", store.last_ts, files, new)
        store.collect_garbage()
        assert all((tmp_path / f.path).exists() for f in files)
    with store.reading():  # a read that began after the compaction does not hold its garbage
        store.collect_garbage()
        assert not any((tmp_path / f.path).exists() for f in files)
    store.close()


# -- sparkwire check -----------------------------------------------------------------------

def _check(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "server", "check", "--data-dir", str(data_dir), *args],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_check_reports_damage_and_what_a_recovery_would_lose(tmp_path):
    fresh(tmp_path, 10).close()
    clean = _check(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "11 records to replay" in clean.stdout and "11 checked, all ok" not in clean.stdout
    assert "10 checked, all ok" in clean.stdout
    lines = log_lines(tmp_path)
    offset = sum(len(line) for line in lines[:6])
    _flip(tmp_path / "log.jsonl", offset + 25)  # record 7 of 11
    damaged_log = (tmp_path / "log.jsonl").read_bytes()
    report = _check(tmp_path)
    assert report.returncode == 1
    assert f"DAMAGED: {tmp_path}/log.jsonl is damaged at byte offset {offset}" in report.stdout
    assert "4 readable records (records 8 to 11, timestamps 8 to 11): 4 updates to \"a\"" in report.stdout
    recovered = _check(tmp_path, "--recover-to-last-good")
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "after recovery:" in recovered.stdout
    store, _ = reopen(tmp_path)
    assert rows(store) == Counter({i: 1 for i in range(1, 6)})
    store.close()
    (aside,) = tmp_path.glob("damaged-*")
    assert (aside / "log.jsonl").read_bytes() == damaged_log
    assert (tmp_path / "log.jsonl").read_bytes() == damaged_log[:offset]
    assert len(list(aside.glob("collections/a/*.parquet"))) == 5  # the files only the lost records named


def test_check_reports_a_damaged_data_file(tmp_path):
    fresh(tmp_path, 2).close()
    path = min((tmp_path / "collections" / "a").glob("*.parquet"))
    _flip(path, 10)
    report = _check(tmp_path)
    assert report.returncode == 1
    assert f"DAMAGED: data file {path.relative_to(tmp_path)} of table \"a\"" in report.stdout
    assert "2 checked, 1 damaged" in report.stdout


# -- every durable step ----------------------------------------------------------------------

MODES = {
    "crash": "process crash before the step (what was written stays)",
    "power": "power loss before the step (only what was fsynced stays)",
    "torn": "power loss with the log's unsynced tail half written",
    "eio": "the step fails with EIO",
    "enospc": "a write fails with ENOSPC",
    "eio2": "an fsync fails with EIO, and so does taking the record back",
}


def test_every_durable_step_recovers_to_exactly_the_acknowledged_writes(tmp_path, capsys):
    """A workload of commits (across collections, with deletes, creates and a drop),
    checkpoints and compactions, stopped or failed at each of its durable steps in each mode,
    then restarted: every acknowledged write is there exactly once, no write reported failed
    is, the one under way is all there or not at all, and the log takes new records."""
    from tests.storage_faults import count_steps, run_point

    steps = count_steps(tmp_path / "count")
    assert {s.kind for s in steps} >= {"create", "write", "fsync", "fsync_dir", "rename", "truncate", "mkdir",
                                       "unlink"}
    points = 0
    totals = Counter()
    bad = []
    for mode in MODES:
        for n, step in enumerate(steps, 1):
            if mode == "enospc" and step.kind != "write" or mode == "eio2" and step.kind != "fsync":
                continue
            verdict, _, _ = run_point(tmp_path / f"{mode}-{n}", mode, n)
            points += 1
            totals.update(lost=verdict.lost, duplicated=verdict.duplicated, resurrected=verdict.resurrected,
                          wrong=verdict.wrong)
            if not verdict.ok:
                bad.append((mode, n, step.kind, step.path, verdict.problems))
    with capsys.disabled():
        print(f"\ncrash-consistency (storage): {points} crash/fault points over {len(steps)} durable steps "
              f"× {len(MODES)} modes: {totals['lost']} lost, {totals['duplicated']} duplicated, "
              f"{totals['resurrected']} resurrected, {totals['wrong']} silently wrong")
    assert not bad, bad[:5]
    assert points > 400
