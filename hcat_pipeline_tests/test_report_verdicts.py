"""The report says what each verdict rests on: whose labels calibrated each score, the canaries caught or missed,
rankings and the frontier as compact tables with their CIs."""

import datetime as dt

import polars as pl

from hcat_pipeline.reports.verdicts import calibration_section, canary_section, pareto_section, rankings_section


def test_calibration_says_whose_labels():
    cal = pl.DataFrame({"dimension": ["groundedness", "toxicity", "completeness"], "metric": ["groundedness_nli", "toxicity", "c"],
                        "label_source": ["campaign", "reference:toxigen", "none"], "calibration_note": [None, None, "no labels"]})
    fits = pl.DataFrame({"dimension": ["groundedness", "toxicity"], "label_source": ["campaign", "reference:toxigen"], "n_labels": [84, 60]})
    labels = pl.DataFrame({"dimension": ["groundedness"] * 2,
                           "labelled_at": [dt.datetime(2026, 11, 1, tzinfo=dt.UTC), dt.datetime(2026, 11, 20, tzinfo=dt.UTC)]})
    sec, lines = calibration_section(cal, fits, labels)
    rows = {r[0]: r for r in sec.rows}
    assert rows["groundedness"][2] == "your labels" and rows["groundedness"][3] == "84" and rows["groundedness"][4] == "2026-11-01 … 2026-11-20"
    assert "borrowed reference labels: toxigen" in rows["toxicity"][2] and "not established on your data" in rows["toxicity"][5]
    assert rows["completeness"][2].startswith("none")
    assert lines == ["Calibration: groundedness on your labels; toxicity (toxigen) on borrowed reference labels — coverage guarantee "
                     "not established on your data; 1 dimension(s) not calibrated (no labels)."]


def test_canary_section_names_the_missed_and_the_rate():
    t = pl.DataFrame({"canary_id": ["canary:pii:a", "canary:fabrication:a", "canary:fabrication:a"], "parent_id": ["a"] * 3,
                      "fault": ["pii", "fabrication", "fabrication"], "check": ["gate:no_pii_leak", "gate:groundedness", "off_frontier"],
                      "expected": ["no_pii_leak FAIL", "groundedness FAIL", "dominated"], "observed": ["FAIL", "PASS", "not placed"],
                      "caught": [True, False, None], "evidence": ["", "", ""]})  # fmt: skip
    sec, lines = canary_section(t)
    assert [r[2] for r in sec.rows] == ["MISSED", "caught"] and sec.row_classes == ["FAIL", "PASS"]
    assert lines[0].startswith("Canaries: 1/2 planted faults caught") and lines[0].endswith("MISSED: canary:fabrication:a.")
    assert not canary_section(None)[0].available


def test_rankings_and_pareto_are_compact_with_cis():
    r = pl.DataFrame({"metric": ["g", "g", "g"], "method": ["bradley_terry", "bradley_terry", "elo"], "system_id": ["a", "b", "a"],
                      "rating": [0.4, -0.4, 1510.0], "ci_low": [0.1, -0.7, 1490.0], "ci_high": [0.7, -0.1, 1530.0], "rank": [1, 2, 1],
                      "p_best": [0.97, 0.03, 0.9], "n_cases": [40, 40, 40]})  # fmt: skip
    sec = rankings_section(r)
    assert sec.rows == [["g", "1", "a", "0.4 [0.1, 0.7]", "0.97", "40"], ["g", "2", "b", "-0.4 [-0.7, -0.1]", "0.03", "40"]]
    p = pl.DataFrame({"system_id": ["a", "cb"], "on_frontier": [True, None], "quality": [0.5, None], "quality_ci_low": [0.4, None],
                      "quality_ci_high": [0.6, None], "n_quality": [40, 0], "cost_usd_per_case": [None, 0.0], "cost_ci_low": [None, 0.0],
                      "cost_ci_high": [None, 0.0], "latency_p50_s": [1.0, 2.0], "latency_p50_ci_low": [0.9, 1.9],
                      "latency_p50_ci_high": [1.1, 2.1], "explanation": ["on", "not placed: quality unknown"], "quality_metric": ["g", "g"]})  # fmt: skip
    rows = {x[0]: x for x in pareto_section(p).rows}
    assert rows["a"][1] == "on the frontier" and rows["a"][3] == "unknown" and rows["cb"][1] == "not placed" and rows["cb"][2].startswith("unknown")


def test_golden_set_strata_short_of_their_budget_are_named():
    from hcat_pipeline.reports.sections import strata_coverage

    gen = {"cases_per_stratum": 4, "kept_per_stratum": {"0": 4, "1": 2, "2": 4},
           "short_strata": {"1": "2 of 4 after 9 request(s); no sentence left"}, "stratum_labels": {"1": "slicing / sequences"}}
    line = strata_coverage(gen)
    assert line.startswith("2 of 3 strata hold their 4 happy-path cases")
    assert "stratum 1 (slicing / sequences): 2 of 4 after 9 request(s); no sentence left" in line
    assert "short" not in strata_coverage({**gen, "short_strata": {}})
    assert strata_coverage(None).startswith("not recorded")
