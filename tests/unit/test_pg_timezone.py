"""AT TIME ZONE's zones (planner/pg_timezone.py) read as PostgreSQL 15 reads them, without
Spark; the answers are compared with PostgreSQL in tests/slt/own/datetime.test and by the
function catalog test."""

from __future__ import annotations

import pytest

from planner import pg_timezone
from planner.errors import SqlError


@pytest.mark.parametrize(("zone", "java"), [
    ("UTC", "+00:00"), ("zulu", "+00:00"),
    ("America/New_York", "America/New_York"), ("america/NEW_york", "America/New_York"),  # any case
    ("CET", "+01:00"), ("est", "-05:00"),  # abbreviations first: a fixed offset, as PostgreSQL's table has it
    ("EST5EDT", "EST5EDT"),  # a zone name with summer time
    ("+02", "-02:00"), ("UTC+3", "-03:00"), ("-5:30", "+05:30"), ("<+0330>-3:30", "+03:30"),  # POSIX: west is +
])
def test_zones_as_postgresql_reads_them(zone, java):
    assert pg_timezone.zone_id(zone) == java


@pytest.mark.parametrize("zone", ["Mars/Base", "", "+25", "UTC+3X"])
def test_an_unknown_zone_is_22023(zone):
    with pytest.raises(SqlError) as err:
        pg_timezone.zone_id(zone)
    assert err.value.sqlstate == "22023" and err.value.message == f'time zone "{zone}" not recognized'


def test_an_interval_zone_is_an_offset_east_without_days():
    assert pg_timezone.interval_zone_id("02:00:00") == "+02:00"
    assert pg_timezone.interval_zone_id("-05:30:15") == "-05:30:15"
    with pytest.raises(SqlError) as err:
        pg_timezone.interval_zone_id("1 day")
    assert err.value.sqlstate == "22023"


def test_spark_converts_through_utc_the_session_time_zone():
    from sqlglot import exp
    tz = pg_timezone.at_zone("Asia/Tokyo", "text", exp.column("t"), "timestamp with time zone")
    assert tz.sql("spark") == "CONVERT_TIMEZONE('UTC', 'Asia/Tokyo', CAST(t AS TIMESTAMP_NTZ))"
    ntz = pg_timezone.at_zone("+02", "text", exp.column("t"), "timestamp without time zone")  # fixed: no overlap
    assert ntz.sql("spark") == "CAST(CONVERT_TIMEZONE('-02:00', 'UTC', t) AS TIMESTAMP)"
    bad = pg_timezone.at_zone("Mars/Base", "text", exp.column("t"), "timestamp with time zone").sql("spark")
    assert bad.startswith("CASE WHEN t IS NULL THEN CAST(NULL AS TIMESTAMP_NTZ) ELSE RAISE_ERROR('sparkwire:22023:")
    assert pg_timezone.at_zone(None, "text", exp.column("t"), "timestamp with time zone").sql("spark") == \
        "CAST(NULL AS TIMESTAMP_NTZ)"
