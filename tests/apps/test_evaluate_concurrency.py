"""One `evaluate` module object called from many threads answers each call as if it were alone (issue 44, item 3).

evaluate keeps a call's inputs in a per-object Arrow writer (and, unless ``keep_in_memory``, a cache file): two
threads in ``compute`` at once wrote into each other's writer, so calls crashed (TypeError, FileNotFoundError) or
returned another call's scores, and the autorater module killed the process. The autorater part runs in a
subprocess so that a crash is a failed test, not a dead test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

THREADS = 8
ROUNDS = 4
SOURCES = [
    "give me the report now.",
    "the meeting was moved to Tuesday afternoon.",
    "This restaurant was awful, the food was cold.",
    "ur ready 4 the party tonight?",
    "I don't care what you think.",
    "the results are in the attached file",
]
REWRITES = [
    "Could you please send me the report when you have a moment?",
    "The meeting was moved to Tuesday afternoon.",
    "This restaurant was lovely, the food was warm.",
    "Are you ready for the party tonight?",
    "I would value your opinion.",
    "Please find the results in the attached file.",
]
STYLES = ["polite", "formal", "positive", "formal", "polite", "formal"]


def requests_of(thread: int) -> list[dict]:
    """Thread ``thread``'s requests, one a round, each distinct from every other thread's (rows and row count)."""
    out = []
    for round_ in range(ROUNDS):
        size = 1 + (thread + round_) % len(SOURCES)
        start = (3 * thread + round_) % len(SOURCES)
        picked = [(start + k) % len(SOURCES) for k in range(size)]
        out.append({
            "predictions": [f"{REWRITES[i]} ({thread}.{round_})" for i in picked],
            "sources": [SOURCES[i] for i in picked],
            "styles": [STYLES[i] for i in picked],
        })
    return out


def alone_and_together(name: str, model_dir: str, cache_dir: str | None) -> tuple[list, list]:
    """Every thread's requests computed one after another, then by ``THREADS`` threads released together each round
    on one module object: (answers alone, answers together), each a list per thread of one answer per round.
    Without ``cache_dir`` the module keeps its inputs in memory, else in a cache file there (evaluate's default)."""
    import evaluate

    import styleeval

    module = evaluate.load(styleeval.evaluate_module(name), keep_in_memory=cache_dir is None, cache_dir=cache_dir)
    options = {"model_id": model_dir, "device": "cpu"}
    per_thread = [requests_of(t) for t in range(THREADS)]
    alone = [[module.compute(**request, **options) for request in requests] for requests in per_thread]
    together: list[list] = [[] for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)

    def work(thread: int) -> None:
        for request in per_thread[thread]:
            barrier.wait()
            try:
                together[thread].append(module.compute(**request, **options))
            except Exception as err:  # noqa: BLE001 -- a crash is an answer that differs, reported by the test
                together[thread].append(f"{type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return alone, together


def differences(alone: list, together: list, rows_key: str) -> list[str]:
    """The answers that are not exactly the answer alone, or have the wrong number of rows, as lines."""
    wrong = []
    for thread, (mine, theirs) in enumerate(zip(alone, together, strict=True)):
        assert len(theirs) == ROUNDS
        for round_, (expected, got) in enumerate(zip(mine, theirs, strict=True)):
            size = len(requests_of(thread)[round_]["predictions"])
            if got != expected or len(expected[rows_key]) != size:
                wrong.append(f"thread {thread} round {round_}: {str(got)[:120]}")
    return wrong


@pytest.mark.parametrize("keep_in_memory", [True, False], ids=["in-memory", "cache-file"])
def test_one_logprob_module_object_shared_by_eight_threads(tiny_model_dir, tmp_path, keep_in_memory):
    cache_dir = None if keep_in_memory else str(tmp_path)
    alone, together = alone_and_together("logprob_style", str(tiny_model_dir), cache_dir)
    wrong = differences(alone, together, "content")
    assert wrong == [], f"{len(wrong)} of {THREADS * ROUNDS} answers differ from the same call alone: {wrong[:3]}"


def test_one_autorater_module_object_shared_by_eight_threads(tiny_model_dir, tmp_path):
    out = tmp_path / "answers.json"
    done = subprocess.run([sys.executable, __file__, "llm_autorater", str(tiny_model_dir), str(out), str(tmp_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"the threads' process died ({done.returncode}): {done.stderr[-2000:]}"
    answers = json.loads(out.read_text(encoding="utf-8"))
    wrong = differences(answers["alone"], answers["together"], "meaning")
    assert wrong == [], f"{len(wrong)} of {THREADS * ROUNDS} answers differ from the same call alone: {wrong[:3]}"


if __name__ == "__main__":  # the subprocess of the autorater test: conftest's environment is inherited
    module_name, model_path, answers_path, module_cache = sys.argv[1:]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import conftest  # noqa: F401 -- offline hubs and the test cache, as in the test process

    by_thread = alone_and_together(module_name, model_path, module_cache)
    Path(answers_path).write_text(json.dumps(dict(zip(("alone", "together"), by_thread, strict=True))),
                                  encoding="utf-8")
