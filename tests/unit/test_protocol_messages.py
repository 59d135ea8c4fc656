"""Pure tests for the pgwire v3 codec: hand-built bytes in, messages out, and exact encodings."""

from __future__ import annotations

import struct

import pytest

from server.protocol import messages as m
from server.protocol.frontend import (
    DecoderPhase,
    FrontendDecoder,
    parse_password,
    parse_sasl_initial_response,
)
from server.protocol.messages import (
    Bind,
    CancelRequest,
    Close,
    CopyData,
    CopyDone,
    CopyFail,
    Describe,
    Execute,
    FieldDescription,
    Flush,
    FunctionCall,
    GSSENCRequest,
    Parse,
    PasswordMessage,
    ProtocolViolation,
    Query,
    SSLRequest,
    StartupMessage,
    Sync,
    Terminate,
    UnsupportedProtocol,
)
from tests.wire import cstr, startup_packet
from tests.wire import message as msg

# ---------------------------------------------------------------------------
# Hand-rolled frontend encoders (independent of the code under test)
# ---------------------------------------------------------------------------


def packet(code: int, payload: bytes = b"") -> bytes:
    return struct.pack("!ii", len(payload) + 8, code) + payload


def startup(params: dict[str, str] | None = None, version: int = 196608) -> bytes:
    return startup_packet({"user": "alice", "database": "db"} if params is None else params, version)


def typed_decoder(**kwargs: object) -> FrontendDecoder:
    dec = FrontendDecoder(**kwargs)  # type: ignore[arg-type]
    assert dec.feed(startup()) == [
        StartupMessage(196608, {"user": "alice", "database": "db"})
    ]
    return dec


def feed_bytewise(dec: FrontendDecoder, data: bytes) -> list[m.FrontendMessage]:
    out: list[m.FrontendMessage] = []
    for i in range(len(data)):
        out.extend(dec.feed(data[i : i + 1]))
    return out


BIND_PAYLOAD = (
    cstr("portal1")
    + cstr("stmt1")
    + struct.pack("!H", 2)
    + struct.pack("!hh", 0, 1)
    + struct.pack("!H", 2)
    + struct.pack("!i", 3)
    + b"abc"
    + struct.pack("!i", -1)
    + struct.pack("!H", 1)
    + struct.pack("!h", 1)
)

TYPED_CASES = [
    pytest.param(msg(b"Q", cstr("SELECT 1")), Query("SELECT 1"), id="Query"),
    pytest.param(msg(b"Q", cstr("SELECT 'é'")), Query("SELECT 'é'"), id="Query-utf8"),
    pytest.param(
        msg(
            b"P",
            cstr("s1") + cstr("SELECT $1, $2") + struct.pack("!HII", 2, 23, 4294967295),
        ),
        Parse("s1", "SELECT $1, $2", (23, 4294967295)),
        id="Parse",
    ),
    pytest.param(
        msg(b"P", cstr("") + cstr("SELECT 1") + struct.pack("!H", 0)),
        Parse("", "SELECT 1", ()),
        id="Parse-unnamed",
    ),
    pytest.param(
        msg(b"B", BIND_PAYLOAD),
        Bind("portal1", "stmt1", (0, 1), (b"abc", None), (1,)),
        id="Bind",
    ),
    pytest.param(
        msg(b"B", cstr("") + cstr("") + struct.pack("!HHH", 0, 0, 0)),
        Bind("", "", (), (), ()),
        id="Bind-empty",
    ),
    pytest.param(msg(b"D", b"S" + cstr("s1")), Describe("S", "s1"), id="Describe-S"),
    pytest.param(msg(b"D", b"P" + cstr("")), Describe("P", ""), id="Describe-P"),
    pytest.param(
        msg(b"E", cstr("p") + struct.pack("!i", 100)), Execute("p", 100), id="Execute"
    ),
    pytest.param(msg(b"C", b"S" + cstr("s1")), Close("S", "s1"), id="Close"),
    pytest.param(msg(b"S"), Sync(), id="Sync"),
    pytest.param(msg(b"H"), Flush(), id="Flush"),
    pytest.param(
        msg(b"p", cstr("secret")), PasswordMessage(b"secret\0"), id="Password"
    ),
    pytest.param(msg(b"d", b"1\t2\n"), CopyData(b"1\t2\n"), id="CopyData"),
    pytest.param(msg(b"c"), CopyDone(), id="CopyDone"),
    pytest.param(msg(b"f", cstr("boom")), CopyFail("boom"), id="CopyFail"),
    pytest.param(
        msg(b"F", struct.pack("!IHH", 1598, 0, 0) + struct.pack("!h", 0)),
        FunctionCall(1598),
        id="FunctionCall",
    ),
    pytest.param(msg(b"X"), Terminate(), id="Terminate"),
]


