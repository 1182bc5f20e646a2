"""Any reply string parses or comes back unparsed; the robust parser reads only integer ratings 1..5, both from one
object or neither; the authors' parser reads only what their eval() would, with no range check (their scripts read a
9 as 9), never NaN or an infinity."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from styleeval.autorater.parsing import parse_authors, parse_robust


def test_huge_numbers_are_unparsed_not_an_overflow():
    reply = '{"meaning": 3, "style": ' + "1" * 400 + "}"
    assert parse_robust(reply) == (None, None)
    assert parse_authors(reply)[0] == 3.0 and parse_authors(reply)[1] is None


def test_the_authors_parser_reads_ascii_digits_only():
    assert parse_authors('{"meaning": \u0664, "style": \uff14}') == (None, None)  # Arabic-Indic 4, fullwidth 4
    assert parse_authors('{"meaning": 4, "style": 2}') == (4.0, 2.0)
    assert parse_robust('{"meaning": \u0664, "style": \uff14}') == (None, None)


RATINGS = {1.0, 2.0, 3.0, 4.0, 5.0}

# the value after "meaning": (style is 3 in every reply) -> what the robust parser reads (None: the reply is
# unparsed), what the authors' parser reads for meaning
LIMITS = [
    ("1", 1.0, 1.0), ("5", 5.0, 5.0), ("5.0", 5.0, 5.0), ('"2"', 2.0, 2.0),
    ("0", None, 0.0), ("6", None, 6.0), ("9", None, 9.0), ('"9"', None, 9.0), ("-1", None, -1.0),
    ("0.99", None, 0.99), ("5.01", None, 5.01), ("4.5", None, 4.5), ("1e0", None, 1.0),
    ("NaN", None, None), ("nan", None, None), ('"nan"', None, None), ("inf", None, None), ("-inf", None, None),
    ("Infinity", None, None), ("1e400", None, None),
]


@pytest.mark.parametrize("value,robust,authors", LIMITS)
def test_the_exact_ratings_each_parser_reads(value, robust, authors):
    reply = f'{{"meaning": {value}, "style": 3}}'
    assert parse_robust(reply) == ((None, None) if robust is None else (robust, 3.0))
    assert parse_authors(reply) == (authors, 3.0)


VALUES = st.one_of(st.sampled_from([value for value, _, _ in LIMITS]),
                   st.text(alphabet=st.sampled_from(list('0123456789.e+-"naif')), min_size=1, max_size=6))
REPLIES = st.one_of(  # any text of the replies' characters, and objects holding any number-like values
    st.text(alphabet=st.sampled_from(list('{}"\':,. meaningstyl0123456789\n\u0664e+-')), max_size=120),
    st.builds('{{"meaning": {}, "style": {}}}'.format, VALUES, VALUES))


@settings(max_examples=300, deadline=None)
@given(REPLIES)
def test_any_string_parses_or_is_unparsed(reply):
    meaning, style = parse_robust(reply)  # both integer ratings 1..5 from one object, or neither
    assert (meaning, style) == (None, None) or {meaning, style} <= RATINGS, (meaning, style)
    for key, value in zip(("meaning", "style"), parse_authors(reply), strict=True):
        assert value is None or (type(value) is float and math.isfinite(value) and f'"{key}":' in reply), value


def test_the_option_choices_are_the_prompts_and_parsers():
    """A judge prompt or parser added in its module must be offered by the CLI, the evaluate module and the specs."""
    from styleeval.autorater.parsing import PARSERS
    from styleeval.autorater.prompts import PROMPTS
    from styleeval.options import AUTORATER_OPTIONS

    assert AUTORATER_OPTIONS["prompt"].choices == tuple(PROMPTS)
    assert AUTORATER_OPTIONS["parser"].choices == tuple(PARSERS)
