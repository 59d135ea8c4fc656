"""Pure tests for server-side SCRAM-SHA-256, driven by a client written here from RFC 5802."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable

import pytest

from server.protocol.scram import (
    ScramError,
    ScramServer,
    ScramVerifier,
    make_verifier,
    parse_verifier,
    verify_password,
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Client:
    """Minimal SCRAM-SHA-256 client (no SASLprep: tests use ASCII passwords)."""

    def __init__(
        self, password: str, gs2_header: str = "n,,", nonce: str | None = None
    ) -> None:
        self.password = password.encode()
        self.gs2_header = gs2_header
        self.nonce = nonce or b64(secrets.token_bytes(18))
        self.first_bare = f"n=,r={self.nonce}"
        self.auth_message = b""
        self.server_key = b""

    def first(self) -> bytes:
        return (self.gs2_header + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert attrs["r"].startswith(self.nonce) and len(attrs["r"]) > len(self.nonce)
        salted = hashlib.pbkdf2_hmac(
            "sha256", self.password, base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        stored_key = hashlib.sha256(client_key).digest()
        self.server_key = hmac.new(salted, b"Server Key", "sha256").digest()
        without_proof = f"c={b64(self.gs2_header.encode())},r={attrs['r']}"
        self.auth_message = (
            f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        )
        signature = hmac.new(stored_key, self.auth_message, "sha256").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={b64(proof)}".encode()

    def check_server_final(self, server_final: bytes) -> bool:
        expected = hmac.new(self.server_key, self.auth_message, "sha256").digest()
        return server_final == b"v=" + b64(expected).encode()


def exchange(
    verifier: str, password: str, gs2_header: str = "n,,"
) -> tuple[ScramServer, Client, bytes]:
    server = ScramServer(verifier)
    client = Client(password, gs2_header)
    server_first = server.handle_client_first(client.first())
    return server, client, server.handle_client_final(client.final(server_first))


# ---------------------------------------------------------------------------
# Verifiers
# ---------------------------------------------------------------------------


def test_make_verifier_matches_independent_computation() -> None:
    salt = bytes(range(16))
    salted = hashlib.pbkdf2_hmac("sha256", b"secret", salt, 4096)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    server = hmac.new(salted, b"Server Key", "sha256").digest()
    assert (
        make_verifier("secret", salt)
        == f"SCRAM-SHA-256$4096:{b64(salt)}${b64(stored)}:{b64(server)}"
    )


def test_verifier_round_trip() -> None:
    verifier = make_verifier("pw", iterations=1000)
    parsed = parse_verifier(verifier)
    assert isinstance(parsed, ScramVerifier)
    assert parsed.iterations == 1000
    assert len(parsed.salt) == 16
    assert str(parsed) == verifier


def test_random_salt_differs() -> None:
    assert make_verifier("pw") != make_verifier("pw")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "md5abcdef",
        "SCRAM-SHA-1$4096:c2FsdA==$" + b64(bytes(32)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$x:c2FsdA==$" + b64(bytes(32)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$0:c2FsdA==$" + b64(bytes(32)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$4096:c2FsdA==$" + b64(bytes(31)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$4096:!!!$" + b64(bytes(32)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$4096:$" + b64(bytes(32)) + ":" + b64(bytes(32)),
        "SCRAM-SHA-256$4096:c2FsdA==$" + b64(bytes(32)),
    ],
)
def test_parse_verifier_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_verifier(bad)


def test_verify_password() -> None:
    verifier = make_verifier("right", iterations=64)
    assert verify_password(verifier, "right")
    assert not verify_password(verifier, "wrong")


def test_saslprep_is_applied() -> None:
    salt = b"0123456789abcdef"
    # U+00AD (soft hyphen) maps to nothing; U+00A0 (no-break space) maps to space.
    assert make_verifier("pa\u00adss", salt, 64) == make_verifier("pass", salt, 64)
    assert make_verifier("a\u00a0b\u00e9", salt, 64) == make_verifier(
        "a b\u00e9", salt, 64
    )
    # NFKC: U+2168 ROMAN NUMERAL NINE -> "IX".
    assert make_verifier("\u2168x", salt, 64) == make_verifier("IXx", salt, 64)


def test_saslprep_failure_falls_back_to_raw_password() -> None:
    salt = b"0123456789abcdef"
    password = "\ue000pw"  # private use: prohibited by SASLprep
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 64)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    assert parse_verifier(make_verifier(password, salt, 64)).stored_key == stored


def test_ascii_passes_through_untouched() -> None:
    salt = b"0123456789abcdef"
    password = "tab\there"  # ASCII control chars are not SASLprep'd, as in PostgreSQL
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 64)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    assert parse_verifier(make_verifier(password, salt, 64)).stored_key == stored


@pytest.mark.parametrize("password", ["pencil", "p\u00e4ssw\u00f6rd\u00a0x", "\u2168"])
def test_verifier_from_libpq_is_understood(password: str) -> None:
    """libpq's own PQencryptPasswordConn output (no server contact) must verify."""
    psycopg = pytest.importorskip("psycopg")
    # An invalid conninfo makes libpq return a dead PGconn without any network I/O.
    conn = psycopg.pq.PGconn.connect_start(b"sparkwire_no_such_option=1")
    try:
        libpq_verifier = conn.encrypt_password(
            password.encode(), b"user", b"scram-sha-256"
        ).decode()
    except psycopg.Error as exc:  # pragma: no cover - depends on the libpq build
        pytest.skip(f"libpq password encryption unavailable: {exc}")
    finally:
        conn.finish()
    assert verify_password(libpq_verifier, password)
    assert not verify_password(libpq_verifier, password + "x")


