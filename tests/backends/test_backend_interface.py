"""The Backend interface: options that do not apply are errors, any backend with the two calls serves LogProb and the
autorater (capabilities are asked for, never types), and nothing outside backends/ branches on the backend."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from conftest import JUDGE_REWRITES, JUDGE_SOURCES, JUDGE_STYLE

from styleeval import Autorater, LogProb
from styleeval.backends import Backend, Identity, open_backend
from styleeval.backends.local import LocalBackend

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("options, name", [
    ({"max_concurrency": 4}, "max_concurrency"), ({"timeout": 3.0}, "timeout"), ({"api_key": "k"}, "api_key"),
])
def test_server_options_on_a_local_model_are_errors(tiny_model, tiny_tokenizer, options, name):
    with pytest.raises(ValueError, match=rf"^{name}: not an option of the local backend"):
        LogProb(tiny_model, tokenizer=tiny_tokenizer, **options)


@pytest.mark.parametrize("options, name", [
    ({"batch_tokens": 64}, "batch_tokens"), ({"head_dtype": "bfloat16"}, "head_dtype"),
    ({"pack_prompts": False}, "pack_prompts"), ({"device": "cpu"}, "device"), ({"dtype": "float32"}, "dtype"),
])
def test_local_options_on_a_server_are_errors_before_any_request(options, name):
    with pytest.raises(ValueError, match=rf"^{name}: not an option of the openai backend"):
        LogProb("judge", base_url="http://127.0.0.1:9/v1", **options)  # nothing listens there: never contacted


def test_a_given_backend_excludes_backend_options(tiny_model, tiny_tokenizer):
    backend = open_backend(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    with pytest.raises(ValueError, match="batch_tokens: a backend is given"):
        LogProb(backend=backend, batch_tokens=64)
    assert LogProb(backend=backend, progress=False).signature == LogProb(tiny_model, tokenizer=tiny_tokenizer,
                                                                         progress=False).signature


class TwoCallBackend(Backend):
    """A backend with nothing but the two required calls (what a new server backend starts from)."""

    kind = "plain"

    def __init__(self, inner: LocalBackend) -> None:
        self.inner, self.tokenizer = inner, inner.tokenizer

    @property
    def identity(self) -> Identity:
        return Identity("plain", "test", "float32", self.kind)

    @property
    def max_length(self):
        return self.inner.max_length

    def token_logprobs(self, prompts, continuations, group=1):
        return self.inner.engine.token_logprobs(prompts, continuations)

    def generate(self, prompts, decoding, seeds, stop_ids=()):
        return self.inner.generate(prompts, decoding, seeds, stop_ids)


def test_any_backend_serves_logprob_and_the_autorater(tiny_model, tiny_tokenizer):
    local = open_backend(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    plain = TwoCallBackend(local)
    assert not plain.capabilities
    want = LogProb(backend=local, progress=False).score(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)
    got = LogProb(backend=plain, progress=False).score(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)
    assert got.content == pytest.approx(want.content, abs=1e-5) and "backend:plain" in got.signature
    a = Autorater(backend=local, progress=False).rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)
    b = Autorater(backend=plain, progress=False).rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)  # no trees
    assert b.meaning == pytest.approx(a.meaning, abs=1e-4) and b.style == pytest.approx(a.style, abs=1e-4)
    probs = plain.candidate_logprobs([[1, 2, 3], [4, 5]], [7, 8, 9])  # the interface's default from token_logprobs
    assert torch.allclose(probs, local.candidate_logprobs([[1, 2, 3], [4, 5]], [7, 8, 9]), atol=1e-5)


def _branch_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every ``base_url`` / ``client`` read in the test of an if, a conditional expression, a while
    or an assert."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            for inner in ast.walk(node.test):
                name = inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(inner, ast.Attribute) \
                    else None
                if name in ("base_url", "client"):
                    found.append((node.lineno, name))
    return found


def test_nothing_outside_backends_branches_on_the_backend():
    """The choice is made once, in backends/: no condition on base_url or on a client anywhere else."""
    offenders = []
    for folder in ("src/styleeval", "metrics", "spaces", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if "backends" in path.parts:
                continue
            for line, name in _branch_names(ast.parse(path.read_text(encoding="utf-8"))):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert offenders == []
    assert _branch_names(ast.parse("if base_url:\n    pass\nx = 1 if self.client is None else 2"))  # it can fail
