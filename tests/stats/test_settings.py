"""TestSettings: the five settings of the system comparison as one checked value (issue 48, item 2)."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from styleeval.errors import UserError
from styleeval.stats import N_BOOT, N_TRIALS, SEED, TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.comparison import compare_systems
from styleeval.systems.report import write_outputs


def test_the_defaults_are_the_comparison_defaults_and_sacrebleus_seed():
    assert dataclasses.astuple(TestSettings()) == ("ar", 0.05, N_BOOT, N_TRIALS, SEED) == ("ar", 0.05, 1000, 10_000,
                                                                                         12345)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("test", "perm", "test must be one of ar, bootstrap, got 'perm'"),
    ("alpha", 1.0, "alpha must be in (0, 1), got 1.0"),
    ("alpha", 0, "alpha must be in (0, 1), got 0"),
    ("n_boot", -1, "n_boot (bootstrap resamples) must be a non-negative integer (0: no CI), got -1"),
    ("trials", 0, "trials must be a positive integer, got 0"),
    ("trials", 2.5, "trials must be a positive integer, got 2.5"),
    ("seed", -1, "seed must be a non-negative integer, got -1"),
    ("seed", True, "seed must be a non-negative integer, got True"),
])
def test_each_setting_is_refused_when_made_naming_it(field, value, message):
    with pytest.raises(UserError) as caught:
        TestSettings(**{field: value})
    assert str(caught.value) == message
    with pytest.raises(UserError) as caught:  # dataclasses.replace makes a new value: checked again
        dataclasses.replace(TestSettings(), **{field: value})
    assert str(caught.value) == message


def test_settings_are_frozen_and_pytest_does_not_collect_them():
    settings = TestSettings(n_boot=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.n_boot = 5  # type: ignore[misc]
    assert TestSettings.__test__ is False and settings == TestSettings(n_boot=0)


def test_evaluate_and_compare_refuse_what_is_not_a_test_settings():
    rows = [{"source": "a b", "rewrite": "a c", "style": "formal", "system": "A"}]
    scores = pd.DataFrame({"row": [0, 1], "system": ["A", "B"], "source_id": ["s", "s"], "m": [1.0, 2.0]})
    for call in (lambda: evaluate_systems(rows, ["s_bleu"], settings={"trials": 10}),
                 lambda: compare_systems(scores, {"m": "m|v:1"}, settings={"trials": 10})):
        with pytest.raises(UserError, match=r"settings must be a styleeval.stats.TestSettings \(test, alpha, n_boot, "
                                            r"trials, seed\), got \{'trials': 10\}"):
            call()


def test_the_report_records_the_settings_given(tmp_path):
    """alpha, the test and the test signature (trials, resamples, seed) in report.json, as the keywords gave them."""
    rows = [{"system": system, "source": f"source {i}", "rewrite": f"{system} rewrite {i % (k + 2)}",
             "style": "formal"} for k, system in enumerate(("A", "B")) for i in range(12)]
    settings = TestSettings(test="bootstrap", alpha=0.01, n_boot=30, trials=40, seed=7)
    report = evaluate_systems(rows, ["s_chrf:agg=mean"], settings=settings, progress=False)
    assert (report.test, report.alpha) == ("bootstrap", 0.01)
    assert report.test_signatures == {
        "s_chrf": "paired_bs|stat:mean|resamples:30|count:two-sided|ci:bs-30|seed:7"}
    paths = write_outputs(report, tmp_path, plots=False)
    recorded = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert (recorded["test"], recorded["alpha"], recorded["test_signatures"]) == ("bootstrap", 0.01,
                                                                              report.test_signatures)
    again = compare_systems(report.scores, report.signatures, settings=settings)
    pd.testing.assert_frame_equal(again.pairs, report.pairs)
