"""to_timestamp(text, format) and to_date(text, format) as PostgreSQL 15 reads them.

Pure. This is the reading side of formatting.c's datetime patterns (the writing side is
`pg_to_char`). It runs in three steps, each mirroring PostgreSQL so that results and error
messages agree with a real server:

1. The format is split into nodes: a keyword (longest match among PostgreSQL's keywords at
   that spot, with an optional FM/TM prefix and TH/th/SP suffix), a space, a separator (any
   other printable ASCII punctuation), or a literal character (quoted text included).
2. The nodes are walked over the input. Outside FX mode spaces before and after fields are
   skipped and a space or separator in the format matches at most one space or separator in
   the input; a literal skips one input character whatever it is. Numeric fields read a
   fixed number of characters unless FM is given or the next node cannot be a digit, in
   which case they read as many digits as there are. Each field lands in a slot; a slot
   that is set twice to different non-zero values is an error, and zero means "not given".
3. The slots become a date and time: the year from YYYY/YY/CC/BC, then J, ISO weeks, day of
   year, month and day, with PostgreSQL's range checks, then the TZH/TZM offset and the
   FFn rounding.

The input and format are walked as UTF-8 bytes because PostgreSQL's fixed-width fields
count bytes. The session time zone is UTC, so a timestamp without TZH/TZM is taken as UTC
and the result is a naive datetime in UTC.

PostgreSQL's int arithmetic wraps (it is built with -fwrapv), and absurd field values are
computed the same way here, so they fail (or not) as they do there.

Refused with 0A000: TZ, tz and OF (PostgreSQL 15 itself refuses them, with this message);
results PostgreSQL would give outside years 1..9999 (BC years, year 0 — which is what it
gives when no year is read — and years past 9999); error messages that would quote part of
a multibyte character (PostgreSQL cuts fixed-width fields by bytes); TM month or day names
whose first bytes are not plain ASCII (the collation's case folding is not reproduced); and
text containing NUL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from planner.encoding import utf8_length
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.pg_julian import c_div as _cdiv
from planner.pg_julian import c_int as _wrap
from planner.pg_julian import date2j, j2date

INVALID_DATETIME_FORMAT = "22007"
DATETIME_FIELD_OVERFLOW = "22008"
INVALID_TIME_ZONE_DISPLACEMENT = "22009"

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_FM_HINT = 'If your source string is not fixed-width, try using the "FM" modifier.'
_POSTGRES_EPOCH_JDATE = 2451545  # 2000-01-01
_USECS_PER_DAY = 86_400_000_000
_MAX_TZDISP_HOUR = 15

_C_SPACE = b" \t\n\v\f\r"  # C isspace()
_SCANNER_SPACE = b" \t\n\r\f"  # PostgreSQL's scanner_isspace(): no vertical tab

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
# Searched in this order, so the longer numerals win (viii before vii before vi before v).
_ROMAN_DESC = ("xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i")
_AMPM = ("am", "pm", "AM", "PM")
_AMPM_LONG = ("a.m.", "p.m.", "A.M.", "P.M.")
_ADBC = ("ad", "bc", "AD", "BC")
_ADBC_LONG = ("a.d.", "b.c.", "A.D.", "B.C.")

_DAYS_IN_MONTH = ((31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31),
                  (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31))
# Days before each month, the 13th entry being the whole year.
_YEAR_SUMS = ((0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365),
              (0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366))


def _unsupported(message: str) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, message)


# --- the keywords -------------------------------------------------------------------------

_NONE, _GREGORIAN, _ISO = 0, 1, 2


@dataclass(frozen=True)
class _Key:
    name: str  # as written in the format, and as PostgreSQL names it in messages
    kind: str  # what the reader does with it (several names share one kind)
    is_digit: bool  # whether the field starts with a digit (decides how the one before reads)
    mode: int  # the date convention it belongs to
    width: int  # characters a fixed-width numeric field takes


def _k(name: str, kind: str, is_digit: bool, mode: int = _NONE, width: int = 0) -> _Key:
    return _Key(name, kind, is_digit, mode, width or len(name))


# PostgreSQL's keyword table, in its order: at a spot in the format the first entry (among
# those with the same first character) that matches wins, so longer names come first.
_UPPER_KEYS = (
    _k("A.D.", "ADBC_LONG", False), _k("A.M.", "AMPM_LONG", False), _k("AD", "ADBC", False),
    _k("AM", "AMPM", False), _k("B.C.", "ADBC_LONG", False), _k("BC", "ADBC", False),
    _k("CC", "CC", True), _k("DAY", "DAY", False), _k("DDD", "DDD", True, _GREGORIAN),
    _k("DD", "DD", True, _GREGORIAN), _k("DY", "DY", False), _k("Day", "DAY", False),
    _k("Dy", "DY", False), _k("D", "D", True, _GREGORIAN),
    *(_k(f"FF{n}", "US", True, width=n) for n in range(1, 7)),
    _k("FX", "FX", False), _k("HH24", "HH24", True, width=2), _k("HH12", "HH", True, width=2),
    _k("HH", "HH", True), _k("IDDD", "DDD", True, _ISO, 3), _k("ID", "ID", True, _ISO, 1),
    _k("IW", "WW", True, _ISO), _k("IYYY", "YYYY", True, _ISO), _k("IYY", "YYY", True, _ISO),
    _k("IY", "YY", True, _ISO), _k("I", "Y", True, _ISO), _k("J", "J", True),
    _k("MI", "MI", True), _k("MM", "MM", True, _GREGORIAN), _k("MONTH", "MONTH", False, _GREGORIAN),
    _k("MON", "MON", False, _GREGORIAN), _k("MS", "MS", True, width=3),
    _k("Month", "MONTH", False, _GREGORIAN), _k("Mon", "MON", False, _GREGORIAN),
    _k("OF", "TZ", False), _k("P.M.", "AMPM_LONG", False), _k("PM", "AMPM", False),
    _k("Q", "Q", True), _k("RM", "RM", False, _GREGORIAN), _k("SSSSS", "SSSS", True),
    _k("SSSS", "SSSS", True), _k("SS", "SS", True), _k("TZH", "TZH", False, width=2),
    _k("TZM", "TZM", True, width=2), _k("TZ", "TZ", False), _k("US", "US", True, width=6),
    _k("WW", "WW", True, _GREGORIAN), _k("W", "W", True, _GREGORIAN),
    _k("Y,YYY", "Y_YYY", True, _GREGORIAN), _k("YYYY", "YYYY", True, _GREGORIAN),
    _k("YYY", "YYY", True, _GREGORIAN), _k("YY", "YY", True, _GREGORIAN),
    _k("Y", "Y", True, _GREGORIAN),
)
# Every all-capitals keyword has a lower-case twin with the same meaning ("yyyy", "a.m.");
# the mixed-case names ("Month", "Day") have none.
_LOWER_KEYS = tuple(
    _Key(k.name.lower(), k.kind, k.is_digit, k.mode, k.width) for k in _UPPER_KEYS if k.name == k.name.upper()
)
_KEYS_BY_FIRST: dict[int, list[_Key]] = {}
for _key in (*_UPPER_KEYS, *_LOWER_KEYS):
    _KEYS_BY_FIRST.setdefault(ord(_key.name[0]), []).append(_key)

_PREFIXES = (b"FM", b"fm", b"TM", b"tm")
_SUFFIXES = (b"TH", b"th", b"SP")


# --- step 1: the format -------------------------------------------------------------------

@dataclass
class _Node:
    kind: str  # "key", "space", "separator" or "char"
    key: _Key | None = None
    char: bytes = b""
    fill: bool = False  # FM
    translated: bool = False  # TM
    ordinal: bool = False  # TH or th


def _is_separator(byte: int) -> bool:
    """Printable ASCII that is neither a letter nor a digit (the space is not one)."""
    return 0x20 < byte < 0x7F and not chr(byte).isalnum()


def _key_at(fmt: bytes, pos: int) -> _Key | None:
    for key in _KEYS_BY_FIRST.get(fmt[pos], ()):
        if fmt.startswith(key.name.encode(), pos):
            return key
    return None


def _keyword_node(fmt: bytes, pos: int, prefix: bytes) -> tuple[_Node, int] | None:
    key = _key_at(fmt, pos) if pos < len(fmt) else None
    if key is None:
        return None
    node = _Node("key", key, fill=prefix.upper() == b"FM", translated=prefix.upper() == b"TM")
    pos += len(key.name)
    suffix = next((s for s in _SUFFIXES if fmt.startswith(s, pos)), None)
    if suffix is not None:
        node.ordinal = suffix != b"SP"
        pos += len(suffix)
    return node, pos


def _quoted(fmt: bytes, pos: int, nodes: list[_Node]) -> int:
    """Literal characters up to the closing quote; a backslash takes the next as it is."""
    while pos < len(fmt):
        if fmt[pos] == ord('"'):
            return pos + 1
        if fmt[pos] == ord("\\") and pos + 1 < len(fmt):
            pos += 1
        width = utf8_length(fmt[pos])
        nodes.append(_Node("char", char=fmt[pos:pos + width]))
        pos += width
    return pos


def _plain(fmt: bytes, pos: int) -> tuple[_Node, int]:
    if fmt[pos] == ord("\\") and fmt.startswith(b'"', pos + 1):
        pos += 1  # outside quotes a backslash only matters before a double quote
    width = utf8_length(fmt[pos])
    char = fmt[pos:pos + width]
    if _is_separator(fmt[pos]):
        kind = "separator"
    elif fmt[pos] in _C_SPACE:
        kind = "space"
    else:
        kind = "char"
    return _Node(kind, char=char), pos + width


def _parse_format(fmt: bytes) -> list[_Node]:
    nodes: list[_Node] = []
    pos = 0
    while pos < len(fmt):
        prefix = next((p for p in _PREFIXES if fmt.startswith(p, pos)), b"")
        pos += len(prefix)  # a prefix with no keyword after it is dropped
        found = _keyword_node(fmt, pos, prefix)
        if found is not None:
            nodes.append(found[0])
            pos = found[1]
        elif pos >= len(fmt):
            break
        elif fmt[pos] == ord('"'):
            pos = _quoted(fmt, pos + 1, nodes)
        else:
            node, pos = _plain(fmt, pos)
            nodes.append(node)
    return nodes


# --- step 2: reading the input ------------------------------------------------------------

@dataclass
class _Slots:
    """What the fields said; 0 means not given, as in PostgreSQL."""

    mode: int = _NONE
    hh: int = 0
    pm: int = 0
    twelve_hour: bool = False
    mi: int = 0
    ss: int = 0
    ssss: int = 0
    d: int = 0
    dd: int = 0
    ddd: int = 0
    mm: int = 0
    ms: int = 0
    year: int = 0
    bc: int = 0
    ww: int = 0
    w: int = 0
    cc: int = 0
    j: int = 0
    us: int = 0
    yysz: int = 0
    ff: int = 0
    tzsign: int = 0
    tzh: int = 0
    tzm: int = 0


@dataclass
class _Reader:
    data: bytes
    nodes: list[_Node]
    slots: _Slots = field(default_factory=_Slots)
    pos: int = 0
    index: int = 0  # the node being read
    extra_skip: int = 0  # spaces skipped beyond what the format asked for

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def peek(self, offset: int = 0) -> int:
        at = self.pos + offset
        return self.data[at] if 0 <= at < len(self.data) else 0

    def skip_spaces(self) -> None:
        while not self.at_end() and self.data[self.pos] in _C_SPACE:
            self.pos += 1
            self.extra_skip += 1

    @property
    def node(self) -> _Node:
        return self.nodes[self.index]

    @property
    def key(self) -> _Key:
        assert self.node.key is not None
        return self.node.key


def _text(raw: bytes) -> str:
    """Bytes PostgreSQL would quote in a message; half a character cannot be reproduced."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _unsupported("to_timestamp: an error message here would quote part of a "
                           "multibyte character; not supported") from None


