"""Deny by default, on a running server: nothing of Spark or the machine reaches a client.

Every exploit that was seen to work before (reading files through Spark's path
relations, calling Java through reflect/java_method, reading the environment through
`${...}` substitution, changing spark.* settings, Spark's DDL clauses) is refused
with an ErrorResponse that leaks nothing, and the session goes on. Secrets never
reach a file others can read or a log; the password never reaches a command line
or Spark's JVM; /health tells the truth when the JVM goes away, and Spark comes back.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.support import ROOT, ServerProcess, free_port, health, running_server, wait_until

PASSWORD = "pw-7c1e9d-never-echoed"
SECRET_VALUE = "sekret-5f2a91-plaintext"


@pytest.fixture(scope="module")
def workdir():
    """The server's working directory: it must stay empty."""
    path = tempfile.mkdtemp(prefix="sparkwire-cwd-")
    yield Path(path)
    subprocess.run(["rm", "-rf", path], check=False)


@pytest.fixture(scope="module")
def server(workdir):
    with running_server(password=PASSWORD, env={"SPARKWIRE_PASSWORD": PASSWORD}, cwd=str(workdir),
                        extra_args=["--log-level", "debug"]) as proc:
        yield proc


@pytest.fixture
def conn(server):
    with psycopg.connect(server.dsn, password=PASSWORD, autocommit=True) as c:
        yield c


def _refused(conn: psycopg.Connection, sql: str, sqlstates: tuple[str, ...] = ("42883", "42601", "0A000")):
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    err = info.value
    assert err.sqlstate in sqlstates, (sql, err.sqlstate, str(err))
    diag = err.diag  # what the server said (str(err) also quotes the statement back)
    text = " ".join(filter(None, (diag.message_primary, diag.message_detail, diag.message_hint,
                                  diag.context)))
    # Spark's and the JVM's words, file contents, the environment: none of it (the message
    # may name what the client wrote, as PostgreSQL's does).
    for leak in ("org.apache", "py4j", "Traceback", "scala", "SQLSTATE", "spark_catalog", "Cannot resolve",
                 "root:x:", PASSWORD, os.environ.get("HOME", "/root") + "\n"):
        assert leak not in text, (sql, text)
    assert not re.search(r"\[[A-Z_]+(\.[A-Z_]+)?\]", text), (sql, text)  # a Spark error class
    assert conn.execute("SELECT 1").fetchone() == (1,)  # the session carries on
    return err


@pytest.mark.parametrize("sql", [
    "SELECT x.value FROM IDENTIFIER('text.`/etc/passwd`') AS x",
    "SELECT * FROM IDENTIFIER('binaryFile.`/etc`')",
    "SELECT * FROM text.`/etc/passwd`",
    "SELECT * FROM csv.`/etc/passwd`",
    "SELECT * FROM json.`/etc/passwd`",
    "SELECT * FROM parquet.`/etc`",
    "SELECT * FROM orc.`/etc`",
    "SELECT * FROM binaryFile.`/etc`",
    "SELECT reflect('java.lang.System', 'getenv', 'SPARKWIRE_PASSWORD')",
    "SELECT java_method('java.lang.System', 'getenv', 'SPARKWIRE_PASSWORD')",
    "SELECT try_reflect('java.lang.System', 'getenv', 'SPARKWIRE_PASSWORD')",
    "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
    "CREATE VIEW leak AS SELECT reflect('java.lang.System', 'getenv', 'SPARKWIRE_PASSWORD') AS v",
    "SELECT * FROM range(10)",
    "SELECT explode(array(1, 2))",
    "SELECT 1 FROM (SELECT 1) t LATERAL VIEW explode(array(1)) x",
    "SELECT input_file_name()",
    "SELECT current_user() || reflect('java.lang.System', 'getenv', 'HOME')",
])
def test_files_and_java_are_out_of_reach(conn, sql):
    _refused(conn, sql)


def test_variables_are_not_substituted(conn):
    # PostgreSQL returns these strings as written; so must we (and not the values).
    texts = ("${env:SPARKWIRE_PASSWORD}", "${system:user.home}", "${spark.sql.warehouse.dir}", "${hivevar:x}")
    row = conn.execute("SELECT " + ", ".join(f"'{t}'" for t in texts)).fetchone()
    assert row == texts
    assert PASSWORD not in str(conn.execute("SELECT '${env:SPARKWIRE_PASSWORD}' AS v").fetchall())


