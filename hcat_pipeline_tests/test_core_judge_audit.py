"""Judge validation logic: κ vs human labels and the validated flag, position-swap audit (with deterministic
fake judges), length bias at equal human label, self-preference; held-out split of the reference items."""

import numpy as np
import pytest

from hcat_pipeline.judge.audit import judge_agreement, length_bias, position_bias, self_preference, wilson
from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR, faithdial_items, sample_items, split_of, toxigen_items
from hcat_pipeline.judge.scoring import JudgeConfig, judge_pair_both_orders
from hcat_pipeline.judge.validation import validate_judge
from hcat_pipeline.resources.llm import LLMResult
from hcat_pipeline_tests.conftest import require_validation_dir


def _kappa_by_hand(a, b):
    a, b = np.asarray(a), np.asarray(b)
    po = (a == b).mean()
    pe = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    return (po - pe) / (1 - pe)


def test_kappa_matches_a_hand_computation_and_the_floor_decides_validated():
    judge = [1, 1, 0, 0, 1, 0, 1, 1, 0, 0] * 3
    human = [1, 1, 0, 0, 1, 0, 1, 0, 1, 0] * 3
    r = judge_agreement(judge, human, "binary", kappa_floor=0.4, min_items=20)
    assert r["kappa"] == pytest.approx(_kappa_by_hand(judge, human), abs=1e-4)
    assert r["n"] == 30 and r["accuracy"] == pytest.approx(0.8)
    assert r["ci_low"] < r["kappa"] < r["ci_high"]
    assert r["validated"] is True and r["reason"] is None
    strict = judge_agreement(judge, human, "binary", kappa_floor=0.7, min_items=20)
    assert strict["validated"] is False and "< floor 0.7" in strict["reason"]
    # the CI rule is stricter than the point rule at the same floor
    ci = judge_agreement(judge, human, "binary", kappa_floor=0.4, min_items=20, rule="ci_low")
    assert ci["validated"] is (ci["ci_low"] >= 0.4)
    assert ci["ci_low"] < 0.6


def test_too_few_items_missing_judgements_and_one_category_are_not_validated():
    few = judge_agreement([1, 0, 1, 0], [1, 0, 1, 0], "binary", kappa_floor=0.4, min_items=20)
    assert few["kappa"] == 1.0 and few["validated"] is False and "min_items" in few["reason"]
    missing = judge_agreement([1, None, 0, 1], [1, 0, None, 1], "binary", min_items=1)
    assert (missing["n"], missing["n_missing"]) == (2, 2)
    assert missing["kappa"] is None and missing["validated"] is False and "undefined" in missing["reason"]
    assert judge_agreement([None], [1])["reason"].startswith("no item")


def test_ordinal_labels_use_quadratic_weights():
    judge = [0, 1, 2, 3, 4] * 5
    near = [min(4, j + 1) for j in judge]  # off by one
    far = [4 - j for j in judge]  # reversed
    r_near = judge_agreement(judge, near, "ordinal", min_items=5)
    r_far = judge_agreement(judge, far, "ordinal", min_items=5)
    assert r_near["method"] == "cohen_quadratic"
    assert r_near["kappa"] > 0.7 > 0 > r_far["kappa"]


class PositionFake:
    """A deterministic pairwise judge: ``mode="first"`` always prefers response A (pure position bias);
    ``mode="content"`` prefers the response that contains the word 'correct' wherever it is shown."""

    model_name = "fake"

    def __init__(self, mode):
        self.mode, self.calls = mode, 0

    def fingerprint(self):
        return "local/fake@sha256:0"

    def generate(self, messages, json_schema=None, **kw):
        self.calls += 1
        text = messages[-1]["content"]
        a = text.split("RESPONSE A:")[1].split("RESPONSE B:")[0]
        winner = "A" if self.mode == "first" or "correct" in a else "B"
        return LLMResult("", {"justification": "-", "winner": winner}, "local", "fake", 0.0, 1, 1, 0.0, 1)


PAIRS = [{"pair_id": f"p{i}", "x": f"the correct answer {i}", "y": f"a wrong answer {i}", "query": "q", "contexts": ("k",),
          "human": "X"} for i in range(8)]  # fmt: skip


def test_position_swap_audit_catches_a_judge_that_always_picks_the_first_response():
    fake = PositionFake("first")
    rows = judge_pair_both_orders(PAIRS, fake, "groundedness", JudgeConfig())
    assert fake.calls == 16 and all(r["verdict_ab"] == r["verdict_ba"] == "A" for r in rows)
    r = position_bias(rows, max_flip_rate=0.2)
    assert r["flip_rate"] == 1.0 and r["first_position_rate"] == 1.0 and r["flagged"] is True
    assert r["accuracy_vs_human"] == 0.5
    assert r["flip_rate_ci"] == wilson(8, 8)


def test_position_swap_audit_passes_an_order_robust_judge():
    rows = judge_pair_both_orders(PAIRS, PositionFake("content"), "groundedness", JudgeConfig())
    r = position_bias(rows)
    assert r["flip_rate"] == 0.0 and r["first_position_rate"] == 0.5 and r["flagged"] is False
    assert r["accuracy_vs_human"] == 1.0 and r["n_human"] == 8