# ---------------------------------------------------------------------------
# Startup phase
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_startup_message(bytewise: bool) -> None:
    dec = FrontendDecoder()
    data = startup({"user": "bob", "database": "sales", "application_name": "psql"})
    out = feed_bytewise(dec, data) if bytewise else dec.feed(data)
    assert out == [
        StartupMessage(
            196608, {"user": "bob", "database": "sales", "application_name": "psql"}
        )
    ]
    assert not dec.in_startup
    assert dec.phase is DecoderPhase.MESSAGES
    assert dec.buffered == 0
    assert (out[0].major, out[0].minor, out[0].needs_negotiation) == (3, 0, False)


def test_startup_without_params() -> None:
    assert FrontendDecoder().feed(startup({})) == [StartupMessage(196608, {})]


def test_startup_newer_minor_and_protocol_options_are_accepted_for_negotiation() -> (
    None
):
    data = startup({"user": "u", "_pq_.compression": "on"}, version=(3 << 16) | 2)
    [msg_] = FrontendDecoder().feed(data)
    assert isinstance(msg_, StartupMessage)
    assert msg_.minor == 2
    assert msg_.protocol_options == ("_pq_.compression",)
    assert msg_.needs_negotiation


@pytest.mark.parametrize("version", [(2 << 16), (1 << 16), (4 << 16) | 1])
def test_unsupported_protocol(version: int) -> None:
    with pytest.raises(UnsupportedProtocol) as info:
        FrontendDecoder().feed(startup(version=version))
    assert info.value.sqlstate == "0A000"
    assert info.value.version == version
    assert not isinstance(info.value, ProtocolViolation)


def test_unsupported_protocol_message() -> None:
    with pytest.raises(
        UnsupportedProtocol,
        match=r"^unsupported frontend protocol 2\.0: server supports 3\.0$",
    ):
        FrontendDecoder().feed(startup(version=2 << 16))


@pytest.mark.parametrize(
    "request_code, cls", [(80877103, SSLRequest), (80877104, GSSENCRequest)]
)
@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_encryption_request_then_startup_again(
    request_code: int, cls: type, bytewise: bool
) -> None:
    dec = FrontendDecoder()
    req = packet(request_code)
    assert (feed_bytewise(dec, req) if bytewise else dec.feed(req)) == [cls()]
    assert dec.in_startup
    assert dec.phase is DecoderPhase.AWAITING_NEGOTIATION
    # Server answers m.ssl_refused() and then:
    dec.expect_startup()
    assert dec.feed(startup()) == [
        StartupMessage(196608, {"user": "alice", "database": "db"})
    ]
    assert not dec.in_startup


def test_data_after_ssl_request_in_same_chunk_is_rejected() -> None:
    dec = FrontendDecoder()
    with pytest.raises(ProtocolViolation, match="unencrypted data after SSL request"):
        dec.feed(packet(80877103) + startup())


def test_data_before_expect_startup_is_rejected() -> None:
    dec = FrontendDecoder()
    dec.feed(packet(80877103))
    with pytest.raises(ProtocolViolation, match="unencrypted data"):
        dec.feed(b"\x00")


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "bytewise"])
def test_cancel_request(bytewise: bool) -> None:
    dec = FrontendDecoder()
    data = packet(80877102, struct.pack("!ii", 4242, -123456))
    assert (feed_bytewise(dec, data) if bytewise else dec.feed(data)) == [
        CancelRequest(4242, -123456)
    ]
    assert dec.phase is DecoderPhase.CLOSED
    assert dec.feed(b"garbage") == []


