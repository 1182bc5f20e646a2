"""Credentials are sent, never printed: a server URL's user-info of any form (``token@``, ``user:password@``,
``:password@``) is shown as ``***@`` in every message that names the URL (the transport's, the client's with its
row, the backend's at opening, the refusal of a URL that is not http(s)); a metric spec is echoed with its
``api_key=`` value and its URLs' user-info as ``***`` (a spec's option errors)."""

from __future__ import annotations

import base64

import pytest
from _servers import FakeOpenAI, free_port

from styleeval.backends.openai_server import ServerBackend, ServerClient, ServerError
from styleeval.backends.transport import Transport, TransportError
from styleeval.errors import UserError
from styleeval.http_pools import redacted
from styleeval.metrics.registry import get_metric, parse_spec


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI(name="m")
    yield server
    server.close()


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


USER_INFOS = [("sk-live-T0KEN@", b"sk-live-T0KEN:"), ("ann:s3cr%40t@", b"ann:s3cr@t"),
              (":sk-live-T0KEN@", b":sk-live-T0KEN"), ("sk%3Alive:x-oauth-basic@", b"sk:live:x-oauth-basic")]
SECRETS = ("T0KEN", "s3cr", "sk%3Alive", "sk:live", "ann:")


@pytest.mark.parametrize("url, shown", [
    ("http://sk-live-T0KEN@host:8000/v1", "http://***@host:8000/v1"),
    ("https://ann:s3cr%40t@host/v1?x=1", "https://***@host/v1?x=1"),
    ("http://a@b@host/v1", "http://***@host/v1"),  # user-info runs to the last @ before the path
    ("sk-live-T0KEN@host:8000/v1", "***@host:8000/v1"),  # no scheme: refused, printed redacted
    ("ann:s3cr%40t@host/v1", "***@host/v1"),  # no scheme ("ann:" is none: no slash follows)
    ("http:/ann@host/v1", "http:/***@host/v1"),
    ("ht\ttp://ann@host/v1", "http://***@host/v1"),  # urlsplit drops tabs: it reads http://ann@host/v1
    ("ftp://ann:s3cr%40t@host", "ftp://***@host"),
    ("http://host:8000/v1/ann@x", "http://host:8000/v1/ann@x"),  # an @ in the path is no user-info
    ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ("http://[bad@host/v1", "http://***@host/v1"),  # no URL urllib parses: redacted all the same
])
def test_redacted_hides_any_user_info(url, shown):
    assert redacted(url) == shown


@pytest.mark.parametrize("userinfo, sent", USER_INFOS)
def test_a_servers_credentials_are_sent_and_never_printed(fake, userinfo, sent):
    """A user name alone (``http://sk-token@host/v1``: the token) was printed verbatim in every error."""
    fake.reject = lambda request: "refused by the test"
    url = fake.base_url.replace("http://", f"http://{userinfo}")
    messages = []
    for attempt in (
        lambda: ServerClient(url, model="m", max_retries=0).batched_prompt_logprobs([[([1, 2, 3], 2)]]),
        lambda: ServerBackend("another", url, need_tokenizer=False),
        lambda: Transport(f"http://{userinfo}127.0.0.1:{free_port()}/v1", "k", 2.0, 0).request("GET", "/models"),
        lambda: Transport(url.replace("http://", "ftp://"), "k", 2.0, 0),
        lambda: Transport(url.removeprefix("http://"), "k", 2.0, 0),
        lambda: Transport(url.replace("http://", "http://["), "k", 2.0, 0),  # no URL urllib parses
        lambda: Transport(url.replace("/v1", "99999/v1"), "k", 2.0, 0),  # a port out of range
    ):
        with pytest.raises((ServerError, TransportError, UserError)) as caught:
            attempt()
        messages.append(str(caught.value))
    fake.reject = None
    client = ServerClient(url, model="m", max_retries=0)
    assert client.batched_prompt_logprobs([[([1, 2, 3], 2)]])  # the credentials still work
    messages.append(client.base_url)
    assert "refused by the test" in messages[0] and "does not serve 'another'" in messages[1]
    assert "cannot reach" in messages[2] and all("base_url must be an http" in m for m in messages[3:7])
    assert all("***@" in m and not any(s in m for s in SECRETS) for m in messages), messages


def test_basic_credentials_are_sent_from_any_user_info(fake):
    """What is printed as ``***@`` is sent: ``user:password`` as given, a user name alone with an empty password."""
    import http.server

    got = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            got.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    from _servers import serve_http, stop_http

    server = serve_http(Handler)
    try:
        for userinfo, sent in USER_INFOS:
            Transport(f"http://{userinfo}127.0.0.1:{server.server_address[1]}/v1", "k", 2.0, 0).request("GET", "/m")
            assert got[-1] == "Basic " + base64.b64encode(sent).decode()
    finally:
        stop_http(server)


