"""Durability: acknowledged writes, views and the catalog survive `kill -9`;
compaction folds history without changing results, and a restart after it
finds the same data in fewer files.

The module runs its own server on a data directory it keeps across restarts
(not the shared `server` fixture).
"""

from __future__ import annotations

import json
import threading
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from tests.support import Node, ServerProcess, health


@pytest.fixture(scope="module")
def node():
    n = Node(prefix="sparkwire-restart-")
    try:
        n.start()
        yield n
    finally:
        n.close()


def _catalog_items(data_dir: str) -> dict[str, str]:
    """Table name → collection id, from the durable log and checkpoint."""
    root = Path(data_dir)
    records = []
    ckpt = root / "checkpoint.json"
    items: dict[str, str] = {}
    if ckpt.exists():
        for item in json.loads(ckpt.read_text())["catalog"]["items"]:
            items[item["name"]] = item["id"]
    log = root / "log.jsonl"
    if log.exists():
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for record in records:
        for op in record.get("catalog", []):
            if op.get("op") == "create":
                items[op["item"]["name"]] = op["item"]["id"]
    return items


def _parquet_files(data_dir: str, collection: str) -> list[Path]:
    return sorted((Path(data_dir) / "collections" / collection).glob("*.parquet"))


def _compacted_since(data_dir: str, collection: str) -> int:
    """How far compaction has folded the collection's history (0: not at all)."""
    since = 0
    log = Path(data_dir) / "log.jsonl"
    for line in log.read_text().splitlines():
        if line.strip():
            compact = json.loads(line).get("compact", {})
            if compact.get("collection") == collection:
                since = max(since, compact["since"])
    return since


# -- kill -9 and restart -------------------------------------------------------------

def _expected_accounts():
    return [(1, "alice", Decimal("150.00")), (3, "carol", Decimal("30.25")),
            (4, "dave", Decimal("0.00")), (5, "erin", Decimal("55.55"))]


def test_writes_survive_kill9(node):
    with node.connect() as c:
        c.execute("CREATE TABLE accounts (id int NOT NULL, owner text, balance numeric(10,2) "
                  "DEFAULT 0, opened date)")
        c.execute("CREATE TABLE scratch (x int)")
        c.execute("INSERT INTO accounts VALUES (1, 'alice', 100.00, '2024-01-01'), "
                  "(2, 'bob', 20.00, '2024-01-02')")
        c.execute("BEGIN")
        c.execute("INSERT INTO accounts VALUES (3, 'carol', 30.25, '2024-01-03')")
        c.execute("INSERT INTO accounts (id, owner, opened) VALUES (4, 'dave', '2024-01-04')")
        c.execute("COMMIT")
        c.execute("BEGIN")
        c.execute("INSERT INTO accounts VALUES (99, 'ghost', 1, NULL)")
        c.execute("ROLLBACK")
        assert c.execute("UPDATE accounts SET balance = balance + 50 WHERE owner = 'alice'").rowcount == 1
        assert c.execute("DELETE FROM accounts WHERE id = 2").rowcount == 1
        c.execute("BEGIN")
        c.execute("INSERT INTO accounts VALUES (5, 'erin', 55.55, '2024-01-05')")
        c.execute("UPDATE accounts SET owner = upper(owner) WHERE id = 5")
        c.execute("UPDATE accounts SET owner = lower(owner) WHERE id = 5")
        c.execute("COMMIT")
        c.execute("CREATE VIEW rich AS SELECT owner, balance FROM accounts WHERE balance > 50")
        c.execute("CREATE VIEW rich_count AS SELECT count(*) AS n FROM rich")
        c.execute("DROP TABLE scratch")
        assert c.execute("SELECT id, owner, balance FROM accounts ORDER BY id").fetchall() == \
            _expected_accounts()
        # An uncommitted transaction at the time of the crash must vanish.
        pending = node.connect()
        pending.execute("BEGIN")
        pending.execute("INSERT INTO accounts VALUES (77, 'uncommitted', 7, NULL)")

    first_pid = node.proc.proc.pid
    node.restart_after_kill9()
    assert node.proc.proc.pid != first_pid
    pending.close()

    with node.connect() as c:
        cur = c.execute("SELECT id, owner, balance, opened FROM accounts ORDER BY id")
        assert [d.type_code for d in cur.description] == [23, 25, 1700, 1082]
        rows = cur.fetchall()
        assert [r[:3] for r in rows] == _expected_accounts()
        assert str(rows[0][3]) == "2024-01-01"
        assert c.execute("SELECT owner, balance FROM rich ORDER BY owner").fetchall() == [
            ("alice", Decimal("150.00")), ("erin", Decimal("55.55"))]
        assert c.execute("SELECT n FROM rich_count").fetchone() == (2,)
        assert c.execute("SHOW TABLES").fetchall() == [("accounts",)]
        assert c.execute("SHOW VIEWS").fetchall() == [("rich",), ("rich_count",)]
        assert c.execute("SHOW COLUMNS FROM accounts").fetchall() == [
            ("id", False, "integer"), ("owner", True, "text"), ("balance", True, "numeric(10,2)"),
            ("opened", True, "date")]
        # Constraints and defaults came back too.
        with pytest.raises(psycopg.errors.NotNullViolation):
            c.execute("INSERT INTO accounts (owner) VALUES ('nobody')")
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            c.execute("DROP TABLE accounts")
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM scratch")
        # The restarted server takes new writes, after the old ones in time.
        c.execute("INSERT INTO accounts (id, owner) VALUES (6, 'frank')")
        assert c.execute("SELECT balance FROM accounts WHERE id = 6").fetchone() == (Decimal("0.00"),)
        c.execute("CREATE TABLE after_restart (x int)")
        c.execute("INSERT INTO after_restart VALUES (1)")
        assert c.execute("SELECT count(*) FROM accounts").fetchone() == (5,)


