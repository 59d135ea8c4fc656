"""planner.pg_to_number: to_number(text, format) as PostgreSQL 15 reads it, without a server.

Every expected value and error below was taken from a real PostgreSQL 15.18 (lc_numeric and
lc_monetary C.UTF-8): signs in all their places (S, MI, PL, SG, PR's angle brackets),
group separators, decimal points, V, ordinal suffixes, literal text that skips input, the
digits PostgreSQL silently drops, the numeric overflow of a format's precision, and the
formats it rejects with their SQLSTATE, message and detail."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner.errors import SqlError
from planner.pg_to_number import to_number

# (text, format, PostgreSQL's result as text: numeric keeps its scale, 12.50 is not 12.5)
VALUES = [
    ('12,454.8-', '99G999D9S', '-12454.8'),
    ('12,454.8-', '99,999.9MI', '-12454.8'),
    ('-12,454.8', 'S99,999.9', '-12454.8'),
    ('<123.45>', '999.99PR', '-123.45'),
    ('123.45', '999.99', '123.45'),
    ('  123', '999', '12'),
    ('1234', '9999', '1234'),
    ('$1,234.50', 'L9,999.99', '1234.50'),
    ('12345', '999V99', '123.4500000000000000'),
    ('1', '9V9', '0.1000000000000000'),
    ('12', '99V', '12.0000000000000000'),
    ('0012', '0000', '12'),
    ('12.3456', '99.99', '12.34'),
    ('12', '99.99', '12'),
    ('12.', '99.99', '12'),
    ('.5', '.9', '0.5'),
    ('5', '9.9', '5'),
    ('1e5', '9999', '15'),
    ('+42', 'S99', '42'),
    ('42+', '99S', '42'),
    ('42-', '99MI', '-42'),
    ('-42', 'MI99', '-42'),
    ('+42', 'PL99', '42'),
    ('42', 'SG99', '42'),
    ('-42', 'SG99', '-42'),
    ('1st', '9TH', '1'),
    ('21st', '99th', '21'),
    ('1 2 3', '9 9 9', '123'),
    ('1x2x3', '9"x"9"x"9', '123'),
    ('12,345', 'FM99,999', '1234'),
    ('12,345', '99G999', '12345'),
    ('1,2,3', '9,9,9', '123'),
    ('123456', '999', '123'),
    ('999.999', '999.99', '999.99'),
    ('12.34', '99D99', '12.34'),
    ('1,234', '9G999', '1234'),
    ('  -  12', 'S999', '-1'),
    ('12', 'FM9999', '12'),
    ('0.00', '9.99', '0.00'),
    ('-0', '9', '0'),
    ('1234.5678', '9999.9999', '1234.5678'),
    ('9999999999999999999999', '9999999999999999999999', '9999999999999999999999'),
    ('123', '9V999999999999999999', '0.0000000000000000'),
    ('12é3', '99"é"9', '123'),
    ('1', 'B9', '1'),
    ('12', 'C99', '12'),
    ('12', '9V', '1.0000000000000000'),
    ('0', '.', '0'),
    ('1', 'SPL9', '1'),
]

# (text, format, (SQLSTATE, message, detail, hint))
ERRORS = [
    ('abc', '999', ('22P02', 'invalid input syntax for type numeric: " "', None, None)),
    ('', '999', ('22P02', 'invalid input syntax for type numeric: " "', None, None)),
    ('-', '9', ('22P02', 'invalid input syntax for type numeric: "-"', None, None)),
    ('.', '9.9', ('22P02', 'invalid input syntax for type numeric: " "', None, None)),
    (
        '12345',
        '99.99',
        (
            '22003',
            'numeric field overflow',
            'A field with precision 2, scale 0 must round to an absolute value less than 10^2.',
            None,
        ),
    ),
    (
        '5',
        '.',
        (
            '22003',
            'numeric field overflow',
            'A field with precision 0, scale 0 must round to an absolute value less than 1.',
            None,
        ),
    ),
    (
        '123.4',
        '9.9',
        (
            '22003',
            'numeric field overflow',
            'A field with precision 1, scale 0 must round to an absolute value less than 10^1.',
            None,
        ),
    ),
    ('1', '9.9.9', ('42601', 'multiple decimal points', None, None)),
    ('1', 'S9S', ('42601', 'cannot use "S" twice', None, None)),
    ('1', '9PR9', ('42601', '"9" must be ahead of "PR"', None, None)),
    ('1', 'S9MI', ('42601', 'cannot use "S" and "MI" together', None, None)),
    ('1', '9EEEE', ('0A000', '"EEEE" not supported for input', None, None)),
    ('1', 'RN', ('0A000', '"RN" not supported for input', None, None)),
    ('12', '99V9.9', ('42601', 'cannot use "V" and decimal point together', None, None)),
    ('1', 'PRS9', ('42601', 'cannot use "S" and "PL"/"MI"/"SG"/"PR" together', None, None)),
    ('1', '9EEEEEEEE', ('42601', 'cannot use "EEEE" twice', None, None)),
    ('1', 'EEEE9', ('42601', '"EEEE" must be the last pattern used', None, None)),
    (
        '1',
        'FM9EEEE',
        (
            '42601',
            '"EEEE" is incompatible with other formats',
            '"EEEE" may only be used together with digit and decimal point patterns.',
            None,
        ),
    ),
    ('1', 'PL9S', ('42601', 'cannot use "S" and "PL"/"MI"/"SG"/"PR" together', None, None)),
]


@pytest.mark.parametrize(("text", "fmt", "expected"), VALUES)
def test_value_and_scale_match_postgresql(text: str, fmt: str, expected: str) -> None:
    result = to_number(text, fmt)
    assert isinstance(result, Decimal)
    assert format(result, "f") == expected


@pytest.mark.parametrize(("text", "fmt", "expected"), ERRORS)
def test_errors_match_postgresql(text: str, fmt: str, expected: tuple[str, str, str | None, str | None]) -> None:
    with pytest.raises(SqlError) as caught:
        to_number(text, fmt)
    error = caught.value
    assert (error.sqlstate, error.message, error.detail, error.hint) == expected


def test_empty_format_is_refused_not_null() -> None:
    # PostgreSQL returns NULL for an empty format; the Decimal API cannot, so it refuses
    with pytest.raises(SqlError) as caught:
        to_number("12", "")
    assert caught.value.sqlstate == "0A000"


def test_result_is_never_negative_zero() -> None:
    assert not to_number("-0", "9").is_signed()