def _format_error(message: str, detail: str | None = None, hint: str | None = None) -> SqlError:
    return SqlError(INVALID_DATETIME_FORMAT, message, detail=detail, hint=hint)


def _set(r: _Reader, slot: str, value: int) -> None:
    """Fill a slot, refusing a second, different non-zero value."""
    current = getattr(r.slots, slot)
    if current != 0 and current != value:
        raise _format_error(
            f'conflicting values for "{r.key.name}" field in formatting string',
            "This value contradicts a previous setting for the same field type.",
        )
    setattr(r.slots, slot, value)


def _set_mode(r: _Reader) -> None:
    mode = r.key.mode
    if mode == _NONE:
        return
    if r.slots.mode == _NONE:
        r.slots.mode = mode
    elif r.slots.mode != mode:
        raise _format_error("invalid combination of date conventions",
                            hint="Do not mix Gregorian and ISO week date conventions in a "
                            "formatting template.")


def _strtol(data: bytes, pos: int) -> tuple[int, int]:
    """C strtol in base 10: (value, end); end == pos when no digits were found."""
    start = pos
    while pos < len(data) and data[pos] in _C_SPACE:
        pos += 1
    negative = pos < len(data) and data[pos] == ord("-")
    if pos < len(data) and data[pos] in b"+-":
        pos += 1
    digits_at = pos
    while pos < len(data) and 0x30 <= data[pos] <= 0x39:
        pos += 1
    if pos == digits_at:
        return 0, start
    value = int(data[digits_at:pos])
    return (-value if negative else value), pos