# -- compaction ---------------------------------------------------------------------

N_INSERTS = 40


def _check_events(c) -> None:
    rows = c.execute("SELECT id, kind FROM events ORDER BY id").fetchall()
    expected = [(i, "even" if i % 2 == 0 else "odd") for i in range(1, N_INSERTS + 1)
                if i % 10 != 0]
    expected = [(i, k.upper() if i <= 5 else k) for i, k in expected]
    assert rows == expected
    assert c.execute("SELECT count(*), sum(id) FROM events").fetchone() == (
        len(expected), sum(i for i, _ in expected))
    assert c.execute("SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind").fetchall() == \
        sorted({k: sum(1 for _, kk in expected if kk == k) for _, k in expected}.items())


def test_compaction_keeps_results_and_shrinks_files(node):
    with node.connect() as c:
        c.execute("CREATE TABLE events (id int, kind text)")
        c.execute("CREATE TABLE ticks (n int)")
        for i in range(1, N_INSERTS + 1):
            c.execute("INSERT INTO events VALUES (%s, %s)", [i, "even" if i % 2 == 0 else "odd"])
            if i == N_INSERTS // 2:
                time.sleep(0.01)
                mid = int(time.time() * 1000)
        assert c.execute("DELETE FROM events WHERE id % 10 = 0").rowcount == N_INSERTS // 10
        before_update = int(time.time() * 1000)
        assert c.execute("UPDATE events SET kind = upper(kind) WHERE id <= 5").rowcount == 5
        _check_events(c)

        collection = _catalog_items(node.data_dir)["events"]
        # One file per write (compaction may already have started, but the files it
        # replaces are deleted only a minute later).
        before = _parquet_files(node.data_dir, collection)
        assert len(before) >= N_INSERTS

        # Compaction folds files older than the retention window (1 s); a commit
        # (to any table) is what looks for work. Meanwhile another session keeps
        # reading: a read must never see the file lists half swapped.
        expected_count = c.execute("SELECT count(*) FROM events").fetchone()[0]
        counts: list[int] = []
        stop = threading.Event()

        def reader() -> None:
            with node.connect() as r:
                while not stop.is_set():
                    counts.append(r.execute("SELECT count(*) FROM events").fetchone()[0])

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            deadline = time.monotonic() + 90
            n = 0
            while _compacted_since(node.data_dir, collection) < before_update:
                assert time.monotonic() < deadline, "compaction did not reach the UPDATE"
                time.sleep(1.2)
                n += 1
                c.execute("INSERT INTO ticks VALUES (%s)", [n])
        finally:
            stop.set()
            thread.join(60)
        assert counts and set(counts) == {expected_count}
        _check_events(c)
        # Long work reports itself: in the status relation and in the log.
        work = c.execute("SELECT kind, status, detail, finished_at >= started_at FROM "
                         "mz_internal.mz_background_work WHERE target = 'events' AND status = 'done'").fetchall()
        assert work and all(k == "compaction" and ok for k, _, _, ok in work), work
        assert any("files" in detail and "→" in detail for _, _, detail, _ in work), work
        spark = c.execute("SELECT status, seconds > 0 FROM mz_internal.mz_background_work "
                          "WHERE kind = 'spark start'").fetchall()
        assert spark == [("done", True)]
        log = node.proc.log_path.read_text(errors="replace")
        assert "compacting" in log and "compacted" in log and "spark ready" in log
        # History before the compaction frontier is gone, so AS OF there is refused.
        with pytest.raises(psycopg.Error) as info:
            c.execute(f"SELECT count(*) FROM events AS OF {mid}")
        assert info.value.sqlstate == "22000"
        assert "compacted" in str(info.value)
        # Writes after compaction land on top of the compacted state.
        c.execute("INSERT INTO events VALUES (%s, 'late')", [1000])
        c.execute("DELETE FROM events WHERE id = 1000")
        _check_events(c)

    # A second crash, this time after compaction: the compacted state, the writes
    # since, and everything written after the first restart are all still there.
    node.restart_after_kill9()
    after = _parquet_files(node.data_dir, collection)
    assert len(after) < len(before) // 4, (len(before), len(after))
    with node.connect() as c:
        _check_events(c)
        assert c.execute("SELECT count(*) FROM ticks").fetchone() == (n,)
        # And the table keeps working after the compacted restart.
        c.execute("INSERT INTO events VALUES (%s, 'post')", [2000])
        assert c.execute("SELECT kind FROM events WHERE id = 2000").fetchone() == ("post",)
        c.execute("DELETE FROM events WHERE id = 2000")
        _check_events(c)