def test_startup_followed_by_typed_messages_in_one_feed() -> None:
    dec = FrontendDecoder()
    out = dec.feed(startup() + msg(b"p", cstr("pw")) + msg(b"Q", cstr("SELECT 1")))
    assert out[1:] == [PasswordMessage(b"pw\0"), Query("SELECT 1")]


@pytest.mark.parametrize(
    "data, match",
    [
        (struct.pack("!i", 7), "invalid length of startup packet: 7"),
        (struct.pack("!i", -1), "invalid length of startup packet"),
        (struct.pack("!i", 10001), "invalid length of startup packet: 10001"),
        (packet(80877103, b"x"), "invalid length of SSLRequest packet"),
        (packet(80877102, b"\0\0\0\1"), "invalid length of CancelRequest packet"),
        (packet(196608, b"user\0bob\0"), "expected terminator"),
        (packet(196608, b"user\0bob"), "expected terminator"),
        (packet(196608, b"user\0\0"), "parameter without a value"),
        (packet(196608, b"\0bob\0\0"), "empty parameter name"),
    ],
)
def test_bad_startup_packets(data: bytes, match: str) -> None:
    with pytest.raises(ProtocolViolation, match=match) as info:
        FrontendDecoder().feed(data)
    assert info.value.sqlstate == "08P01"


def test_startup_size_limit_checked_before_body_arrives() -> None:
    with pytest.raises(ProtocolViolation):
        FrontendDecoder().feed(struct.pack("!i", 50_000_000))


def test_invalid_utf8_in_startup() -> None:
    with pytest.raises(ProtocolViolation, match="UTF8") as info:
        FrontendDecoder().feed(packet(196608, b"user\0\xff\xfe\0\0"))
    assert info.value.sqlstate == "22021"


# ---------------------------------------------------------------------------
# Typed messages
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("data, expected", TYPED_CASES)
def test_typed_message_whole(data: bytes, expected: m.FrontendMessage) -> None:
    dec = typed_decoder()
    assert dec.feed(data) == [expected]
    assert dec.buffered == 0


@pytest.mark.parametrize("data, expected", TYPED_CASES)
def test_typed_message_bytewise(data: bytes, expected: m.FrontendMessage) -> None:
    dec = typed_decoder()
    assert feed_bytewise(dec, data) == [expected]
    assert dec.buffered == 0


def test_several_messages_in_one_feed_and_split_tail() -> None:
    dec = typed_decoder()
    batch = (
        msg(b"P", cstr("") + cstr("SELECT $1") + struct.pack("!HI", 1, 25))
        + msg(
            b"B",
            cstr("")
            + cstr("")
            + struct.pack("!HH", 0, 1)
            + struct.pack("!i", 2)
            + b"hi"
            + struct.pack("!H", 0),
        )
        + msg(b"D", b"P" + cstr(""))
        + msg(b"E", cstr("") + struct.pack("!i", 0))
        + msg(b"S")
    )
    tail = msg(b"Q", cstr("SELECT 2"))
    out = dec.feed(batch + tail[:7])
    assert out == [
        Parse("", "SELECT $1", (25,)),
        Bind("", "", (), (b"hi",), ()),
        Describe("P", ""),
        Execute("", 0),
        Sync(),
    ]
    assert dec.buffered == 7
    assert dec.feed(tail[7:]) == [Query("SELECT 2")]
    assert dec.buffered == 0


def test_many_messages_fed_bytewise() -> None:
    dec = typed_decoder()
    data = b"".join(case.values[0] for case in TYPED_CASES[:-1])  # all but Terminate
    assert feed_bytewise(dec, data) == [case.values[1] for case in TYPED_CASES[:-1]]


def test_terminate_stops_decoding() -> None:
    dec = typed_decoder()
    assert dec.feed(msg(b"X") + b"\xff\xff trailing junk") == [Terminate()]
    assert dec.phase is DecoderPhase.CLOSED
    assert dec.feed(msg(b"Q", cstr("SELECT 1"))) == []


def test_unknown_type_byte_is_rejected_immediately() -> None:
    dec = typed_decoder()
    with pytest.raises(
        ProtocolViolation, match=r"invalid frontend message type 122 \('z'\)"
    ):
        dec.feed(b"z")


