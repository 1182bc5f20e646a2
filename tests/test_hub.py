"""The Hub probe (styleeval.hub.check_downloadable) through huggingface_hub's own call and errors, against a local
fake Hub endpoint answering as the Hub does (HF_ENDPOINT): a mistyped id is "not found" although the Hub answers 401
to a client not logged in, a gated model names its licence, offline mode (either variable) and an unreachable Hub
are said in one line, each with at most one request bounded by the probe's 1.5 s and decided once per process."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest
from _servers import serve_http, stop_http

from styleeval import hub
from styleeval.hub import ModelLoadError, check_downloadable

GATED = "meta-llama/Llama-3.2-1B-Instruct"


class FakeHub:
    """``HEAD /<repo>/resolve/main/config.json`` as the Hub answers a client that is not logged in: a public
    repository 200, a gated one 401 ``GatedRepo``, any other id 401 ``RepoNotFound``; ``mirror/...`` ids a bare 404
    (a mirror without the Hub's error codes)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.probes: list[float | None] = []
        """The timeout of each metadata request huggingface_hub was asked for (the ``online`` fixture records them)."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                fake.requests.append(self.path)
                repo = self.path.removeprefix("/").split("/resolve/")[0]
                if repo == "someone/public":
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", "0" * 40)
                    self.send_header("ETag", '"abc"')
                    self.send_header("Content-Length", "2")
                elif repo == GATED:
                    self.send_response(401)
                    self.send_header("X-Error-Code", "GatedRepo")
                    self.send_header("X-Error-Message", f"Access to model {repo} is restricted. You must have access "
                                                        "to it and be authenticated to access it. Please log in.")
                elif repo.startswith("mirror/"):
                    self.send_response(404)
                else:
                    self.send_response(401)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("X-Error-Message", "Repository not found")
                self.send_header("Content-Length", "0") if repo != "someone/public" else None
                self.end_headers()

        self.server = serve_http(Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        stop_http(self.server)


@pytest.fixture(scope="module")
def fake_hub():
    server = FakeHub()
    yield server
    server.close()


@pytest.fixture
def online(fake_hub, monkeypatch, tmp_path):
    """The probe asks the fake Hub: nothing cached, online, every decision forgotten."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(hub, "_REACHABLE", {})
    monkeypatch.setattr(hub, "available_here", lambda name: False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name in hub.OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", fake_hub.endpoint)
    fake_hub.requests.clear()
    fake_hub.probes.clear()
    import huggingface_hub

    real = huggingface_hub.get_hf_file_metadata

    def recorded(*args, **kwargs):  # the probe's one call, and the bound it sets
        fake_hub.probes.append(kwargs.get("timeout"))
        return real(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", recorded)
    return fake_hub


def _decided(online: FakeHub, name: str) -> str | None:
    """The probe's decision on ``name``, taken without waiting on the Hub client: at most one metadata request,
    bounded by PROBE_SECONDS, and at most one request reaching the Hub (no retries)."""
    probes, requests = len(online.probes), len(online.requests)
    try:
        check_downloadable(name)
        message = None
    except ModelLoadError as err:
        message = str(err)
    assert online.probes[probes:] in ([], [hub.PROBE_SECONDS]) and hub.PROBE_SECONDS == 1.5, online.probes
    assert len(online.requests) - requests <= 1, online.requests
    return message


def test_a_mistyped_id_is_not_found_although_the_hub_answers_401(online):
    message = _decided(online, "meta-llama/Llama-3.2-1B-Instruk")
    assert message is not None and "not found on the Hub" in message and "gated" not in message
    assert _decided(online, "mirror/missing").endswith("check the id (a private repository also needs `hf auth login` or "
                                               "HF_TOKEN), or pass a local path")


def test_a_gated_model_says_where_to_accept_its_licence(online):
    assert _decided(online, GATED) == (
        f"cannot load model '{GATED}': it is gated: accept its licence at {online.endpoint}/{GATED}, then log in "
        "(`hf auth login` or HF_TOKEN); an ungated model that works now: --model qwen-1.5b (Qwen/Qwen2.5-1.5B-Instruct)")


def test_a_public_model_passes_and_each_id_is_asked_once_per_process(online):
    assert _decided(online, "someone/public") is None
    for _ in range(3):
        assert _decided(online, "someone/public") is None
        assert "not found" in _decided(online, "someone/typo")
    assert sorted(online.requests) == ["/someone/public/resolve/main/config.json",
                                       "/someone/typo/resolve/main/config.json"]


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_mode_is_said_without_a_request(online, monkeypatch, variable):
    monkeypatch.setenv(variable, "1")
    assert f"the Hub cannot be reached ({variable} is set): download it once with network access (unset " \
           f"{variable})" in _decided(online, "someone/public")
    assert online.requests == []


@pytest.mark.parametrize("variable", ["HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"])
def test_the_other_clients_offline_switches_do_not_keep_a_model_offline(online, monkeypatch, variable):
    monkeypatch.setenv(variable, "1")  # datasets' and evaluate's: the Hub probe of a model never reads them
    assert _decided(online, "someone/public") is None and len(online.requests) == 1


def test_huggingface_hubs_own_offline_flag_is_honoured(online, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # set when it was imported
    assert "HF_HUB_OFFLINE is set" in _decided(online, "someone/public") and online.requests == []


def test_an_unreachable_hub_is_said_in_one_line(online, monkeypatch):
    from _servers import free_port

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    message = _decided(online, "someone/public")
    assert message is not None and "the Hub cannot be reached" in message and "the connection failed, ConnectError" in message \
        and "no answer within" not in message  # refused at once: not a timeout


def test_a_bare_name_is_asked_of_the_hub_once_and_a_close_preset_suggested(online):
    """A name without an owner (a mistyped preset: ``tiny-randm``) is a Hub id too (the Hub's oldest: ``gpt2``):
    the probe decides it with one request, not transformers with its retries, and names the preset it is close to."""
    message = _decided(online, "tiny-randm")
    assert message is not None and message.startswith(
        "cannot load model 'tiny-randm' (did you mean the preset tiny-random?): not found on the Hub")
    assert online.requests == ["/tiny-randm/resolve/main/config.json"]


def test_the_did_you_mean_names_a_close_preset_never_the_one_given():
    assert hub.did_you_mean("tiny-randm") == " (did you mean the preset tiny-random?)"
    assert hub.did_you_mean("smollm2") == " (did you mean the preset smollm2-135m?)"  # the GGUF preset too
    assert hub.did_you_mean("Qwen-1.5") == " (did you mean the preset qwen-1.5b (Qwen/Qwen2.5-1.5B-Instruct)?)"
    assert hub.did_you_mean("meta-llama/Llama-3.2-1B-Instruk") == \
        " (did you mean the preset 1b (meta-llama/Llama-3.2-1B-Instruct)?)"  # close to the id a preset stands for
    for given in ("tiny-random", "1B", GATED, "someone/some-model", "gpt2"):
        assert hub.did_you_mean(given) == "", given
    from styleeval.gguf_files import PRESETS as GGUF_PRESETS

    assert set(hub.preset_names()) == {*GGUF_PRESETS, *hub.PRESETS, hub.TINY_RANDOM} == {
        "smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "1b", "3b", "8b", "qwen-1.5b",
        "tiny-random"}  # those `styleeval list models` shows


def test_an_unreachable_hub_with_a_bare_name_is_one_line_with_the_preset_it_is_close_to(online, monkeypatch):
    from _servers import free_port

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    message = _decided(online, "tiny-randm")
    assert message is not None and message.startswith(
        "cannot load model 'tiny-randm' (did you mean the preset tiny-random?): not in the local cache and the Hub "
        "cannot be reached (http://127.0.0.1:")
    assert "HF_HUB_OFFLINE" not in message and "or pass a local path (or the preset tiny-random" in message
