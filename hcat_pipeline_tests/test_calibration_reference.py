"""The shipped reference label sets: licences, recorded seeded splits, kept apart from the metric heads'
training data, and conformal coverage on their held-out part within the binomial tolerance."""

import math

import polars as pl
import pytest

from hcat_pipeline.calibration import make_splits
from hcat_pipeline.calibration.fitting import fit_calibration
from hcat_pipeline.calibration.reference import REFERENCE_DIR, REFERENCE_SETS, load_reference, reference_manifest
from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.metrics.nli.sets import split_of


@pytest.mark.parametrize("name", sorted(REFERENCE_SETS))
def test_shipped_set_is_licensed_split_as_recorded_and_both_classes(name):
    ref = load_reference(name)
    record = reference_manifest()["sets"][name]
    assert (REFERENCE_DIR / f"LICENSE-{name}.txt").read_text().startswith(("MIT License", "TOXIGEN"))
    assert record["licence"] == "MIT" and ref.height == record["n_items"] and ref["item_id"].n_unique() == ref.height
    assert set(ref["dimension"]) == {REFERENCE_SETS[name].dimension} and set(ref["label"]) == {0, 1}
    # the split is the recorded, seeded make_splits assignment: recomputing it gives the same parts
    again = make_splits(ref["item_id"].to_list(), ref["label"].to_list(), fractions=(0.4, 0.4, 0.2), seed=reference_manifest()["seed"])
    assert again.assignment["split"].to_list() == ref["split"].to_list()
    for part in ("stage1", "stage2", "evaluation"):
        ids = sorted(ref.filter(pl.col("split") == part)["item_id"].to_list())
        assert json_hash(ids) == record["split"]["ids_hash"][part]
    share = ref.group_by("split").len().to_dict(as_series=False)
    assert dict(zip(share["split"], share["len"]))["evaluation"] == pytest.approx(0.2 * ref.height, abs=2)


def test_reference_items_are_outside_the_metric_heads_training_parts():
    fd = load_reference("faithdial")
    assert all(split_of("faithdial", g) == "test" for g in fd["group"].to_list())
    tg = load_reference("toxigen")
    assert set(tg["source_split"]) <= {"val", "test"}
    rec = reference_manifest()["sets"]["toxigen"]
    assert rec["reproduced_split_digest"] == rec["toxicity_head_split_digest"]  # same split as the head recipe's own record


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_coverage_on_held_out_faithdial_within_binomial_tolerance(embedding_model, alpha):
    from hcat_pipeline.metrics.scoring import score_frame

    ref = load_reference("faithdial")
    scored, _ = score_frame(ref.select("query", "contexts", "answer"), ["groundedness_similarity"], embed=embedding_model.embed)
    res = fit_calibration(ref["item_id"].to_list(), scored["groundedness_similarity"].to_list(), ref["label"].to_list(),
                          dimension="groundedness", label_source="reference:faithdial", metric="groundedness_similarity",
                          alpha=alpha, fixed_splits=ref["split"].to_list())  # fmt: skip
    ev = res.evaluation
    n = ev["n"]
    # split conformal: marginal coverage ≥ 1 − α; a held-out sample of n varies by √(α(1−α)/n): allow 3 standard errors
    tol = 3 * math.sqrt(alpha * (1 - alpha) / n)
    assert n == 135 and abs(ev["coverage"]["exact"] - (1 - alpha)) <= tol
    assert ev["brier_after"] < ev["brier_before"] and ev["ece_after"] < ev["ece_before"]
    assert 0.7 < ev["auroc_raw"]["auroc"] < 1.0
    assert sum(int(v) for v in ev["set_sizes"].values()) == n
