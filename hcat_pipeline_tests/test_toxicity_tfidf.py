"""The TF-IDF signal of the toxicity head (metrics/toxicity/tfidf.py): the arrays written to the
npz rebuild exactly the fitted model (no pickle), and the shipped head's signal reads wording."""

import numpy as np

from hcat_pipeline.metrics.toxicity.model import load_toxicity_head
from hcat_pipeline.metrics.toxicity.tfidf import (
    TFIDF_MODEL_KEY,
    fit_tfidf,
    predict_tfidf,
    tfidf_arrays,
    tfidf_logit,
    tfidf_vocabulary,
)

TEXTS = [f"those {g} people are {w} and ruin everything" for g in ("migrant", "foreign", "alien") for w in ("lazy", "filthy", "parasites")] + [
    f"the {g} community opened a {w} this week" for g in ("migrant", "local", "church") for w in ("bakery", "library", "clinic")
]
LABELS = np.array([1] * 9 + [0] * 9)


def test_arrays_round_trip_through_npz_reproduce_the_fitted_model(tmp_path):
    fitted = fit_tfidf(TEXTS, LABELS, c=1.0)
    arrays = tfidf_arrays(fitted)
    assert all(a.dtype != object for a in arrays.values())
    np.savez_compressed(tmp_path / "h.npz", **arrays)
    with np.load(tmp_path / "h.npz", allow_pickle=False) as z:
        head = {k: z[k] for k in z.files}
    new = ["those alien people are a burden", "the library opened a clinic", "ünïcode wörds — not in the vocabulary"]
    np.testing.assert_allclose(tfidf_logit(new, head), predict_tfidf(fitted, new), rtol=1e-5, atol=1e-5)
    assert TFIDF_MODEL_KEY in head  # rebuilt once, cached in the head dict
    assert tfidf_logit([], head).shape == (0,)
    ordered = tfidf_vocabulary(head, "word")
    assert ordered == sorted(fitted[0]["word"].vocabulary_, key=fitted[0]["word"].vocabulary_.get)
    hate, clean = tfidf_logit(["those foreign people are parasites"], head)[0], tfidf_logit(["the local community opened a bakery"], head)[0]
    assert hate > 0 > clean


def test_shipped_head_tfidf_signal_separates_coded_hate_from_neutral_mentions():
    head = load_toxicity_head()
    coded = ["these people breed like rabbits and live off our welfare", "they will replace us if we keep opening the borders"]
    neutral = ["the community centre offers free language classes for new arrivals", "the function returns a sorted copy of the array"]
    hi, lo = tfidf_logit(coded, head), tfidf_logit(neutral, head)
    assert hi.min() > lo.max(), (hi, lo)
