"""AT TIME ZONE: PostgreSQL's timezone(zone, value) on Spark.

`ts AT TIME ZONE z` of a timestamptz is the wall-clock time at that instant in zone z (a
timestamp); of a timestamp, the instant at which zone z's clocks show it (a timestamptz: the
later one where they show it twice, the one past the gap where they skip it).
PostgreSQL reads a zone name as timestamptz_zone does: first as one of its time zone
abbreviations (a fixed offset: `CET` is always +01, where the IANA zone CET has summer time),
then as an IANA zone name (case-insensitive), then as a POSIX-style spec, whose offset counts
hours WEST of Greenwich (`UTC+3` and `+03` are three hours behind UTC); an interval zone is
an offset east (`INTERVAL '02:00'`). Anything else is 22023. Spark's convert_timezone takes
the zone found here as a Java zone id ("America/New_York", "+03:00"), so the zone must be a
constant of the statement (or a parameter's value); a zone from a column is 0A000.

Pure: builds sqlglot trees.
"""

from __future__ import annotations

import re
import zoneinfo
from functools import cache

from sqlglot import exp

from planner import sql_template
from planner.codecs.interval import interval_parse_cached
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SqlError

# PostgreSQL 15's default time zone abbreviations (pg_timezone_abbrevs, offsets in seconds east).
_ABBREVIATIONS_TEXT = (
    "acdt:37800 acsst:37800 acst:34200 act:-18000 acwst:31500 adt:-10800 aedt:39600 aesst:39600 "
    "aest:36000 aft:16200 akdt:-28800 akst:-32400 almst:25200 almt:21600 amst:14400 amt:-14400 "
    "anast:43200 anat:43200 arst:-10800 art:-10800 ast:-14400 awsst:32400 awst:28800 azost:0 "
    "azot:-3600 azst:14400 azt:14400 bdst:7200 bdt:21600 bnt:28800 bort:28800 bot:-14400 "
    "bra:-10800 brst:-7200 brt:-10800 bst:3600 btt:21600 cadt:37800 cast:34200 cct:28800 "
    "cdt:-18000 cest:7200 cet:3600 cetdst:7200 chadt:49500 chast:45900 chut:36000 ckt:-36000 "
    "clst:-10800 clt:-10800 cot:-18000 cst:-21600 cxt:25200 davt:25200 ddut:36000 easst:-18000 "
    "east:-18000 eat:10800 edt:-14400 eest:10800 eet:7200 eetdst:10800 egst:0 egt:-3600 "
    "est:-18000 fet:10800 fjst:46800 fjt:43200 fkst:-10800 fkt:-10800 fnst:-3600 fnt:-7200 "
    "galt:-21600 gamt:-32400 gest:14400 get:14400 gft:-10800 gilt:43200 gmt:0 gyt:-14400 "
    "hkt:28800 hst:-36000 ict:25200 idt:10800 iot:21600 irkst:28800 irkt:28800 irt:12600 "
    "ist:7200 jayt:32400 jst:32400 kdt:36000 kgst:21600 kgt:21600 kost:39600 krast:25200 "
    "krat:25200 kst:32400 lhdt:39600 lhst:37800 ligt:36000 lint:50400 lkt:19800 magst:39600 "
    "magt:39600 mart:-34200 mawt:18000 mdt:-21600 mest:7200 mesz:7200 met:3600 metdst:7200 "
    "mez:3600 mht:43200 mmt:23400 mpt:36000 msd:14400 msk:10800 mst:-25200 must:18000 mut:14400 "
    "mvt:18000 myt:28800 ndt:-9000 nft:-12600 novst:25200 novt:25200 npt:20700 nst:-12600 "
    "nut:-39600 nzdt:46800 nzst:43200 nzt:43200 omsst:21600 omst:21600 pdt:-25200 pet:-18000 "
    "petst:43200 pett:43200 pgt:36000 pht:28800 pkst:21600 pkt:18000 pmdt:-7200 pmst:-10800 "
    "pont:39600 pst:-28800 pwt:32400 pyst:-10800 pyt:-10800 ret:14400 sadt:37800 sast:7200 "
    "sct:14400 sgt:28800 taht:-36000 tft:18000 tjt:18000 tkt:46800 tmt:18000 tot:46800 "
    "trut:36000 tvt:43200 uct:0 ulast:32400 ulat:28800 ut:0 utc:0 uyst:-7200 uyt:-10800 "
    "uzst:21600 uzt:18000 vet:-14400 vlast:36000 vlat:36000 volt:10800 vut:39600 wadt:28800 "
    "wakt:43200 wast:25200 wat:3600 wdt:32400 wet:0 wetdst:3600 wft:43200 wgst:-7200 wgt:-10800 "
    "xjt:21600 yakst:32400 yakt:32400 yapt:36000 yekst:21600 yekt:18000 z:0 zulu:0"
)


