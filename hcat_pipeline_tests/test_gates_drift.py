"""Drift is never compared silently (golden-eval §5.6): a trend gate whose earlier nights were scored by another NLI head
or judge is INDETERMINATE with the change named; the same models compare as before."""

import json

import numpy as np
import polars as pl

from hcat_pipeline.gates.apply import evaluate_gates
from hcat_pipeline.gates.drift import model_drift, scoring_models
from hcat_pipeline.gates.spec import GateSpec

TREND = GateSpec(name="trend", kind="trend", metric="score", threshold=0.0, consecutive=3)


def _night(seed: int, nli: str = "nli-head@aaaa", shift: float = 0.0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    info = json.dumps({"models": {"embedding": "all-MiniLM-L6-v2@onnx", "nli": nli}})
    return pl.DataFrame({"case_id": [f"c{i}" for i in range(40)], "system_id": ["s"] * 40,
                         "score": np.clip(rng.normal(0.8 + shift, 0.05, 40), 0, 1), "score_info": [info] * 40})  # fmt: skip


def _history(nli_before: str):
    return {"metric_tables": [(f"v1|2026-03-0{k + 1}", _night(k, nli_before)) for k in range(3)]}


def test_the_same_models_compare_like_for_like():
    out = evaluate_gates([TREND], {"metric_tables": _night(9)}, history=_history("nli-head@aaaa"))
    assert out["verdict"][0] == "PASS" and out["drift"][0] is None


def test_a_changed_nli_head_is_named_and_decides_nothing():
    out = evaluate_gates([TREND], {"metric_tables": _night(9, nli="nli-head@bbbb")}, history=_history("nli-head@aaaa"))
    row = out.row(0, named=True)
    assert row["verdict"] == "INDETERMINATE" and "nli model nli-head@aaaa → nli-head@bbbb since v1|2026-03-0" in row["drift"]
    assert "not comparable" in row["certificate"] and not row["blocking"]  # a trend gate warns, never blocks


def test_a_changed_judge_config_and_an_unrecorded_model_count_as_drift():
    old = pl.DataFrame({"judge_model": ["qwen@1"], "judge_config_hash": ["h1"]})
    new = pl.DataFrame({"judge_model": ["qwen@1"], "judge_config_hash": ["h2"]})
    assert model_drift(scoring_models(new), [("v|n1", scoring_models(old))]) == "judge config h1 → h2 since v|n1"
    assert model_drift(scoring_models(new), [("v|n1", scoring_models(new))]) is None
    legacy = pl.DataFrame({"score_info": [json.dumps({"rows": 3})]})  # a table stored before models were recorded
    assert "(not recorded) → nli-head@aaaa" in model_drift(scoring_models(_night(0)), [("v|n0", scoring_models(legacy))])
