"""PostgreSQL's Julian day numbers (date2j and j2date in src/backend/utils/adt/datetime.c),
with its C integer arithmetic: date2j in 32-bit ints that wrap (PostgreSQL is built with
-fwrapv), j2date in unsigned 32 bits. Within the range of dates both are the plain
proleptic Gregorian calendar; the C arithmetic only shows for the far-out years that
to_timestamp reads before it refuses them. Pure."""

from __future__ import annotations

_UINT_MASK = 2**32 - 1


def c_int(value: int) -> int:
    """An int computation as PostgreSQL's C does it: 32 bits, wrapping (built with -fwrapv)."""
    return (value + 2**31) % 2**32 - 2**31


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def date2j(year: int, month: int, day: int) -> int:
    """The Julian day number of a proleptic Gregorian date."""
    if month > 2:
        month = c_int(month + 1)
        year = c_int(year + 4800)
    else:
        month = c_int(month + 13)
        year = c_int(year + 4799)
    century = c_div(year, 100)
    julian = c_int(year * 365 - 32167)
    julian = c_int(julian + c_div(year, 4) - century + c_div(century, 4))
    return c_int(julian + c_div(c_int(7834 * month), 256) + day)


def j2date(jd: int) -> tuple[int, int, int]:
    """The (year, month, day) of a Julian day number."""
    julian = (jd + 32044) & _UINT_MASK
    quad = julian // 146097
    extra = ((julian - quad * 146097) * 4 + 3) & _UINT_MASK
    julian = (julian + 60 + quad * 3 + extra // 146097) & _UINT_MASK
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = ((julian + 305) % 365 if y != 0 else (julian + 306) % 366) + 123
    y += quad * 4
    quad = julian * 2141 // 65536
    return y - 4800, (quad + 10) % 12 + 1, julian - 7834 * quad // 256