def _check_tiers(c) -> None:
    assert c.execute("SELECT count(*), count(*) FILTER (WHERE v = 'new') FROM tiers").fetchone() == (29990, 12)
    assert c.execute("SELECT id, v FROM tiers WHERE id <= 13 OR id BETWEEN 99 AND 110 ORDER BY id").fetchall() == \
        [(i, "new") for i in range(1, 13)] + [(13, "base"), (99, "base"), (110, "base")]


def test_compaction_leaves_a_big_file_and_keeps_its_retractions(node):
    """Size-tiered compaction folds the small files on top of a big one without rewriting
    it; retractions of the big file's rows survive the fold and still cancel them."""
    with node.connect() as c:
        c.execute("CREATE TABLE tiers (id int, v text)")
        c.execute("INSERT INTO tiers SELECT n, 'base' FROM generate_series(1, 30000) AS n")
        for i in range(1, 13):
            c.execute("UPDATE tiers SET v = 'new' WHERE id = %s", [i])
        c.execute("DELETE FROM tiers WHERE id BETWEEN 100 AND 109")
        last_write = c.execute("SELECT now()").fetchone()[0]
        _check_tiers(c)
        deadline = time.monotonic() + 90
        while True:
            done = c.execute("SELECT detail FROM mz_internal.mz_background_work WHERE target = 'tiers' "
                             "AND status = 'done' AND started_at > %s", [last_write]).fetchall()
            if done:
                break
            assert time.monotonic() < deadline, "no compaction of the small files"
            time.sleep(1.0)
            c.execute("INSERT INTO ticks VALUES (0)")  # a commit is what looks for work
        folded = [int(d.split(" files, ")[1].split()[0]) for (d,) in done]
        assert all(n < 30000 for n in folded), done  # the 30 000-row file was left alone
        _check_tiers(c)
    node.restart_after_kill9()
    with node.connect() as c:
        _check_tiers(c)


# -- health ---------------------------------------------------------------------------

