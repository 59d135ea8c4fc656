"""planner.pg_to_timestamp: to_timestamp(text, format) and to_date(text, format) as
PostgreSQL 15 reads them (session TimeZone UTC), without a server.

Every expected value and error below was taken from a real PostgreSQL 15.18: fixed-width and
FM fields, the way spaces, separators and literal text are matched (and FX), 12-hour clocks,
month/day names and Roman months in any case, Y,YYY, CC with YY, ISO weeks, day of year,
Julian days, fractional seconds (FFn rounds), TZH/TZM offsets, and the inputs it rejects with
their SQLSTATE, message, detail and hint. Results PostgreSQL gives outside years 1..9999 (BC,
the year 0 of a format without a year, years past 9999) are refused with 0A000."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from planner.errors import SqlError
from planner.pg_to_timestamp import to_date, to_timestamp

# (text, format, PostgreSQL's to_timestamp in UTC)
TIMESTAMPS = [
    ('2020-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS', datetime(2020, 1, 2, 3, 4, 5)),
    ('05 Dec 2000', 'DD Mon YYYY', datetime(2000, 12, 5, 0, 0, 0)),
    ('2011-12-18 11:38 AM', 'YYYY-MM-DD HH12:MI AM', datetime(2011, 12, 18, 11, 38, 0)),
    ('2011-12-18 11:38 PM', 'YYYY-MM-DD HH12:MI PM', datetime(2011, 12, 18, 23, 38, 0)),
    ('2011-12-18 12:38 a.m.', 'YYYY-MM-DD HH:MI a.m.', datetime(2011, 12, 18, 0, 38, 0)),
    ('2011-12-18 11:38 +05:30', 'YYYY-MM-DD HH24:MI TZH:TZM', datetime(2011, 12, 18, 6, 8, 0)),
    ('2011-12-18 11:38 -05', 'YYYY-MM-DD HH24:MI TZH', datetime(2011, 12, 18, 16, 38, 0)),
    ('2011-12-18 23:38:15.123456', 'YYYY-MM-DD HH24:MI:SS.US', datetime(2011, 12, 18, 23, 38, 15, 123456)),
    ('2011-12-18 23:38:15.12', 'YYYY-MM-DD HH24:MI:SS.MS', datetime(2011, 12, 18, 23, 38, 15, 120000)),
    ('2011-12-18 23:38:15.9996', 'YYYY-MM-DD HH24:MI:SS.FF3', datetime(2011, 12, 18, 23, 38, 16)),
    ('1999-12-31 23:59:59.96', 'YYYY-MM-DD HH24:MI:SS.FF1', datetime(2000, 1, 1, 0, 0, 0)),
    ('20000101', 'YYYYMMDD', datetime(2000, 1, 1, 0, 0, 0)),
    ('2000 366', 'YYYY DDD', datetime(2000, 12, 31, 0, 0, 0)),
    ('2020-W53-7', 'IYYY-"W"IW-ID', datetime(2021, 1, 3, 0, 0, 0)),
    ('2459000', 'J', datetime(2020, 5, 30, 0, 0, 0)),
    ('Monday, 05 January 2015', 'Day, DD Month YYYY', datetime(2015, 1, 5, 0, 0, 0)),
    ('MONDAY 5 JAN 2015', 'DAY FMDD MON YYYY', datetime(2015, 1, 5, 0, 0, 0)),
    ('21 99', 'CC YY', datetime(2099, 1, 1, 0, 0, 0)),
    ('20 00', 'CC YY', datetime(2000, 1, 1, 0, 0, 0)),
    ('1,999 12 31', 'Y,YYY MM DD', datetime(1999, 12, 31, 0, 0, 0)),
    ('XII 2000', 'RM YYYY', datetime(2000, 12, 1, 0, 0, 0)),
    ('iv 2000', 'rm YYYY', datetime(2000, 4, 1, 0, 0, 0)),
    ('2000 3 2', 'YYYY Q MM', datetime(2000, 2, 1, 0, 0, 0)),
    ('2021 10 2', 'YYYY WW D', datetime(2021, 3, 5, 0, 0, 0)),
    ('3rd of March 2021', 'DDth "of" FMMonth YYYY', datetime(2021, 3, 3, 0, 0, 0)),
    ('99', 'YY', datetime(1999, 1, 1, 0, 0, 0)),
    ('5', 'Y', datetime(2005, 1, 1, 0, 0, 0)),
    ('519', 'YYY', datetime(2519, 1, 1, 0, 0, 0)),
    ('520', 'YYY', datetime(1520, 1, 1, 0, 0, 0)),
    ('  2020   01  02', 'YYYY MM DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020/01/02', 'YYYY-MM-DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020-1-2', 'YYYY-MM-DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020-01-02', 'FXYYYY-MM-DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020-01-02', 'FXYYYY MM DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020x01y02', 'YYYY"x"MM"y"DD', datetime(2020, 1, 2, 0, 0, 0)),
    ('2020 86399', 'YYYY SSSSS', datetime(2020, 1, 1, 23, 59, 59)),
    ('20x0', 'YYYY', datetime(20, 1, 1, 0, 0, 0)),
    ('2020 2020', 'YYYY YYYY', datetime(2020, 1, 1, 0, 0, 0)),
    ('1,2x', 'Y,YYY', datetime(1002, 1, 1, 0, 0, 0)),
    ('2020 xiii', 'YYYY RM', datetime(2020, 12, 1, 0, 0, 0)),
    ('2020-01-01 12.5', 'YYYY-MM-DD HH24.MI', datetime(2020, 1, 1, 12, 5, 0)),
    ('1 2020', 'MM YYYY', datetime(2020, 1, 1, 0, 0, 0)),
]

# (text, format, (SQLSTATE, message, detail, hint)) from to_timestamp
TIMESTAMP_ERRORS = [
    ('2001 366', 'YYYY DDD', ('22008', 'date/time field value out of range: "2001 366"', None, None)),
    ('2021 02 5', 'YYYY MM W', ('22008', 'date/time field value out of range: "2021 02 5"', None, None)),
    ('20200102', 'YYYY-MM-DD', ('22008', 'timestamp out of range', None, None)),
    (
        '2020 -01-02',
        'FXYYYY-MM-DD',
        ('22008', 'date/time field value out of range: "2020 -01-02"', None, None),
    ),
    ('2020-13-01', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2020-13-01"', None, None)),
    ('2021-02-29', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2021-02-29"', None, None)),
    ('2020-01-32', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2020-01-32"', None, None)),
    (
        '2020-01-01 24:00',
        'YYYY-MM-DD HH24:MI',
        ('22008', 'date/time field value out of range: "2020-01-01 24:00"', None, None),
    ),
    (
        '2020-01-01 13:00 PM',
        'YYYY-MM-DD HH12:MI PM',
        (
            '22007',
            'hour "13" is invalid for the 12-hour clock',
            None,
            'Use the 24-hour clock, or give an hour between 1 and 12.',
        ),
    ),
    (
        '2020-01-01 0 AM',
        'YYYY-MM-DD HH AM',
        (
            '22007',
            'hour "0" is invalid for the 12-hour clock',
            None,
            'Use the 24-hour clock, or give an hour between 1 and 12.',
        ),
    ),
    ('x2020', 'YYYY', ('22007', 'invalid value "x202" for "YYYY"', 'Value must be an integer.', None)),
    (
        '202',
        'YYYYMM',
        (
            '22007',
            'source string too short for "YYYY" formatting field',
            'Field requires 4 characters, but only 3 remain.',
            'If your source string is not fixed-width, try using the "FM" modifier.',
        ),
    ),
    (
        '2020 Foo 01',
        'YYYY Mon DD',
        (
            '22007',
            'invalid value "Foo" for "Mon"',
            'The given value did not match any of the allowed values for this field.',
            None,
        ),
    ),
    (
        '2020 Jan Feb',
        'YYYY Mon Mon',
        (
            '22007',
            'conflicting values for "Mon" field in formatting string',
            'This value contradicts a previous setting for the same field type.',
            None,
        ),
    ),
    (
        '2020 2021',
        'YYYY YYYY',
        (
            '22007',
            'conflicting values for "YYYY" field in formatting string',
            'This value contradicts a previous setting for the same field type.',
            None,
        ),
    ),
    (
        '2020 10',
        'IYYY MM',
        (
            '22007',
            'invalid combination of date conventions',
            None,
            'Do not mix Gregorian and ISO week date conventions in a formatting template.',
        ),
    ),
    (
        '2020-01-01 +16',
        'YYYY-MM-DD TZH',
        ('22009', 'time zone displacement out of range: "2020-01-01 +16"', None, None),
    ),
    (
        '2020-01-01 +05:60',
        'YYYY-MM-DD TZH:TZM',
        ('22009', 'time zone displacement out of range: "2020-01-01 +05:60"', None, None),
    ),
    (
        '2020-01-01 UTC',
        'YYYY-MM-DD TZ',
        ('0A000', 'formatting field "TZ" is only supported in to_char', None, None),
    ),
    (
        '2020-01-01 +05',
        'YYYY-MM-DD OF',
        ('0A000', 'formatting field "OF" is only supported in to_char', None, None),
    ),
    ('123', 'DDD', ('22007', 'cannot calculate day of year without year information', None, None)),
    (
        '99999999999',
        'YYYY',
        (
            '22008',
            'value for "YYYY" in source string is out of range',
            'Value must be in the range -2147483648 to 2147483647.',
            None,
        ),
    ),
    (
        '2020 1 1 61',
        'YYYY MM DD SS',
        ('22008', 'date/time field value out of range: "2020 1 1 61"', None, None),
    ),
    (
        '2020 12 12 Mun',
        'YYYY MM DD Dy',
        (
            '22007',
            'invalid value "Mun" for "Dy"',
            'The given value did not match any of the allowed values for this field.',
            None,
        ),
    ),
    ('99999999-01-01', 'YYYY-MM-DD', ('22008', 'timestamp out of range', None, None)),
    ('5874898-01-01', 'YYYY-MM-DD', ('22008', 'timestamp out of range', None, None)),
]

# (text, format, PostgreSQL's to_date)
DATES = [
    ('2020-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS', date(2020, 1, 2)),
    ('05 Dec 2000', 'DD Mon YYYY', date(2000, 12, 5)),
    ('2011-12-18 11:38 AM', 'YYYY-MM-DD HH12:MI AM', date(2011, 12, 18)),
    ('2011-12-18 11:38 PM', 'YYYY-MM-DD HH12:MI PM', date(2011, 12, 18)),
    ('2011-12-18 12:38 a.m.', 'YYYY-MM-DD HH:MI a.m.', date(2011, 12, 18)),
    ('2011-12-18 11:38 +05:30', 'YYYY-MM-DD HH24:MI TZH:TZM', date(2011, 12, 18)),
    ('2011-12-18 11:38 -05', 'YYYY-MM-DD HH24:MI TZH', date(2011, 12, 18)),
    ('2011-12-18 23:38:15.123456', 'YYYY-MM-DD HH24:MI:SS.US', date(2011, 12, 18)),
    ('2011-12-18 23:38:15.12', 'YYYY-MM-DD HH24:MI:SS.MS', date(2011, 12, 18)),
    ('2011-12-18 23:38:15.9996', 'YYYY-MM-DD HH24:MI:SS.FF3', date(2011, 12, 18)),
    ('1999-12-31 23:59:59.96', 'YYYY-MM-DD HH24:MI:SS.FF1', date(1999, 12, 31)),
    ('20000101', 'YYYYMMDD', date(2000, 1, 1)),
    ('2000 366', 'YYYY DDD', date(2000, 12, 31)),
    ('2020-W53-7', 'IYYY-"W"IW-ID', date(2021, 1, 3)),
    ('2459000', 'J', date(2020, 5, 30)),
    ('Monday, 05 January 2015', 'Day, DD Month YYYY', date(2015, 1, 5)),
    ('MONDAY 5 JAN 2015', 'DAY FMDD MON YYYY', date(2015, 1, 5)),
    ('21 99', 'CC YY', date(2099, 1, 1)),
    ('20 00', 'CC YY', date(2000, 1, 1)),
    ('1,999 12 31', 'Y,YYY MM DD', date(1999, 12, 31)),
    ('XII 2000', 'RM YYYY', date(2000, 12, 1)),
    ('iv 2000', 'rm YYYY', date(2000, 4, 1)),
    ('2000 3 2', 'YYYY Q MM', date(2000, 2, 1)),
    ('2021 10 2', 'YYYY WW D', date(2021, 3, 5)),
    ('3rd of March 2021', 'DDth "of" FMMonth YYYY', date(2021, 3, 3)),
    ('99', 'YY', date(1999, 1, 1)),
    ('5', 'Y', date(2005, 1, 1)),
    ('519', 'YYY', date(2519, 1, 1)),
    ('520', 'YYY', date(1520, 1, 1)),
    ('  2020   01  02', 'YYYY MM DD', date(2020, 1, 2)),
    ('2020/01/02', 'YYYY-MM-DD', date(2020, 1, 2)),
    ('2020-1-2', 'YYYY-MM-DD', date(2020, 1, 2)),
    ('2020-01-02', 'FXYYYY-MM-DD', date(2020, 1, 2)),
    ('2020-01-02', 'FXYYYY MM DD', date(2020, 1, 2)),
    ('2020x01y02', 'YYYY"x"MM"y"DD', date(2020, 1, 2)),
    ('2020 86399', 'YYYY SSSSS', date(2020, 1, 1)),
    ('20x0', 'YYYY', date(20, 1, 1)),
    ('2020 2020', 'YYYY YYYY', date(2020, 1, 1)),
    ('1,2x', 'Y,YYY', date(1002, 1, 1)),
    ('2020 xiii', 'YYYY RM', date(2020, 12, 1)),
    ('2020-01-01 12.5', 'YYYY-MM-DD HH24.MI', date(2020, 1, 1)),
    ('1 2020', 'MM YYYY', date(2020, 1, 1)),
]

# (text, format, (SQLSTATE, message, detail, hint)) from to_date
DATE_ERRORS = [
    ('2001 366', 'YYYY DDD', ('22008', 'date/time field value out of range: "2001 366"', None, None)),
    ('2021 02 5', 'YYYY MM W', ('22008', 'date/time field value out of range: "2021 02 5"', None, None)),
    ('20200102', 'YYYY-MM-DD', ('22008', 'date out of range: "20200102"', None, None)),
    (
        '2020 -01-02',
        'FXYYYY-MM-DD',
        ('22008', 'date/time field value out of range: "2020 -01-02"', None, None),
    ),
    ('2020-13-01', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2020-13-01"', None, None)),
    ('2021-02-29', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2021-02-29"', None, None)),
    ('2020-01-32', 'YYYY-MM-DD', ('22008', 'date/time field value out of range: "2020-01-32"', None, None)),
    (
        '2020-01-01 24:00',
        'YYYY-MM-DD HH24:MI',
        ('22008', 'date/time field value out of range: "2020-01-01 24:00"', None, None),
    ),
    (
        '2020-01-01 13:00 PM',
        'YYYY-MM-DD HH12:MI PM',
        (
            '22007',
            'hour "13" is invalid for the 12-hour clock',
            None,
            'Use the 24-hour clock, or give an hour between 1 and 12.',
        ),
    ),
    (
        '2020-01-01 0 AM',
        'YYYY-MM-DD HH AM',
        (
            '22007',
            'hour "0" is invalid for the 12-hour clock',
            None,
            'Use the 24-hour clock, or give an hour between 1 and 12.',
        ),
    ),
    ('x2020', 'YYYY', ('22007', 'invalid value "x202" for "YYYY"', 'Value must be an integer.', None)),
    (
        '202',
        'YYYYMM',
        (
            '22007',
            'source string too short for "YYYY" formatting field',
            'Field requires 4 characters, but only 3 remain.',
            'If your source string is not fixed-width, try using the "FM" modifier.',
        ),
    ),
    (
        '2020 Foo 01',
        'YYYY Mon DD',
        (
            '22007',
            'invalid value "Foo" for "Mon"',
            'The given value did not match any of the allowed values for this field.',
            None,
        ),
    ),
    (
        '2020 Jan Feb',
        'YYYY Mon Mon',
        (
            '22007',
            'conflicting values for "Mon" field in formatting string',
            'This value contradicts a previous setting for the same field type.',
            None,
        ),
    ),
    (
        '2020 2021',
        'YYYY YYYY',
        (
            '22007',
            'conflicting values for "YYYY" field in formatting string',
            'This value contradicts a previous setting for the same field type.',
            None,
        ),
    ),
    (
        '2020 10',
        'IYYY MM',
        (
            '22007',
            'invalid combination of date conventions',
            None,
            'Do not mix Gregorian and ISO week date conventions in a formatting template.',
        ),
    ),
    (
        '2020-01-01 +16',
        'YYYY-MM-DD TZH',
        ('22009', 'time zone displacement out of range: "2020-01-01 +16"', None, None),
    ),
    (
        '2020-01-01 +05:60',
        'YYYY-MM-DD TZH:TZM',
        ('22009', 'time zone displacement out of range: "2020-01-01 +05:60"', None, None),
    ),
    (
        '2020-01-01 UTC',
        'YYYY-MM-DD TZ',
        ('0A000', 'formatting field "TZ" is only supported in to_char', None, None),
    ),
    (
        '2020-01-01 +05',
        'YYYY-MM-DD OF',
        ('0A000', 'formatting field "OF" is only supported in to_char', None, None),
    ),
    ('123', 'DDD', ('22007', 'cannot calculate day of year without year information', None, None)),
    (
        '99999999999',
        'YYYY',
        (
            '22008',
            'value for "YYYY" in source string is out of range',
            'Value must be in the range -2147483648 to 2147483647.',
            None,
        ),
    ),
    (
        '2020 1 1 61',
        'YYYY MM DD SS',
        ('22008', 'date/time field value out of range: "2020 1 1 61"', None, None),
    ),
    (
        '2020 12 12 Mun',
        'YYYY MM DD Dy',
        (
            '22007',
            'invalid value "Mun" for "Dy"',
            'The given value did not match any of the allowed values for this field.',
            None,
        ),
    ),
]

# PostgreSQL answers these with a timestamp outside years 1..9999, which is refused.
OUT_OF_RANGE = [
    ('12:00:00', 'HH24:MI:SS'),  # PostgreSQL: 0001-01-01 12:00:00+00 BC
    ('86399', 'SSSS'),  # PostgreSQL: 0001-01-01 23:59:59+00 BC
    ('12', 'MM'),  # PostgreSQL: 0001-12-01 00:00:00+00 BC
    ('2020 BC', 'YYYY BC'),  # PostgreSQL: 2020-01-01 00:00:00+00 BC
    ('10000-01-01', 'YYYY-MM-DD'),  # PostgreSQL: 10000-01-01 00:00:00+00
    ('', 'YYYY'),  # PostgreSQL: 0001-01-01 00:00:00+00 BC
    ('0001-01-01 00:30 +01', 'YYYY-MM-DD HH24:MI TZH'),  # PostgreSQL: 0001-12-31 23:30:00+00 BC
]

# Likewise for to_date, which ignores the offset (so 0001-01-01 00:30 +01 is fine there).
DATES_OUT_OF_RANGE = [
    ('12:00:00', 'HH24:MI:SS'),  # PostgreSQL: 0001-01-01 BC
    ('86399', 'SSSS'),  # PostgreSQL: 0001-01-01 BC
    ('12', 'MM'),  # PostgreSQL: 0001-12-01 BC
    ('2020 BC', 'YYYY BC'),  # PostgreSQL: 2020-01-01 BC
]


def _error(call, text: str, fmt: str) -> tuple[str, str, str | None, str | None]:
    with pytest.raises(SqlError) as caught:
        call(text, fmt)
    error = caught.value
    return error.sqlstate, error.message, error.detail, error.hint


@pytest.mark.parametrize(("text", "fmt", "expected"), TIMESTAMPS)
def test_to_timestamp_matches_postgresql(text: str, fmt: str, expected: datetime) -> None:
    assert to_timestamp(text, fmt) == expected


@pytest.mark.parametrize(("text", "fmt", "expected"), TIMESTAMP_ERRORS)
def test_to_timestamp_errors_match_postgresql(text: str, fmt: str, expected: tuple) -> None:
    assert _error(to_timestamp, text, fmt) == expected


@pytest.mark.parametrize(("text", "fmt", "expected"), DATES)
def test_to_date_matches_postgresql(text: str, fmt: str, expected: date) -> None:
    assert to_date(text, fmt) == expected


@pytest.mark.parametrize(("text", "fmt", "expected"), DATE_ERRORS)
def test_to_date_errors_match_postgresql(text: str, fmt: str, expected: tuple) -> None:
    assert _error(to_date, text, fmt) == expected


@pytest.mark.parametrize(("text", "fmt"), OUT_OF_RANGE)
def test_timestamps_outside_years_1_to_9999_are_refused(text: str, fmt: str) -> None:
    assert _error(to_timestamp, text, fmt)[0] == "0A000"


@pytest.mark.parametrize(("text", "fmt"), DATES_OUT_OF_RANGE)
def test_dates_outside_years_1_to_9999_are_refused(text: str, fmt: str) -> None:
    assert _error(to_date, text, fmt)[0] == "0A000"


def test_results_are_naive_utc() -> None:
    assert to_timestamp("2020-06-01 00:30 +01", "YYYY-MM-DD HH24:MI TZH").tzinfo is None