# ---------------------------------------------------------------------------
# Exchange
# ---------------------------------------------------------------------------


def test_rfc7677_example() -> None:
    verifier = make_verifier(
        "pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096
    )
    server = ScramServer(verifier, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert server.handle_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.handle_client_final(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.done


@pytest.mark.parametrize("gs2_header", ["n,,", "y,,"])
def test_full_exchange_succeeds(gs2_header: str) -> None:
    server, client, final = exchange(
        make_verifier("s3cret", iterations=256), "s3cret", gs2_header
    )
    assert client.check_server_final(final)
    assert server.done


def test_server_first_message_shape() -> None:
    verifier = make_verifier("pw", b"saltsaltsaltsalt", 512)
    server = ScramServer(verifier)
    first = server.handle_client_first(b"n,,n=ignored,r=abc")
    attrs = dict(item.split(b"=", 1) for item in first.split(b","))
    assert attrs[b"r"].startswith(b"abc") and len(attrs[b"r"]) > 20
    assert attrs[b"s"] == base64.b64encode(b"saltsaltsaltsalt")
    assert attrs[b"i"] == b"512"


def test_wrong_password_fails() -> None:
    with pytest.raises(ScramError) as info:
        exchange(make_verifier("right", iterations=256), "wrong")
    assert info.value.sqlstate == "28P01"


def test_username_is_ignored() -> None:
    verifier = make_verifier("pw", iterations=64)
    server = ScramServer(verifier)
    client = Client("pw")
    client.first_bare = f"n=someone=2Celse,r={client.nonce}"
    final = server.handle_client_final(
        client.final(server.handle_client_first(client.first()))
    )
    assert client.check_server_final(final)


def test_client_first_extensions_after_nonce_are_ignored() -> None:
    verifier = make_verifier("pw", iterations=64)
    server = ScramServer(verifier)
    client = Client("pw")
    client.first_bare = f"n=,r={client.nonce},x=future"
    final = server.handle_client_final(
        client.final(server.handle_client_first(client.first()))
    )
    assert client.check_server_final(final)


@pytest.mark.parametrize(
    "client_first, match",
    [
        (b"p=tls-server-end-point,,n=,r=abc", "channel binding is not supported"),
        (b"n,a=admin,n=,r=abc", "authorization identity"),
        (b"x,,n=,r=abc", "channel binding flag"),
        (b"n,,m=ext,n=,r=abc", "unsupported SCRAM extension"),
        (b"n,,n=", "expected n= and r="),
        (b"n,,r=abc", "expected n= and r="),
        (b"n,,n=,r=", "invalid client nonce"),
        (b"n,,n=,r=a\x01b", "invalid client nonce"),
        (b"", "channel binding flag"),
        (b"n,x", "invalid GS2 header"),
    ],
)
def test_malformed_client_first(client_first: bytes, match: str) -> None:
    server = ScramServer(make_verifier("pw", iterations=64))
    with pytest.raises(ScramError, match=match) as info:
        server.handle_client_first(client_first)
    assert info.value.sqlstate == "08P01"


def _tamper(final: bytes, old: bytes, new: bytes) -> bytes:
    assert old in final
    return final.replace(old, new)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda f, c: f.split(b",p=")[0], "missing proof"),
        (lambda f, c: _tamper(f, b"c=biws", b"c=eSws"), "channel binding check failed"),
        (lambda f, c: _tamper(f, b"c=biws", b"c=!!"), "invalid base64"),
        (
            lambda f, c: _tamper(
                f, b"r=" + c.nonce.encode(), b"r=X" + c.nonce.encode()
            ),
            "nonce mismatch",
        ),
        (
            lambda f, c: f.split(b",p=")[0] + b",p=" + base64.b64encode(b"short"),
            "invalid proof length",
        ),
        (lambda f, c: f.split(b",p=")[0] + b",p=***", "invalid base64"),
        (lambda f, c: b"r=abc,p=" + f.split(b",p=")[1], "expected c= and r="),
    ],
)
def test_malformed_client_final(
    mutate: Callable[[bytes, Client], bytes], match: str
) -> None:
    server = ScramServer(make_verifier("pw", iterations=64))
    client = Client("pw")
    final = client.final(server.handle_client_first(client.first()))
    with pytest.raises(ScramError, match=match):
        server.handle_client_final(mutate(final, client))
    assert not server.done