def test_unknown_nonprintable_type_byte() -> None:
    with pytest.raises(ProtocolViolation, match="0x00"):
        typed_decoder().feed(b"\x00\x00\x00\x00\x04")


@pytest.mark.parametrize("length", [0, 3, -1, -2147483648])
def test_length_below_four(length: int) -> None:
    with pytest.raises(
        ProtocolViolation, match=f"invalid Query message length {length}"
    ):
        typed_decoder().feed(b"Q" + struct.pack("!i", length))


def test_oversized_length_fails_on_header_alone() -> None:
    dec = typed_decoder(max_message_size=1024)
    with pytest.raises(ProtocolViolation, match="exceeds the limit of 1024"):
        dec.feed(b"Q" + struct.pack("!i", 1025))


def test_default_max_is_64_mib() -> None:
    dec = typed_decoder()
    assert (
        dec.feed(b"d" + struct.pack("!i", 64 * 1024 * 1024)) == []
    )  # accepted, waiting for body
    with pytest.raises(ProtocolViolation, match="exceeds"):
        typed_decoder().feed(b"d" + struct.pack("!i", 64 * 1024 * 1024 + 1))


def test_small_messages_have_a_small_cap() -> None:
    with pytest.raises(
        ProtocolViolation, match="Sync message length 20000 exceeds the limit of 10000"
    ):
        typed_decoder().feed(b"S" + struct.pack("!i", 20000))


@pytest.mark.parametrize(
    "data, match",
    [
        (msg(b"Q", b"SELECT 1"), "invalid Query message: missing NUL terminator"),
        (
            msg(b"Q", cstr("SELECT 1") + b"x"),
            "invalid Query message: 1 unexpected trailing byte",
        ),
        (
            msg(b"P", cstr("s") + cstr("q") + struct.pack("!HI", 3, 23)),
            "invalid Parse message: truncated",
        ),
        (
            msg(b"P", cstr("s") + cstr("q") + b"\x00"),
            "invalid Parse message: truncated",
        ),
        (
            msg(
                b"B",
                cstr("")
                + cstr("")
                + struct.pack("!HH", 0, 1)
                + struct.pack("!i", 10)
                + b"abc",
            ),
            "invalid Bind message: truncated while reading value of parameter 1",
        ),
        (
            msg(
                b"B",
                cstr("")
                + cstr("")
                + struct.pack("!HH", 0, 1)
                + struct.pack("!i", -2)
                + struct.pack("!H", 0),
            ),
            "invalid length -2 for parameter 1",
        ),
        (
            msg(
                b"B",
                cstr("")
                + cstr("")
                + struct.pack("!Hhh", 2, 0, 0)
                + struct.pack("!H", 3),
            ),
            "2 parameter formats but 3 parameters",
        ),
        (
            msg(b"B", cstr("") + cstr("") + struct.pack("!HH", 0, 0)),
            "truncated while reading result format count",
        ),
        (msg(b"D", b"X" + cstr("s")), "describe target must be 'S' or 'P'"),
        (msg(b"D", b""), "invalid Describe message: truncated"),
        (
            msg(b"C", b"S" + cstr("s") + b"\0"),
            "invalid Close message: 1 unexpected trailing byte",
        ),
        (
            msg(b"E", cstr("p") + b"\0\0"),
            "invalid Execute message: truncated while reading row limit",
        ),
        (msg(b"S", b"\0"), "invalid Sync message: 1 unexpected byte"),
        (msg(b"X", b"\0"), "invalid Terminate message"),
        (msg(b"f", b"no terminator"), "invalid CopyFail message: missing NUL"),
        (msg(b"F", b"\0\0"), "invalid FunctionCall message: truncated"),
    ],
)
def test_malformed_bodies(data: bytes, match: str) -> None:
    with pytest.raises(ProtocolViolation, match=match) as info:
        typed_decoder().feed(data)
    assert info.value.sqlstate == "08P01"


def test_invalid_utf8_in_query() -> None:
    with pytest.raises(ProtocolViolation) as info:
        typed_decoder().feed(msg(b"Q", b"SELECT '\xc3'\0"))
    assert info.value.sqlstate == "22021"


