"""Reading a server's answers (styleeval.backends.answers): parsed whole and checked, or refused. Property tests feed
the reader thousands of answers in vLLM's format: listed in any order they give the in-order values; cut anywhere
(6,000 cuts of 300 answers, and every cut of one), with a choice missing or twice, or from another model, they are
refused."""

from __future__ import annotations

import enum
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from styleeval.backends import answers
from styleeval.backends.answers import AnswerError


def _answer(prompts, values, order=None, model="m", compact=True) -> bytes:
    """vLLM's answer to a prompt_logprobs=0 request: ``values[k][i]`` is prompt k's token i's log-probability."""
    choices = []
    for k, (prompt, logprobs) in enumerate(zip(prompts, values, strict=True)):
        entries = [None] + [{str(t): {"logprob": v, "rank": 1, "decoded_token": '}} {"7":{"logprob":-1}'}}
                            for t, v in zip(prompt[1:], logprobs[1:], strict=True)]
        choices.append({"index": k, "text": "a", "logprobs": None, "finish_reason": "length",
                        "prompt_logprobs": entries})
    if order is not None:
        choices = [choices[i] for i in order]
    answer = {"id": "x", "object": "text_completion", "model": model, "choices": choices}
    return json.dumps(answer, separators=(",", ":") if compact else None).encode()


def _read(body: bytes, prompts, tails, model="m"):
    chosen = answers.read(body, len(prompts), model)
    return [answers.prompt_logprobs(c, p, t) for c, p, t in zip(chosen, prompts, tails, strict=True)]


