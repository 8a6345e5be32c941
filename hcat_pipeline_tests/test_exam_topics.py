"""Per-topic exam accuracy and item information (exam paper App. A.5; exam/topics.py) on a case worked by hand."""

import math

import polars as pl
import pytest

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.exam.topics import topic_information, topic_table

EXAM = pl.DataFrame({"question_id": ["q1", "q2", "q3", "q4", "q5", "q6"], "stratum": [0, 0, 0, 0, 1, None],
                     "stratum_label": ["fees", "fees", "fees", "fees", "cards", None]}, schema_overrides={"stratum": pl.Int32})  # fmt: skip
# q1: a=2, b=0, c=0 → I(0) = a²·P(1−P) = 4·0.25 = 1.0; q2: a=1, b=0, c=0.25 → P(0) = 0.625, I = 0.25·0.6 = 0.15;
# q3 pruned (not kept); q4 not in the IRT items; q5 (cards): a=1, b=0, c=0 → I(0) = 0.25
ITEMS = pl.DataFrame({"id": ["q1", "q2", "q3", "q5"], "a": [2.0, 1.0, 3.0, 1.0], "b": [0.0, 0.0, 0.0, 0.0], "c": [0.0, 0.25, 0.0, 0.0],
                      "kept": [True, True, False, True]})  # fmt: skip


def _responses(system_id, correct):
    return [{"system_id": system_id, "llm": "m", "retriever": "bm25", "icl_examples": 0, "question_id": q, "correct": c}
            for q, c in correct.items()]  # fmt: skip


def test_accuracy_with_its_interval_and_information_at_the_takers_ability():
    rows = _responses("t1@icl0", {"q1": True, "q2": True, "q3": False, "q4": True, "q5": None, "q6": False})  # q5 failed
    rows += _responses("t2@icl0", {"q1": False, "q2": False, "q3": False, "q4": False, "q5": True, "q6": True})
    table = topic_table(pl.DataFrame(rows), EXAM, ITEMS, {"t1@icl0": 0.0, "t2@icl0": 1.0})
    t1 = {r["topic"]: r for r in table.filter(pl.col("system_id") == "t1@icl0").to_dicts()}
    assert set(t1) == {"0: fees", "1: cards", "(none)"}  # the question without a stratum is kept, as "(none)"
    fees = t1["0: fees"]
    assert (fees["n"], fees["correct"], fees["accuracy"]) == (4, 3, 0.75)
    assert (fees["ci_low"], fees["ci_high"]) == pytest.approx(wilson_interval(3, 4))
    assert fees["items_kept"] == 2 and fees["mean_information"] == pytest.approx((1.0 + 0.15) / 2)  # q3 pruned, q4 not fitted
    cards = t1["1: cards"]
    assert cards["n"] == 0 and cards["accuracy"] is None and cards["ci_low"] is None  # its one answer failed: no n, no accuracy
    assert cards["mean_information"] == pytest.approx(0.25)
    assert t1["(none)"]["items_kept"] == 0 and t1["(none)"]["mean_information"] is None
    # at θ = 1 the a=2 item gives 4·P(1−P) with P = 1/(1+e^-2)
    p = 1 / (1 + math.exp(-2))
    t2_fees = table.filter((pl.col("system_id") == "t2@icl0") & (pl.col("topic") == "0: fees")).row(0, named=True)
    p2 = 0.25 + 0.75 / (1 + math.exp(-1))
    i2 = 1.0 * (p2 - 0.25) ** 2 / 0.75**2 * (1 - p2) / p2
    assert t2_fees["accuracy"] == 0.0 and t2_fees["mean_information"] == pytest.approx((4 * p * (1 - p) + i2) / 2)


def test_a_taker_without_an_ability_gets_no_information_and_curves_per_topic():
    table = topic_table(pl.DataFrame(_responses("new", {"q1": True})), EXAM, ITEMS, {})
    assert table.row(0, named=True)["theta"] is None and table.row(0, named=True)["mean_information"] is None
    curves = topic_information(EXAM, ITEMS)
    assert curves["0: fees"]["n"] == 2 and curves["1: cards"]["n"] == 1 and curves["All"]["n"] == 3