def test_decoder_can_start_in_message_phase() -> None:
    dec = FrontendDecoder(phase=DecoderPhase.MESSAGES)
    assert dec.feed(msg(b"S")) == [Sync()]


# ---------------------------------------------------------------------------
# 'p' payload helpers
# ---------------------------------------------------------------------------


def test_parse_sasl_initial_response() -> None:
    data = cstr("SCRAM-SHA-256") + struct.pack("!i", 5) + b"n,,ab"
    assert parse_sasl_initial_response(data) == ("SCRAM-SHA-256", b"n,,ab")


def test_parse_sasl_initial_response_without_data() -> None:
    data = cstr("SCRAM-SHA-256") + struct.pack("!i", -1)
    assert parse_sasl_initial_response(data) == ("SCRAM-SHA-256", b"")


@pytest.mark.parametrize(
    "data",
    [
        b"SCRAM-SHA-256",
        cstr("SCRAM-SHA-256") + b"\0\0",
        cstr("SCRAM-SHA-256") + struct.pack("!i", 10) + b"short",
        cstr("SCRAM-SHA-256") + struct.pack("!i", -5),
        cstr("SCRAM-SHA-256") + struct.pack("!i", 1) + b"ab",
    ],
)
def test_parse_sasl_initial_response_malformed(data: bytes) -> None:
    with pytest.raises(ProtocolViolation, match="SASLInitialResponse"):
        parse_sasl_initial_response(data)


def test_parse_password() -> None:
    assert parse_password(b"hunter2\0") == "hunter2"
    with pytest.raises(ProtocolViolation):
        parse_password(b"hunter2")


# ---------------------------------------------------------------------------
# Backend encoders
# ---------------------------------------------------------------------------


def test_ready_for_query() -> None:
    assert m.ready_for_query("I") == b"Z\x00\x00\x00\x05I"
    assert m.ready_for_query("T") == b"Z\x00\x00\x00\x05T"
    assert m.ready_for_query("E") == b"Z\x00\x00\x00\x05E"
    with pytest.raises(ValueError):
        m.ready_for_query("X")


@pytest.mark.parametrize(
    "encoded, expected",
    [
        (m.authentication_ok(), b"R\x00\x00\x00\x08\x00\x00\x00\x00"),
        (m.authentication_cleartext_password(), b"R\x00\x00\x00\x08\x00\x00\x00\x03"),
        (
            m.authentication_sasl(["SCRAM-SHA-256"]),
            b"R\x00\x00\x00\x17\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00",
        ),
        (
            m.authentication_sasl_continue(b"r=ab"),
            b"R\x00\x00\x00\x0c\x00\x00\x00\x0br=ab",
        ),
        (
            m.authentication_sasl_final(b"v=xy"),
            b"R\x00\x00\x00\x0c\x00\x00\x00\x0cv=xy",
        ),
        (
            m.parameter_status("client_encoding", "UTF8"),
            b"S\x00\x00\x00\x19client_encoding\x00UTF8\x00",
        ),
        (
            m.backend_key_data(1234, -5),
            b"K\x00\x00\x00\x0c\x00\x00\x04\xd2\xff\xff\xff\xfb",
        ),
        (m.command_complete("SELECT 1"), b"C\x00\x00\x00\x0dSELECT 1\x00"),
        (m.empty_query_response(), b"I\x00\x00\x00\x04"),
        (m.parse_complete(), b"1\x00\x00\x00\x04"),
        (m.bind_complete(), b"2\x00\x00\x00\x04"),
        (m.close_complete(), b"3\x00\x00\x00\x04"),
        (m.no_data(), b"n\x00\x00\x00\x04"),
        (m.portal_suspended(), b"s\x00\x00\x00\x04"),
        (
            m.parameter_description([23, 25]),
            b"t\x00\x00\x00\x0e\x00\x02\x00\x00\x00\x17\x00\x00\x00\x19",
        ),
        (m.parameter_description([]), b"t\x00\x00\x00\x06\x00\x00"),
        (
            m.copy_out_response(0, [0, 0]),
            b"H\x00\x00\x00\x0b\x00\x00\x02\x00\x00\x00\x00",
        ),
        (m.copy_in_response(1, [1]), b"G\x00\x00\x00\x09\x01\x00\x01\x00\x01"),
        (m.copy_both_response(0, []), b"W\x00\x00\x00\x07\x00\x00\x00"),
        (m.copy_data(b"a\tb\n"), b"d\x00\x00\x00\x08a\tb\n"),
        (m.copy_done(), b"c\x00\x00\x00\x04"),
        (
            m.negotiate_protocol_version(0, ["_pq_.x"]),
            b"v\x00\x00\x00\x13\x00\x03\x00\x00\x00\x00\x00\x01_pq_.x\x00",
        ),
        (
            m.negotiate_protocol_version(0),
            b"v\x00\x00\x00\x0c\x00\x03\x00\x00\x00\x00\x00\x00",
        ),
        (m.ssl_refused(), b"N"),
    ],
)
def test_exact_encodings(encoded: bytes, expected: bytes) -> None:
    assert encoded == expected


