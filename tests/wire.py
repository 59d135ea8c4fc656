"""Frontend pgwire bytes built by hand, independent of the server's codec, for the tests
that send exact bytes (the codec's unit tests, the raw-socket protocol tests) and for the
pgoutput builders, which frame strings the same way."""

from __future__ import annotations

import struct

PROTOCOL_3 = 196608  # protocol version 3.0 as a startup packet carries it


def cstr(text: str) -> bytes:
    """A NUL-terminated string."""
    return text.encode() + b"\0"


def message(code: bytes, payload: bytes = b"") -> bytes:
    """A typed message: its code, then the length of the length and the payload."""
    return code + struct.pack("!i", len(payload) + 4) + payload


def startup_packet(params: dict[str, str], version: int = PROTOCOL_3) -> bytes:
    """A StartupMessage: the length, the protocol version, then name/value pairs."""
    body = b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return struct.pack("!ii", len(body) + 8, version) + body
