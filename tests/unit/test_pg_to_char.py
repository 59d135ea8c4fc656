"""to_char(timestamp, format) as PostgreSQL 15 writes it (planner.pg_to_char), without Spark.

The expected texts were PostgreSQL 15's answers; tests/catalog_compare.py and
own/datetime.test ask a running PostgreSQL the same through the server."""

from __future__ import annotations

import pytest

from planner import pg_to_char
from planner.errors import SqlError

CASES = [
    ('2026-12-06 11:21:09.5', 'YYYY-MM-DD HH24:MI:SS.US', False, '2026-12-06 11:21:09.500000'),
    ('2026-12-06 11:21:09.5', 'FMDay, DDth FMMonth YYYY', False, 'Sunday, 06th December 2026'),
    ('2026-12-06 11:21:09.5', 'Day|Month|DY|Mon|dy|mon', False, 'Sunday   |December |SUN|Dec|sun|dec'),
    ('2026-12-06 11:21:09.5', 'HH12:MI:SS AM a.m. PM', False, '11:21:09 AM a.m. AM'),
    ('2026-12-06 11:21:09.5', 'IYYY-IW-ID IDDD', False, '2026-49-7 343'),
    ('2026-12-06 11:21:09.5', 'J Q CC WW W D DDD', False, '2461381 4 21 49 1 1 340'),
    ('2026-12-06 11:21:09.5', 'Y,YYY YYY YY Y', False, '2,026 026 26 6'),
    ('2026-12-06 11:21:09.5', 'RM rm FMRM|', False, 'XII  xii  XII|'),
    ('2026-12-06 11:21:09.5', 'MS FF1 FF3 FF6 SSSS SSSSS', False, '500 5 500 500000 40869 40869'),
    ('2026-12-06 11:21:09.5', '"YYYY is" YYYY \\"quoted\\"', False, 'YYYY is 2026 "4uote1"'),
    ('2026-12-06 11:21:09.5', 'TZ tz OF TZH:TZM', False, '  +00 +00:00'),
    ('2026-12-06 11:21:09.5', 'TZ tz OF FMOF TZH:TZM', True, 'UTC utc +00 +0 +00:00'),
    ('2026-12-06 11:21:09.5', 'DDth DDTH MMth HH24th', False, '06th 06TH 12th 11th'),
    ('2026-12-06 11:21:09.5', 'TMMonth|TMDay|Month|', False, 'December|Sunday|December |'),
    ('2026-12-06 11:21:09.5', 'FMTMFM', False, 'TM'),
    ('2026-12-06 11:21:09.5', 'TMTMYYYY', False, 'TM2026'),
    ('2026-12-06 11:21:09.5', 'AD ad A.D. BC', False, 'AD ad A.D. AD'),
    ('2026-12-06 11:21:09.5', 'SPYYYYSP', False, 'SP2026'),
    ('2026-12-06 11:21:09.5', 'hh24:mi:ss yyyy-mm-dd', False, '11:21:09 2026-12-06'),
    ('2026-12-06 11:21:09.5', 'FXYYYY', False, '2026'),
    ('2001-01-01 00:00:00', 'HH12 AM DDDth IW IYYY W WW CC', False, '12 AM 001st 01 2001 1 01 21'),
    ('2000-12-31 23:59:59.999999', 'CC DDD IW IYYY MS US', False, '20 366 52 2000 999 999999'),
    ('0099-03-11 12:00:00', 'YYYY CCth FMCC FMYYYY Y,YYY', False, '0099 01st 1 99 0,099'),
    ('2021-01-03 00:00:00', 'IYYY IW ID D 11th:DDth', False, '2020 53 7 1 11th:03rd'),
]


@pytest.mark.parametrize("text, fmt, zoned, expected", CASES)
def test_formats_as_postgres(text, fmt, zoned, expected):
    assert pg_to_char.to_char(text, fmt, zoned) == expected


def test_null_argument_or_empty_format_is_null():
    assert pg_to_char.to_char(None, "YYYY", False) is None
    assert pg_to_char.to_char("2026-01-01 00:00:00", None, False) is None
    assert pg_to_char.to_char("2026-01-01 00:00:00", "", False) is None


def test_years_beyond_four_digits_are_refused():
    with pytest.raises(SqlError) as err:
        pg_to_char.to_char("+10000-01-01 00:00:00", "YYYY", False)
    assert err.value.sqlstate == "0A000"
