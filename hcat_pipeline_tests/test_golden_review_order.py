"""Issue 59: the review order learns this corpus's soundness from the reviewer's decisions, the validator its prior."""

import numpy as np

from hcat_pipeline.golden.review_order import SoundnessModel, features, in_sight, next_case, simulate


def _corpus(n: int = 60, seed: int = 0):
    """Cases whose soundness follows one embedding direction the validator does not see (its score is noise)."""
    rng = np.random.default_rng(seed)
    vec = rng.normal(size=(n, 12))
    sound = (vec[:, 0] > 0).astype(int)
    score = np.clip(rng.uniform(0.3, 0.7, n), 0.01, 0.99)
    return features(score, vec), score, sound


def test_before_any_decision_the_model_is_the_validator():
    X, score, _ = _corpus()
    p = SoundnessModel().fit(X[:0], []).predict_proba(X)[:, 1]
    assert np.allclose(p, score, atol=1e-3)


def test_decisions_teach_it_what_the_validator_misses():
    X, score, y = _corpus()
    p = SoundnessModel().fit(X[:30], y[:30]).predict_proba(X[30:])[:, 1]
    right = ((p > 0.5) == y[30:].astype(bool)).mean()
    assert right >= 0.8, right  # the validator's own score is at chance here


def test_the_order_is_informative_first_then_likely_sound_and_beats_random_to_the_target():
    p = np.array([0.9, 0.52, 0.1, 0.7])
    undecided = np.ones(4, dtype=bool)
    assert next_case(p, undecided, n_decisions=0, accepted=0, target=2) == 1  # nearest 0.5 during the warmup
    assert next_case(p, undecided, n_decisions=10, accepted=0, target=2) == 0  # then the most likely sound
    assert not in_sight(0, 5, p) and in_sight(3, 5, p)
    X, score, y = _corpus(80, seed=3)
    learnt = simulate(X, score, y, 20, "learnt")["decisions"]
    rand = np.mean([simulate(X, score, y, 20, "random", seed=s)["decisions"] for s in range(50)])
    assert learnt < rand, (learnt, rand)