def test_a_chmod_through_java_changes_no_file(conn):
    fd, path = tempfile.mkstemp(prefix="sparkwire-mode-")
    os.close(fd)
    os.chmod(path, 0o600)
    try:
        _refused(conn, f"SELECT reflect('org.apache.hadoop.fs.FileUtil', 'chmod', '{path}', '777')")
        _refused(conn, f"SELECT java_method('org.apache.hadoop.fs.FileUtil', 'symLink', '/etc/shadow', "
                       f"'{path}.link')")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert not os.path.lexists(f"{path}.link")
    finally:
        os.unlink(path)


def test_an_ldap_lookup_through_java_opens_no_connection(conn):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(2.0)
        port = listener.getsockname()[1]
        _refused(conn, f"SELECT reflect('javax.naming.InitialContext', 'doLookup', 'ldap://127.0.0.1:{port}/x')")
        with pytest.raises(TimeoutError):
            listener.accept()


def test_system_exit_through_java_leaves_the_server_answering(server, conn):
    _refused(conn, "SELECT java_method('java.lang.System', 'exit', 0)")
    _refused(conn, "SELECT reflect('java.lang.Runtime', 'getRuntime')")
    assert conn.execute("SELECT count(*) FROM generate_series(1, 10)").fetchone() == (10,)
    assert _health(server.metrics_port) == (200, "ready\n")


@pytest.mark.parametrize("sql", [
    "SET spark.sql.variable.substitute = true", "SET spark.sql.runSQLOnFiles TO true",
    "SET spark.sql.ansi.enabled = false", "RESET spark.sql.variable.substitute", "SHOW spark.sql.warehouse.dir",
    "SET SESSION spark.master = 'local'",
])
def test_no_client_changes_a_spark_setting(conn, sql):
    _refused(conn, sql, ("42704",))
    assert conn.execute("SELECT '${env:HOME}'").fetchone() == ("${env:HOME}",)


@pytest.mark.parametrize("sql, clause", [
    ("CREATE TABLE s1 (a int) USING parquet", "USING"),
    ("CREATE TABLE s2 (a int) USING parquet LOCATION '/tmp/sparkwire-x'", "LOCATION"),
    ("CREATE TABLE s3 (a int) LOCATION '/tmp/sparkwire-x'", "LOCATION"),
    ("CREATE TABLE s4 (a int) OPTIONS (path '/tmp/sparkwire-x')", "OPTIONS"),
    ("CREATE TABLE s5 (a int) TBLPROPERTIES ('k' = 'v')", "TBLPROPERTIES"),
    ("CREATE TABLE s6 (a int) STORED AS parquet", "STORED"),
    ("CREATE TEMPORARY VIEW s7 AS SELECT 1 AS a", "TEMPORARY VIEW"),
    ("CREATE TEMP TABLE s8 (a int)", "TEMPORARY TABLE"),
])
def test_spark_ddl_clauses_are_refused_by_name(conn, sql, clause):
    err = _refused(conn, sql, ("0A000",))
    assert clause in err.diag.message_primary
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 's_'").fetchone() == (0,)
    assert not os.path.exists("/tmp/sparkwire-x")


def test_secret_values_reach_no_readable_file_no_log_no_answer(server, conn):
    conn.execute(f"CREATE SECRET pgpass AS '{SECRET_VALUE}'")
    conn.execute("CREATE CONNECTION pgc TO POSTGRES (HOST '127.0.0.1', PORT 1, USER 'u', PASSWORD SECRET pgpass, "
                 "DATABASE 'd') WITH (VALIDATE = false)")
    err = _refused(conn, f"CREATE SECRET pgpass AS '{SECRET_VALUE}'", ("42P07", "42710"))
    assert SECRET_VALUE not in str(err)
    answers = [conn.execute(sql).fetchall() for sql in (
        "SHOW SECRETS", "SHOW CREATE CONNECTION pgc", "SELECT * FROM pg_class", "SHOW CONNECTIONS")]
    assert SECRET_VALUE not in repr(answers)
    _check_secret_nowhere(server)
    # After a restart the secret is still there (and still nowhere else).
    server.stop()
    server.start()
    server.wait_ready(password=PASSWORD)
    with psycopg.connect(server.dsn, password=PASSWORD, autocommit=True) as again:
        assert ("pgpass",) in again.execute("SHOW SECRETS").fetchall()
    _check_secret_nowhere(server)


def _check_secret_nowhere(server: ServerProcess) -> None:
    data = Path(server.data_dir)
    holders = []
    for path in data.rglob("*"):
        if path.is_file() and SECRET_VALUE.encode() in path.read_bytes():
            holders.append(path)
    # Only the secret store holds it, and only the server's user can read it.
    assert [p.name for p in holders] == ["secrets.json"], holders
    assert stat.S_IMODE(holders[0].stat().st_mode) == 0o600
    assert SECRET_VALUE not in server.log_path.read_text(errors="replace")


