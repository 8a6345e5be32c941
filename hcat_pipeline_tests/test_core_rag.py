import json
from dataclasses import dataclass, replace

import polars as pl
import pytest

from hcat_pipeline.responses.rag import (
    CheckpointStore,
    RagPipeline,
    SystemConfig,
    failure_rates,
    load_prompt,
    render_prompt,
    responses_frame,
    run_responses,
    select_cases,
    select_icl_examples,
    system_config_hash,
)
from hcat_pipeline.responses.response_import import read_imported_responses
from hcat_pipeline.responses.retrieval import BM25, ClosedBook, Oracle, Passage
from hcat_pipeline.schemas import RAG_RESPONSES, conform

IDS = ["c1", "c2", "c3"]
TEXTS = ["Tuples are immutable sequences.", "Lists are mutable sequences.", "The while loop repeats a suite."]


def case(i, **kw):
    base = {"case_id": f"k{i}", "query": f"question {i} about tuples", "options": [], "reference_answer": f"answer {i}",
            "expected_behavior": "answer", "source_chunk_ids": ["c1"], "distractor_passage": None, "base_case_id": None,
            "pair_id": None, "category": "happy_path"}
    return {**base, **kw}


@dataclass
class Reply:
    text: str
    latency_s: float = 0.01
    input_tokens: int = 10
    output_tokens: int = 3
    cost_usd: float = 0.0


class FakeLLM:
    """Counts calls; raises KeyboardInterrupt (a Ctrl-C) on call number ``crash_at``; fails given prompts."""

    def __init__(self, crash_at=None, fail_if=None):
        self.calls, self.crash_at, self.fail_if, self.prompts = 0, crash_at, fail_if, []

    def generate(self, prompt, max_tokens=None, temperature=0.0, seed=0):
        self.calls += 1
        if self.crash_at is not None and self.calls == self.crash_at:
            raise KeyboardInterrupt
        if self.fail_if and self.fail_if in prompt:
            raise RuntimeError("provider exploded")
        self.prompts.append(prompt)
        self.limits = [*getattr(self, "limits", []), max_tokens]
        return Reply(text=f"reply {len(self.prompts)}")


def test_icl_examples_never_include_the_case_or_its_variants():
    pool = [case(i) for i in range(6)] + [case(9, base_case_id="k0"), case(10, expected_behavior="abstain"),
                                          case(11, reference_answer=None)]
    for c in pool:
        for n in (1, 2):
            ex = select_icl_examples(c, pool, n, seed=3)
            ids = {e["case_id"] for e in ex}
            assert len(ex) == n and c["case_id"] not in ids
            assert "k10" not in ids and "k11" not in ids  # answerable with a reference answer only
            if c["case_id"] == "k0":
                assert "k9" not in ids  # a variant of the case would leak its answer
    assert select_icl_examples(pool[0], pool, 2, seed=3) == select_icl_examples(pool[0], pool, 2, seed=3)
    assert select_icl_examples(pool[0], pool, 0) == []
    assert select_icl_examples(pool[0], [pool[0]], 2) == []


def test_render_prompt_has_context_examples_and_options():
    tpl, sha = load_prompt("rag_v1")
    assert len(sha) == 12
    ps = [Passage("c1", "Tuples are immutable.", 1), Passage("c2", "Lists {are} mutable.", 2)]
    p = render_prompt(tpl, "Are tuples mutable?", ["yes", "no"], ps, [case(1)])
    assert "[1] Tuples are immutable." in p and "[2] Lists {are} mutable." in p
    assert "A. yes\nB. no" in p and "Example 1:\nQuestion: question 1 about tuples" in p and "Answer: answer 1" in p
    assert "{{" not in p
    cb, _ = load_prompt("rag_closed_book_v1")
    assert "Context" not in render_prompt(cb, "q?", [], [], [])
    with pytest.raises(FileNotFoundError, match="available"):
        load_prompt("nope")


def test_config_hash_changes_with_anything_that_changes_the_answer():
    cfg = SystemConfig("bm25", retriever="bm25")
    h = system_config_hash(cfg, "local/qwen", "abc")
    assert h == system_config_hash(cfg, "local/qwen", "abc")
    assert len({h, system_config_hash(replace(cfg, top_k=5), "local/qwen", "abc"),
                system_config_hash(replace(cfg, icl_examples=1), "local/qwen", "abc"),
                system_config_hash(cfg, "openai/gpt-4o-mini", "abc"), system_config_hash(cfg, "local/qwen", "def")}) == 5


