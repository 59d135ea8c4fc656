"""planner.pg_to_char_num: to_char(number, format) as PostgreSQL 15 writes it, without a
server. Every expected string and error below was taken from a real PostgreSQL 15.18
(lc_numeric and lc_monetary C.UTF-8); the digits, signs, separators, Roman numerals, ordinal
suffixes, V, EEEE, fill mode and literal text, the #s of an overflow, and the formats it
rejects with their SQLSTATE and message."""

from __future__ import annotations

import math
from decimal import Decimal as D

import pytest

from planner.errors import SqlError
from planner.pg_to_char_num import to_char

INF, NAN = math.inf, math.nan

# (value, format, SQL type of the value, PostgreSQL's text)
CASES = [
    (12, '999', "integer", '  12'),
    (-12, '999', "integer", ' -12'),
    (12, '0999', "integer", ' 0012'),
    (-12, '0999', "integer", '-0012'),
    (12, '9099', "integer", '  012'),
    (0, '999', "integer", '   0'),
    (D(0), '9.99', "numeric", '  .00'),
    (D("0.5"), '9.9', "numeric", '  .5'),
    (D("-0.5"), '9.9', "numeric", ' -.5'),
    (D("0.5"), '0.9', "numeric", ' 0.5'),
    (1234, '99', "integer", ' ##'),
    (D("1234.5"), '99.99', "numeric", ' ##.##'),
    (-1234, '99', "bigint", '-##'),
    (12, '9.99', "integer", ' #.##'),
    (D("1234567.891"), '9,999,999.99', "numeric", ' 1,234,567.89'),
    (D("1234567.891"), '9G999G999D99', "numeric", ' 1,234,567.89'),
    (12, '9,999', "integer", '    12'),
    (12, 'FM9,999', "integer", '12'),
    (-1234, '9,999', "integer", '-1,234'),
    (1234, '9,9,9,9', "integer", ' 1,2,3,4'),
    (D("2.5"), '9', "numeric", ' 3'),
    (D("-2.5"), '9', "numeric", '-3'),
    (D("0.125"), '9.99', "numeric", '  .13'),
    (D("99.995"), '99.99', "numeric", ' ##.##'),
    (99.995, '99.99', "double precision", ' ##.##'),
    (2.5, '9', "double precision", ' 2'),
    (0.125, '9.99', "double precision", '  .12'),
    (D("-0.001"), '9.99', "numeric", '  .00'),
    (-0.001, '9.99', "double precision", ' -.00'),
    (-0.0, '9.99', "double precision", ' -.00'),
    (-12, 'S999', "integer", ' -12'),
    (12, 'S999', "integer", ' +12'),
    (-12, '999S', "integer", ' 12-'),
    (-12, '9S99', "integer", ' -12'),
    (D("-12.5"), '99.9S', "numeric", '12.5-'),
    (12, '999MI', "integer", ' 12 '),
    (-12, '999MI', "integer", ' 12-'),
    (-12, 'MI999', "integer", '- 12'),
    (12, 'PL999', "integer", '+  12'),
    (-12, 'PL999', "integer", '  -12'),
    (12, '999PL', "integer", '  12+'),
    (12, 'SG999', "integer", '+ 12'),
    (-12, 'SG999', "integer", '- 12'),
    (-12, '999PR', "integer", ' <12>'),
    (12, '999PR', "integer", '  12 '),
    (D("-12.5"), 'FM999.99PR', "numeric", '<12.5>'),
    (12, 'FM999PR', "integer", '12'),
    (-12, 'FMSG999', "integer", '-12'),
    (12, 'FM999MI', "integer", '12'),
    (D("-0.5"), 'S0.9', "numeric", '-0.5'),
    (D("12.5"), 'L999D99', "numeric", '   12.50'),
    (12, '999L', "integer", '  12 '),
    (12, 'FM99.99', "integer", '12.'),
    (D("12.5"), 'FM99.99', "numeric", '12.5'),
    (D("12.5"), 'FM99.90', "numeric", '12.50'),
    (D(0), 'FM9.99', "numeric", '0.'),
    (D("0.5"), 'FM9.99', "numeric", '.5'),
    (12, 'FM0999', "integer", '0012'),
    (D("-0.1"), 'FM9.9', "numeric", '-.1'),
    (1.5, 'FM9.00000000', "real", '1.50000'),
    (1999, 'RN', "integer", '        MCMXCIX'),
    (1999, 'rn', "integer", '        mcmxcix'),
    (1999, 'FMRN', "integer", 'MCMXCIX'),
    (4, 'FMrn', "bigint", 'iv'),
    (4000, 'RN', "integer", '###############'),
    (0, 'RN', "integer", '###############'),
    (-5, 'RN', "integer", '###############'),
    (D("2.5"), 'RN', "numeric", '            III'),
    (2.5, 'RN', "double precision", '             II'),
    (3.5, 'FMRN', "real", 'IV'),
    (3000000000.0, 'RN', "double precision", '###############'),
    (12, 'RN" years"', "integer", '            XII years'),
    (12, 'RN SG', "integer", '            XII '),
    (NAN, 'RN', "double precision", '###############'),
    (1, '999TH', "integer", '   1ST'),
    (2, '999th', "integer", '   2nd'),
    (3, 'FM999TH', "integer", '3RD'),
    (11, 'FM999th', "integer", '11th'),
    (12, 'FM999TH', "integer", '12TH'),
    (13, 'FM999th', "integer", '13th'),
    (21, 'FM999TH', "integer", '21ST'),
    (-1, '999TH', "integer", '  -1'),
    (1, '9.9TH', "integer", ' 1.0'),
    (1234, '99TH', "integer", ' ##'),
    (12, '99V9', "integer", ' 120'),
    (D("12.45"), '99V99', "numeric", ' 1245'),
    (-1.5, '9V9', "double precision", '-15'),
    (1.5, '9V9', "real", ' 15'),
    (12, '9V999', "bigint", ' ####'),
    (2147483647, '9V9', "integer", '-10'),
    (3, '9V99999999999', "integer", '  -2147483648'),
    (D("1234.5"), '9.99EEEE', "numeric", ' 1.23e+03'),
    (D("-0.000123"), '9.9EEEE', "numeric", '-1.2e-04'),
    (D(0), '9.99EEEE', "numeric", ' 0.00e+00'),
    (D("9.999"), '9.99EEEE', "numeric", ' 10.00e+00'),
    (9.999, '9.99EEEE', "double precision", ' 1.00e+01'),
    (1234, '9EEEE', "integer", ' 1e+03'),
    (9223372036854775807, '9.9999999999999999999EEEE', "bigint", ' 9.2233720368547758070e+18'),
    (1e+300, '9.99eeee', "double precision", ' 1.00e+300'),
    (-0.0, '9.99EEEE', "double precision", '-0.00e+00'),
    (D("1.5"), '"abc"9.9EEEE', "numeric", ' 1.5e+00'),
    (D("nan"), '9.99EEEE', "numeric", ' #.######'),
    (INF, '99.99EEEE', "double precision", ' ##.######'),
    (0.1, '9.999EEEE', "real", ' 1.000e-01'),
    (D(123), '99', "numeric", ' ##'),
    (D("123.456"), '99.99', "numeric", ' ##.##'),
    (-123, '99PR', "integer", '<##>'),
    (123, '99TH', "integer", ' ##'),
    (1e+20, '999', "double precision", ' ###'),
    (NAN, '9999', "double precision", '  NaN'),
    (INF, '9999999999', "real", '   Infinity'),
    (-INF, '9999999999', "double precision", '  -Infinity'),
    (D("nan"), '9999.99', "numeric", '  NaN'),
    (D("infinity"), '99999999', "numeric", ' Infinity'),
    (D("-infinity"), 'FM99999999', "numeric", '-Infinity'),
    (1.23456789, '9.999999999', "real", ' 1.23457'),
    (1.23456789, '9.9999999999999999999', "double precision", ' 1.23456789000000'),
    (123456789.0, '999999999999.999', "real", '    123456792'),
    (1.5, '9.99999999" units"', "real", ' 1.50000'),
    (0.1, '0.99999999999999999999', "double precision", ' 0.10000000000000'),
    (D("0.00000000000000000001"), '0.99999999999999999999999', "numeric", ' 0.00000000000000000001000'),
    (D(123456789012345678901234567890), '999999999999999999999999999999999', "numeric",
     '    123456789012345678901234567890'),
    (D("-98765432109876543210.123456789"), 'FM999999999999999999999.999999999', "numeric",
     '-98765432109876543210.123456789'),
    (12, '"abc\\"d"999', "integer", 'abc"d  12'),
    (12, '\\"999', "integer", '"  12'),
    (12, '999" dollars"', "integer", '  12 dollars'),
    (12, 'B999', "integer", '  12'),
    (12, 'C999', "integer", '  12'),
    (5, 'x9y', "integer", 'x 5y'),
    (5, '9 % é', "integer", ' 5 % é'),
    (D("1.5"), '9.9EEEEE', "numeric", ' 1.5e+00'),
    (12, '', "integer", ''),
    (12, 'FFM99', "integer", 'F12'),
    (1, '9SPL', "integer", ' 1 '),
]

