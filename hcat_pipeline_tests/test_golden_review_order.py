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


def test_the_curate_screen_learns_its_order_from_the_decisions(tmp_path):
    """The case screen with an embedding: the order says how many decisions it learnt from, and rejecting the cases
    of one kind moves the undecided cases like them down once the order turns greedy."""
    from hcat_pipeline.golden.cases import load_version
    from hcat_pipeline.review.case_screen import case_screen_view
    from hcat_pipeline.review.curation import CurationLog
    from hcat_pipeline_tests.review_data import VERSION, make_project

    project = make_project(tmp_path)
    base, _ = load_version(VERSION, project.golden_dir)

    def embed(texts):  # a bag-of-words stand-in for MiniLM: cases sharing words lie close
        vocab = sorted({w for t in base["query"].to_list() + base["reference_answer"].fill_null("").to_list() for w in t.lower().split()})
        out = np.array([[float(w in t.lower().split()) for w in vocab] for t in texts])
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    view = lambda: case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, None, embed=embed, target=2)  # noqa: E731
    first = view()
    assert first["learnt"]["learnt_from"] == 0 and first["learnt"]["mode"] == "most informative first"
    log, known = CurationLog(project.curation_dir, VERSION), set(base["case_id"].to_list())
    ids = base["case_id"].to_list()
    for cid, action in zip(ids[:3], ("accept", "reject", "accept"), strict=True):
        log.record(cid, action, "alice", "not sound" if action == "reject" else "", known=known)
    after = view()
    assert after["learnt"]["learnt_from"] == 3 and after["learnt"]["accepted"] == 2 and after["case"]["case_id"] not in ids[:3]
    assert after["left"] == len(ids) - 3


def test_rejecting_one_kind_moves_the_undecided_cases_like_it_down():
    from hcat_pipeline.golden.review_order import learnt_order

    rng = np.random.default_rng(1)
    kind = np.repeat([0, 1], 20)  # two kinds of case, far apart in embedding space; the validator cannot tell them apart
    vec = np.column_stack([kind * 3.0 + rng.normal(0, 0.3, 40), rng.normal(size=(40, 5))])
    ids = [f"c{i:02d}" for i in range(40)]
    labels = {ids[i]: 0 for i in range(8)} | {ids[i]: 1 for i in range(20, 28)}  # kind 0 rejected, kind 1 accepted
    order, info = learnt_order(ids, [0.5] * 40, vec, labels, target=10)
    assert info["learnt_from"] == 16 and info["mode"] == "most likely sound first"
    undecided = [c for c in order if c not in labels]
    assert all(int(c[1:]) >= 20 for c in undecided[:12])  # every undecided case of the accepted kind before any rejected-kind one
    assert order[-16:] == [c for c in ids if c in labels]


def test_the_page_says_what_a_signable_set_still_lacks_and_when_the_accepted_cases_suffice(tmp_path):
    from fastapi.testclient import TestClient

    from hcat_pipeline.golden.cases import load_version
    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings
    from hcat_pipeline_tests.review_data import VERSION, make_project

    project = make_project(tmp_path)
    base, _ = load_version(VERSION, project.golden_dir)
    happy = base.filter(base["category"] == "happy_path")["case_id"].to_list()
    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir, chunks=project.chunks, learn_order=False,
                              needs={"happy_path": 2, "answer_correct": 2})  # fmt: skip
    client = TestClient(create_app(settings))
    page = client.get(f"/curate/case?version={VERSION}").text
    assert "Still missing for a signable set: happy_path 2 (0 of 2), answer_correct 2 (0 of 2)" in page and 'id="enough"' not in page
    assert "the validator's, likeliest unsound first" in page
    for cid in happy[:2]:
        assert client.post("/api/curation", json={"rater": "alice", "version": VERSION, "case_id": cid, "action": "accept"}).json()["status"] == "saved"
    done = client.get(f"/curate/case?version={VERSION}").text
    assert 'id="enough"' in done and "The accepted cases suffice" in done and "Still missing" not in done