def test_position_bias_counts_failed_calls_and_ties():
    rows = [{"verdict_ab": "tie", "verdict_ba": "tie"}, {"verdict_ab": "A", "verdict_ba": "A"}, {"verdict_ab": None, "verdict_ba": "B"}]
    r = position_bias(rows)
    assert (r["n"], r["n_errors"], r["flips"]) == (2, 1, 1)
    assert r["n_non_tie"] == 2 and r["first_position_rate"] == 1.0


def test_length_bias_is_measured_at_equal_human_label():
    rng = np.random.default_rng(0)
    n = 60
    human = np.repeat([0, 1], n // 2)
    lengths = np.where(human == 1, rng.integers(40, 80, n), rng.integers(5, 30, n))  # good answers are longer
    # a judge that follows the label only: length differs between classes but not within -> no bias
    fair = length_bias(list(human * 3 + 1 + rng.integers(0, 2, n)), list(lengths), list(human))
    assert abs(fair["rho"]) < 0.3 and fair["flagged"] is False
    # a judge whose score follows length within each class -> bias
    biased_scores = [1 + int(4 * (ln - lengths[human == h].min()) / max(1, np.ptp(lengths[human == h])))
                     for ln, h in zip(lengths, human, strict=True)]  # fmt: skip
    biased = length_bias(biased_scores, list(lengths), list(human))
    assert biased["rho"] > 0.8 and biased["ci_low"] > 0 and biased["flagged"] is True
    assert set(biased["by_label"]) == {"0", "1"} and biased["by_label"]["1"]["n"] == 30


def test_self_preference_gap_at_equal_label_and_not_measurable_without_own_family():
    human = [0, 0, 0, 0, 1, 1, 1, 1] * 4
    fams = ["qwen", "gpt", "qwen", "gpt"] * 8
    scores = [h * 2 + 2 + (1 if f == "qwen" else 0) for h, f in zip(human, fams, strict=True)]
    r = self_preference(scores, human, fams, "qwen", max_gap=0.5)
    assert r["gap"] == pytest.approx(1.0) and r["flagged"] is True and r["n_own"] == 16
    none = self_preference(scores, human, ["gpt"] * 32, "qwen")
    assert none["gap"] is None and "not measurable" in none["reason"]


def test_validate_judge_marks_dimensions_without_labels_and_below_floor_not_validated():
    from hcat_pipeline.judge.data import LabelledItem

    # a fake judge that gives 5 to every answer containing "ok": agrees with humans exactly
    class Fake(PositionFake):
        def generate(self, messages, json_schema=None, **kw):
            text = messages[-1]["content"].split("RESPONSE:")[-1]
            return LLMResult("", {"justification": "-", "score": 5 if "ok" in text else 1, "confidence": "high"}, "local", "f", 0.0, 1, 1, 0.0, 1)

    items = [LabelledItem(f"i{i}", "groundedness", i % 2, "ok" if i % 2 else "no", "q", ("k",), "gpt2", "reference:faithdial/x", "test")
             for i in range(24)]  # fmt: skip
    res = validate_judge(Fake("content"), items, config=JudgeConfig(dimensions=("groundedness", "safety")), min_items=20)
    v = {r["dimension"]: r for r in res["validation"].iter_rows(named=True)}
    assert v["groundedness"]["validated"] is True and v["groundedness"]["kappa"] == 1.0 and v["groundedness"]["n"] == 24
    assert v["safety"]["validated"] is False and "no human labels" in v["safety"]["reason"]
    assert res["validation"]["judge_config_hash"].n_unique() == 1
    strict = validate_judge(Fake("content"), items[:10], config=JudgeConfig(dimensions=("groundedness",)), min_items=20)
    assert strict["validation"]["validated"][0] is False


def test_reference_items_are_labelled_as_documented_and_split_stably():
    require_validation_dir(DEFAULT_VALIDATION_DIR)
    f = faithdial_items()
    t = toxigen_items()
    assert {i.label for i in f} == {0, 1} and {i.label for i in t} == {0, 1}
    assert all(i.split == split_of(i.item_id) for i in f + t)
    assert 0.1 < sum(i.split == "dev" for i in f) / len(f) < 0.3
    assert len({i.item_id for i in f}) == len(f)
    s1, s2 = sample_items(f, 5, seed=1), sample_items(f, 5, seed=1)
    assert s1 == s2 and all(i.split == "test" for i in s1) and sorted(i.label for i in s1) == [0] * 5 + [1] * 5
    assert {i.source.split("/")[0] for i in t} == {"reference:toxigen"}


def test_fast_bootstrap_kappa_equals_scikit_learn():
    from sklearn.metrics import cohen_kappa_score

    from hcat_pipeline.judge.audit import kappa_from_confusion

    rng = np.random.default_rng(3)
    for k, weights in ((2, None), (5, None), (5, "quadratic")):
        a, b = rng.integers(0, k, 40), rng.integers(0, k, 40)
        b[:20] = a[:20]
        assert kappa_from_confusion(a, b, k, weights) == pytest.approx(cohen_kappa_score(a, b, labels=list(range(k)), weights=weights))
