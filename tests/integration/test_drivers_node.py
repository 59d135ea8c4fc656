"""node-postgres against sparkwire: the driver matrix of Node.

tests/drivers/node_matrix.js (with pg, pg-cursor and pg-copy-streams from tests/node,
which `make test` installs with npm ci) connects with SCRAM over TLS and runs what a Node
service does first: `($1,$2)` parameters, types, named prepared statements, savepoints,
a pg-cursor read 10 rows at a time and one over a SUBSCRIBE, COPY in and out with pg-copy-streams, LISTEN/NOTIFY,
a Pool, and an error that leaves the connection usable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support import ROOT, tls_server

NODE_DIR = ROOT / "tests" / "node"
PASSWORD = "node-pw"


@pytest.fixture(scope="module")
def node():
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("needs node and npm (scripts/install.sh installs the packages with npm ci)")
    if not (NODE_DIR / "node_modules" / "pg-copy-streams").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=NODE_DIR, check=True,
                       capture_output=True, timeout=600)
    return node


@pytest.fixture(scope="module")
def server():
    with tls_server(PASSWORD) as proc:
        yield proc


def test_node_postgres_first_day(node, server):
    out = subprocess.run([node, str(ROOT / "tests/drivers/node_matrix.js"), str(server.port), PASSWORD],
                         cwd=NODE_DIR, env={**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")},
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout)
    assert got["create"] == "ok" and got["insert"] == 2
    assert got["select"] == [
        {"id": 1, "name": "one", "price": "1.50", "at": "2024-01-02T03:04:05.000Z", "tags": ["a", "b"]},
        {"id": 2, "name": "two", "price": None, "at": None, "tags": []}]
    assert got["prepared"] == ["two", "one"]
    assert got["savepoint"] == 1
    assert got["cursor"] == [10, 10, 5, 0]
    assert got["subscribe_cursor"] == ["1:1", "1:2", "-1:1"]
    assert got["copy"] == '20,copied\n21,"a,b"\n'
    assert got["notify"] == "nchan:hi"
    assert got["pool"] == [2, 3, 4, 5]
    assert got["error"] == "42883" and got["after_error"] == 42