@pytest.mark.parametrize("spec, shown", [
    ("logprob_content:base_url=http://sk-live-T0KEN@127.0.0.1:9/v1:api_key=sk-live-T0KEN:bogus=1",
     "logprob_content:base_url=http://***@127.0.0.1:9/v1:api_key=***:bogus=1"),
    ("logprob_content:base_url=http://ann:s3cr%40t@127.0.0.1:9/v1:as= ",
     "logprob_content:base_url=http://***@127.0.0.1:9/v1:as= "),
    ("logprob_content:api_key = sk-live-T0KEN : timeout=abc", "logprob_content:api_key = *** : timeout=abc"),
    ("autorater_style:api_key=sk-live-T0KEN:mode=nope", "autorater_style:api_key=***:mode=nope"),
    ("logprob_content:http://sk-live-T0KEN@127.0.0.1:9/v1", "logprob_content:http://***@127.0.0.1:9/v1"),
    ("logprob_content:base_url=sk-live-T0KEN@127.0.0.1:9/v1:bogus=1",
     "logprob_content:base_url=***@127.0.0.1:9/v1:bogus=1"),
    ("logprob_content:model=team@org:bogus=1", "logprob_content:model=team@org:bogus=1"),  # no URL: shown whole
])
def test_a_spec_is_echoed_without_its_credentials(spec, shown):
    """An option error echoed the whole spec, ``api_key=`` value and URL password included."""
    with pytest.raises(UserError) as caught:
        get_metric(spec)
    message = str(caught.value)
    assert repr(shown) in message and not any(s in message for s in SECRETS), message


def test_a_spec_that_does_not_parse_is_echoed_without_its_credentials():
    with pytest.raises(UserError) as caught:
        parse_spec("logprob_content:http://ann:s3cr%40t@h/v1")
    assert "'logprob_content:http://***@h/v1'" in str(caught.value) and "s3cr" not in str(caught.value)


KEY = "sk-SECRETKEY-123"


@pytest.fixture()
def echoing(fake):
    """The fake server answering every request 400 with the Authorization header it was sent (issue 59, item 9)."""
    fake.reject = lambda request: f"bad key: {fake.headers.get('Authorization')}"
    yield fake
    fake.reject = None


def test_a_server_echoing_the_authorization_header_gets_no_secret_printed(echoing, tiny_model_dir):
    """Issue 59, item 9: ``error: http://127.0.0.1:46703/v1 answered 400: bad key: Bearer sk-SECRETKEY-123`` on
    main, in Python and the CLI. The configured key, the URL's credentials (base64 and decoded) and any bearer token
    or Basic credentials are blanked out of the server's words."""
    from styleeval import LogProb

    messages = []
    for attempt in (
        lambda: ServerClient(echoing.base_url, model="m", api_key=KEY, max_retries=0).batched_prompt_logprobs(
            [[([1, 2, 3], 2)]]),
        lambda: LogProb(base_url=echoing.base_url, model="m", tokenizer=str(tiny_model_dir), api_key=KEY,
                        max_retries=0).score(["a b"], ["c d"], "formal"),
        lambda: ServerClient(echoing.base_url.replace("http://", "http://ann:s3cr3t-pw@"), model="m",
                             max_retries=0).batched_prompt_logprobs([[([1, 2, 3], 2)]]),
    ):
        with pytest.raises(ServerError) as caught:
            attempt()
        messages.append(str(caught.value))
    assert messages[0].endswith("answered 400: bad key: Bearer ***") and "answered 400: bad key: Bearer ***" in \
        messages[1]
    assert messages[2].endswith("answered 400: bad key: Basic ***"), messages[2]
    assert not any(secret in m for m in messages for secret in (KEY, "SECRETKEY", "s3cr3t", "YW5uOnMzY3IzdC1wdw"))
    echoing.reject = lambda request: "you sent ann:s3cr3t-pw (user ann, password s3cr3t-pw)"
    with pytest.raises(ServerError) as caught:
        ServerClient(echoing.base_url.replace("http://", "http://ann:s3cr3t-pw@"), model="m",
                     max_retries=0).batched_prompt_logprobs([[([1, 2, 3], 2)]])
    assert str(caught.value).endswith("answered 400: you sent *** (user ann, password ***)")  # "ann": too short


def test_the_cli_prints_no_secret_a_server_echoes(echoing, tiny_model_dir, tmp_path, monkeypatch, capsys):
    from styleeval.cli import main

    monkeypatch.setenv("STYLEEVAL_API_KEY", KEY)
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "a b", "rewrite": "c d", "style": "formal"}\n', encoding="utf-8")
    status = main(["score", str(source), "--out", str(tmp_path / "out.jsonl"), "--base-url", echoing.base_url,
                   "--model", "m", "--tokenizer", str(tiny_model_dir), "--max-retries", "0", "-q"])
    err = capsys.readouterr().err
    assert status == 2 and KEY not in err and "SECRETKEY" not in err, err
    assert err.count("\n") == 1 and err.startswith("styleeval score: error: ") and "bad key: Bearer ***" in err


def test_a_served_name_holding_the_key_is_not_signed_with_it(tiny_model_dir):
    """What a report or a log line shows of a server (the signature's model) goes through the same blanking."""
    from styleeval import LogProb

    server = FakeOpenAI(name=f"echo-{KEY}")
    try:
        logprob = LogProb(base_url=server.base_url, tokenizer=str(tiny_model_dir), api_key=KEY, max_retries=0)
        assert logprob.signature.fields["model"].startswith("echo-***@server-") and KEY not in logprob.signature
    finally:
        server.close()