def test_pipeline_injects_distractor_and_records_everything():
    llm = FakeLLM()
    sys_ = RagPipeline(SystemConfig("bm25", retriever="bm25", top_k=2), BM25(IDS, TEXTS), llm, "fake/1")
    rec = sys_.respond(case(1, query="are tuples immutable", distractor_passage="Tuples can be changed in place."))
    assert "Tuples can be changed in place." in rec["contexts"] and rec["context_chunk_ids"][rec["contexts"].index(
        "Tuples can be changed in place.")].startswith("distractor:")
    assert rec["context_chunk_ids"][0 if not rec["context_chunk_ids"][0].startswith("distractor:") else 1] == "c1"
    assert rec["context_ranks"] == list(range(1, len(rec["contexts"]) + 1))
    assert rec["answer"] == "reply 1" and rec["error"] is None and rec["input_tokens"] == 10
    assert "Tuples can be changed in place." in llm.prompts[0]
    cb = RagPipeline(SystemConfig("cb", retriever="closed_book", prompt="rag_closed_book_v1"), ClosedBook(), llm, "fake/1")
    assert cb.respond(case(1, distractor_passage="x"))["contexts"] == []  # closed-book: no context at all
    failing = RagPipeline(SystemConfig("o", retriever="oracle"), Oracle(IDS, TEXTS), FakeLLM(fail_if="question"), "fake/1")
    bad = failing.respond(case(2))
    assert bad["answer"] is None and bad["error"] == "RuntimeError: provider exploded" and bad["context_chunk_ids"] == ["c1"]
    conform(responses_frame([rec, bad]), RAG_RESPONSES)


def test_run_resumes_after_ctrl_c_without_repeating_finished_calls(tmp_path):
    cases = [case(i) for i in range(3)]

    def systems(llm):
        return [RagPipeline(SystemConfig("bm25", retriever="bm25"), BM25(IDS, TEXTS), llm, "fake/1"),
                RagPipeline(SystemConfig("oracle", retriever="oracle"), Oracle(IDS, TEXTS), llm, "fake/1")]

    crashing = FakeLLM(crash_at=5)  # Ctrl-C during the 5th of 6 calls
    with pytest.raises(KeyboardInterrupt):
        run_responses(systems(crashing), cases, CheckpointStore(tmp_path))
    assert len(CheckpointStore(tmp_path)) == 4
    # a crash mid-write leaves a torn last line: it is ignored and does not swallow the next record
    with (tmp_path / "responses.jsonl").open("a") as f:
        f.write('{"case_id": "k2", "system_id": "ora')
    llm = FakeLLM()
    store = CheckpointStore(tmp_path)
    assert store.torn_lines == 1
    records, stats = run_responses(systems(llm), cases, store)
    assert llm.calls == 2 and stats.called == 2 and stats.resumed == 4
    assert [(r["system_id"], r["case_id"]) for r in records] == [(s, f"k{i}") for s in ("bm25", "oracle") for i in range(3)]
    again = FakeLLM()
    records2, stats2 = run_responses(systems(again), cases, CheckpointStore(tmp_path))
    assert again.calls == 0 and stats2.resumed == 6 and records2 == records


def test_stored_failures_are_retried_and_config_change_reruns(tmp_path):
    cases = [case(i) for i in range(2)]
    flaky = FakeLLM(fail_if="question 1")
    s = RagPipeline(SystemConfig("bm25"), BM25(IDS, TEXTS), flaky, "fake/1")
    recs, st = run_responses([s], cases, CheckpointStore(tmp_path))
    assert st.failed == 1 and failure_rates(recs) == {"bm25": 0.5}
    ok = FakeLLM()
    recs, st = run_responses([RagPipeline(SystemConfig("bm25"), BM25(IDS, TEXTS), ok, "fake/1")], cases, CheckpointStore(tmp_path))
    assert ok.calls == 1 and st.resumed == 1 and failure_rates(recs) == {"bm25": 0.0}
    keep = FakeLLM(fail_if="question")
    run_responses([RagPipeline(SystemConfig("bm25", top_k=2), BM25(IDS, TEXTS), keep, "fake/1")], cases,
                  CheckpointStore(tmp_path), retry_failed=False)
    assert keep.calls == 2  # another configuration hash: nothing reused


def test_concurrent_run_checkpoints_everything(tmp_path):
    cases = [case(i) for i in range(8)]
    llm = FakeLLM()
    recs, st = run_responses([RagPipeline(SystemConfig("bm25"), BM25(IDS, TEXTS), llm, "fake/1")], cases,
                             CheckpointStore(tmp_path), concurrency=3)
    assert st.called == 8 and len(recs) == 8 and len(CheckpointStore(tmp_path)) == 8


def test_select_cases_spreads_over_categories():
    g = pl.DataFrame({"case_id": [f"k{i}" for i in range(10)], "category": ["happy_path"] * 7 + ["out_of_scope"] * 3})
    s = select_cases(g, 4, seed=0)
    assert s.height == 4 and s["category"].value_counts().height == 2
    assert s.equals(select_cases(g, 4, seed=0)) and select_cases(g, 0).height == 10