def test_row_description() -> None:
    fields = [
        FieldDescription("id", type_oid=23, type_size=4),
        FieldDescription(
            "name",
            type_oid=25,
            type_size=-1,
            table_oid=16384,
            column_attr=2,
            format_code=1,
        ),
    ]
    expected = (
        b"T"
        + struct.pack("!i", 4 + 2 + (3 + 18) + (5 + 18))
        + b"\x00\x02"
        + b"id\x00"
        + struct.pack("!IhIhih", 0, 0, 23, 4, -1, 0)
        + b"name\x00"
        + struct.pack("!IhIhih", 16384, 2, 25, -1, -1, 1)
    )
    assert m.row_description(fields) == expected


def test_data_row() -> None:
    assert m.data_row([b"1", None, b""]) == (
        b"D\x00\x00\x00\x13\x00\x03\x00\x00\x00\x011\xff\xff\xff\xff\x00\x00\x00\x00"
    )
    assert m.data_row([]) == b"D\x00\x00\x00\x06\x00\x00"


def test_data_row_accepts_tuples_and_memory_like_values() -> None:
    assert m.data_row((b"ab", bytearray(b"cd"))) == m.data_row([b"ab", b"cd"])


def test_data_rows_matches_data_row() -> None:
    rows = [[b"1", b"alice"], [None, b""], [], [b"x" * 1000, None]]
    assert m.data_rows(rows) == b"".join(m.data_row(r) for r in rows)
    assert m.data_rows(iter(rows)) == m.data_rows(rows)
    assert m.data_rows([]) == b""


def test_error_fields_and_response() -> None:
    fields = m.error_fields(
        "ERROR", "42P01", 'relation "t" does not exist', hint="create it", position=15
    )
    assert fields == {
        "S": "ERROR",
        "V": "ERROR",
        "C": "42P01",
        "M": 'relation "t" does not exist',
        "H": "create it",
        "P": "15",
    }
    payload = (
        b'SERROR\0VERROR\0C42P01\0Mrelation "t" does not exist\0Hcreate it\0P15\0\0'
    )
    assert (
        m.error_response(fields) == b"E" + struct.pack("!i", len(payload) + 4) + payload
    )
    assert (
        m.notice_response(fields)
        == b"N" + struct.pack("!i", len(payload) + 4) + payload
    )


def test_error_fields_detail_only() -> None:
    assert m.error_fields("FATAL", "08P01", "bad", detail="why") == {
        "S": "FATAL",
        "V": "FATAL",
        "C": "08P01",
        "M": "bad",
        "D": "why",
    }


def test_error_response_strips_nul_from_values() -> None:
    assert m.error_response({"M": "a\0b"}) == b"E\x00\x00\x00\x09Mab\x00\x00"


def test_error_response_rejects_bad_field_codes() -> None:
    with pytest.raises(ValueError):
        m.error_response({"MM": "x"})


def test_strings_with_nul_are_rejected() -> None:
    with pytest.raises(ValueError):
        m.command_complete("SELECT\x001")
    with pytest.raises(ValueError):
        m.parameter_status("a\0", "b")


def test_exception_sqlstates() -> None:
    assert ProtocolViolation("x").sqlstate == "08P01"
    assert ProtocolViolation("x").message == "x"
    assert isinstance(UnsupportedProtocol(1 << 16), m.ProtocolError)
