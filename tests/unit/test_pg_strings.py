"""planner.pg_strings: encode/decode, like_escape, string_to_array and chr as PostgreSQL 15
answers them (tests/integration/test_function_catalog.py compares them with PostgreSQL),
and the sqlglot path's calls written as the catalog's templates."""

from __future__ import annotations

import pytest
import sqlglot

from planner import pg_functions
from planner.errors import SqlError
from planner.pg_strings import decode, encode, like_escape, pg_chr, spark_like_pattern, string_to_array


@pytest.mark.parametrize("data, fmt, expected", [
    (bytes.fromhex("1234567890abcdef00"), "hex", "1234567890abcdef00"),
    (b"abc", "base64", "YWJj"),
    (b"abc", "BASE64", "YWJj"),
    (bytes([0xAB] * 57), "base64", "q6ur" * 19 + "\n"),  # a full line ends with a newline
    (bytes([0xAB] * 58), "base64", "q6ur" * 19 + "\nqw=="),
    (b"", "base64", ""),
    (b"\x00\xff\\A", "escape", "\\000\\377\\\\A"),
    (None, "hex", None), (b"a", None, None),
])
def test_encode(data, fmt, expected):
    assert encode(data, fmt) == expected


@pytest.mark.parametrize("text, fmt, expected", [
    ("616263", "hex", b"abc"),
    (" 61 62\n63 ", "hex", b"abc"),
    ("YWJj", "base64", b"abc"),
    ("YW\nJj", "base64", b"abc"),
    ("YQ==", "base64", b"a"),
    ("a\\\\b\\101", "escape", b"a\\bA"),
    ("é", "escape", "é".encode()),
    ("", "hex", b""),
])
def test_decode(text, fmt, expected):
    assert decode(text, fmt) == expected


@pytest.mark.parametrize("text, fmt, sqlstate, message", [
    ("abc", "hex", "22023", "invalid hexadecimal data: odd number of digits"),
    ("zz", "hex", "22023", 'invalid hexadecimal digit: "z"'),
    ("éa", "hex", "22023", 'invalid hexadecimal digit: "é"'),
    ("YQ", "base64", "22023", "invalid base64 end sequence"),
    ("Y=Jj", "base64", "22023", 'unexpected "=" while decoding base64 sequence'),
    ("Y%Jj", "base64", "22023", 'invalid symbol "%" found while decoding base64 sequence'),
    ("\\x", "escape", "22P02", "invalid input syntax for type bytea"),
    ("a", "base32", "22023", 'unrecognized encoding: "base32"'),
])
def test_decode_errors(text, fmt, sqlstate, message):
    with pytest.raises(SqlError) as info:
        decode(text, fmt)
    assert (info.value.sqlstate, info.value.message) == (sqlstate, message)


@pytest.mark.parametrize("pattern, escape, expected, for_spark", [
    ("h#%", "#", "h\\%", "h\\%"),
    ("a##b", "#", "a\\#b", "a#b"),  # Spark's LIKE refuses \# where PostgreSQL's reads #
    ("a\\b", "", "a\\\\b", "a\\\\b"),
    ("a\\b", "\\", "a\\b", "ab"),
    ("a\\b", "#", "a\\\\b", "a\\\\b"),
    ("#\\", "#", "\\\\", "\\\\"),  # a backslash right after the escape is not doubled
])
def test_like_escape(pattern, escape, expected, for_spark):
    assert like_escape(pattern, escape) == expected
    assert like_escape(pattern, escape, True) == for_spark == spark_like_pattern(expected)


def test_like_escape_of_more_than_one_character_is_22025():
    with pytest.raises(SqlError) as info:
        like_escape("a", "ab")
    assert info.value.sqlstate == "22025"


@pytest.mark.parametrize("args, expected", [
    (("a,b,,c", ","), ["a", "b", "", "c"]),
    (("a,b,,c", ",", ""), ["a", "b", None, "c"]),
    (("abc", None), ["a", "b", "c"]),
    (("abc", ""), ["abc"]),
    (("", ","), []),
    ((None, ","), None),
    (("a||b", "||"), ["a", "b"]),
])
def test_string_to_array(args, expected):
    assert string_to_array(*args) == expected


@pytest.mark.parametrize("code, sqlstate", [(0, "54000"), (-1, "22023"), (0x110000, "54000"), (0xD800, "54000")])
def test_chr_errors(code, sqlstate):
    with pytest.raises(SqlError) as info:
        pg_chr(code)
    assert info.value.sqlstate == sqlstate


def test_chr_is_a_code_point():
    assert (pg_chr(65), pg_chr(233), pg_chr(8364), pg_chr(None)) == ("A", "é", "€", None)


@pytest.mark.parametrize("sql, udf", [
    ("regexp_replace(a, 'b', 'c')", "SPARKWIRE_REGEXP_REPLACE"),
    ("regexp_replace(a, 'b', 'c', 'g')", "SPARKWIRE_REGEXP_REPLACE"),
    ("chr(300)", "SPARKWIRE_CHR"),
    ("encode(b, 'hex')", "SPARKWIRE_ENCODE"),
    ("decode(a, 'hex')", "SPARKWIRE_DECODE"),
    ("string_to_array(a, ',')", "SPARKWIRE_STRING_TO_ARRAY"),
    ("regexp_match(a, 'x')", "SPARKWIRE_REGEXP_MATCH"),
])
def test_the_sqlglot_path_calls_the_same_udfs(sql, udf):
    node = sqlglot.parse_one(f"SELECT {sql}", read="postgres").expressions[0]
    assert pg_functions.rewrite(node).sql("spark").startswith(f"{udf}(")