def _next_is_separator(r: _Reader) -> bool:
    """Whether the field can read greedily: nothing digit-like follows it."""
    if r.node.ordinal:
        return True
    if r.index + 1 >= len(r.nodes):
        return True
    following = r.nodes[r.index + 1]
    if following.kind == "key":
        assert following.key is not None
        return not following.key.is_digit
    return not (len(following.char) == 1 and following.char.isdigit())


def _parse_int(r: _Reader, slot: str | None, width: int | None = None) -> int:
    """A numeric field; returns how many characters it took (leading spaces included)."""
    width = width or r.key.width
    init = r.pos
    r.pos += len(r.data[r.pos:]) - len(r.data[r.pos:].lstrip(_C_SPACE))
    copy = r.data[r.pos:r.pos + width]
    if r.node.fill or _next_is_separator(r):
        value, r.pos = _strtol(r.data, init)
    else:
        remaining = len(r.data) - r.pos
        if remaining < width:
            raise _format_error(
                f'source string too short for "{r.key.name}" formatting field',
                f"Field requires {width} characters, but only {remaining} remain.", _FM_HINT)
        value, end = _strtol(copy, 0)
        if 0 < end < width:
            raise _format_error(
                f'invalid value "{_text(copy)}" for "{r.key.name}"',
                f"Field requires {width} characters, but only {end} could be parsed.", _FM_HINT)
        r.pos += end
    if r.pos == init:
        raise _format_error(f'invalid value "{_text(copy)}" for "{r.key.name}"',
                            "Value must be an integer.")
    if not _INT_MIN <= value <= _INT_MAX:
        raise SqlError(DATETIME_FIELD_OVERFLOW,
                       f'value for "{r.key.name}" in source string is out of range',
                       detail=f"Value must be in the range {_INT_MIN} to {_INT_MAX}.")
    if slot is not None:
        _set(r, slot, value)
    return r.pos - init


