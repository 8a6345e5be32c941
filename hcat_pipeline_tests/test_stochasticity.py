"""Issue 61 item 2: model stochasticity (golden-eval §6.6) estimated, not listed — a seeded subset re-asked with new
sampling seeds, the share of verdicts that flip with its interval, in the report's uncertainty table."""

import polars as pl

from hcat_pipeline.behaviour.stochasticity import flip_table, flip_text, stochasticity_cases


def _checks(verdicts: dict[str, list[str]]) -> pl.DataFrame:
    return pl.DataFrame([{"case_id": f"c{i}", "system_id": s, "rule": "answer_correct", "verdict": v}
                         for s, vs in verdicts.items() for i, v in enumerate(vs)])  # fmt: skip


def test_the_subset_is_seeded_and_only_holds_cases_every_real_system_decided():
    checks = _checks({"a": ["pass", "fail", "unsure", "pass", "pass"], "b": ["pass", "pass", "pass", "unsure", "fail"],
                      "canary:refusal:a": ["fail"] * 5})  # fmt: skip
    assert set(stochasticity_cases(checks, 10)) == {"c0", "c1", "c4"}  # c2, c3: one system unsure; canaries do not count
    assert stochasticity_cases(checks, 2, seed=1) == stochasticity_cases(checks, 2, seed=1) and len(stochasticity_cases(checks, 2)) == 2
    assert stochasticity_cases(checks, 0) == []


def test_flips_are_counted_over_decided_pairs_with_their_interval():
    night = pl.DataFrame({"case_id": ["c0", "c1", "c2"] * 2, "system_id": ["greedy"] * 3 + ["sampler"] * 3,
                          "verdict": ["pass", "fail", "pass"] * 2, "answer": ["A", "B", "C"] * 2})  # fmt: skip
    again = pl.DataFrame({"case_id": ["c0", "c1", "c2"] * 4, "system_id": ["greedy"] * 6 + ["sampler"] * 6,
                          "repeat": [1, 1, 1, 2, 2, 2] * 2, "verdict": ["pass", "fail", "pass"] * 2 + ["fail", "fail", "unsure", "pass", "pass", "pass"],
                          "answer": ["A", "B", "C"] * 2 + ["x", "B", "y", "A", "z", "C"]})  # fmt: skip
    t = {r["system_id"]: r for r in flip_table(night, again, {"greedy": 0.0, "sampler": 1.0}).iter_rows(named=True)}
    assert (t["greedy"]["flips"], t["greedy"]["n_pairs"], t["greedy"]["answers_changed"]) == (0, 6, 0)
    assert (t["sampler"]["flips"], t["sampler"]["n_pairs"], t["sampler"]["answers_changed"]) == (2, 5, 3)  # c2 repeat 1: unsure
    assert t["sampler"]["ci_low"] < 0.4 < t["sampler"]["ci_high"]
    assert "temperature 0: greedy" in flip_text(t["greedy"]) and "2 of 5 verdicts flipped" in flip_text(t["sampler"])
    assert flip_text(None).startswith("not measured")


def test_each_repeat_is_judged_apart_and_its_answers_stay_with_their_verdicts():
    from hcat_pipeline.behaviour.stochasticity import reasked_verdicts

    records = [{"case_id": c, "system_id": s, "repeat": r, "answer": f"{s}-{c}-{r}"} for r in (1, 2) for s in ("b", "a") for c in ("c2", "c1")]

    def judge(recs):  # sorts its rows, as judge_behaviour does; the verdict says which answer it read
        assert len({(x["case_id"], x["system_id"]) for x in recs}) == len(recs)  # one repeat: (case, system) is a key
        rows = [{"case_id": x["case_id"], "system_id": x["system_id"], "verdict": x["answer"]} for x in recs]
        return pl.DataFrame(rows).sort("system_id", "case_id")

    out = reasked_verdicts(records, judge)
    assert out.height == 8 and (out["verdict"] == out["answer"]).all()
    assert all(a.endswith(f"-{r}") for a, r in zip(out["answer"], out["repeat"]))


def test_a_sampling_system_changes_its_answers_when_re_asked_and_a_greedy_one_does_not(local_llm):
    """The real packaged LLM: re-asked with the next sampling seeds (what verdict_stochasticity does), a system at
    temperature 1.0 gives other answers; at temperature 0 the same."""
    from hcat_pipeline.responses.rag import RagPipeline, SystemConfig
    from hcat_pipeline.responses.retrieval import build_retriever

    texts = ["The break statement exits the nearest enclosing for or while loop.", "The continue statement skips to the next iteration."]
    retriever = build_retriever("bm25", ["k0", "k1"], texts)
    case = {"case_id": "c0", "query": "What does the break statement do?", "expected_behavior": "answer"}
    answers = {}
    for temperature in (0.0, 1.0):
        got = []
        for seed in (1, 2, 3):
            cfg = SystemConfig(system_id=f"t{temperature}", retriever="bm25", top_k=2, max_tokens=40, temperature=temperature, seed=seed)
            got.append(RagPipeline(cfg, retriever, local_llm, "qwen").respond(case)["answer"])
        answers[temperature] = got
    assert len(set(answers[0.0])) == 1
    assert len(set(answers[1.0])) > 1