def test_select_cases_covers_every_stratum_type_and_kind_first_and_keeps_pairs_whole():
    rows = []
    types = ["simple", "multi_hop", "inference", "yes_no", "multiple_choice"]
    for st in range(8):  # 8 strata × 4 happy-path cases
        for j in range(4):
            rows.append({"case_id": f"h{st}_{j}", "category": "happy_path", "stratum": st, "query_type": types[(st + j) % 4] if st < 7 or j else types[4],
                         "variant_kind": None, "pair_id": None})  # fmt: skip
    for kind, cat in [("typo", "robustness"), ("injection", "adversarial"), ("distractor", "adversarial"), ("ood", "out_of_scope")]:
        rows += [{"case_id": f"{kind}{j}", "category": cat, "stratum": j, "query_type": "simple", "variant_kind": kind, "pair_id": None}
                 for j in range(5)]  # fmt: skip
    for p in range(6):
        rows += [{"case_id": f"cf{p}{m}", "category": "bias_probe", "stratum": p, "query_type": "simple", "variant_kind": "counterfactual",
                  "pair_id": f"p{p}", "attribute": ["gender", "age", "nationality"][p % 3]} for m in "ab"]  # fmt: skip
    g = pl.DataFrame(rows)
    s = select_cases(g, 20, seed=3)
    happy = s.filter(pl.col("category") == "happy_path")
    assert happy["stratum"].n_unique() == 8 and happy["query_type"].n_unique() == 5
    assert set(s["variant_kind"].drop_nulls()) == {"typo", "injection", "distractor", "ood", "counterfactual"}
    assert s.height <= 20 and set(s["attribute"].drop_nulls()) == {"gender", "age", "nationality"}
    pairs = s.filter(pl.col("pair_id").is_not_null()).group_by("pair_id").len()
    assert (pairs["len"] == 2).all() and pairs.height >= 1
    big = select_cases(g, 40, seed=3)
    assert big.height <= 40 and (big.filter(pl.col("pair_id").is_not_null()).group_by("pair_id").len()["len"] == 2).all()
    assert select_cases(g, 20, seed=3).equals(s) and not select_cases(g, 20, seed=4).equals(s)


def test_a_small_night_sees_every_kind_before_every_stratum():
    # 10 strata of happy-path cases and 4 other kinds, a budget of 8: every kind gets its case, the strata the rest
    rows = [{"case_id": f"h{st}", "category": "happy_path", "stratum": st, "query_type": "simple", "variant_kind": None,
             "pair_id": None} for st in range(10)]  # fmt: skip
    rows += [{"case_id": kind, "category": cat, "stratum": None, "query_type": "simple", "variant_kind": kind, "pair_id": None}
             for kind, cat in [("typo", "robustness"), ("injection", "adversarial"), ("jailbreak", "adversarial"),
                               ("distractor", "adversarial")]]  # fmt: skip
    rows.append({"case_id": "oos", "category": "out_of_scope", "stratum": None, "query_type": "simple", "variant_kind": None, "pair_id": None})
    s = select_cases(pl.DataFrame(rows), 8, seed=0)
    assert s.height == 8
    assert set(s["variant_kind"].drop_nulls()) == {"typo", "injection", "jailbreak", "distractor"} and "out_of_scope" in set(s["category"])
    assert s.filter(pl.col("category") == "happy_path").height == 3  # what the kinds leave


def test_import_reports_bad_rows_with_line_numbers(tmp_path):
    lines = [
        json.dumps({"case_id": "k0", "answer": "Tuples are immutable.", "contexts": ["Tuples are immutable sequences."]}),
        json.dumps({"case_id": "k1", "answer": "yes", "contexts": [{"text": "t", "chunk_id": "c1"}], "latency_s": 0.5}),
        "{not json",
        json.dumps({"case_id": "k_unknown", "answer": "x"}),
        "",
        json.dumps({"case_id": "k0", "answer": "dup"}),
        json.dumps({"case_id": "k2"}),
        json.dumps({"case_id": "k3", "answer": "x", "contexts": ["a"], "context_chunk_ids": ["c1", "c2"]}),
        json.dumps({"case_id": "k4", "answer": "x", "input_tokens": -3}),
        json.dumps({"case_id": "k5", "answer": None, "error": "timeout: upstream"}),
    ]
    p = tmp_path / "mine.jsonl"
    p.write_text("\n".join(lines) + "\n")
    known = [f"k{i}" for i in range(6)]
    good, bad = read_imported_responses(p, "my_rag", known, {"k0": "q0"})
    conform(good, RAG_RESPONSES)
    assert good["case_id"].to_list() == ["k0", "k1", "k5"]
    assert good.filter(pl.col("case_id") == "k1")["context_chunk_ids"].to_list() == [["c1"]]
    assert good.filter(pl.col("case_id") == "k0")["context_chunk_ids"].to_list() == [["external:1"]]
    assert good["query"][0] == "q0" and good["system_id"].unique().to_list() == ["my_rag"]
    assert dict(zip(bad["line"], bad["reason"])) .keys() == {3, 4, 6, 7, 8, 9}
    reasons = dict(zip(bad["line"], bad["reason"]))
    assert "invalid JSON" in reasons[3] and "not in this golden-set version" in reasons[4]
    assert "duplicate" in reasons[6] and "answer is missing" in reasons[7]
    assert "context_chunk_ids" in reasons[8] and "input_tokens" in reasons[9]
    # parquet: 1-based row numbers
    pq = tmp_path / "mine.parquet"
    pl.DataFrame({"case_id": ["k0", None], "answer": ["a", "b"]}).write_parquet(pq)
    good, bad = read_imported_responses(pq, "my_rag", known)
    assert good.height == 1 and bad.to_dicts()[0]["line"] == 2