def _offsets(text: str) -> dict[str, int]:
    return {name: int(offset) for name, offset in (pair.split(":") for pair in text.split())}


_ABBREVIATIONS = _offsets(_ABBREVIATIONS_TEXT)

# A POSIX-style zone without daylight-saving rules: an optional name, an offset west of UTC.
_POSIX = re.compile(r"(?:[A-Za-z]{3,}|<[^>]*>)?([+-]?)(\d{1,2})(?::(\d{1,2}))?(?::(\d{1,2}))?")
_MAX_OFFSET = 24 * 3600


@cache
def _zone_names() -> dict[str, str]:
    return {name.lower(): name for name in zoneinfo.available_timezones()}


def zone_id(zone: str) -> str:
    """The Java zone id of PostgreSQL's reading of `zone`."""
    key = zone.strip().lower()
    if key in _ABBREVIATIONS:
        return _offset_id(_ABBREVIATIONS[key])
    if key in _zone_names():
        return _zone_names()[key]
    m = _POSIX.fullmatch(zone.strip())
    if m is not None:
        seconds = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
        if seconds <= _MAX_OFFSET:
            return _offset_id(seconds if m.group(1) == "-" else -seconds)  # west of UTC is positive
    raise SqlError(INVALID_PARAMETER_VALUE, f'time zone "{zone}" not recognized')


def interval_zone_id(zone: str) -> str:
    """The Java zone id of an interval zone: its offset east of UTC."""
    months, days, micros = interval_parse_cached(zone)
    if months or days:
        raise SqlError(INVALID_PARAMETER_VALUE, f'interval time zone "{zone}" must not include months or days')
    return _offset_id(micros // 1_000_000)


def _offset_id(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    h, rest = divmod(abs(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")


def at_zone(zone: str | None, zone_type: str, value: exp.Expression, value_type: str) -> exp.Expression:
    """`value AT TIME ZONE zone`; `zone` None: a NULL zone (the result is NULL). A zone not
    recognized fails each row with a value, as PostgreSQL's strict function does: no row,
    or a NULL value, is no error."""
    target = "TIMESTAMP_NTZ" if value_type == "timestamp with time zone" else "TIMESTAMP"
    null = exp.Cast(this=exp.Null(), to=exp.DataType.build(target, dialect="spark"))
    if zone is None:
        return null
    try:
        java = interval_zone_id(zone) if zone_type == "interval" else zone_id(zone)
    except SqlError as err:
        return sql_template.spark("CASE WHEN {0} IS NULL THEN {1} ELSE {2} END", value, null,
                                  sql_template.pg_error(err.sqlstate, err.message))
    if value_type == "timestamp with time zone":  # the session's time zone is UTC (spark_backend.engine)
        return sql_template.spark("convert_timezone('UTC', {0}, CAST({1} AS TIMESTAMP_NTZ))",
                                  exp.Literal.string(java), value)
    zone_sql = exp.Literal.string(java)
    if java[0] in "+-":  # a fixed offset: every wall-clock time is one instant
        return sql_template.spark("CAST(convert_timezone({0}, 'UTC', {1}) AS TIMESTAMP)", zone_sql, value)
    # A wall-clock time that happens twice (summer time ending) is the later instant in
    # PostgreSQL, the earlier in Java: one DST shift (an hour, or Lord Howe's half hour) on.
    earlier = sql_template.spark("convert_timezone({0}, 'UTC', {1})", zone_sql, value)
    return sql_template.spark(
        "CAST(CASE WHEN convert_timezone('UTC', {0}, {1} + INTERVAL 1 HOUR) = {2} THEN {1} + INTERVAL 1 HOUR "
        "WHEN convert_timezone('UTC', {0}, {1} + INTERVAL 30 MINUTES) = {2} THEN {1} + INTERVAL 30 MINUTES "
        "ELSE {1} END AS TIMESTAMP)", zone_sql, earlier, value)


def not_constant() -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "AT TIME ZONE with a zone that is not a constant is not supported",
                    hint="Give the zone as a literal or a parameter.")
