"""TLS and authentication against a real server: --tls-cert/--tls-key, --require-tls,
a users file (plain passwords and SCRAM verifiers), and roles created with a password.

One server for the module, started with all of them; clients are libpq (psycopg 3 and
the psql binary), asyncpg, and a raw socket for the bytes of the SSLRequest exchange.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
from pathlib import Path

import asyncpg
import psycopg
import pytest

from server.protocol.scram import make_verifier
from tests.support import ServerProcess, self_signed_cert

SSL_REQUEST = struct.pack(">ii", 8, 80877103)


@pytest.fixture(scope="module")
def certs():
    folder = Path(tempfile.mkdtemp(prefix="sparkwire-tls-"))
    self_signed_cert(folder)
    (folder / "users.txt").write_text(
        "# a comment, then a plain password and a stored SCRAM verifier\n"
        "alice:wonderland\n"
        f"carol:{make_verifier('c4rol')}\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def server(certs):
    proc = ServerProcess(extra_args=[
        "--tls-cert", str(certs / "server.crt"), "--tls-key", str(certs / "server.key"),
        "--require-tls", "--users", str(certs / "users.txt")]).start()
    try:
        yield proc
    finally:
        proc.cleanup()


def dsn(server, user: str, password: str, sslmode: str = "require") -> str:
    return (f"host=127.0.0.1 port={server.port} dbname=materialize user={user} "
            f"password={password} sslmode={sslmode} connect_timeout=120")


def login_error(server, user: str, password: str, sslmode: str = "require") -> str:
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(dsn(server, user, password, sslmode))
    return str(info.value)


def test_ssl_request_is_answered_s_and_tls_follows(server, certs):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(SSL_REQUEST)
        assert raw.recv(1) == b"S"
        ctx = ssl.create_default_context(cafile=str(certs / "server.crt"))
        ctx.check_hostname = False
        with ctx.wrap_socket(raw) as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            params = b"user\0alice\0database\0materialize\0\0"
            tls.sendall(struct.pack(">ii", 8 + len(params), 196608) + params)
            head = tls.recv(5)
            # AuthenticationSASL: the password exchange starts inside the TLS session.
            assert head[:1] == b"R"
            body = tls.recv(struct.unpack(">i", head[1:])[0] - 4)
            assert struct.unpack(">i", body[:4])[0] == 10 and b"SCRAM-SHA-256" in body


def test_psycopg_sslmode_require(server):
    with psycopg.connect(dsn(server, "alice", "wonderland"), autocommit=True) as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT current_user, 1 + 1").fetchone() == ("alice", 2)


def test_psql_sslmode_require(server):
    env = {**os.environ, "PGPASSWORD": "wonderland"}
    conninfo = f"host=127.0.0.1 port={server.port} dbname=materialize user=alice sslmode=require"
    out = subprocess.run(["psql", conninfo, "-X", "-A", "-t", "-c", "SELECT 'over tls'"],
                         check=False, capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "over tls"


def test_plaintext_is_refused(server):
    message = login_error(server, "alice", "wonderland", sslmode="disable")
    assert "FATAL:  this server requires TLS: connect with sslmode=require" in message


def asyncpg_login_sqlstate(server, user: str, password: str, tls: bool) -> str:
    """The SQLSTATE of a refused asyncpg login (libpq keeps none for failed connections)."""
    ctx: ssl.SSLContext | bool = False
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE

    async def main() -> str:
        with pytest.raises(asyncpg.PostgresError) as err:
            await asyncpg.connect(host="127.0.0.1", port=server.port, user=user, database="materialize",
                                  password=password, ssl=ctx)
        return err.value.sqlstate

    return asyncio.run(main())


def test_plaintext_refusal_has_sqlstate_28000(server):
    assert asyncpg_login_sqlstate(server, "alice", "wonderland", tls=False) == "28000"


def test_verifier_line_in_users_file(server):
    with psycopg.connect(dsn(server, "carol", "c4rol"), autocommit=True) as c:
        assert c.execute("SELECT current_user").fetchone() == ("carol",)


def test_wrong_password_and_unknown_user_look_the_same(server):
    wrong = login_error(server, "alice", "not-it")
    unknown = login_error(server, "mallory", "not-it")
    assert 'FATAL:  password authentication failed for user "alice"' in wrong
    # Nothing but the user name differs: a client cannot tell whether the user exists.
    assert unknown.replace("mallory", "alice") == wrong


def test_wrong_password_and_unknown_user_sqlstate_28P01(server):
    assert asyncpg_login_sqlstate(server, "alice", "x", tls=True) == "28P01"
    assert asyncpg_login_sqlstate(server, "mallory", "x", tls=True) == "28P01"


def test_roles_with_passwords(server):
    with psycopg.connect(dsn(server, "alice", "wonderland"), autocommit=True) as c:
        c.execute("CREATE ROLE bob WITH LOGIN PASSWORD 'b0b-1'")
        with pytest.raises(psycopg.errors.DuplicateObject) as dup:
            c.execute("CREATE ROLE bob WITH LOGIN PASSWORD 'other'")
        assert 'role "bob" already exists' in str(dup.value)
        assert c.execute("SELECT 1").fetchone() == (1,)  # the session is still usable
        assert c.execute("SELECT rolname FROM pg_roles WHERE rolname = 'bob'").fetchall() == [("bob",)]
    with psycopg.connect(dsn(server, "bob", "b0b-1"), autocommit=True) as b:
        assert b.execute("SELECT current_user").fetchone() == ("bob",)
        b.execute("ALTER ROLE bob PASSWORD 'b0b-2'")
    assert 'password authentication failed for user "bob"' in login_error(server, "bob", "b0b-1")
    with psycopg.connect(dsn(server, "bob", "b0b-2"), autocommit=True) as b:
        assert b.execute("SELECT 'new password'").fetchone() == ("new password",)
    with psycopg.connect(dsn(server, "alice", "wonderland"), autocommit=True) as c:
        c.execute("DROP ROLE bob")
        with pytest.raises(psycopg.errors.UndefinedObject):
            c.execute("ALTER ROLE bob PASSWORD 'x'")
    assert 'password authentication failed for user "bob"' in login_error(server, "bob", "b0b-2")


def test_password_never_shown_back(server):
    log = server.log_text()
    assert "wonderland" not in log and "b0b-1" not in log and "b0b-2" not in log
