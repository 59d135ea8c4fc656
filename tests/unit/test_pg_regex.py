"""planner.pg_regex: PostgreSQL's regexp_replace/regexp_match/regexp_split_to_array answers
(checked against PostgreSQL 15 by tests/integration/test_function_catalog.py), and the ARE
patterns that are refused rather than read as Python's `re` would read them."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.pg_regex import (
    regexp_like,
    regexp_match,
    regexp_replace,
    regexp_split,
    similar_to_escape,
    substring,
    substring_similar,
    translate,
)


@pytest.mark.parametrize("args, expected", [
    (("1112223333", r"(\d{3})(\d{3})(\d{4})", r"(\1) \2-\3"), "(111) 222-3333"),
    (("abab", "b", "X"), "aXab"),  # the first match only
    (("abab", "b", "X", "g"), "aXaX"),
    (("aBab", "b", "X", "gi"), "aXaX"),
    (("aBab", "b", "X", "ic"), "aBaX"),  # the last of i/c wins
    (("AAA", "^|$", "Z", "g"), "ZAAAZ"),
    (("abxd", "x*", "-", "g"), "-a-b--d-"),  # a zero-length match moves on one character
    (("abc", "(b)", r"[\0\&\1\2\\\x\]"), r"a[\0bb\\x\]c"),  # \2 past the last group is empty
    (("abc", "b", r"[\1]"), "a[]c"),
    (("a.c", ".", "X", "q"), "a.c".replace(".", "X", 1)),  # q: the pattern is literal text
    (("a\nb", "a.b$", "ok"), "ok"),  # . matches a newline, $ only the end
    (("ab\n", "b$", "X"), "ab\n"),
    ((None, "a", "b"), None), (("a", None, "b"), None), (("a", "a", None), None), (("a", "a", "b", None), None),
    (("", "^", "x"), "x"),
    (("héllo", "é", "e"), "hello"),
])
def test_regexp_replace(args, expected):
    assert regexp_replace(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("abcd", "(x)?(b)(c)"), [None, "b", "c"]),
    (("foobarbequebaz", "bar.*que"), ["barbeque"]),
    (("abcd", "a|ab"), ["ab"]),  # ARE: the longest of the alternatives
    (("abcd", "(ab)?(abcd)?"), [None, "abcd"]),
    (("abcabc", "a.*?c"), ["abc"]),  # a non-greedy pattern: the shortest
    (("ABC", "b", "i"), ["B"]),
    (("abc", "z"), None),
    (("abc", "z", None), None),
    (("a{,3}", "a{,3}"), ["a{,3}"]),  # a { that starts no bound is literal
    (("a{x}", "a{x}"), ["a{x}"]),
    (("aaa", "a{2}"), ["aa"]),
])
def test_regexp_match(args, expected):
    assert regexp_match(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("abc", "x*"), ["a", "b", "c"]),
    (("abc", ""), ["a", "b", "c"]),
    (("a,b,", ","), ["a", "b", ""]),
    ((",a", ","), ["", "a"]),
    (("", "x"), [""]),
    (("the quick  fox", r"\s+"), ["the", "quick", "fox"]),
    ((None, "x"), None),
])
def test_regexp_split(args, expected):
    assert regexp_split(*args) == expected


@pytest.mark.parametrize("call, sqlstate, message", [
    (lambda: regexp_replace("a", "a", "b", "z"), "22023", 'invalid regular expression option: "z"'),
    (lambda: regexp_match("a", "a", "g"), "22023", 'regexp_match() does not support the "global" option'),
    (lambda: regexp_split("a", "a", "g", "regexp_split_to_table"), "22023",
     'regexp_split_to_table() does not support the "global" option'),
    (lambda: regexp_match("a", "("), "2201B", "invalid regular expression"),
    (lambda: regexp_match("a", "a{1,2"), "2201B", "invalid regular expression: braces {} not balanced"),
    (lambda: regexp_match("a", "a", "x"), "0A000", 'regular expression option "x" is not supported'),
])
def test_errors(call, sqlstate, message):
    with pytest.raises(SqlError) as info:
        call()
    assert info.value.sqlstate == sqlstate and info.value.message.startswith(message)


@pytest.mark.parametrize("pattern, python, preference", [
    (r"\d+$", r"\d+\Z", "greedy"),
    (r"\mfoo\M", r"\b(?=\w)foo\b(?<=\w)", ""),
    (r"\y\Y", r"\b\B", ""),
    (r"a\Bb", r"a\\b", ""),
    ("[]a[]", r"[\]a\[]", ""),
    ("a{3}", "a{3}", ""),
    ("a{2,}?", "a{2,}?", "lazy"),
    ("a|b", "a|b", "greedy"),
    ("(?:a)(?=b)", "(?:a)(?=b)", ""),
])
def test_translate(pattern, python, preference):
    assert translate(pattern) == (python, preference)


@pytest.mark.parametrize("pattern", [
    "[[:alpha:]]", "[[.a.]]", "(?i)a", "(?P<x>a)", "***:a", "a*?b+", "a*?|b", "a*+", r"\k", r"\x41",
])
def test_patterns_read_differently_are_refused(pattern):
    with pytest.raises(SqlError) as info:
        translate(pattern)
    assert info.value.sqlstate == "0A000"


@pytest.mark.parametrize("args, expected", [
    (("a%b_c(d|e)[x^$.\\]]*",), "^(?:a.*b.c(?:d|e)[x^$.\\]]*)$"),
    (('a#"b#"c', "#"), "^(?:a){1,1}?(b){1,1}(?:c)$"),
    (("a\\.b",), "^(?:a\\.b)$"),
    (("[]%]",), "^(?:[]%])$"),  # a ] first in a class is literal, and so is what follows
    (("[^]%]",), "^(?:[^]%])$"),
    (("a\\",), "^(?:a)$"),  # a trailing escape is dropped
    (("a\\b", ""), "^(?:a\\\\b)$"),  # no escape character: the backslash is literal
    (("a", None), None),
])
def test_similar_to_escape(args, expected):
    assert similar_to_escape(*args) == expected


def test_similar_to_escape_errors():
    with pytest.raises(SqlError) as info:
        similar_to_escape('a#"b#"c#"d', "#")
    assert info.value.sqlstate == "2200C"
    with pytest.raises(SqlError) as info:
        similar_to_escape("a", "ab")
    assert info.value.sqlstate == "22025"


@pytest.mark.parametrize("s, pattern, expected", [
    ("abc", "a(b|x)c", True), ("ab\n", "ab", False), ("a\nb", "a_b", True), ("abc", "a%", True),
    ("xabc", "a%", False), (None, "a", None),
])
def test_similar_to_matches_the_whole_string(s, pattern, expected):
    assert regexp_like(s, similar_to_escape(pattern)) is expected


def test_similar_to_takes_mixed_preferences():
    # Only whether it matches counts: the {1,1}? of a separated pattern beside greedy .* is fine.
    assert regexp_like("foobar", similar_to_escape('%#"o_b#"%', "#")) is True


@pytest.mark.parametrize("s, pattern, expected", [
    ("abcdefg", "c.e", "cde"), ("abcdefg", "b(.)d", "c"), ("abcdefg", "x", None), ("abc", "(x)?b", None),
    ("abc", "(?:a)(b)", "b"), (None, "a", None),
])
def test_substring_from_pattern(s, pattern, expected):
    assert substring(s, pattern) == expected


@pytest.mark.parametrize("args, expected", [
    (("abcdefg", 'a#"(b_d)#"%', "#"), "bcd"),
    (("foobarfoobar", '%#"o_b#"%', "#"), "oob"),  # the first part as short as can be
    (("aaa", '#"a*#"a', "#"), "aa"),
    (("abcabc", 'a#"%', "#"), "bcabc"),  # one separator: the rest
    (("abc", "abc", "#"), "abc"),  # none: the whole string
    (("abc", "x", "#"), None),
    (("abc", "abc", None), None),
])
def test_substring_similar(args, expected):
    assert substring_similar(*args) == expected