def test_out_of_order_and_single_use() -> None:
    verifier = make_verifier("pw", iterations=64)
    with pytest.raises(ScramError, match="out of order"):
        ScramServer(verifier).handle_client_final(b"c=biws,r=x,p=AAAA")

    server, client, _ = exchange(verifier, "pw")
    with pytest.raises(ScramError, match="out of order"):
        server.handle_client_first(client.first())


def test_failed_exchange_cannot_be_retried() -> None:
    server = ScramServer(make_verifier("pw", iterations=64))
    client = Client("wrong")
    final = client.final(server.handle_client_first(client.first()))
    with pytest.raises(ScramError):
        server.handle_client_final(final)
    with pytest.raises(ScramError, match="out of order"):
        server.handle_client_final(final)


def test_mock_exchange_always_fails_with_stable_salt() -> None:
    def salt_of(server: ScramServer) -> bytes:
        first = server.handle_client_first(b"n,,n=,r=abc")
        return dict(item.split(b"=", 1) for item in first.split(b","))[b"s"]

    secret = b"server-wide secret"
    assert salt_of(ScramServer.mock("ghost", secret)) == salt_of(
        ScramServer.mock("ghost", secret)
    )
    assert salt_of(ScramServer.mock("ghost", secret)) != salt_of(
        ScramServer.mock("other", secret)
    )

    server = ScramServer.mock("ghost", secret)
    client = Client("anything")
    final = client.final(server.handle_client_first(client.first()))
    with pytest.raises(ScramError) as info:
        server.handle_client_final(final)
    assert info.value.sqlstate == "28P01"


def test_malformed_stored_verifier_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        ScramServer("not a verifier")