def test_health_follows_spark_start(node):
    """The container's HEALTHCHECK: /health is 503 while Spark starts, 200 once it answers."""
    node.kill9()
    node.proc = ServerProcess(data_dir=node.data_dir).start()  # returns as soon as it listens
    answers = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not answers or answers[-1][0] != 200):
        got = health(node.proc.metrics_port)
        if got is not None:
            answers.append(got)
        time.sleep(0.05)
    assert answers[0] == (503, "starting: Spark is not up yet\n"), answers[:3]
    assert answers[-1] == (200, "ready\n")
    assert "sparkwire_spark_ready 1" in node.proc.metrics().splitlines()
    with node.connect() as c:
        _check_events(c)


# -- writes racing DROP TABLE ------------------------------------------------------------------

def test_inserts_racing_drop_table_fail_cleanly_and_the_log_stays_readable(node):
    """INSERTs that pass their checks just before another session drops the table must
    fail with an error, not commit to the dropped table (which left a log the next start
    could not replay); writes to other tables are kept."""
    with node.connect() as c:
        c.execute("CREATE TABLE keep (n int)")
        c.execute("CREATE TABLE doomed (n int)")
    stop = threading.Event()
    errors: list[str] = []
    acknowledged = [0]

    def writer(wid: int) -> None:
        with node.connect() as conn:
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    conn.execute("INSERT INTO doomed VALUES (%s)", (i,))
                except psycopg.Error as exc:
                    errors.append(f"{exc.sqlstate}: {exc}")
                    return
                conn.execute("INSERT INTO keep VALUES (%s)", (wid * 1_000_000 + i,))
                acknowledged[0] += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    with node.connect() as c:
        c.execute("DROP TABLE doomed")
    for t in threads:
        t.join(timeout=60)
    stop.set()
    assert len(errors) == 4, errors
    assert all(e.startswith("42P01") and '"doomed"' in e for e in errors), errors
    with node.connect() as c:
        kept = c.execute("SELECT count(*) FROM keep").fetchone()[0]
    assert kept == acknowledged[0]
    node.restart_after_kill9()
    with node.connect() as c:
        assert c.execute("SELECT count(*) FROM keep").fetchone()[0] == kept
        c.execute("DROP TABLE keep")


def test_concurrent_autocommit_inserts_are_group_committed_and_survive_kill9(node):
    """Writers that commit at the same time share one commit (one timestamp for the rows of
    several sessions, as Materialize's group commit does); every acknowledged row is durable."""
    writers, per_writer = 6, 40
    expected = sorted((w, s, f"w{w}") for w in range(writers) for s in range(per_writer))
    failures: list[BaseException] = []
    barrier = threading.Barrier(writers)

    def writer(wid: int) -> None:
        try:
            with node.connect() as conn:
                barrier.wait()
                for seq in range(per_writer):
                    # Extended protocol (parameters) and simple protocol (literals) alike.
                    if seq % 2:
                        conn.execute("INSERT INTO grouped VALUES (%s, %s, %s)", (wid, seq, f"w{wid}"))
                    else:
                        conn.execute(f"INSERT INTO grouped VALUES ({wid}, {seq}, 'w{wid}')", prepare=False)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    with node.connect() as c:
        c.execute("CREATE TABLE grouped (writer int, seq int, note text)")
        watcher = psycopg.connect(node.proc.dsn)
        cur = watcher.cursor()
        cur.execute("BEGIN")
        cur.execute("DECLARE g CURSOR FOR SUBSCRIBE grouped WITH (SNAPSHOT = false)")
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not failures, failures
        updates: list[tuple] = []
        deadline = time.monotonic() + 60
        while len(updates) < len(expected) and time.monotonic() < deadline:
            cur.execute("FETCH ALL g WITH (timeout = '1s')")
            updates += cur.fetchall()
        watcher.close()
    assert sorted(tuple(r[2:]) for r in updates) == expected
    assert all(r[1] == 1 for r in updates)
    stamps = {r[0] for r in updates}
    assert len(stamps) < len(expected), "no two concurrent INSERTs shared a commit"
    node.restart_after_kill9()
    with node.connect() as c:
        assert sorted(c.execute("SELECT * FROM grouped").fetchall()) == expected
        c.execute("DROP TABLE grouped")
