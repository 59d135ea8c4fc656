"""COPY FROM STDIN's text and CSV formats, parsed into field strings (no socket)."""

from __future__ import annotations

import pytest

from server.copy_format import CopyDataError, CopyOptions, parse_rows

COLS = ["a", "b", "c"]
TEXT = CopyOptions()
CSV = CopyOptions(format="csv")


def test_text_fields_nulls_and_escapes():
    data = b"1\tx\t\\N\n2\ta\\tb\\\\c\\nd\t\n3\t\\x41\\101\\q\tz\n"
    assert parse_rows(data, TEXT, COLS) == [
        ["1", "x", None], ["2", "a\tb\\c\nd", ""], ["3", "AAq", "z"]]


def test_text_line_ends_are_set_by_the_first_line():
    assert parse_rows(b"1\t2\t3\r\n4\t5\t6\r\n", TEXT, COLS) == [["1", "2", "3"], ["4", "5", "6"]]
    for data, message in ((b"1\t2\t3\n4\t5\t6\r\n", "literal carriage return found in data"),
                          (b"1\t2\t3\r\n4\t5\t6\n", "literal newline found in data")):
        with pytest.raises(CopyDataError) as err:
            parse_rows(data, TEXT, COLS)
        assert err.value.message == message and err.value.line == 2


def test_text_escaped_delimiter_is_data_and_end_marker_stops():
    data = b"1\ta\\\tb\tc\n\\.\nignored\n"
    assert parse_rows(data, TEXT, COLS) == [["1", "a\tb", "c"]]


def test_text_options_delimiter_null_header():
    opts = CopyOptions(delimiter="|", null="NULL", header=True)
    # With another NULL string, \N is just an escaped N.
    assert parse_rows(b"a|b|c\n1|NULL|\\N\n", opts, COLS) == [["1", None, "N"]]


@pytest.mark.parametrize(("data", "message", "line"), [
    (b"1\t2\n1\t2\t3\t4\n", 'missing data for column "c"', 1),
    (b"1\t2\t3\n1\t2\t3\t4\n", "extra data after last expected column", 2),
    (b"1\t2\t\xff\n", 'invalid byte sequence for encoding "UTF8": 0xff', 1),
])
def test_text_errors_name_the_line(data, message, line):
    with pytest.raises(CopyDataError) as err:
        parse_rows(data, TEXT, COLS)
    assert err.value.message == message and err.value.line == line


def test_csv_quoted_empty_is_a_string_unquoted_empty_is_null():
    data = b'1,"",\n2,"x, ""y""","multi\nline"\n'
    assert parse_rows(data, CSV, COLS) == [["1", "", None], ["2", 'x, "y"', "multi\nline"]]


def test_csv_header_null_string_and_quoted_null():
    opts = CopyOptions(format="csv", header=True, null="NULL")
    assert parse_rows(b'a,b,c\n1,NULL,"NULL"\n', opts, COLS) == [["1", None, "NULL"]]
    assert parse_rows(b"a,b,c\n", opts, COLS) == []
    assert parse_rows(b"", CSV, COLS) == []


@pytest.mark.parametrize(("data", "message", "line"), [
    (b"1,2,3\n4,5\n", 'missing data for column "c"', 2),
    (b"1,2,3\n4,5,6,7\n", "extra data after last expected column", 2),
])
def test_csv_errors_name_the_line(data, message, line):
    with pytest.raises(CopyDataError) as err:
        parse_rows(data, CSV, COLS)
    assert err.value.message == message and err.value.line == line


@pytest.mark.parametrize(("data", "expected"), [
    # No escapes but whole-field \N: Arrow's reader splits the lines.
    (b"1\t\\N\tx\n\\N\t2\t\\N\n", [["1", None, "x"], [None, "2", None]]),
    # \N inside a field is an escaped N, not NULL: the line-by-line parser.
    (b"1\ta\\Nb\t\\N\n", [["1", "aNb", None]]),
    # An empty field at the end, and an empty line in a one-column table is an empty string.
    (b"1\t2\t\n", [["1", "2", ""]]),
])
def test_text_fast_and_slow_paths_agree_with_postgres(data, expected):
    assert parse_rows(data, TEXT, COLS) == expected


def test_text_empty_line_is_an_empty_field():
    assert parse_rows(b"a\n\nb\n", TEXT, ["only"]) == [["a"], [""], ["b"]]
