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
    assert got.content == pytest.approx(want.content, abs=1e-5)
    # signed as the class that computed (registered nowhere, of no distribution: its module), never as the kind it
    # declares (issue 59: a plugin inheriting the local backend's kind signed as it)
    module = TwoCallBackend.__module__
    assert f"|backend:{module}.TwoCallBackend@{module}|" in got.signature and "backend:plain" not in got.signature
    a = Autorater(backend=local, progress=False).rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)
    b = Autorater(backend=plain, progress=False).rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)  # no trees
    assert b.meaning == pytest.approx(a.meaning, abs=1e-4) and b.style == pytest.approx(a.style, abs=1e-4)
    probs = plain.candidate_logprobs([[1, 2, 3], [4, 5]], [7, 8, 9])  # the interface's default from token_logprobs
    assert torch.allclose(probs, local.candidate_logprobs([[1, 2, 3], [4, 5]], [7, 8, 9]), atol=1e-5)


BACKEND_NAMES = ("base_url", "client")
BACKEND_TYPES = ("ServerError", "ServerBackend", "LocalBackend", "ServerClient", "ScoringEngine")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # opts.get("base_url"), opts["base_url"]
        return node.value
    return None


def _branch_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every branch on the backend: ``base_url`` / ``client`` (a name, an attribute or a key such as
    ``opts.get("base_url")``) read in the test of an if, a conditional expression, a while, an assert or a boolean
    operation; an ``except`` of one backend's error; an ``isinstance`` check against a backend's class."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, ast.BoolOp):
            tests = node.values
        else:
            tests = []
        for test in tests:
            for inner in ast.walk(test):
                if _name(inner) in BACKEND_NAMES:
                    found.append((node.lineno, _name(inner)))
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            for inner in ast.walk(node.type):
                if _name(inner) in BACKEND_TYPES:
                    found.append((node.lineno, f"except {_name(inner)}"))
        if isinstance(node, ast.Call) and _name(node.func) in ("isinstance", "issubclass") and len(node.args) == 2:
            for inner in ast.walk(node.args[1]):
                if _name(inner) in BACKEND_TYPES:
                    found.append((node.lineno, f"isinstance {_name(inner)}"))
    return sorted(set(found))


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
    caught = _branch_names(ast.parse(  # it can fail: each form is found
        "if base_url:\n    pass\nx = 1 if self.client is None else 2\ny = opts.get('base_url') or 3\n"
        "try:\n    pass\nexcept (ValueError, ServerError):\n    pass\nz = isinstance(b, LocalBackend)\n"))
    assert [what for _, what in caught] == ["base_url", "client", "base_url", "except ServerError",
                                            "isinstance LocalBackend"]
