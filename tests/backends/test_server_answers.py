"""Reading vLLM's prompt log-probabilities: the fast tail reader equals decoding the whole answer."""

from __future__ import annotations

import json

from styleeval.backends.openai_server import _tail_logprobs


def _answer(prompts, compact=True, extra_top=None):
    choices = []
    for i, prompt in enumerate(prompts):
        entries = [None]
        for k, token in enumerate(prompt[1:], start=1):
            entry = {str(token): {"logprob": -0.25 * k, "rank": 2, "decoded_token": '}} {"7":{"logprob":-1}'}}
            if extra_top is not None and k == extra_top:  # the actual token is not the top one: two keys
                entry = {"999": {"logprob": -0.01, "rank": 1, "decoded_token": "x"}, **entry}
            entries.append(entry)
        choices.append({"index": i, "text": "a", "prompt_logprobs": entries, "stop_reason": None})
    return json.dumps({"id": "x", "choices": choices}, separators=(",", ":") if compact else None).encode()


def test_the_tail_reader_equals_the_whole_answer():
    prompts = [[5, 11, 12, 13, 14], [5, 21, 22]]
    for compact in (True, False):
        got = _tail_logprobs(_answer(prompts, compact), prompts, [2, 1])
        assert got == [[-0.75, -1.0], [-0.5]]  # the last tokens' entries, read as decoding would
    assert _tail_logprobs(_answer(prompts), prompts, [0, 0]) == [[], []]
    # anything unexpected goes to the full decoding (and its checks): a token that is not the prompt's, a missing
    # choice, the actual token listed after the top one
    assert _tail_logprobs(_answer(prompts), [[5, 11, 12, 13, 99], [5, 21, 22]], [2, 1]) is None
    assert _tail_logprobs(_answer(prompts[:1]), prompts, [2, 1]) is None
    assert _tail_logprobs(_answer(prompts, extra_top=4), prompts, [2, 1]) is None


def test_the_tail_reader_widens_its_window_for_long_entries():
    """The first window is sized from the choice's mean entry: tail entries far longer than the mean (long decoded
    tokens) are still all read, by widening it."""
    prompt = list(range(100, 300))
    entries = [None] + [{str(t): {"logprob": -0.001 * k, "rank": 1, "decoded_token": "x" * (3000 if k > 194 else 1)}}
                        for k, t in enumerate(prompt[1:], start=1)]
    answer = json.dumps({"choices": [{"index": 0, "prompt_logprobs": entries}]}, separators=(",", ":")).encode()
    assert _tail_logprobs(answer, [prompt], [5]) == [[-0.195, -0.196, -0.197, -0.198, -0.199]]