def _skip_ordinal(r: _Reader) -> None:
    """TH/th after a number: skip two characters, if there are two."""
    if r.node.ordinal:
        for _ in range(2):
            if not r.at_end():
                r.pos += utf8_length(r.peek())


def _search(r: _Reader, words: tuple[str, ...], localized: bool = False) -> int:
    """Index of the word the input starts with (ASCII case-insensitive), else an error."""
    rest = r.data[r.pos:]
    if localized:
        _check_translated(rest, words)
    for index, word in enumerate(words):
        if rest[:len(word)].lower() == word.lower().encode():
            r.pos += len(word)
            return index
    cut = len(rest)
    for i, b in enumerate(rest):
        if b in _SCANNER_SPACE:
            cut = i
            break
    raise _format_error(f'invalid value "{_text(rest[:cut])}" for "{r.key.name}"',
                        "The given value did not match any of the allowed values for this field.")


def _check_translated(rest: bytes, words: tuple[str, ...]) -> None:
    """TM names (English under the C locale) are first matched exactly, then with the
    collation's case folding, which only differs from ASCII's when a non-ASCII character
    is among the bytes a name could cover."""
    if any(rest.startswith(word.encode()) for word in words):
        return
    if any(b >= 0x80 for b in rest[:max(len(word) for word in words)]):
        raise _unsupported("to_timestamp: TM month or day names in non-ASCII input are not supported")


def _partial_year(year: int) -> int:
    """A 1-3 digit year, moved to the nearest one around 2020 (70 -> 1970, 69 -> 2069)."""
    if year < 70:
        return year + 2000
    if year < 100:
        return year + 1900
    if year < 520:
        return year + 2000
    if year < 1000:
        return year + 1000
    return year


# The field readers, by key kind.

def _read_ampm(r: _Reader) -> None:
    words = _AMPM_LONG if r.key.kind == "AMPM_LONG" else _AMPM
    _set(r, "pm", _search(r, words) % 2)
    r.slots.twelve_hour = True


def _read_adbc(r: _Reader) -> None:
    words = _ADBC_LONG if r.key.kind == "ADBC_LONG" else _ADBC
    _set(r, "bc", _search(r, words) % 2)


def _read_hour(r: _Reader) -> None:
    _parse_int(r, "hh")
    if r.key.kind == "HH":
        r.slots.twelve_hour = True
    _skip_ordinal(r)