# (value, format, SQL type, SQLSTATE, message)
ERRORS = [
    (1, '9.9.9', "integer", "42601", 'multiple decimal points'),
    (1, '99.9V9', "integer", "42601", 'cannot use "V" and decimal point together'),
    (1, '99V9.9', "integer", "42601", 'cannot use "V" and decimal point together'),
    (D(1), '9D9.9', "numeric", "42601", 'multiple decimal points'),
    (1, 'S9S', "integer", "42601", 'cannot use "S" twice'),
    (1, 'S9MI', "integer", "42601", 'cannot use "S" and "MI" together'),
    (1, 'MI9S', "integer", "42601", 'cannot use "S" and "PL"/"MI"/"SG"/"PR" together'),
    (1, 'PL9S', "integer", "42601", 'cannot use "S" and "PL"/"MI"/"SG"/"PR" together'),
    (1, '9S PL', "integer", "42601", 'cannot use "S" and "PL" together'),
    (1, '9SSG', "integer", "42601", 'cannot use "S" and "SG" together'),
    (1, '9SMI', "integer", "42601", 'cannot use "S" and "MI" together'),
    (1, 'PR9', "integer", "42601", '"9" must be ahead of "PR"'),
    (1, '9PR0', "integer", "42601", '"0" must be ahead of "PR"'),
    (1, 'S9PR', "integer", "42601", 'cannot use "PR" and "S"/"PL"/"MI"/"SG" together'),
    (1, 'MI9PR', "integer", "42601", 'cannot use "PR" and "S"/"PL"/"MI"/"SG" together'),
    (D(1), '9.9EEEE9', "numeric", "42601", '"EEEE" must be the last pattern used'),
    (D(1), '9.9EEEEEEEE', "numeric", "42601", 'cannot use "EEEE" twice'),
    (D(1), 'FM9.9EEEE', "numeric", "42601", '"EEEE" is incompatible with other formats'),
    (D(1), 'S9.9EEEE', "numeric", "42601", '"EEEE" is incompatible with other formats'),
    (D(1), 'RN9.9EEEE', "numeric", "42601", '"EEEE" is incompatible with other formats'),
    (D(1), '9V9EEEE', "numeric", "42601", '"EEEE" is incompatible with other formats'),
    (D(1), 'B9EEEE', "numeric", "42601", '"EEEE" is incompatible with other formats'),
    (D(1), '9.9EEEEPR', "numeric", "42601", '"EEEE" must be the last pattern used'),
    (D(3000000000), 'RN', "numeric", "22003", 'integer out of range'),
    (3000000000, 'RN', "bigint", "22003", 'integer out of range'),
    (D("nan"), 'RN', "numeric", "0A000", 'cannot convert NaN to integer'),
    (D("infinity"), 'RN', "numeric", "0A000", 'cannot convert infinity to integer'),
    (12, '9V9999999999999999999', "bigint", "22003", 'bigint out of range'),
    (9223372036854775807, '9V9', "bigint", "22003", 'bigint out of range'),
    (D("nan"), '9999TH', "numeric", "22P02", '"NaN" is not a number'),
    (INF, '9999999999TH', "double precision", "22P02", '"Infinity" is not a number'),
]


