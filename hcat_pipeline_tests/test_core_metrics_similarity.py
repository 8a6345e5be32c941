import numpy as np
import pytest

from hcat_pipeline.metrics.similarity import cross_lingual_similarity, hierarchical_consistency_report, semantic_similarity

E = np.eye(4, dtype=np.float32)


def test_semantic_similarity_aligned_and_max_alignment():
    out = semantic_similarity(E[[0, 1]], np.array([[1, 0, 0, 0], [0, 0.6, 0.8, 0]], np.float32))
    assert out["alignment"] == "index"
    assert out["sentence_scores"] == pytest.approx([1.0, 0.6])
    assert out["mean_similarity"] == pytest.approx(0.8) and out["min_similarity"] == pytest.approx(0.6)
    # unequal counts: what the answer says of the reference (per answer sentence, best match) and what of the reference
    # it says (each reference sentence matched once), their harmonic mean
    out = semantic_similarity(E[[0, 1, 2]], E[[2, 0]])
    assert out["alignment"] == "assignment" and out["aligned_reference"] == [1, -1, 0]
    assert out["sentence_scores"] == pytest.approx([1.0, 0.0, 1.0]) and out["mean_similarity"] == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))
    # an answer repeating the one sentence it got right does not inflate the score (argmax alignment gave 1.0)
    repeated = semantic_similarity(E[[0, 0, 0]], E[[0, 1, 2]])
    assert repeated["alignment"] == "index" and repeated["mean_similarity"] == pytest.approx(1 / 3)
    padded = semantic_similarity(E[[0, 0, 0, 0]], E[[0, 1]])  # the right sentence four times cannot stand in for the other
    assert padded["mean_similarity"] == pytest.approx(2 * 1 * 0.5 / 1.5) and padded["aligned_reference"].count(0) == 1  # argmax: 1.0
    short = semantic_similarity(E[[0]], E[[0, 1, 2]])  # one of three reference sentences said
    assert short["sentence_scores"] == pytest.approx([1.0]) and short["mean_similarity"] == pytest.approx(2 * (1 / 3) / (4 / 3))
    assert semantic_similarity(E[:0], E) is None


VECS = {
    "Grow retail deposits": (1, 0, 0, 0),
    "Launch a savings app": (0.8, 0.6, 0, 0),
    "Launch a mobile savings app": (0.78, 0.62, 0, 0),
    "Repaint the head office": (0, 0, 1, 0),
}


def embed(texts):
    v = np.array([VECS[t] for t in texts], np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_hierarchical_consistency_report():
    plan = {
        "goal": {"text": "Grow retail deposits"},
        "initiatives": [{"text": "Launch a savings app"}, {"text": "Launch a mobile savings app"}, {"text": "Repaint the head office"}],
    }
    calls = []

    def contradiction(premises, hypotheses):
        calls.append(list(zip(premises, hypotheses)))
        return np.array([0.9 if "mobile" in p else 0.1 for p in premises])

    rep = hierarchical_consistency_report(plan, embed, contradiction=contradiction)
    align = rep["parent_child_alignment"]
    assert [round(s["similarity"], 2) for s in align["scores"]] == [0.8, 0.78, 0.0]
    assert align["drifting"] == ["Repaint the head office"]  # scope drift: below 0.70
    (pair,) = rep["redundant_pairs"]  # the two app initiatives (cos ≈ 0.998 ≥ 0.90)
    assert {pair["element_a"], pair["element_b"]} == {"Launch a savings app", "Launch a mobile savings app"}
    # only topically similar siblings go to the contradiction scorer, in both directions
    assert len(calls) == 1 and len(calls[0]) == 2
    assert rep["contradictions"][0]["contradiction_probability"] == pytest.approx(0.9)
    assert rep["consistency_score"] == pytest.approx(align["mean"] * 0.95)
    assert hierarchical_consistency_report(plan, embed)["contradictions"] is None


def test_cross_lingual_similarity_with_a_fake_encoder():
    enc = lambda texts: np.array([[1.0, 0.0] if "chat" in t or "cat" in t else [0.0, 1.0] for t in texts])  # noqa: E731
    assert cross_lingual_similarity(["The cat sleeps."], ["Le chat dort."], enc) == [1.0]
    with pytest.raises(ValueError):
        cross_lingual_similarity(["a"], [], enc)


def test_multilingual_encoder_resource():
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    v = MultilingualEncoder().encode(["The cat sits on the mat.", "Le chat est assis sur le tapis.", "Stock markets fell sharply."])
    assert v.shape == (3, 512)
    assert np.linalg.norm(v, axis=1) == pytest.approx(1.0, abs=1e-5)
    assert v[0] @ v[1] > 0.6 > v[0] @ v[2] + 0.3  # translation close, unrelated far