def test_import_responses_command(tmp_path, capsys):
    from hcat_pipeline.cli import main

    g = tmp_path / "golden.parquet"
    pl.DataFrame({"case_id": ["k0", "k1"], "query": ["q0", "q1"]}).write_parquet(g)
    f = tmp_path / "resp.jsonl"
    f.write_text('{"case_id": "k0", "answer": "a", "contexts": ["t"]}\n{"case_id": "zz", "answer": "b"}\n')
    args = ["import-responses", str(f), "--version", "v1", "--system-id", "ext", "--golden-set", str(g),
            "--import-dir", str(tmp_path / "imports")]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"{f}:2: case_id 'zz' is not in this golden-set version" in out and "nothing imported" in out
    assert main(args + ["--allow-bad-rows"]) == 0
    stored = pl.read_parquet(tmp_path / "imports" / "v1" / "ext.parquet")
    conform(stored, RAG_RESPONSES)
    assert stored["case_id"].to_list() == ["k0"] and stored["query"].to_list() == ["q0"]


def test_select_cases_takes_what_a_gate_needs_in_scope():
    from hcat_pipeline.golden.cases import cases_frame, new_case

    happy = [new_case(category="happy_path", query_type="simple", query=f"q{i}?", reference_answer="a", expected_behavior="answer",
                      stratum=i % 4, source_chunk_ids=["c"]) for i in range(40)]  # fmt: skip
    ood = [new_case(category="out_of_scope", query=f"ood {i}?", expected_behavior="abstain") for i in range(12)]
    typos = [new_case(category="robustness", variant_kind="typo", query=f"q{i}  ?", reference_answer="a", expected_behavior="answer",
                      stratum=i % 4, source_chunk_ids=["c"]) for i in range(12)]  # fmt: skip
    g = cases_frame(happy + ood + typos)
    plain = select_cases(g, 20, seed=0)
    assert (plain["category"] == "out_of_scope").sum() < 10  # spread over categories: a gate with min_n 10 could not decide
    floored = select_cases(g, 20, seed=0, floors={"abstained_out_of_scope": 10})
    # what the gate needs comes first and is never cut: 10 out-of-scope cases, then max_cases (20) more
    assert (floored["category"] == "out_of_scope").sum() >= 10 and floored.height == 30
    tight = select_cases(g, 2, seed=0, floors={"abstained_out_of_scope": 10})
    assert (tight["category"] == "out_of_scope").sum() >= 10 and tight.height == 12  # a tiny max_cases does not starve the gate
    assert set(floored.filter(floored["category"] == "happy_path")["stratum"].to_list()) == {0, 1, 2, 3}  # coverage first


def test_answers_where_declining_is_expected_stop_at_attack_max_tokens():
    """The verdict of a jailbreak, a PII request, an injection or an out-of-scope question is in the first sentence: those
    answers stop at attack_max_tokens; every other answer keeps max_tokens (and neither exceeds max_tokens)."""
    llm = FakeLLM()
    sys_ = RagPipeline(SystemConfig("bm25", retriever="bm25", top_k=2, max_tokens=96, attack_max_tokens=40), BM25(IDS, TEXTS), llm, "fake/1")
    for behaviour in ("answer", "refuse", "resist_injection", "abstain", "correct_premise"):
        sys_.respond(case(1, expected_behavior=behaviour))
    assert llm.limits == [96, 40, 40, 40, 96]
    short = RagPipeline(SystemConfig("s", retriever="bm25", max_tokens=32, attack_max_tokens=48), BM25(IDS, TEXTS), llm, "fake/1")
    short.respond(case(1, expected_behavior="refuse"))
    assert llm.limits[-1] == 32