@st.composite
def batches(draw):
    """A batched request (LogProb's three contexts per row share their rewrite: the same last tokens) and the
    server's values, with digits enough that a cut inside a number leaves a valid shorter one (drawn from a seed:
    hypothesis draws the shape)."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    prompts, values = [], []
    for _ in range(draw(st.integers(1, 3))):
        rewrite = [rng.randrange(5000) for _ in range(draw(st.integers(1, 6)))]
        for _ in range(3):
            prompt = [rng.randrange(5000) for _ in range(rng.randint(1, 8))] + rewrite
            prompts.append(prompt)
            values.append([None] + [round(-60 * rng.random() ** 3, 6) for _ in prompt[1:]])
    tails = [rng.randrange(len(p)) for p in prompts]
    return prompts, values, tails


def _expected(prompts, values, tails):
    return [v[len(p) - t if t else len(p):] for p, v, t in zip(prompts, values, tails, strict=True)]


@settings(max_examples=300, deadline=None)
@given(batches(), st.data())
def test_choices_in_any_order_give_the_values_in_prompt_order(batch, data):
    prompts, values, tails = batch
    order = data.draw(st.permutations(range(len(prompts))))
    body = _answer(prompts, values, order, compact=data.draw(st.booleans()))
    assert _read(body, prompts, tails) == _expected(prompts, values, tails)


@settings(max_examples=300, deadline=None)
@given(batches(), st.randoms(use_true_random=False))
def test_an_answer_cut_anywhere_is_refused(batch, rng):
    """20 cuts of each of 300 answers (6,000 bodies), half of them in the last 40 bytes (inside the last
    log-probability's digits, where a reader by position accepted -60.509 as -6.0)."""
    prompts, values, tails = batch
    body = _answer(prompts, values)
    for k in range(20):
        cut = rng.randrange(len(body)) if k % 2 else rng.randrange(max(0, len(body) - 40), len(body))
        with pytest.raises(AnswerError, match="could not be read"):
            _read(body[:cut], prompts, tails)


def test_every_cut_of_one_answer_is_refused():
    prompts = [[5, 11, 12, 13, 14], [6, 11, 12, 13, 14], [7, 11, 12, 13, 14]]
    values = [[None, -0.5, -60.509, -1e-05, -3.25]] * 3
    body = _answer(prompts, values, compact=False)
    assert _read(body, prompts, [4, 4, 4]) == [[-0.5, -60.509, -1e-05, -3.25]] * 3
    for cut in range(len(body)):
        with pytest.raises(AnswerError):
            _read(body[:cut], prompts, [4, 4, 4])


@settings(max_examples=200, deadline=None)
@given(batches(), st.data())
def test_a_choice_missing_or_twice_is_refused(batch, data):
    prompts, values, _ = batch
    listed = json.loads(_answer(prompts, values))
    k = data.draw(st.integers(0, len(prompts) - 1))
    if data.draw(st.booleans()):
        del listed["choices"][k]
        message = f"answered {len(prompts) - 1} of {len(prompts)} prompts"
    else:
        listed["choices"][k]["index"] = (k + 1) % len(prompts) if len(prompts) > 1 else 1
        message = "answered choices indexed"
    with pytest.raises(AnswerError, match=message):
        answers.read(json.dumps(listed).encode(), len(prompts), "m")


def test_another_models_answer_is_refused_and_an_alias_is_asked_for_once():
    prompts, values = [[1, 2, 3]], [[None, -1.0, -2.0]]
    asked = []

    def aliases():
        asked.append(1)
        return {"m-alias"}

    assert len(answers.read(_answer(prompts, values), 1, "m", aliases)) == 1
    assert asked == []  # the served name itself: /models is not asked
    answers.read(_answer(prompts, values, model="m-alias"), 1, "m", aliases)
    for other in ("fallback", None):
        with pytest.raises(AnswerError, match=f"answered as model {other!r}, not 'm': another model's answer"):
            answers.read(_answer(prompts, values, model=other), 1, "m", aliases)


def test_entries_for_other_tokens_than_those_sent_are_refused():
    prompt = [5, 11, 12, 13]
    body = json.loads(_answer([prompt], [[None, -1.0, -2.0, -3.0]]))

    def choice(**changes):
        return answers.read(json.dumps({**body, "choices": [{**body["choices"][0], **changes}]}).encode(), 1, "m")[0]

    assert answers.prompt_logprobs(choice(), prompt, 2) == [-2.0, -3.0]
    with pytest.raises(AnswerError, match=r"no log-probability for prompt token 99 \(position 1\)"):
        answers.prompt_logprobs(choice(), [5, 99, 12, 13], 2)  # a token the tail does not read, still checked
    with pytest.raises(AnswerError, match="returned 4 prompt log-probabilities for a prompt of 5 tokens"):
        answers.prompt_logprobs(choice(), [*prompt, 14], 2)
    with pytest.raises(AnswerError, match="echoed other prompt tokens"):
        answers.prompt_logprobs(choice(prompt_token_ids=[5, 11, 12, 14]), prompt, 2)
    entries = body["choices"][0]["prompt_logprobs"]
    with pytest.raises(AnswerError, match=r"no log-probability for prompt token 13 \(position 3\)"):
        answers.prompt_logprobs(choice(prompt_logprobs=[*entries[:3], None]), prompt, 2)


@pytest.mark.parametrize("value, message", [
    ("-1.5", r"another shape .*Expected `float`, got `str` - at `\$.choices\[0\].prompt_logprobs\[1\]\[...\].logprob`"),
    (True, "another shape"), (None, "another shape"), (float("nan"), r"log-probability nan .* not a log-probability"),
    (float("-inf"), "not a log-probability"), (0.5, "not a log-probability")])
def test_values_that_are_not_log_probabilities_are_refused(value, message):
    body = json.dumps({"model": "m", "choices": [{"index": 0, "prompt_logprobs": [None, {"7": {"logprob": value}}]}]})
    with pytest.raises(AnswerError, match=message):
        answers.prompt_logprobs(answers.read(body.encode(), 1, "m")[0], [3, 7])


FLOAT32_LOWEST = -3.4028234663852886e38
"""float32's lowest finite value (numpy.finfo(numpy.float32).min), as a float64."""


def _one_value_answer(value: str) -> bytes:
    """An answer whose one scored token (7) has the JSON number ``value`` as its log-probability."""
    return b'{"model":"m","choices":[{"index":0,"prompt_logprobs":[null,{"7":{"logprob":%s}}]}]}' % value.encode()


@pytest.mark.parametrize("value", ["-3.5e38", "-1e300", "-3.4028235677973366e38",
                                   "-340282356779733661637539395458142568448", "1e-300", "5e-5", "1e-4", "0.5"])
def test_numbers_no_float32_log_probability_can_be_are_refused(value):
    """Finite in float64 but below float32's lowest finite value (they would become -inf where the scores are cast to
    float32), or above 0 (a probability above 1): refused, naming the token and the value."""
    with pytest.raises(AnswerError, match=r"returned the log-probability \S+ for token 7: not a log-probability "
                                          r"\(it must be a number from -3.4e\+38 to 0\)"):
        answers.prompt_logprobs(answers.read(_one_value_answer(value), 1, "m")[0], [3, 7])


@pytest.mark.parametrize("value, read", [("-3.4028234663852886e38", FLOAT32_LOWEST), ("-0.0", 0.0), ("0", 0.0),
                                         ("-1e-45", -1e-45), ("-12", -12.0)])
def test_every_float32_log_probability_is_read_and_minus_zero_as_zero(value, read):
    """The range's ends are log-probabilities; -0.0 is log(1) and is read as 0.0, so that a score is never written
    as -0.0 for one server and 0.0 for another."""
    got = answers.prompt_logprobs(answers.read(_one_value_answer(value), 1, "m")[0], [3, 7])
    assert got == [read] and str(got[0]) == str(read) and type(got[0]) is float


# answers.loads / answers.dumps against orjson's behaviour (orjson 3.13.0 was the library before msgspec; it is no
# dependency now, so its outcome on each input is written here as measured side by side): every input orjson refused
# is refused (loads: AnswerError; dumps: TypeError), and what orjson read is read alike or more exactly.
REFUSED_BY_ORJSON_LOADS = {  # input: orjson.JSONDecodeError's text
    b'{"a": 1': "unexpected end of data",
    b'{"a":1} x': "unexpected content after document",
    b"": "Input is a zero-length, empty document",
    b'{"a": NaN}': "unexpected character, expected a JSON value",
    b"[Infinity]": "unexpected character, expected a JSON value",
    b"[-Infinity]": "no digit after sign",
    b"[1e400]": "number is infinity when parsed as double",
    b'["\xff"]': "str is not valid UTF-8",
    b'["\\ud800"]': "no low surrogate in string",
    b"\xef\xbb\xbf[1]": "UTF-8 byte order mark (BOM) is not supported",
    b'["a\x01"]': "unexpected control character in string",
    b"[" * 1025 + b"]" * 1025: "depth limit exceeded",
}


@pytest.mark.parametrize("data", list(REFUSED_BY_ORJSON_LOADS))
def test_loads_refuses_what_orjson_refused(data):
    with pytest.raises(AnswerError, match=r"^sent an answer that could not be read \(not complete JSON: "):
        answers.loads(data)


@pytest.mark.parametrize(("data", "orjson_read", "read"), [
    (b'{"a":1,"a":2}', {"a": 2}, {"a": 2}),  # a key given twice: the last value, as orjson and json read it
    ('{"a": [1, 2.5, null, true]}', {"a": [1, 2.5, None, True]}, {"a": [1, 2.5, None, True]}),  # str as bytes
    (bytearray(b'{"a":"\\u00e9"}'), {"a": "é"}, {"a": "é"}),
    (b"[" + b"9" * 30 + b"]", [1e30], [int("9" * 30)]),  # orjson rounded an integer beyond 64 bits to a float
    (b"[18446744073709551616]", [1.8446744073709552e19], [18446744073709551616]),
    (b"[-9223372036854775809]", [-9.223372036854776e18], [-9223372036854775809]),
])
def test_loads_reads_what_orjson_read_integers_exactly(data, orjson_read, read):
    assert answers.loads(data) == read
    assert [type(v) for v in _leaves(answers.loads(data))] == [type(v) for v in _leaves(read)]
    assert read == orjson_read or any(type(v) is int and not -(1 << 63) <= v < 1 << 64 for v in _leaves(read))


def test_loads_reads_nesting_as_deep_as_requests_go_and_refuses_past_orjsons_limit():
    """orjson read 1024 levels; msgspec stops at Python's recursion limit (about 1000): stricter, and far past the
    few levels an answer has."""
    assert answers.loads(b"[" * 500 + b"]" * 500) == _nested(500)
    with pytest.raises(AnswerError, match="could not be read"):
        answers.loads(b"[" * 1025 + b"]" * 1025)


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _nested(depth):
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


class _Text(str):
    pass


class _Count(int):
    pass


class _Size(enum.IntEnum):
    SMALL = 3
    BIG = 1 << 70


REFUSED_BY_ORJSON_DUMPS = [  # (value, orjson's TypeError text): msgspec would write each
    ({1: 2}, "Dict key must be str"),
    ({"a": {1.5: 1}}, "Dict key must be str"),
    ([10**30], "Integer exceeds 64-bit range"),
    ({"seed": 1 << 64}, "Integer exceeds 64-bit range"),
    ({"prompt": [[1, 2, -(1 << 63) - 1]]}, "Integer exceeds 64-bit range"),
    ([b"ab"], "Type is not JSON serializable: bytes"),
    ({"a": {1, 2}}, "Type is not JSON serializable: set"),
    (_nested(255), "Recursion limit reached"),
    ([object()], "Type is not JSON serializable: builtins.object"),  # msgspec refuses it too
    ({(1,): 2}, "Dict key must be str"),
    ({_Text("k"): 1}, "Dict key must be str"),  # a str subclass as a key (review of issue 48: msgspec wrote it)
    ([_Size.BIG], "Integer exceeds 64-bit range"),  # an IntEnum beyond 64 bits (msgspec wrote 70 bits)
    ({"a": [_Count(1 << 70)]}, "Integer exceeds 64-bit range"),
]


@pytest.mark.parametrize(("value", "message"), REFUSED_BY_ORJSON_DUMPS)
def test_dumps_refuses_what_orjson_refused(value, message):
    with pytest.raises(TypeError, match=f"^{message}"):
        answers.dumps(value)


def test_dumps_writes_what_orjson_wrote_byte_for_byte():
    """The bytes orjson wrote for these (compact, NaN and infinities as null, UTF-8 unescaped, a str subclass such as
    ``numpy.str_`` as its text, the deepest nesting orjson wrote)."""
    import numpy as np

    body = {"model": "m", "prompt": [[1, 2, (1 << 64) - 1, -(1 << 63)], ["é\u2028", np.str_("x")]],
            "values": [math.nan, -math.inf, 0.1, True, None], "n": (1, 2)}
    assert answers.dumps(body) == (b'{"model":"m","prompt":[[1,2,18446744073709551615,-9223372036854775808],'
                                   b'["\xc3\xa9\xe2\x80\xa8","x"]],"values":[null,null,0.1,true,null],"n":[1,2]}')
    assert answers.dumps(_nested(254)) == b"[" * 254 + b"]" * 254
    assert answers.dumps([_Count(5), _Size.SMALL, True, _Count(-1)]) == b"[5,3,true,-1]"  # int subclasses as orjson
    with pytest.raises(TypeError, match="Type is not JSON serializable: numpy.float64"):  # as orjson refused it
        answers.dumps([np.float64(1.5)])


DEEP = b"[" * 3000 + b"]" * 3000


@pytest.mark.parametrize(("read", "named"), [
    (b'{"model":"\xff","choices":[]}',  # not UTF-8: was a UnicodeDecodeError
     b'{"choices":[{"prompt_logprobs":[null,{"2":{"decoded_token":"\xff"}}]}]}'),
    (b'{"x":' + DEEP + b',"model":"m","choices":[]}',  # nested past the recursion limit: was a RecursionError
     b'{"x":' + DEEP + b',"choices":[{"prompt_logprobs":[null,{"2":{"decoded_token":"a"}}]}]}')])
def test_an_answer_not_utf8_or_nested_past_the_recursion_limit_is_an_answer_error(read, named):
    with pytest.raises(AnswerError, match="could not be read"):
        answers.read(read, 0, "m")
    with pytest.raises(AnswerError, match="of another shape than an OpenAI completion"):
        answers.decoded_tokens(named, [1, 2])
    assert answers.decoded_tokens(named.replace(b"\xff", b"a").replace(DEEP, b"1"), [1, 2]) == ["a"]