def _read_int(slot: str | None) -> Callable[[_Reader], None]:
    def read(r: _Reader) -> None:
        _parse_int(r, slot)
        _skip_ordinal(r)
    return read


def _read_ms(r: _Reader) -> None:
    used = _parse_int(r, "ms")
    r.slots.ms *= {1: 100, 2: 10}.get(used, 1)  # ".5" is 500 ms, ".05" is 50
    _skip_ordinal(r)


def _read_us(r: _Reader) -> None:
    if r.key.name.upper().startswith("FF"):
        r.slots.ff = r.key.width
    used = _parse_int(r, "us")
    r.slots.us *= 10 ** (6 - used) if 1 <= used <= 5 else 1
    _skip_ordinal(r)


def _read_tz(r: _Reader) -> None:
    raise _unsupported(f'formatting field "{r.key.name}" is only supported in to_char')


def _read_tzh(r: _Reader) -> None:
    char = r.peek()
    if char in b"+- ":
        r.slots.tzsign = -1 if char == ord("-") else 1
        r.pos += 1
    else:
        # a minus sign taken as a separator before the field still counts
        r.slots.tzsign = -1 if r.extra_skip > 0 and r.peek(-1) == ord("-") else 1
    _parse_int(r, "tzh")


def _read_tzm(r: _Reader) -> None:
    if not r.slots.tzsign:
        r.slots.tzsign = 1
    _parse_int(r, "tzm")


def _read_month(words: tuple[str, ...]) -> Callable[[_Reader], None]:
    def read(r: _Reader) -> None:
        _set(r, "mm", _search(r, words, r.node.translated) + 1)
    return read


def _read_day_name(words: tuple[str, ...]) -> Callable[[_Reader], None]:
    def read(r: _Reader) -> None:
        _set(r, "d", _search(r, words, r.node.translated))
        r.slots.d += 1
    return read


def _read_iso_day(r: _Reader) -> None:
    _parse_int(r, "d")
    r.slots.d += 1  # ISO counts Monday as 1; the slot counts Sunday as 1
    if r.slots.d > 7:
        r.slots.d = 1
    _skip_ordinal(r)


def _read_year(size: int) -> Callable[[_Reader], None]:
    def read(r: _Reader) -> None:
        used = _parse_int(r, "year")
        if size < 4 and used < 4:
            r.slots.year = _partial_year(r.slots.year)
        r.slots.yysz = size
        _skip_ordinal(r)
    return read


def _scan_int(data: bytes, pos: int, width: int | None) -> tuple[int, int] | None:
    """scanf's %d (with an optional field width): (value, end) or None."""
    while pos < len(data) and data[pos] in _C_SPACE:
        pos += 1
    limit = len(data) if width is None else min(len(data), pos + width)
    start = pos
    if pos < limit and data[pos] in b"+-":
        pos += 1
    digits_at = pos
    while pos < limit and 0x30 <= data[pos] <= 0x39:
        pos += 1
    if pos == digits_at:
        return None
    # glibc reads a long (clamped on overflow) and stores its low 32 bits
    value = max(-(2**63), min(2**63 - 1, int(data[start:pos])))
    return _wrap(value), pos


def _read_y_yyy(r: _Reader) -> None:
    first = _scan_int(r.data, r.pos, None)
    second = None
    if first is not None and first[1] < len(r.data) and r.data[first[1]] == ord(","):
        second = _scan_int(r.data, first[1] + 1, 3)
    if first is None or second is None:
        raise _format_error('invalid input string for "Y,YYY"')
    _set(r, "year", _wrap(second[0] + _wrap(first[0] * 1000)))
    r.slots.yysz = 4
    r.pos = second[1]
    _skip_ordinal(r)


def _read_roman_month(r: _Reader) -> None:
    _set(r, "mm", 12 - _search(r, _ROMAN_DESC))


def _read_fx(r: _Reader) -> None:
    """FX itself reads nothing; the walk switches to fixed mode."""


