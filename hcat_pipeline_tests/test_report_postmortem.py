"""The postmortem (golden-eval §9.3) on nights built with a known incident, and none on a quiet night."""

import polars as pl

from hcat_pipeline.reports.postmortem import Night, postmortem, render_markdown


def _gates(verdicts: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame({"gate": ["no_prompt_injection"] * len(verdicts), "system_id": list(verdicts), "verdict": list(verdicts.values()),
                         "blocking": [True] * len(verdicts), "reason": ["2 of 30 injections succeeded" if v == "FAIL" else "ok" for v in verdicts.values()]})  # fmt: skip


def _checks(fails: dict[str, set[str]]) -> pl.DataFrame:
    rows = []
    for sid in ("a", "b"):
        for i in range(20):
            cid = f"c{i}"
            rows.append({"case_id": cid, "system_id": sid, "verdict": "fail" if cid in fails.get(sid, set()) else "pass",
                         "category": "adversarial" if i < 10 else "happy_path", "variant_kind": "injection" if i < 10 else None,
                         "rule": "injection_resisted" if i < 10 else "answer_correct"})  # fmt: skip
    return pl.DataFrame(rows)


def test_a_regression_gets_its_postmortem_and_a_quiet_night_none():
    before = Night("2026-11-27", _gates({"a": "PASS", "b": "PASS"}), _checks({"b": {"c15"}}), {"a": "h1", "b": "h2"}, {"nli": "head@1"})
    now = Night("2026-11-28", _gates({"a": "PASS", "b": "FAIL"}), _checks({"b": {"c1", "c2", "c3", "c15"}, "a": set()}),
                {"a": "h1", "b": "h9"}, {"nli": "head@1"})
    pm = postmortem(now, before)
    assert pm["why"] == ["b: no_prompt_injection FAILED — 2 of 30 injections succeeded", "b: release flipped CLEARED → BLOCKED since night 2026-11-27"]
    assert "system b: configuration h2 → h9" in pm["changes"] and not any("system a" in c for c in pm["changes"])
    moved = pm["moved"]
    assert moved.filter(pl.col("direction") == "regressed")["case_id"].to_list() == ["c1", "c2", "c3"] and set(moved["system_id"]) == {"b"}
    assert pm["cause"] == ["b: 3 case(s) regressed, concentrated in rule 'injection_resisted' (3 of 3), category 'adversarial' (3 of 3), "
                           "variant_kind 'injection' (3 of 3)"]
    assert any("revert or bisect" in m for m in pm["measures"]) and any("regression suite" in m for m in pm["measures"])
    md = render_markdown(pm, "gs-x")
    assert md.startswith("# Postmortem — golden-set version gs-x, night 2026-11-28") and "- b regressed (3): c1, c2, c3" in md
    # a quiet night: the same verdicts, no blocking FAIL, no flip
    quiet = Night("2026-11-28", _gates({"a": "PASS", "b": "PASS"}), _checks({"b": {"c15"}}), {"a": "h1", "b": "h2"}, {"nli": "head@1"})
    assert postmortem(quiet, before) is None
    # a first night with a failing gate: a postmortem without a comparison, the failed cases read for the cause
    first = postmortem(now, None)
    assert first["changes"][0].startswith("no earlier night") and first["moved"].height == 0 and first["cause"][0].startswith("b: 4 case(s) failed")
    # a scoring model changed: said, and the measure names it
    drifted = postmortem(Night(now.night, now.gate_verdicts, now.behaviour_checks, now.config_hashes, {"nli": "head@2"}), before)
    assert "nli: head@1 → head@2" in drifted["changes"] and any("scoring model changed" in m for m in drifted["measures"])
