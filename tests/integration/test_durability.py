"""Durability under faults, end to end: real server processes, faults injected with strace
(as a user would find them) and with the storage layer's own fault points
(SPARKWIRE_FAULTS), bit flips in the log and in data files, a full disk, a read-only data
directory, and reads racing compaction.

Invariant everywhere: every acknowledged write is there exactly once after a restart, no write
reported failed ever is, damage is an error naming the file (never a wrong answer), and no
statement fails because compaction moved under it. The storage-level suite over every durable
step (without Spark) is tests/unit/test_storage_durability.py.

Writes of constants (CREATE TABLE, INSERT ... VALUES) need no Spark: servers that only write
run with a Spark Connect master nobody listens on (`NO_SPARK`), so no JVM starts, and what
they left is read back with the store itself (`_stored_ids`), as a restarted server would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest

from spark_backend.storage import Store
from tests.support import ROOT, ServerProcess, wait_until, writes_until_crash

STRACE = shutil.which("strace")
needs_strace = pytest.mark.skipif(STRACE is None, reason="strace is not installed")
NO_SPARK = ["--spark-master", "sc://127.0.0.1:9"]


@pytest.fixture(scope="module")
def spark_node():
    """One server with Spark for the tests that read (each with tables of its own)."""
    path = Path(tempfile.mkdtemp(prefix="sparkwire-durability-"))
    proc = ServerProcess(data_dir=str(path / "data")).start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.cleanup()
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="sparkwire-durability-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _strace(*args: str) -> list[str]:
    # Only the traced calls stop the process (seccomp-bpf): the server runs at nearly full speed.
    return [STRACE, "-f", "-qq", "-o", "/dev/null", "--seccomp-bpf", *args, "--"]


def _writer(data: Path, prefix: list[str] | None = None, env: dict[str, str] | None = None) -> ServerProcess:
    """A server that takes writes without Spark."""
    return ServerProcess(data_dir=str(data), extra_args=NO_SPARK, prefix=prefix, env=env)


def _kill9(proc: ServerProcess) -> None:
    """kill -9 the server (strace's child, when it runs under strace)."""
    if proc.prefix and proc.proc.poll() is None:
        with contextlib.suppress(OSError, IndexError, ValueError):
            pid = proc.proc.pid
            child = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
            os.kill(child, signal.SIGKILL)
    proc.kill9()
    proc.stop()


def _stored_ids(data: Path) -> list[int] | str:
    """Table t's rows (with repeats), as a restart recovers them: read with the store itself."""
    store = Store(data)
    try:
        recovered = store.open()
    except Exception as exc:  # noqa: BLE001 - reported as the failure
        return f"recovery failed: {exc}"
    try:
        snapshot = recovered.catalog_snapshot or {"items": []}
        items = {i["name"]: i["id"] for i in snapshot["items"]}
        creates = [op["item"] for op in recovered.catalog_ops if op.get("op") == "create"]
        if sum(1 for i in creates if i["name"] == "t") + ("t" in items) > 1:
            return "the table was created twice"
        items.update({i["name"]: i["id"] for i in creates})
        if "t" not in items:
            return []
        ids: Counter = Counter()
        files, _ = store.files(items["t"], 2**62)
        store.verify(items["t"], files)
        for f in files:
            t = pq.read_table(store.path(f))
            for i, d in zip(t.column(0).to_pylist(), t.column("mz_diff").to_pylist()):
                ids[i] += d
        return sorted(ids.elements())
    finally:
        store.close()


def _still_takes_writes(data: Path) -> None:
    """A restarted server recovers and takes a write (id 1000)."""
    proc = _writer(data).start()
    try:
        with psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute("INSERT INTO t VALUES (1000)")
    finally:
        _kill9(proc)


# -- the faults of issue 17, as they were found --------------------------------------------------

@needs_strace
def test_a_crash_during_a_checkpoint_duplicates_nothing(base):
    """The checkpoint's rename is stalled (strace delays its return: the new checkpoint is in
    place, the log not yet emptied) and the server is killed there; after a restart every row
    is there once (main had every row twice)."""
    data = base / "data"
    data.mkdir()
    # -P matches a rename by its source.
    proc = _writer(data, _strace("-e", "trace=rename,renameat,renameat2", "-P", str(data / "checkpoint.json.tmp"),
                                 "-e", "inject=rename,renameat,renameat2:delay_exit=120s:when=1")).start()
    acked: list[int] = []
    stalled = threading.Event()

    def writer() -> None:
        with contextlib.suppress(psycopg.Error), psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (id int)")
            for i in range(1, 700):
                c.execute("INSERT INTO t VALUES (%s)", (i,))
                acked.append(i)
                if stalled.is_set():
                    return

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    # The 500th record triggers the checkpoint; its INSERT stalls with the rename done.
    wait_until(lambda: (data / "checkpoint.json").exists(), 120, message="a checkpoint in place")
    stalled.set()
    time.sleep(0.5)
    _kill9(proc)
    thread.join(30)
    assert len(acked) >= 490, len(acked)
    assert (data / "log.jsonl").read_bytes().count(b"\n") >= 490, "the crash was to come before the log was emptied"
    ids = _stored_ids(data)
    assert ids[:len(acked)] == acked and len(ids) - len(acked) <= 1, ids  # the stalled one may be there
    _still_takes_writes(data)
    assert _stored_ids(data) == [*ids, 1000]


@needs_strace
def test_a_failed_log_fsync_is_reported_never_acknowledged_and_never_comes_back(base):
    """fsync of the log fails once (EIO, as a failing disk reports it): that INSERT gets 58030,
    the server stops (fail-stop, as PostgreSQL does), and after a restart the row is not there
    (main answered XX000, carried on, and the row came back after a crash)."""
    data = base / "data"
    data.mkdir()
    # fsync #1 is CREATE TABLE's record, #k+1 the k-th INSERT's: INSERT 19 fails.
    proc = _writer(data, _strace("-e", "trace=fsync,fdatasync", "-P", str(data / "log.jsonl"),
                                 "-e", "inject=fsync,fdatasync:error=EIO:when=20")).start()
    failed = None
    acked = []
    with psycopg.connect(proc.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (id int)")
        for i in range(1, 25):
            try:
                c.execute("INSERT INTO t VALUES (%s)", (i,))
                acked.append(i)
            except psycopg.Error as exc:
                failed = (i, exc.sqlstate, str(exc))
                break
    assert failed is not None and failed[0] == 19, failed
    assert failed[1] == "58030", failed
    assert "could not fsync the log: Input/output error" in failed[2]
    assert "Traceback" not in failed[2] and "OSError" not in failed[2]
    # The server exits on its own, saying why; nothing more is acknowledged meanwhile.
    wait_until(lambda: proc.proc.poll() is not None, 60, message="the server to exit after the failed fsync")
    assert "storage failed" in proc.log_text() and "no more writes are accepted" in proc.log_text()
    _kill9(proc)
    assert acked == list(range(1, 19))
    assert _stored_ids(data) == acked
    _still_takes_writes(data)
    assert _stored_ids(data) == [*acked, 1000]


@needs_strace
def test_a_full_disk_while_writing_the_log_fails_that_write_only(base):
    """write of the log fails once with ENOSPC: that INSERT gets 53100 and stays out — also
    after the next records and a kill -9 (main kept its bytes in a buffer and wrote them with
    the next record, so the failed row came back)."""
    data = base / "data"
    data.mkdir()
    proc = _writer(data, _strace("-e", "trace=write,pwrite64,writev", "-P", str(data / "log.jsonl"),
                                 "-e", "inject=write,pwrite64,writev:error=ENOSPC:when=10")).start()
    outcomes = {}
    with psycopg.connect(proc.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (id int)")
        for i in range(1, 16):
            try:
                c.execute("INSERT INTO t VALUES (%s)", (i,))
                outcomes[i] = "ok"
            except psycopg.Error as exc:
                outcomes[i] = (exc.sqlstate, str(exc).splitlines()[0])
    assert outcomes[9] == ("53100", "could not write to the log: No space left on device"), outcomes
    assert all(v == "ok" for i, v in outcomes.items() if i != 9), outcomes
    assert proc.proc.poll() is None  # a full disk is not a reason to stop
    _kill9(proc)
    assert _stored_ids(data) == [i for i in range(1, 16) if i != 9]


def _write_rows(data: Path, n: int) -> None:
    proc = _writer(data).start()
    try:
        with psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (id int)")
            for i in range(1, n + 1):
                c.execute("INSERT INTO t VALUES (%s)", (i,))
    finally:
        _kill9(proc)


def _check(data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "server", "check", "--data-dir", str(data), *args],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_one_bad_byte_in_the_middle_of_the_log_stops_the_server_until_recovered(base):
    """main started without a word on such a log, showed 19 of 60 rows and cut the log there."""
    data = base / "data"
    _write_rows(data, 60)
    log_path = data / "log.jsonl"
    lines = log_path.read_bytes().splitlines(keepends=True)
    offset = sum(len(line) for line in lines[:20])  # record 21: INSERT 20
    damaged = bytearray(log_path.read_bytes())
    damaged[offset + 12] ^= 0x20
    log_path.write_bytes(bytes(damaged))
    proc = _writer(data)
    with pytest.raises(RuntimeError, match="exited early"):
        proc.start()
    proc.stop()
    assert proc.proc.returncode == 2
    log = proc.log_text()
    assert f"log.jsonl is damaged at byte offset {offset}" in log and "sparkwire check" in log
    assert log_path.read_bytes() == bytes(damaged)  # nothing was cut
    report = _check(data)
    assert report.returncode == 1
    assert "40 readable records (records 22 to 61" in report.stdout and '40 updates to "t"' in report.stdout
    assert _check(data, "--recover-to-last-good").returncode == 0
    assert _stored_ids(data) == list(range(1, 20))
    _still_takes_writes(data)


def test_a_torn_last_record_is_dropped_with_a_warning(base):
    data = base / "data"
    _write_rows(data, 10)
    log_path = data / "log.jsonl"
    raw = log_path.read_bytes()
    last = raw.splitlines(keepends=True)[-1]
    log_path.write_bytes(raw[:-len(last) + 25])  # the last record cut short, as a crash leaves it
    proc = _writer(data).start()
    try:
        with psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute("INSERT INTO t VALUES (1000)")
        assert "dropped a torn last log record" in proc.log_text()
    finally:
        _kill9(proc)
    assert _stored_ids(data) == [*range(1, 10), 1000]


def _values(ids: range) -> str:
    return ", ".join(f"({i}, 'row {i}')" for i in ids)


def test_a_damaged_data_file_is_an_error_naming_table_and_file_not_a_wrong_answer(spark_node):
    """Three flipped bytes (main: sum(id) = -71,777,218,560,347,345 with the right count) and a
    file cut short (main: an opaque XX000), found by the file's checksum at its first read, and
    a file damaged after that read (found by the Parquet page checksums Spark verifies) are all
    XX001 naming the table and the file."""
    data = Path(spark_node.data_dir)
    tables = ("d_flipped", "d_truncated", "d_later")
    with psycopg.connect(spark_node.dsn, autocommit=True) as c:
        for name in tables:
            c.execute(f"CREATE TABLE {name} (id bigint, note text)")
            c.execute(f"INSERT INTO {name} VALUES {_values(range(1, 5001))}")
        catalog = _catalog(data)
        files = {name: next((data / "collections" / catalog[name]).glob("*.parquet")) for name in tables}
        raw = bytearray(files["d_flipped"].read_bytes())
        for at in (len(raw) // 3, len(raw) // 3 + 1, len(raw) // 3 + 2):
            raw[at] ^= 0xFF
        files["d_flipped"].write_bytes(bytes(raw))
        files["d_truncated"].write_bytes(files["d_truncated"].read_bytes()[:files["d_truncated"].stat().st_size // 2])
        assert c.execute("SELECT count(*), sum(id) FROM d_later").fetchone() == (5000, 5000 * 5001 // 2)
        raw = bytearray(files["d_later"].read_bytes())
        at = raw.index((2500).to_bytes(8, "little"))  # an id, inside a data page
        raw[at + 1] ^= 0x10
        files["d_later"].write_bytes(bytes(raw))
        for name in tables:
            with pytest.raises(psycopg.Error) as err:
                got = c.execute(f"SELECT count(*), sum(id) FROM {name}").fetchone()
                assert got == (5000, 5000 * 5001 // 2), f"a wrong answer: {got}"
            assert err.value.sqlstate == "XX001", (name, str(err.value))
            message = str(err.value).splitlines()[0]
            rel = str(files[name].relative_to(data))
            assert message.startswith(f'data file {rel} of table "{name}" is damaged: '), message
            assert "py4j" not in message and "java." not in message and "Traceback" not in message
        assert "checksum" in message.lower()  # the Spark side: a page checksum failed
        assert c.execute("SELECT 1").fetchone() == (1,)  # the session carries on
    report = _check(data)
    assert report.returncode == 1
    for name in tables:
        assert f'DAMAGED: data file {files[name].relative_to(data)} of table "{name}"' in report.stdout, report.stdout


def _catalog(data: Path) -> dict[str, str]:
    """Table name → collection id, from the log."""
    out = {}
    for line in (data / "log.jsonl").read_text().splitlines():
        for op in json.loads(line).get("catalog", []):
            if op.get("op") == "create":
                out[op["item"]["name"]] = op["item"]["id"]
    return out


# -- a full disk and a read-only data directory, for real ------------------------------------------

@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_fails_writes_with_53100_and_the_server_carries_on(base):
    with _tmpfs(base / "data", "8m") as data:  # the server's own log stays outside
        proc = _writer(data).start()
        try:
            with psycopg.connect(proc.dsn, autocommit=True) as c:
                c.execute("CREATE TABLE t (id int, pad text)")
                c.execute("INSERT INTO t VALUES (1, 'x')")
                filler = data / "filler"
                with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
                    while True:
                        f.write(b"\0" * (1 << 16))
                with pytest.raises(psycopg.Error) as err:
                    c.execute("INSERT INTO t VALUES (3, 'no room')")
                assert err.value.sqlstate == "53100", str(err.value)
                assert str(err.value).startswith("could not "), str(err.value)
                assert "No space left on device" in str(err.value)
                filler.unlink()
                c.execute("INSERT INTO t VALUES (2, 'after')")
        finally:
            _kill9(proc)
        assert _stored_ids(data) == [1, 2]


def test_a_read_only_data_directory_is_refused_at_start_with_a_plain_message(base):
    with _tmpfs(base / "data", "16m") as data:  # the server's own log stays outside
        _write_rows(data, 3)
        subprocess.run(["mount", "-o", "remount,ro", str(data)], check=True)
        proc = _writer(data)
        with pytest.raises(RuntimeError, match="exited early"):
            proc.start()
        proc.stop()
        assert proc.proc.returncode == 2
        assert "Read-only file system" in proc.log_text() and "cannot open the data directory" in proc.log_text()
        report = _check(data)  # checking needs no writes
        assert report.returncode == 0, report.stdout + report.stderr
        subprocess.run(["mount", "-o", "remount,rw", str(data)], check=True)
        _still_takes_writes(data)
        assert _stored_ids(data) == [1, 2, 3, 1000]


def test_a_data_file_that_cannot_be_created_fails_the_write_with_58030(base):
    """The storage layer's own fault point: creating the INSERT's data file fails (EACCES, as a
    folder one may not write in gives); the write gets 58030 and the server carries on."""
    data = base / "data"
    proc = _writer(data, env={"SPARKWIRE_FAULTS": "fail:create@collections:2:EACCES"}).start()
    try:
        with psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (id int)")
            c.execute("INSERT INTO t VALUES (1)")
            with pytest.raises(psycopg.Error) as err:
                c.execute("INSERT INTO t VALUES (2)")
            assert err.value.sqlstate == "58030"
            assert str(err.value).startswith("could not create data file collections/"), str(err.value)
            assert "Permission denied" in str(err.value)
            c.execute("INSERT INTO t VALUES (3)")
    finally:
        _kill9(proc)
    assert _stored_ids(data) == [1, 3]


# -- crash at every durable step of a workload, end to end -----------------------------------------

WORKLOAD = 3  # INSERTs after the CREATE TABLE; a checkpoint after the 3rd record


def _run_workload(data: Path, env: dict[str, str]) -> tuple[list[int], int | None]:
    """CREATE TABLE and WORKLOAD one-row INSERTs until the server dies: (acknowledged ids,
    the id under way when it died)."""
    return writes_until_crash(_writer(data, env={"SPARKWIRE_CHECKPOINT_EVERY": "3", **env}),
                              "CREATE TABLE t (id int)", "INSERT INTO t VALUES (%s)", WORKLOAD, _kill9)


def test_a_crash_at_every_durable_step_of_a_server_keeps_exactly_the_acknowledged_writes(base, capsys):
    trace = base / "trace"
    acked, _ = _run_workload(base / "count", {"SPARKWIRE_FAULTS_TRACE": str(trace)})
    assert acked == list(range(1, WORKLOAD + 1))
    steps = trace.read_text().splitlines()
    kinds = {s.split()[0] for s in steps}
    assert {"write", "fsync", "fsync_dir", "create", "rename", "truncate"} <= kinds, kinds
    failures = []
    points = [f"crash:any:{n}" for n in range(1, len(steps) + 1)] + [f"crash-after:any:{len(steps)}"]
    for n, spec in enumerate(points):
        data = base / f"p{n}"
        acked, under_way = _run_workload(data, {"SPARKWIRE_FAULTS": spec})
        got = _stored_ids(data)
        allowed = [acked, sorted([*acked, under_way])] if under_way else [acked]
        if got not in allowed:
            failures.append((spec, steps[min(n, len(steps) - 1)], acked, under_way, got))
        shutil.rmtree(data, ignore_errors=True)
    with capsys.disabled():
        print(f"\ncrash-consistency (server): {len(points)} crash points over {len(steps)} durable steps, "
              f"{len(failures)} with lost, duplicated, resurrected or wrong rows")
    assert not failures, failures[:3]


# -- reads hold their timestamp against compaction ---------------------------------------------------

def _compactions_done(c, table: str) -> int:
    return c.execute("SELECT count(*) FROM mz_internal.mz_background_work WHERE kind = 'compaction' "
                     "AND target = %s AND status = 'done'", [table]).fetchone()[0]


def test_a_transaction_reads_at_its_timestamp_while_compaction_runs(spark_node):
    """A transaction's reads keep the timestamp of its first read; compaction must not fold
    history past it while it is open (main: 22000 "the collection has been compacted up to")."""
    proc = spark_node
    with psycopg.connect(proc.dsn, autocommit=True) as c, psycopg.connect(proc.dsn) as txn:
        c.execute("CREATE TABLE h_txn (id int)")
        for i in range(20):
            c.execute("INSERT INTO h_txn VALUES (%s)", (i,))
        first = txn.execute("SELECT count(*) FROM h_txn").fetchone()  # BEGIN, and its read time
        assert first == (20,)
        i = 20
        # Writes after it, for longer than the history window: every commit looks for work,
        # and without the transaction's hold compaction would fold them all.
        for _ in range(4):
            for _ in range(12):
                c.execute("INSERT INTO h_txn VALUES (%s)", (i,))
                i += 1
            time.sleep(1.2)
        c.execute("INSERT INTO h_txn VALUES (%s)", (i,))
        i += 1
        assert _compactions_done(c, "h_txn") > 0
        assert txn.execute("SELECT count(*) FROM h_txn").fetchone() == first
        txn.rollback()
        assert txn.execute("SELECT count(*) FROM h_txn").fetchone() == (i,)


def test_many_clients_reading_and_writing_never_see_compaction_move_under_them(spark_node):
    """Readers (SELECT with a parameter, COPY TO) queueing for Spark while writers keep
    compaction busy: every statement succeeds (main: 65 of 100 such clients got 22000)."""
    proc = spark_node
    # More clients than the engine has threads (32): their statements queue for Spark, which
    # is where main lost them (the read time taken before the wait, the files after it). 40
    # clients for 10 s take 16 s here; 52 for 20 s took 190 s (see the closing note of b15561e's
    # session: the queue drains far slower past some depth).
    writers, readers, seconds = 4, 36, 10.0
    errors: list[str] = []
    done = {"insert": 0, "select": 0, "copy": 0}
    with psycopg.connect(proc.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE h_many (id int)")
        c.execute("INSERT INTO h_many SELECT n FROM generate_series(1, 100) AS n")
    stop = time.monotonic() + seconds

    def client(n: int) -> None:
        try:
            with psycopg.connect(proc.dsn, autocommit=True) as conn:
                k = 0
                while time.monotonic() < stop:
                    k += 1
                    if n < writers:
                        conn.execute("INSERT INTO h_many VALUES (%s)", (100_000 * n + k,))
                        done["insert"] += 1
                    elif n % 3 == 0:
                        with conn.cursor().copy("COPY (SELECT count(*) FROM h_many) TO STDOUT") as copy:
                            list(copy)
                        done["copy"] += 1
                    else:
                        conn.execute("SELECT count(*) FROM h_many WHERE id < %s", (1000 * n,)).fetchone()
                        done["select"] += 1
        except psycopg.Error as exc:
            errors.append(f"{exc.sqlstate}: {str(exc).splitlines()[0]}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(writers + readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, f"{len(errors)} of {readers} readers failed ({done}), e.g. {errors[:3]}"
    assert done["select"] and done["copy"], done
    # The reads held compaction back while they ran; once they are done it catches up
    # (no hold outlives its read).
    with psycopg.connect(proc.dsn, autocommit=True) as c:
        deadline = time.monotonic() + 60
        while not _compactions_done(c, "h_many"):
            assert time.monotonic() < deadline, "compaction never caught up: a read hold was left behind"
            c.execute("INSERT INTO h_many VALUES (0)")  # a commit is what looks for work
            time.sleep(0.5)