_READERS: dict[str, Callable[[_Reader], None]] = {
    "FX": _read_fx, "AMPM": _read_ampm, "AMPM_LONG": _read_ampm, "ADBC": _read_adbc,
    "ADBC_LONG": _read_adbc, "HH": _read_hour, "HH24": _read_hour, "MI": _read_int("mi"),
    "SS": _read_int("ss"), "MS": _read_ms, "US": _read_us, "SSSS": _read_int("ssss"),
    "TZ": _read_tz, "TZH": _read_tzh, "TZM": _read_tzm,
    "MONTH": _read_month(_MONTHS), "MON": _read_month(tuple(m[:3] for m in _MONTHS)),
    "MM": _read_int("mm"), "DAY": _read_day_name(_DAYS), "DY": _read_day_name(tuple(d[:3] for d in _DAYS)),
    "DDD": _read_int("ddd"), "DD": _read_int("dd"), "D": _read_int("d"), "ID": _read_iso_day,
    "WW": _read_int("ww"), "Q": _read_int(None), "CC": _read_int("cc"), "Y_YYY": _read_y_yyy,
    "YYYY": _read_year(4), "YYY": _read_year(3), "YY": _read_year(2), "Y": _read_year(1),
    "RM": _read_roman_month, "W": _read_int("w"), "J": _read_int("j"),
}


def _space_or_separator(r: _Reader, fixed: bool) -> None:
    if fixed:
        r.pos += utf8_length(r.peek())  # FX: exactly one character, whatever it is
        return
    # one space or separator in the format matches at most one of either in the input
    r.extra_skip -= 1
    if not r.at_end() and (r.peek() in _C_SPACE or _is_separator(r.peek())):
        r.pos += 1
        r.extra_skip += 1


def _literal(r: _Reader, fixed: bool) -> None:
    # spaces already skipped beyond the format stand in for literal characters
    if not fixed and r.extra_skip > 0:
        r.extra_skip -= 1
    elif not r.at_end():
        r.pos += utf8_length(r.peek())


def _read_fields(text: bytes, nodes: list[_Node]) -> _Slots:
    r = _Reader(text, nodes)
    fixed = False
    for r.index, node in enumerate(nodes):
        if r.at_end():
            break
        is_fx = node.key is not None and node.key.kind == "FX"
        # leading spaces are skipped before every field, and at the very start
        if not fixed and not is_fx and (node.kind == "key" or r.index == 0):
            r.skip_spaces()
        if node.kind in ("space", "separator"):
            _space_or_separator(r, fixed)
        elif node.kind == "char":
            _literal(r, fixed)
        else:
            _set_mode(r)
            _READERS[r.key.kind](r)
            fixed = fixed or is_fx
            if not fixed:
                # trailing spaces too; they are counted so that literals can absorb them
                r.extra_skip = 0
                r.skip_spaces()
    return r.slots


# --- step 3: slots to date and time -------------------------------------------------------

