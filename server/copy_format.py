"""COPY ... FROM STDIN data → field strings, in PostgreSQL's text and CSV formats.

Pure: bytes in, one Arrow string array per column out (NULL for NULL). Turning the
strings into typed values is copy_load's job (each field as its column type's text input
function reads it, as in PostgreSQL). Errors carry the line number, as PostgreSQL's
CONTEXT does (`COPY t, line 3`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pa_csv

from planner.errors import SqlError

BAD_COPY_FILE_FORMAT = "22P04"
CHARACTER_NOT_IN_REPERTOIRE = "22021"


@dataclass(frozen=True)
class CopyOptions:
    """The options of COPY ... FROM STDIN that shape the data (PostgreSQL's names)."""

    format: str = "text"  # text | csv
    delimiter: str | None = None  # tab in text, comma in CSV
    null: str | None = None  # \N in text, an unquoted empty string in CSV
    header: bool = False
    quote: str = '"'  # CSV only
    escape: str | None = None  # CSV only; the quote character unless set

    def delimiter_char(self) -> str:
        return self.delimiter if self.delimiter is not None else ("\t" if self.format == "text" else ",")

    def null_string(self) -> str:
        return self.null if self.null is not None else ("\\N" if self.format == "text" else "")


class CopyDataError(SqlError):
    """Bad COPY data, at a line (1-based, as PostgreSQL counts them, header included), with
    the line's text when the error is about the row as a whole."""

    def __init__(self, sqlstate: str, message: str, line: int | None, text: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(sqlstate, message, hint=hint)
        self.line = line
        self.text = text


@dataclass(frozen=True)
class ParsedCopy:
    """COPY data as one Arrow string array per column (NULL for NULL), and where each row
    was, for error messages."""

    columns: list[pa.Array]
    lines: list[int] | None  # each row's line; None: one row per line from `first_line` on
    texts: list[str] | None  # each row as written (text format), for error context
    first_line: int = 1
    source: str | None = None  # text-format data read one row per line: rows' texts, on demand

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def line(self, row: int) -> int:
        return self.lines[row] if self.lines is not None else self.first_line + row

    def text(self, row: int) -> str | None:
        if self.texts is not None:
            return self.texts[row]
        if self.source is not None:  # only for an error message: split when asked
            return self.source.split("\n")[self.line(row) - 1]
        return None


def parse_rows(data: bytes, options: CopyOptions, columns: list[str]) -> list[list[str | None]]:
    """The rows of COPY data for `columns`: each a list of one field string (or None) per column."""
    parsed = parse(data, options, columns)
    return [list(row) for row in zip(*(c.to_pylist() for c in parsed.columns))]


def parse(data: bytes, options: CopyOptions, columns: list[str]) -> ParsedCopy:
    """The COPY data for `columns`, columnar, with each row's line for error messages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        bad = data[exc.start:exc.start + 1].hex()
        raise CopyDataError(CHARACTER_NOT_IN_REPERTOIRE, f'invalid byte sequence for encoding "UTF8": 0x{bad}',
                            line) from None
    if options.format == "csv":
        return _csv_rows(text, options, columns)
    return _text_rows(text, options, columns)


# -- text format -----------------------------------------------------------------------------

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(match: re.Match) -> str:
    code = match.group(1)
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0] in "01234567":
        return chr(int(code, 8) & 0xFF)
    return _SIMPLE_ESCAPES.get(code, code)


def _text_rows(text: str, options: CopyOptions, columns: list[str]) -> ParsedCopy:
    delimiter, null = options.delimiter_char(), options.null_string()
    if "\r" not in text and _no_escapes(text, delimiter, null):
        fast = _plain_text_rows(text, options, columns)
        if fast is not None:
            return fast
    # A field is a run of anything but a backslash or the delimiter, or a backslash and the
    # character it escapes (an escaped delimiter is data, not a separator).
    field = re.compile(rf"(?:[^\\{re.escape(delimiter)}]|\\.)*", re.DOTALL)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    # As in PostgreSQL, the first line sets the end of line (newline, or carriage return and
    # newline) and a stray carriage return elsewhere is an error rather than data.
    crlf = bool(lines) and lines[0].endswith("\r")
    rows: list[list[str | None]] = []
    numbers: list[int] = []
    texts: list[str] = []
    for number, line in enumerate(lines, start=1):
        if crlf:
            if not line.endswith("\r"):
                raise CopyDataError(BAD_COPY_FILE_FORMAT, "literal newline found in data", number,
                                    hint='Use "\\n" to represent newline.')
            line = line[:-1]
        if "\r" in line:
            raise CopyDataError(BAD_COPY_FILE_FORMAT, "literal carriage return found in data", number,
                                hint='Use "\\r" to represent carriage return.')
        if line == "\\.":
            break  # the end-of-data marker of old clients
        if number == 1 and options.header:
            continue
        if "\\" not in line:
            fields: list[str | None] = [None if f == null else f for f in line.split(delimiter)]
        else:
            fields = []
            pos = 0
            while True:
                raw = field.match(line, pos).group(0)
                # The NULL marker is compared with the field as written, before de-escaping.
                fields.append(None if raw == null else _ESCAPE.sub(_unescape, raw))
                pos += len(raw)
                if pos >= len(line):
                    break
                pos += 1  # the delimiter
                if pos == len(line):
                    fields.append(None if null == "" else "")
                    break
        rows.append(_fit(fields, columns, number, line))
        numbers.append(number)
        texts.append(line)
    if not rows:
        return _no_rows(columns)
    return ParsedCopy([pa.array(list(col), pa.string()) for col in zip(*rows)], numbers, texts)


def _no_escapes(text: str, delimiter: str, null: str) -> bool:
    """Whether every backslash in the data is the NULL marker `\\N` as a whole field: then
    each field is its own text and Arrow's reader can split the lines."""
    backslashes = text.count("\\")
    if not backslashes:
        return True
    if null != "\\N":
        return False
    d = re.escape(delimiter)
    whole = re.compile(rf"(?:^|(?<=[{d}\n]))\\N(?=[{d}\n]|$)", re.MULTILINE)
    return sum(1 for _ in whole.finditer(text)) == backslashes


def _plain_text_rows(text: str, options: CopyOptions, columns: list[str]) -> ParsedCopy | None:
    """Text-format data without escapes, split by Arrow's reader; None when a row does not
    fit (the line-by-line parser then says which, as PostgreSQL would)."""
    body = text.encode("utf-8")
    if not body or _lines(body) <= (1 if options.header else 0):
        return _no_rows(columns)
    parse = pa_csv.ParseOptions(delimiter=options.delimiter_char(), quote_char=False, double_quote=False,
                                escape_char=False, newlines_in_values=False, ignore_empty_lines=False)
    try:
        return _arrow_split(body, options, columns, parse, source=text)
    except pa.ArrowInvalid:
        return None


def _lines(body: bytes) -> int:
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)


def _no_rows(columns: list[str]) -> ParsedCopy:
    return ParsedCopy([pa.array([], pa.string()) for _ in columns], None, None)


def _arrow_split(body: bytes, options: CopyOptions, columns: list[str], parse: pa_csv.ParseOptions,
                 source: str | None = None) -> ParsedCopy:
    """The data split by Arrow's CSV reader into one string array per column, NULL where a
    field is the NULL string unquoted; pa.ArrowInvalid for a row that does not fit. Arrow
    does not say where each row began: rows are numbered as if one per line."""
    names = [f"c{i}" for i in range(len(columns))]
    skip = 1 if options.header else 0
    convert = pa_csv.ConvertOptions(column_types={n: pa.string() for n in names},
                                    null_values=[options.null_string()], strings_can_be_null=True,
                                    quoted_strings_can_be_null=False)
    read = pa_csv.ReadOptions(column_names=names, skip_rows=skip, block_size=1 << 24)
    table = pa_csv.read_csv(io.BytesIO(body), read_options=read, parse_options=parse, convert_options=convert)
    return ParsedCopy([table.column(n).combine_chunks() for n in names], None, None, first_line=1 + skip,
                      source=source)


def _fit(fields: list[str | None], columns: list[str], line: int, text: str | None) -> list[str | None]:
    if len(fields) > len(columns):
        raise CopyDataError(BAD_COPY_FILE_FORMAT, "extra data after last expected column", line, text)
    if len(fields) < len(columns):
        raise CopyDataError(BAD_COPY_FILE_FORMAT, f'missing data for column "{columns[len(fields)]}"', line, text)
    return fields


# -- CSV -------------------------------------------------------------------------------------

_CSV_ROW_ERROR = re.compile(r"Expected (\d+) columns, got (\d+)")


def _csv_rows(text: str, options: CopyOptions, columns: list[str]) -> ParsedCopy:
    """CSV through pyarrow's reader, which tells a quoted empty string (data) from an
    unquoted one (NULL by default), as PostgreSQL does."""
    if text.endswith("\\.\n") and (len(text) == 3 or text[-4] == "\n"):
        text = text[:-3]  # the end-of-data marker of old clients
    body = text.encode("utf-8")
    if not body.strip() or _lines(body) <= (1 if options.header else 0):
        return _no_rows(columns)
    escape = options.escape if options.escape is not None else options.quote
    parse = pa_csv.ParseOptions(
        delimiter=options.delimiter_char(), quote_char=options.quote, double_quote=escape == options.quote,
        escape_char=escape if escape != options.quote else False, newlines_in_values=True)
    try:
        return _arrow_split(body, options, columns, parse)
    except pa.ArrowInvalid as exc:
        found = _CSV_ROW_ERROR.search(str(exc))
        line, row = _csv_error_line(body, str(exc))
        if found is not None and int(found.group(2)) > int(found.group(1)):
            raise CopyDataError(BAD_COPY_FILE_FORMAT, "extra data after last expected column", line, row) from None
        if found is not None:
            missing = columns[int(found.group(2))] if int(found.group(2)) < len(columns) else columns[-1]
            raise CopyDataError(BAD_COPY_FILE_FORMAT, f'missing data for column "{missing}"', line, row) from None
        raise CopyDataError(BAD_COPY_FILE_FORMAT, f"invalid CSV data: {exc}", line) from None


def _csv_error_line(body: bytes, message: str) -> tuple[int | None, str | None]:
    """The line and text of a row pyarrow refused: it quotes the row after the colon."""
    quoted = message.rsplit(": ", 1)
    if len(quoted) != 2:
        return None, None
    row = quoted[1].strip()
    at = body.find(row.encode("utf-8")) if row else -1
    return (body[:at].count(b"\n") + 1, row) if at >= 0 else (None, None)
