"""The connection's protocol states, and the pure parts of what a message means in them.

Like asyncpg's coreproto, the connection keeps one explicit :class:`State` and has one
handler per state; a message is read only by the handler of the state the connection is
in. This module holds what needs no I/O: the states, which messages belong to the
extended query protocol (skipped after an error until Sync), and the COPY FROM STDIN
sub-protocol (CopyData until CopyDone or CopyFail).
"""

from __future__ import annotations

import enum

from planner.errors import PROTOCOL_VIOLATION, QUERY_CANCELED, SqlError
from server.protocol import messages as m


class State(enum.Enum):
    """Where a connection is in the protocol."""

    AWAITING_STARTUP = "awaiting startup"  # SSLRequest, GSSENCRequest, CancelRequest, StartupMessage
    SASL_INITIAL = "sasl initial"  # SCRAM: AuthenticationSASL sent, the client's first message due
    SASL_FINAL = "sasl final"  # SCRAM: AuthenticationSASLContinue sent, the client's proof due
    READY = "ready"  # logged in: simple and extended queries
    FAILED_EXTENDED = "failed extended"  # an extended-query message failed: skip them until Sync
    IN_COPY_IN = "in copy in"  # COPY FROM STDIN: the client's CopyData until CopyDone or CopyFail
    CLOSED = "closed"


# The extended query protocol's messages: after one fails, the rest up to Sync are skipped.
# Sync ends the skipping; Query, FunctionCall and the COPY messages are not skipped.
EXTENDED: frozenset[type] = frozenset({m.Parse, m.Bind, m.Describe, m.Execute, m.Close, m.Flush})


class ClientGone(ConnectionError):
    """The client closed the connection, or sent bytes that are no message, during a COPY."""


class CopyInCollector:
    """COPY ... FROM STDIN: the client's CopyData, collected until CopyDone.

    Flush and Sync are ignored in copy-in mode, as PostgreSQL does; CopyFail, or any other
    message, ends the COPY with an error (that message is not run)."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def feed(self, msg: object) -> bool:
        """Take the next thing from the client (None: it went away); True once CopyDone came."""
        if msg is None or isinstance(msg, m.ProtocolError):
            raise ClientGone("client went away during COPY FROM STDIN")
        if isinstance(msg, m.CopyData):
            self._chunks.append(msg.data)
        elif isinstance(msg, m.CopyDone):
            return True
        elif isinstance(msg, m.CopyFail):
            raise SqlError(QUERY_CANCELED, f"COPY from stdin failed: {msg.message}")
        elif not isinstance(msg, (m.Flush, m.Sync)):
            raise SqlError(PROTOCOL_VIOLATION,
                           f"unexpected message type {type(msg).__name__} during COPY from stdin")
        return False

    @property
    def data(self) -> bytes:
        """Everything the client sent, in order."""
        return b"".join(self._chunks)