def _cmod(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _j2day(jd: int) -> int:
    """Day of the week of a Julian day, 0 for Sunday."""
    return _wrap(jd + 1) % 7


def _isoweek2j(year: int, week: int) -> int:
    day4 = date2j(year, 1, 4)
    day0 = _j2day(_wrap(day4 - 1))  # days since the Monday on or before 4 January
    return _wrap(_wrap((week - 1) * 7) + _wrap(day4 - day0))


@dataclass
class _Tm:
    year: int = 0
    mon: int = 1
    mday: int = 1
    hour: int = 0
    minute: int = 0
    sec: int = 0
    fsec: int = 0
    has_year: bool = False
    has_month: bool = False
    has_day: bool = False


def _field_overflow(text: str) -> SqlError:
    return SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{text}"')


def _apply_time(t: _Slots, tm: _Tm) -> None:
    if t.ssss:
        x = t.ssss
        tm.hour = _cdiv(x, 3600)
        x = _cmod(x, 3600)
        tm.minute = _cdiv(x, 60)
        tm.sec = _cmod(x, 60)
    if t.ss:
        tm.sec = t.ss
    if t.mi:
        tm.minute = t.mi
    if t.hh:
        tm.hour = t.hh
    if t.twelve_hour:
        if not 1 <= tm.hour <= 12:
            raise _format_error(f'hour "{tm.hour}" is invalid for the 12-hour clock',
                                hint="Use the 24-hour clock, or give an hour between 1 and 12.")
        if t.pm and tm.hour < 12:
            tm.hour += 12
        elif not t.pm and tm.hour == 12:
            tm.hour = 0


def _year_in_century(t: _Slots) -> int:
    """YY (or Y) read as the last digits of a year in the given century CC."""
    cc = _wrap(-t.cc) if t.bc else t.cc
    year = _cmod(t.year, 100)
    if year == 0:
        return _wrap(cc * 100 + (0 if cc >= 0 else 1))
    if cc >= 0:
        return _wrap(year + _wrap((cc - 1) * 100))
    return _wrap(_wrap((cc + 1) * 100) - year + 1)


def _apply_year(t: _Slots, tm: _Tm) -> None:
    if t.year:
        if t.cc and t.yysz <= 2:
            tm.year = _year_in_century(t)
        else:
            tm.year = _wrap(-t.year) if t.bc else t.year
            if tm.year < 0:
                tm.year += 1  # PostgreSQL counts 1 BC as year 0
        tm.has_year = True
    elif t.cc:
        cc = _wrap(-t.cc) if t.bc else t.cc
        tm.year = _wrap(_wrap((cc - 1) * 100) + 1) if cc >= 0 else _wrap(_wrap(cc * 100) + 1)
        tm.has_year = True


def _set_from_julian(tm: _Tm, jd: int) -> None:
    tm.year, tm.mon, tm.mday = j2date(jd)
    tm.has_year = tm.has_month = tm.has_day = True


def _apply_weeks(t: _Slots, tm: _Tm) -> None:
    if t.j:
        _set_from_julian(tm, t.j)
    if t.ww:
        if t.mode == _ISO:
            jd = _isoweek2j(tm.year, t.ww)
            if t.d:
                jd = _wrap(jd + (t.d - 2 if t.d > 1 else 6))  # the slot counts Sunday as 1
            _set_from_julian(tm, jd)
        else:
            t.ddd = _wrap(_wrap((t.ww - 1) * 7) + 1)
    if t.w:
        t.dd = _wrap(_wrap((t.w - 1) * 7) + 1)


def _apply_day_of_year(t: _Slots, tm: _Tm) -> None:
    if not t.ddd or (tm.mon > 1 and tm.mday > 1):
        return
    if not tm.year and not t.bc:
        raise _format_error("cannot calculate day of year without year information")
    if t.mode == _ISO:
        _set_from_julian(tm, _wrap(_isoweek2j(tm.year, 1) - 1 + t.ddd))
        return
    sums = _YEAR_SUMS[_is_leap(tm.year)]
    month = next((i for i in range(1, 13) if t.ddd <= sums[i]), 13)
    if tm.mon <= 1:
        tm.mon = month
    if tm.mday <= 1:
        tm.mday = _wrap(t.ddd - sums[month - 1])
    tm.has_month = tm.has_day = True


def _validate_date(tm: _Tm, text: str) -> None:
    """PostgreSQL's checks on the date fields that were given."""
    if tm.has_month and not 1 <= tm.mon <= 12:
        raise _field_overflow(text)
    if tm.has_day and not 1 <= tm.mday <= 31:
        raise _field_overflow(text)
    complete = tm.has_year and tm.has_month and tm.has_day
    if complete and tm.mday > _DAYS_IN_MONTH[_is_leap(tm.year)][tm.mon - 1]:
        raise _field_overflow(text)


def _validate_time(tm: _Tm, text: str) -> None:
    if not (0 <= tm.hour < 24 and 0 <= tm.minute < 60 and 0 <= tm.sec < 60 and 0 <= tm.fsec < 1_000_000):
        raise _field_overflow(text)


def _offset_seconds(t: _Slots, text: str) -> int:
    """TZH/TZM as seconds east of UTC."""
    if not t.tzsign:
        return 0
    if not (0 <= t.tzh <= _MAX_TZDISP_HOUR and 0 <= t.tzm < 60):
        raise SqlError(INVALID_TIME_ZONE_DISPLACEMENT, f'time zone displacement out of range: "{text}"')
    return t.tzsign * (t.tzh * 3600 + t.tzm * 60)


def _broken_down(text: str, fmt: str) -> tuple[_Tm, _Slots]:
    """Read the input and settle the date and time fields, with PostgreSQL's checks."""
    data, fmt_bytes = text.encode("utf-8"), fmt.encode("utf-8")
    if b"\x00" in data or b"\x00" in fmt_bytes:
        raise _unsupported("to_timestamp: text containing NUL bytes is not supported")
    t = _read_fields(data, _parse_format(fmt_bytes)) if fmt_bytes else _Slots()
    tm = _Tm()
    _apply_time(t, tm)
    _apply_year(t, tm)
    _apply_weeks(t, tm)
    if t.dd:
        tm.mday, tm.has_day = t.dd, True
    if t.mm:
        tm.mon, tm.has_month = t.mm, True
    _apply_day_of_year(t, tm)
    if t.ms:
        tm.fsec = _wrap(tm.fsec + _wrap(t.ms * 1000))
    if t.us:
        tm.fsec = _wrap(tm.fsec + t.us)
    _validate_date(tm, text)
    _validate_time(tm, text)
    return tm, t


def _refuse_year() -> SqlError:
    return _unsupported("to_timestamp/to_date: results outside years 1..9999 (BC years, year 0 "
                        "as when no year is given, or years past 9999) are not supported")


def _round_to(micros: int, digits: int) -> int:
    """Round to `digits` fractional digits, halves away from zero (timestamp typmod)."""
    if not 1 <= digits < 6:
        return micros
    scale = 10 ** (6 - digits)
    rounded = (abs(micros) + scale // 2) // scale * scale
    return rounded if micros >= 0 else -rounded


_EPOCH = datetime(2000, 1, 1)
# PostgreSQL's timestamp range in microseconds from 2000: 4714-11-24 BC .. 294277-01-01.
_MIN_TIMESTAMP = -211_813_488_000_000_000
_END_TIMESTAMP = 9_223_371_331_200_000_000
_DATE_END_JULIAN = 2_147_483_494  # Julian day of 5874898-01-01
_MIN_MICROS = (datetime.min - _EPOCH) // timedelta(microseconds=1)
_MAX_MICROS = (datetime.max - _EPOCH) // timedelta(microseconds=1)


def _valid_julian(tm: _Tm) -> bool:
    """Whether PostgreSQL's Julian-day routines accept the date (4714-11 BC .. 5874898-05)."""
    after_start = tm.year > -4713 or (tm.year == -4713 and tm.mon >= 11)
    before_end = tm.year < 5874898 or (tm.year == 5874898 and tm.mon < 6)
    return after_start and before_end


def _timestamp_out_of_range() -> SqlError:
    return SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range")


def to_timestamp(text: str, fmt: str) -> datetime:
    """PostgreSQL 15's to_timestamp(text, text) with the session TimeZone UTC; a naive UTC datetime."""
    tm, t = _broken_down(text, fmt)
    offset = _offset_seconds(t, text)
    if not _valid_julian(tm):
        raise _timestamp_out_of_range()
    days = date2j(tm.year, tm.mon, tm.mday) - _POSTGRES_EPOCH_JDATE
    seconds = (tm.hour * 60 + tm.minute) * 60 + tm.sec - offset
    micros = days * _USECS_PER_DAY + seconds * 1_000_000 + tm.fsec
    if not _MIN_TIMESTAMP <= micros < _END_TIMESTAMP:
        raise _timestamp_out_of_range()
    micros = _round_to(micros, t.ff)
    # datetime's own range is exactly years 1..9999
    if not _MIN_MICROS <= micros <= _MAX_MICROS:
        raise _refuse_year()
    return _EPOCH + timedelta(microseconds=micros)


def to_date(text: str, fmt: str) -> date:
    """PostgreSQL 15's to_date(text, text)."""
    tm, t = _broken_down(text, fmt)
    _offset_seconds(t, text)  # the offset is not used, but PostgreSQL still checks it
    days = date2j(tm.year, tm.mon, tm.mday) if _valid_julian(tm) else None
    if days is None or not 0 <= days < _DATE_END_JULIAN:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date out of range: "{text}"')
    # an impossible day (31 February of a year never checked) rolls over, as in PostgreSQL
    year, month, day = j2date(days)
    if not 1 <= year <= 9999:
        raise _refuse_year()
    return date(year, month, day)


# The UDFs (spark_backend.string_udfs) and the catalog's Spark SQL: the result as text,
# cast by Spark (in the session's time zone, always UTC).
UDF_NAMES = {"to_timestamp": "sparkwire_to_timestamp", "to_date": "sparkwire_to_date"}
TEMPLATES = {"to_timestamp": f"cast({UDF_NAMES['to_timestamp']}({{0}}, {{1}}) as timestamp)",
             "to_date": f"cast({UDF_NAMES['to_date']}({{0}}, {{1}}) as date)"}


def timestamp_text(text: str | None, fmt: str | None) -> str | None:
    """The to_timestamp UDF: the UTC timestamp as `YYYY-MM-DD HH:MM:SS.ffffff`; NULL for NULL."""
    if text is None or fmt is None:
        return None
    return to_timestamp(text, fmt).isoformat(sep=" ", timespec="microseconds")


def date_text(text: str | None, fmt: str | None) -> str | None:
    """The to_date UDF: the date as `YYYY-MM-DD`; NULL for NULL."""
    if text is None or fmt is None:
        return None
    return to_date(text, fmt).isoformat()
