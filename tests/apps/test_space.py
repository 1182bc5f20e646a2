"""The demo Space and the metric modules' apps, launched for real on 127.0.0.1 with a tiny random model: their API
through gradio_client, and the Space end to end in headless Chromium (Playwright)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """A Gradio app started as ``python <script>`` with a tiny model; stopped at teardown."""

    def __init__(self, script: Path, model_dir: Path, log: Path, timeout: float = 180) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        data_dir = os.path.abspath(os.environ.get("STYLEEVAL_DATA_DIR", ROOT.parent / "shared" / "data"))
        env = {**os.environ, "STYLEEVAL_DATA_DIR": data_dir,  # the app runs in its own folder: an absolute path
               "STYLEEVAL_MODEL": str(model_dir), "GRADIO_SERVER_NAME": "127.0.0.1",
               "GRADIO_SERVER_PORT": str(self.port), "GRADIO_ANALYTICS_ENABLED": "False"}
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


@pytest.fixture(scope="module")
def space(tiny_model_dir, tmp_path_factory):
    app = App(ROOT / "spaces" / "style_eval_demo" / "app.py", tiny_model_dir, tmp_path_factory.mktemp("space") / "log")
    yield app
    app.stop()


def test_score_api(space):
    from gradio_client import Client

    client = Client(space.url, verbose=False)
    out = client.predict("Send me the report now.", "Could you send the report?", "polite", api_name="/score")
    assert set(out) >= {"content", "style", "autorater", "s_bleu", "s_chrf", "signature"}
    assert out["content"] <= 0 and -1 <= out["style"] <= 1 and 1 <= out["autorater"]["meaning"] <= 5
    with pytest.raises(Exception, match="Please fill in the target style"):
        client.predict("Send me the report now.", "x", "", api_name="/score")


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
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if IN_CI:
            pytest.fail("playwright is not installed")
        pytest.skip("playwright is not installed")
    return sync_playwright


def test_space_in_headless_chromium(space, tmp_path):
    sync_playwright = _browser()
    batch = tmp_path / "batch.csv"
    batch.write_text("source,rewrite,style,system\n"
                     "Send me the report now.,Could you send the report?,polite,A\n"
                     "Send me the report now.,Could you send the invoice?,polite,B\n", encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page()
        page.goto(space.url)
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
        assert "S-BLEU" in page.locator("#readings").inner_text()
        page.screenshot(path=str(tmp_path / "score.png"), full_page=True)

        page.locator("#style textarea").fill("")  # an error the user can act on
        page.locator("#score").click()
        page.get_by_text("Please fill in the target style.").first.wait_for(timeout=30_000)
        time.sleep(6)  # the toast fades; the status stays in the page and the stale result is gone
        assert "Please fill in the target style." in page.locator("#score-status").inner_text()
        assert "LogProb content" not in page.locator("#readings").inner_text()
        page.screenshot(path=str(tmp_path / "error-after-toast.png"), full_page=True)
        page.screenshot(path=str(tmp_path / "error.png"), full_page=True)

        page.get_by_role("tab", name="Batch").click()
        big = tmp_path / "big.csv"  # 3 MB: over the demo's limit, under the upload's; the status line says so
        big.write_text("source,rewrite,style\n" + "Send me the report now.,Could you send it?,polite\n" * 64_000,
                       encoding="utf-8")
        page.locator("#batch-file input[type=file]").set_input_files(str(big))
        page.locator("#batch").click()
        status = page.locator("#batch-status")
        deadline = time.time() + 60
        while "MB" not in status.inner_text() and time.time() < deadline:
            time.sleep(0.2)
        assert "big.csv is 3.2 MB; the demo takes files up to 2 MB" in status.inner_text(), status.inner_text()
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
        assert text.splitlines()[0] == "row,system,source,rewrite,style,content,style_strength,signature"
        assert len(text.splitlines()) == 3 and ",logprob|model:" in text.splitlines()[1]
        means = page.locator("#batch-means").inner_text()
        assert "[" in means and "A" in means and "B" in means  # per system: mean [lo, hi] (cluster)
        page.screenshot(path=str(tmp_path / "batch.png"), full_page=True)

        page.get_by_role("tab", name="Meta-evaluation").click()
        board = page.locator("#leaderboard").last  # Gradio puts the elem_id on the block and on the table
        deadline = time.time() + 30
        while "acc_eq" not in board.inner_text() and time.time() < deadline:
            time.sleep(0.2)
        assert "acc_eq" in board.inner_text() and "spearman" in board.inner_text() and "s_chrf" in board.inner_text()
        page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)
        browser.close()
    assert (tmp_path / "score.png").stat().st_size > 0


@pytest.mark.parametrize("module,endpoint,keys", [("logprob_style", "/score", {"content_preservation"}),
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
    assert metrics == {"s_bleu", "logprob_content"} and fig is not None
    assert {r[1] for r in rows} >= {"all", "politeness", "formality"}


def test_the_metaeval_tab_without_corpora_says_why_in_a_paragraph(tmp_path):
    from styleeval.demo import metaeval_summary, metaeval_unavailable

    with pytest.raises(Exception) as info:
        metaeval_summary(str(tmp_path / "no-mirror"))
    message = metaeval_unavailable(info.value)
    assert message.startswith("**The meta-evaluation is not available in this Space**")
    assert str(tmp_path / "no-mirror") in message and "STYLEEVAL_DATA_DIR" in message
    assert "docs/" not in message and "\n" not in message  # said in the page, not a link to a file of the repo
    app = (ROOT / "spaces" / "style_eval_demo" / "app.py").read_text(encoding="utf-8")
    assert "docs/" not in app and 'gr.Markdown(m_message, elem_id="metaeval-status")' in app


def test_metaeval_leaderboard_rows(data_dir):
    from styleeval.demo import metaeval_leaderboard

    rows = metaeval_leaderboard(str(data_dir), metrics=("s_bleu", "s_chrf"), trials=20)
    assert {(r[0], r[1]) for r in rows} == {(s, m) for s in ("acc_eq", "spearman") for m in ("s_bleu", "s_chrf")}
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
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"^huge.csv is 55.\d MB; the demo takes files up to 2 MB"):
        demo.batch(str(big))
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
        return out if kind == "compare" else (out["content"], out["style"], out["autorater"])

    alone = [run(c) for c in calls]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(run, calls * 3))
    assert together == alone * 3