def test_nothing_is_created_outside_the_data_directory(server, conn, workdir):
    conn.execute("CREATE TABLE outside_check (a int)")
    conn.execute("INSERT INTO outside_check SELECT * FROM generate_series(1, 1000)")
    assert conn.execute("SELECT sum(a) FROM outside_check").fetchone() == (500500,)
    assert list(workdir.iterdir()) == []
    assert not (ROOT / "metastore_db").exists() and not (ROOT / "derby.log").exists()


def test_the_password_never_reaches_spark(server):
    jvm = _jvm_pid(server.proc.pid)
    assert jvm is not None
    environ = Path(f"/proc/{jvm}/environ").read_bytes()
    assert b"SPARKWIRE_PASSWORD" not in environ and PASSWORD.encode() not in environ


def test_a_password_on_the_command_line_is_refused():
    out = subprocess.run([sys.executable, "-m", "server", "serve", "--password", "secret", "--port",
                          str(free_port()), "--data-dir", tempfile.mkdtemp(prefix="sparkwire-pw-")],
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode != 0
    assert "--password-file" in out.stderr and "$SPARKWIRE_PASSWORD" in out.stderr, out.stderr


def test_password_file_and_health_when_the_jvm_goes_away():
    fd, password_file = tempfile.mkstemp(prefix="sparkwire-pwfile-")
    os.write(fd, b"from-a-file\n")
    os.close(fd)
    os.chmod(password_file, 0o600)
    proc = ServerProcess(extra_args=["--password-file", password_file]).start()
    try:
        proc.wait_ready(password="from-a-file")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(proc.dsn, password="wrong", connect_timeout=10).close()
        assert "from-a-file" not in " ".join(_cmdline(proc.proc.pid))
        assert _health(proc.metrics_port) == (200, "ready\n")
        # The JVM goes away (as after System.exit, or the OOM killer): /health says so,
        # and a new SparkSession takes its place.
        jvm = _jvm_pid(proc.proc.pid)
        os.kill(jvm, signal.SIGKILL)
        wait_until(lambda: _health(proc.metrics_port)[0] == 503, 30, message="/health to say 503")
        wait_until(lambda: _health(proc.metrics_port)[0] == 200, 180, interval=0.5,
                   message="/health to say 200 again")
        with psycopg.connect(proc.dsn, password="from-a-file", autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM generate_series(1, 5)").fetchone() == (5,)
        assert "spark_restart" in proc.log_text() or "starting a new SparkSession" in proc.log_text()
    finally:
        proc.cleanup()
        os.unlink(password_file)


def _health(port: int) -> tuple[int, str]:
    return health(port) or (0, "")  # (0, "") while nothing listens


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")


def _jvm_pid(server_pid: int) -> int | None:
    """The Spark driver JVM the server started (a child, directly or through spark-submit)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                status = (entry / "status").read_text()
                ppid = int(re.search(r"PPid:\s+(\d+)", status).group(1))
                if ppid == server_pid and "java" in " ".join(_cmdline(int(entry.name))):
                    return int(entry.name)
            except (OSError, AttributeError, ValueError):
                continue
        time.sleep(0.2)
    return None


def test_a_data_directory_from_before_keeps_its_secrets_but_not_in_plaintext():
    """Secret values written into the catalog by an older sparkwire move to the secret store at
    start (the log and checkpoint are rewritten); a stored view that calls Java fails to read."""
    from server import catalog_ops
    from server.catalog import Catalog
    from server.catalog_items import Item
    from spark_backend.storage import Store

    data = tempfile.mkdtemp(prefix="sparkwire-old-")
    store = Store(data)
    store.open()
    catalog = Catalog()
    secret = Item(catalog.allocate_id(), "oldpass", "secret", (), 1, details={"value": SECRET_VALUE})
    view = Item(catalog.allocate_id(), "oldview", "view", (), 1,
                sql="SELECT reflect('java.lang.System', 'getenv', 'HOME') AS v")
    ops = catalog.plan_create(secret) + catalog.plan_create(view)
    store.commit(int(time.time() * 1000), catalog_ops.to_json(ops), {})
    store.close()
    assert SECRET_VALUE.encode() in (Path(data) / "log.jsonl").read_bytes()
    proc = ServerProcess(data_dir=data).start()
    try:
        proc.wait_ready()
        with psycopg.connect(proc.dsn, autocommit=True) as conn:
            assert ("oldpass",) in conn.execute("SHOW SECRETS").fetchall()
            err = _refused(conn, "SELECT * FROM oldview", ("42883",))
            assert "reflect" in err.diag.message_primary
        _check_secret_nowhere(proc)
    finally:
        proc.cleanup()
        subprocess.run(["rm", "-rf", data], check=False)
