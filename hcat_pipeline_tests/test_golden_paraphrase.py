"""Paraphrase robustness (golden-eval §3.2.3 ROBUSTNESS, §3.5.2): N rewordings per case, kept together on the night,
the per-case variance of a system's score, high-variance cases flagged — with systems built to be brittle and honest."""

import polars as pl

from hcat_pipeline.golden.cases import new_case
from hcat_pipeline.golden.paraphrase import paraphrase_cases, rewording_problem
from hcat_pipeline.reports.paraphrase import MAX_PARAPHRASE_SD, paraphrase_section, paraphrase_summary, paraphrase_variance
from hcat_pipeline.responses.rag import select_cases
from hcat_pipeline_tests.golden_data import bow_embed

BASE_Q = 'How much does a "same-day transfer" of more than 250 pounds cost at a branch?'


def _base(i: int) -> dict:
    return new_case(category="happy_path", query_type="simple", query=BASE_Q.replace("250", str(250 + i)), reference_answer="It costs 15 pounds.",
                    expected_behavior="answer", source_chunk_ids=["c1"], stratum=i)  # fmt: skip


def _variant(base, **fields):
    return new_case(**{"query_type": base["query_type"], "reference_answer": base["reference_answer"], "source_chunk_ids": base["source_chunk_ids"],
                       "expected_behavior": "answer", "base_case_id": base["case_id"], "stratum": base["stratum"], **fields})  # fmt: skip


def test_rewordings_keep_numbers_and_quoted_terms_and_must_differ():
    assert rewording_problem('What is the branch cost of a "same-day transfer" above 250 pounds?', BASE_Q, []) is None
    assert "drops ['250']" in rewording_problem('What is the branch cost of a "same-day transfer" above a limit?', BASE_Q, [])
    assert "repeat" in rewording_problem(BASE_Q.lower(), BASE_Q, [])
    assert "not a question" in rewording_problem("Tell me the cost.", BASE_Q, [])


def test_paraphrase_cases_group_n_rewordings_per_base_and_say_why_a_base_failed():
    good = ['What does a branch charge for a "same-day transfer" over {n} pounds?', 'At a branch, what is the cost of a "same-day transfer" of '
            'more than {n} pounds?', 'For a "same-day transfer" above {n} pounds made at a branch, how much is charged?']  # fmt: skip

    def reword(query, n, seed):
        num = query.split("more than ")[1].split(" ")[0]
        if num == "251":  # the second base: the LLM loses the amount in every rewording
            return [g.replace("{n} ", "") for g in good][:n], "h", "fake", None
        return [g.replace("{n}", num) for g in good][:n], "h", "fake", None

    cases, failures = paraphrase_cases([_base(0), _base(1), _base(2)], 2, 3, reword, bow_embed, _variant, seed=0, min_similarity=0.3)
    assert len(cases) == 6 and {c["base_case_id"] for c in cases} == {_base(0)["case_id"], _base(2)["case_id"]}
    assert all(c["variant_kind"] == "paraphrase" and c["reference_answer"] == "It costs 15 pounds." for c in cases)
    assert failures[0]["base_case_id"] == _base(1)["case_id"] and "0 usable rewording(s) of 3: drops" in failures[0]["reason"]


def test_the_night_keeps_a_paraphrase_group_whole():
    bases = [_base(i) for i in range(6)]
    rows = [{**b, "category": "happy_path", "variant_kind": None, "pair_id": None} for b in bases]
    for b in bases[:3]:
        rows += [{"case_id": f"{b['case_id']}-p{k}", "category": "robustness", "stratum": b["stratum"], "query_type": "simple",
                  "variant_kind": "paraphrase", "base_case_id": b["case_id"], "pair_id": None} for k in range(3)]  # fmt: skip
    g = pl.DataFrame([{k: r.get(k) for k in ("case_id", "category", "stratum", "query_type", "variant_kind", "base_case_id", "pair_id")} for r in rows])
    for budget in (6, 9, 12):
        s = select_cases(g, budget, seed=1)
        groups = s.filter(pl.col("variant_kind") == "paraphrase")["base_case_id"].unique().to_list()
        assert groups, budget  # a small night still holds one group
        for gid in groups:  # the base and its three rewordings, or none of them
            assert s.filter((pl.col("case_id") == gid) | (pl.col("base_case_id") == gid)).height == 4


def _scores(values: dict[str, list[float]]) -> pl.DataFrame:
    """case_scores' long frame for 5 groups (base + 3 rewordings) answered by each system with the given values per wording."""
    rows = []
    for sid, per_wording in values.items():
        for gi in range(5):
            base = f"b{gi}"
            for w, v in enumerate(per_wording):
                cid, kind = (base, None) if w == 0 else (f"{base}-p{w}", "paraphrase")
                rows.append({"case_id": cid, "system_id": sid, "metric": "semantic_similarity", "source": "raw", "value": v + 0.001 * gi,
                             "variant_kind": kind, "base_case_id": None if w == 0 else base})  # fmt: skip
    return pl.DataFrame(rows)


def test_a_system_right_only_on_the_original_wording_is_flagged_and_an_honest_one_is_not():
    scores = _scores({"brittle": [0.95, 0.30, 0.25, 0.35], "honest": [0.91, 0.89, 0.93, 0.90], "wrong_everywhere": [0.2, 0.22, 0.19, 0.21]})
    table = paraphrase_variance(scores)
    by = {s["system_id"]: s for s in paraphrase_summary(table)}
    assert (by["brittle"]["flagged"], by["brittle"]["groups"]) == (5, 5) and by["brittle"]["ci_low"] > 0.5
    assert by["honest"]["flagged"] == 0 and by["wrong_everywhere"]["flagged"] == 0  # consistently wrong is not prompt sensitivity
    row = table.filter((pl.col("system_id") == "brittle") & (pl.col("base_case_id") == "b0")).row(0, named=True)
    assert row["n_wordings"] == 4 and row["sd"] >= MAX_PARAPHRASE_SD and row["worst_case_id"] == "b0-p2" and row["base_value"] == 0.95
    section, lines = paraphrase_section(table)
    assert len(section.rows) == 5 and "brittle, semantic_similarity): 5 of 5 cases high-variance" in " ".join(lines)
    assert paraphrase_variance(scores.filter(pl.col("variant_kind").is_null())).height == 0
    assert not paraphrase_section(None)[0].available
