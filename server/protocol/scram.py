"""Server side of SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL speaks it.

Pure computation over bytes so the authentication exchange can be tested
without sockets; the connection layer only shuttles the payloads of
AuthenticationSASL* and SASL(Initial)Response messages.

PostgreSQL specifics mirrored here:

* stored verifier format ``SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>``
  so secrets can be copied to and from ``pg_authid.rolpassword``;
* the username in client-first-message is ignored (the startup packet's
  ``user`` is authoritative);
* passwords are SASLprep-normalised when possible, falling back to the raw
  UTF-8 bytes, exactly as libpq and the server do, so non-ASCII passwords
  interoperate;
* no channel binding: we only advertise ``SCRAM-SHA-256`` (never ``-PLUS``),
  hence gs2 flags ``n`` and ``y`` are fine and ``p`` is rejected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import stringprep
import unicodedata
from dataclasses import dataclass

MECHANISM = "SCRAM-SHA-256"
DEFAULT_ITERATIONS = 4096
DEFAULT_SALT_LENGTH = 16
#: Same raw nonce length PostgreSQL uses (SCRAM_RAW_NONCE_LEN).
SERVER_NONCE_LENGTH = 18
_KEY_LENGTH = hashlib.sha256().digest_size

PROTOCOL_VIOLATION_SQLSTATE = "08P01"
INVALID_PASSWORD_SQLSTATE = "28P01"


class ScramError(Exception):
    """Authentication must fail.

    ``sqlstate`` distinguishes a wrong password (28P01) from a malformed
    exchange (08P01) so the server can report them as PostgreSQL would.
    """

    def __init__(
        self, message: str, sqlstate: str = PROTOCOL_VIOLATION_SQLSTATE
    ) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate


@dataclass(frozen=True, slots=True)
class ScramVerifier:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    def __str__(self) -> str:
        return (
            f"{MECHANISM}${self.iterations}:{_b64(self.salt)}"
            f"${_b64(self.stored_key)}:{_b64(self.server_key)}"
        )


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(data: str | bytes, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ScramError(f"malformed SCRAM message: invalid base64 in {what}") from exc


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.digest(key, msg, "sha256")


def _saslprep(password: str) -> str | None:
    """RFC 4013 SASLprep, or None when the password is not a valid SASLprep string.

    Follows PostgreSQL's pg_saslprep: ASCII is passed through untouched and
    an empty result counts as prohibited.  Callers fall back to the raw
    password on None, which is what keeps us byte-compatible with libpq.
    """
    if password.isascii():
        return password
    mapped = "".join(
        " " if stringprep.in_table_c12(ch) else ch
        for ch in password
        if not stringprep.in_table_b1(ch)
    )
    if not mapped:
        return None
    normalized = unicodedata.normalize("NFKC", mapped)
    prohibited = (
        stringprep.in_table_a1,
        stringprep.in_table_c12,
        stringprep.in_table_c21_c22,
        stringprep.in_table_c3,
        stringprep.in_table_c4,
        stringprep.in_table_c5,
        stringprep.in_table_c6,
        stringprep.in_table_c7,
        stringprep.in_table_c8,
        stringprep.in_table_c9,
    )
    if any(check(ch) for ch in normalized for check in prohibited):
        return None
    # RFC 3454 section 6: right-to-left text must be wholly RTL and start/end RTL.
    if any(stringprep.in_table_d1(ch) for ch in normalized):
        if any(stringprep.in_table_d2(ch) for ch in normalized):
            return None
        if not (
            stringprep.in_table_d1(normalized[0])
            and stringprep.in_table_d1(normalized[-1])
        ):
            return None
    return normalized


def _password_bytes(password: str) -> bytes:
    prepared = _saslprep(password)
    return (password if prepared is None else prepared).encode("utf-8")


def _salted_keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """Return (StoredKey, ServerKey)."""
    salted = hashlib.pbkdf2_hmac("sha256", _password_bytes(password), salt, iterations)
    client_key = _hmac(salted, b"Client Key")
    return hashlib.sha256(client_key).digest(), _hmac(salted, b"Server Key")


# --------------------------------------------------------------------------
# Verifiers
# --------------------------------------------------------------------------


def make_verifier(
    password: str, salt: bytes | None = None, iterations: int = DEFAULT_ITERATIONS
) -> str:
    """Build a PostgreSQL-compatible SCRAM-SHA-256 secret for ``password``."""
    if iterations < 1:
        raise ValueError("iterations must be positive")
    if salt is None:
        salt = secrets.token_bytes(DEFAULT_SALT_LENGTH)
    if not salt:
        raise ValueError("salt must not be empty")
    stored_key, server_key = _salted_keys(password, salt, iterations)
    return str(ScramVerifier(iterations, salt, stored_key, server_key))


def parse_verifier(verifier: str) -> ScramVerifier:
    """Parse the stored ``SCRAM-SHA-256$iter:salt$StoredKey:ServerKey`` format.

    Raises ValueError rather than ScramError: a bad stored secret is a
    configuration problem, not something the client did.
    """
    try:
        mechanism, params, keys = verifier.split("$")
        iter_text, salt_b64 = params.split(":")
        stored_b64, server_b64 = keys.split(":")
        if mechanism != MECHANISM or not iter_text.isdigit():
            raise ValueError
        iterations = int(iter_text)
        salt = base64.b64decode(salt_b64, validate=True)
        stored_key = base64.b64decode(stored_b64, validate=True)
        server_key = base64.b64decode(server_b64, validate=True)
    except (ValueError, binascii.Error):
        raise ValueError("malformed SCRAM-SHA-256 verifier") from None
    if (
        iterations < 1
        or not salt
        or len(stored_key) != _KEY_LENGTH
        or len(server_key) != _KEY_LENGTH
    ):
        raise ValueError("malformed SCRAM-SHA-256 verifier")
    return ScramVerifier(iterations, salt, stored_key, server_key)


def verify_password(verifier: str | ScramVerifier, password: str) -> bool:
    """Check a cleartext password against a SCRAM secret (for password auth)."""
    v = parse_verifier(verifier) if isinstance(verifier, str) else verifier
    stored_key, _ = _salted_keys(password, v.salt, v.iterations)
    return hmac.compare_digest(stored_key, v.stored_key)


# --------------------------------------------------------------------------
# Exchange
# --------------------------------------------------------------------------


def _is_printable_nonce(nonce: bytes) -> bool:
    # RFC 5802 "printable": %x21-2B / %x2D-7E (visible ASCII except ',').
    return bool(nonce) and all(0x21 <= c <= 0x7E and c != 0x2C for c in nonce)


class ScramServer:
    """One SCRAM-SHA-256 exchange: client-first -> server-first -> client-final -> server-final.

    Single use.  Any failure leaves the object failed so a retry on the same
    instance cannot skip the proof check.
    """

    def __init__(
        self,
        verifier: str | ScramVerifier,
        *,
        server_nonce: str | None = None,
    ) -> None:
        """``server_nonce`` exists for reproducible tests; leave it None in production."""
        self._verifier = (
            parse_verifier(verifier) if isinstance(verifier, str) else verifier
        )
        self._server_nonce = server_nonce or _b64(
            secrets.token_bytes(SERVER_NONCE_LENGTH)
        )
        self._mock = False
        self._state = "client-first"
        self._gs2_header = b""
        self._nonce = b""
        self._client_first_bare = b""
        self._server_first = b""

    @classmethod
    def mock(cls, username: str, secret: bytes) -> ScramServer:
        """An exchange for a nonexistent user (or one without a SCRAM secret) that always fails.

        Running the full exchange with a salt derived from ``username`` and a
        server-wide ``secret`` keeps the server-first-message stable per user,
        so clients cannot probe which roles exist (PostgreSQL does the same).
        """
        salt = hashlib.sha256(secret + username.encode("utf-8")).digest()[
            :DEFAULT_SALT_LENGTH
        ]
        fake = ScramVerifier(
            DEFAULT_ITERATIONS,
            salt,
            secrets.token_bytes(_KEY_LENGTH),
            secrets.token_bytes(_KEY_LENGTH),
        )
        server = cls(fake)
        server._mock = True
        return server

    def _fail(
        self, message: str, sqlstate: str = PROTOCOL_VIOLATION_SQLSTATE
    ) -> ScramError:
        self._state = "failed"
        return ScramError(message, sqlstate)

    def _advance(self, expected: str, following: str) -> None:
        if self._state != expected:
            state = self._state
            raise self._fail(
                f"SCRAM exchange out of order: got {expected} message in state {state}"
            )
        self._state = following

    def handle_client_first(self, data: bytes) -> bytes:
        """Consume client-first-message, return server-first-message."""
        self._advance("client-first", "client-final")
        flag = data[:2]
        if flag == b"p=":
            raise self._fail("SCRAM channel binding is not supported by this server")
        if flag not in (b"n,", b"y,"):
            raise self._fail(
                "malformed SCRAM message: invalid GS2 channel binding flag"
            )
        if data[2:3] != b",":
            if data[2:4] == b"a=":
                raise self._fail(
                    "client uses authorization identity, but it is not supported"
                )
            raise self._fail("malformed SCRAM message: invalid GS2 header")
        self._gs2_header = data[:3]
        bare = data[3:]
        attrs = bare.split(b",")
        if attrs[0].startswith(b"m="):
            raise self._fail("client requires an unsupported SCRAM extension")
        # The n= username is ignored: the startup packet's user is authoritative.
        if (
            not attrs[0].startswith(b"n=")
            or len(attrs) < 2
            or not attrs[1].startswith(b"r=")
        ):
            raise self._fail("malformed SCRAM message: expected n= and r= attributes")
        client_nonce = attrs[1][2:]
        if not _is_printable_nonce(client_nonce):
            raise self._fail("malformed SCRAM message: invalid client nonce")
        v = self._verifier
        self._client_first_bare = bare
        self._nonce = client_nonce + self._server_nonce.encode("ascii")
        self._server_first = b"r=%s,s=%s,i=%d" % (
            self._nonce,
            _b64(v.salt).encode(),
            v.iterations,
        )
        return self._server_first

    def handle_client_final(self, data: bytes) -> bytes:
        """Verify client-final-message's proof, return server-final-message ``v=...``."""
        self._advance("client-final", "verifying")
        cut = data.rfind(b",p=")
        if cut < 0:
            raise self._fail("malformed SCRAM message: missing proof")
        without_proof = data[:cut]
        attrs = without_proof.split(b",")
        if (
            len(attrs) < 2
            or not attrs[0].startswith(b"c=")
            or not attrs[1].startswith(b"r=")
        ):
            raise self._fail("malformed SCRAM message: expected c= and r= attributes")
        try:
            binding = _b64decode(attrs[0][2:], "channel binding")
            proof = _b64decode(data[cut + 3 :], "proof")
        except ScramError as exc:
            raise self._fail(exc.message) from None
        if binding != self._gs2_header:
            raise self._fail("SCRAM channel binding check failed")
        if not hmac.compare_digest(attrs[1][2:], self._nonce):
            raise self._fail("SCRAM nonce mismatch")
        if len(proof) != _KEY_LENGTH:
            raise self._fail("malformed SCRAM message: invalid proof length")

        v = self._verifier
        auth_message = b",".join(
            (self._client_first_bare, self._server_first, without_proof)
        )
        signature = _hmac(v.stored_key, auth_message)
        client_key = (
            int.from_bytes(proof, "big") ^ int.from_bytes(signature, "big")
        ).to_bytes(_KEY_LENGTH, "big")
        valid = hmac.compare_digest(hashlib.sha256(client_key).digest(), v.stored_key)
        if not valid or self._mock:
            raise self._fail(
                "password authentication failed", INVALID_PASSWORD_SQLSTATE
            )
        self._state = "done"
        return b"v=" + _b64(_hmac(v.server_key, auth_message)).encode("ascii")

    @property
    def done(self) -> bool:
        """True once the client proved knowledge of the password."""
        return self._state == "done"