@pytest.mark.parametrize("value, fmt, kind, expected", CASES)
def test_text_is_postgresqls(value, fmt, kind, expected):
    assert to_char(value, fmt, kind) == expected


@pytest.mark.parametrize("value, fmt, kind, sqlstate, message", ERRORS)
def test_errors_are_postgresqls(value, fmt, kind, sqlstate, message):
    with pytest.raises(SqlError) as err:
        to_char(value, fmt, kind)
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


def test_eeee_incompatibility_carries_postgresqls_detail():
    with pytest.raises(SqlError) as err:
        to_char(D("1.5"), "FM9.9EEEE", "numeric")
    assert err.value.detail == '"EEEE" may only be used together with digit and decimal point patterns.'


def test_format_errors_come_before_value_errors():
    # PostgreSQL reads the whole format before it looks at the value
    with pytest.raises(SqlError) as err:
        to_char(D("NaN"), "RN9.9EEEE", "numeric")
    assert err.value.sqlstate == "42601"


def test_digits_past_what_the_type_keeps_end_the_text():
    # a real keeps 6 significant digits; where they run out PostgreSQL's C string ends,
    # so the " kg" after them is never written
    assert to_char(1.5, '9.9999999" kg"', "real") == " 1.50000"
    assert to_char(1.5, '9.99999" kg"', "real") == " 1.50000 kg"


def test_numeric_keeps_at_most_16383_decimals():
    text = to_char(D("1.5"), "9." + "9" * 17000, "numeric")
    assert len(text) == 16386 and text.startswith(" 1.5000")


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError):
        to_char(1, "999", "smallint")


def test_integer_out_of_its_types_range():
    with pytest.raises(SqlError) as err:
        to_char(2**31, "9999999999", "integer")
    assert (err.value.sqlstate, err.value.message) == ("22003", "integer out of range")
