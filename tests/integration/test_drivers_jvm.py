"""pgjdbc, the JVM's PostgreSQL driver, against sparkwire: the driver matrix of the JVM.

tests/drivers/DriverMatrix.java runs each step a Java application (HikariCP, Spring,
DBeaver) takes on its first day - SCRAM over TLS, setTransactionIsolation, every type as
a parameter and a result (text, and binary with prepareThreshold=-1), batches of `(?,?)`
inserts, savepoints, a fetch size, a SUBSCRIBE through DECLARE/FETCH, DatabaseMetaData,
CopyManager in and out, LISTEN/NOTIFY, cancel - and prints one line per step, or the error it met.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support import ROOT, tls_server

JDBC_JAR = "/usr/share/java/postgresql.jar"
PASSWORD = "jdbc-pw"


@pytest.fixture(scope="module")
def compiled():
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None or not os.path.exists(JDBC_JAR):
        pytest.skip("needs javac and pgjdbc (default-jdk-headless, libpostgresql-jdbc-java: "
                    "scripts/install.sh installs them)")
    folder = Path(tempfile.mkdtemp(prefix="sparkwire-jdbc-"))
    subprocess.run([javac, "-cp", JDBC_JAR, "-d", str(folder), str(ROOT / "tests/drivers/DriverMatrix.java")],
                   check=True, capture_output=True, timeout=300)
    yield java, folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    with tls_server(PASSWORD, "--require-tls") as proc:
        yield proc


def _run(compiled, server, options: str) -> dict[str, list[list[str]]]:
    java, folder = compiled
    url = f"jdbc:postgresql://127.0.0.1:{server.port}/materialize?sslmode=require{options}"
    out = subprocess.run([java, "-cp", f"{JDBC_JAR}:{folder}", "DriverMatrix", url, "materialize", PASSWORD],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    lines: dict[str, list[list[str]]] = {}
    for line in out.stdout.splitlines():
        first, *rest = line.split("\t")
        lines.setdefault(first, []).append(rest)
    assert "error" not in lines, lines["error"]
    assert "done" in lines
    return lines


@pytest.mark.parametrize("options", ["", "&prepareThreshold=-1&binaryTransfer=true"], ids=["text", "binary"])
def test_pgjdbc_first_day(compiled, server, options):
    lines = _run(compiled, server, options)
    assert lines["connected"] == [["PostgreSQL", "15.0"]]
    # Accepted, and reported truthfully: every transaction here is serializable (8).
    assert lines["isolation"] == [["8"]]
    assert lines["batch"] == [["[1, 1, 1]"]]
    assert lines["types"] == [["7", "-2147483648", "9007199254740993", "2.5", "-0.125", "12345.678901",
                               'héllo, "world"', "true", "2024-02-29", "2024-02-29 13:45:10.123456",
                               "2024-02-29T13:45:10.500Z", "[0, 1, -1]", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                               "[1, null, 3]", "[a, b c]", '{"k": [1, 2]}']]
    assert lines["row"] == [["2", "n2", "2.50", "false"], ["3", "n3", "3.75", "true"]]
    assert lines["savepoint"] == [["1"]]  # the row after the savepoint was rolled back
    assert lines["fetchsize"] == [["7"]]
    assert lines["subscribe"] == [["1:1 1:2 -1:1"]]  # the snapshot, then the DELETE made meanwhile
    # One table, five columns; no primary key, index or foreign key yet (no constraints but NOT NULL).
    assert lines["metadata"] == [["1", "5", "0", "0", "0"]]
    # what PostgreSQL's pgjdbc metadata says of a table with a PRIMARY KEY and a UNIQUE column
    assert lines["keys"] == [["jmk_pkey:id jmk_code_key!code jmk_pkey!id"]]
    assert lines["copy"] == [["2", 'id,name|20,copied|21,"a,b"|']]
    assert lines["notify"] == [["1", "jchan:hello"]]
    assert lines["cancel"] == [["57014"]]
    assert lines["after_cancel"] == [["42"]]
