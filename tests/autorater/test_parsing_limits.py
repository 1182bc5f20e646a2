"""Any reply string parses or comes back unparsed; the authors' parser reads only what their eval() would."""

from __future__ import annotations

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


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}"\':,. meaningstyl0123456789\n\u0664e+-')), max_size=120))
def test_any_string_parses_or_is_unparsed(reply):
    for parse in (parse_robust, parse_authors):
        meaning, style = parse(reply)
        assert meaning is None or isinstance(meaning, float)
        assert style is None or isinstance(style, float)


def test_the_option_choices_are_the_prompts_and_parsers():
    """A judge prompt or parser added in its module must be offered by the CLI, the evaluate module and the specs."""
    from styleeval.autorater.parsing import PARSERS
    from styleeval.autorater.prompts import PROMPTS
    from styleeval.options import AUTORATER_OPTIONS

    assert AUTORATER_OPTIONS["prompt"].choices == tuple(PROMPTS)
    assert AUTORATER_OPTIONS["parser"].choices == tuple(PARSERS)
