"""Ensemble judging (golden-eval §5.5, judge.ensemble) with known answers: three judges each wrong on a different third
of the items make an ensemble that is right on all of them — chosen, on one half, and validated on the other; a perfect
judge beside a coin-flipping one is not beaten — the primary decides. Disagreement reaches the review queue's flags, and
the gates read the ensemble's rows only where it was chosen."""

import polars as pl

from hcat_pipeline.calibration.campaign import judge_review_flags
from hcat_pipeline.judge import ensemble as E

PASS, FAIL = 5, 2  # the pass threshold is 4: the mean of 5, 5, 2 passes, of 2, 2, 5 fails


def _labelled(judges: dict[str, callable], n: int = 120) -> pl.DataFrame:
    rows = []
    for i in range(n):
        truth = i % 2
        for name, right in judges.items():
            verdict = truth if right(i) else 1 - truth
            rows.append({"item_id": f"it{i}", "dimension": "groundedness", "judge_model": name, "score": PASS if verdict else FAIL,
                         "human_label": truth})
    return pl.DataFrame(rows)


def test_three_judges_wrong_on_different_thirds_make_an_ensemble_right_on_all():
    judges = {f"judge{j}": (lambda i, j=j: (i // 2) % 3 != j) for j in range(3)}  # each wrong on a third of both labels
    choice = E.choose_scorer(_labelled(judges), pass_threshold=4, kappa_floor=0.4, min_items=20).row(0, named=True)
    assert choice["ensemble_used"] and choice["ensemble_validated"], choice
    assert choice["ensemble_kappa"] == 1.0 and 40 <= choice["ensemble_n"] <= 80  # the report half only
    assert "beats each judge" in choice["ensemble_reason"] and choice["members"] == "judge0,judge1,judge2"


def test_a_perfect_judge_beside_a_coin_flip_is_not_beaten():
    judges = {"perfect": lambda i: True, "coin": lambda i: (i * 7919) % 11 < 6}
    choice = E.choose_scorer(_labelled(judges), pass_threshold=4, kappa_floor=0.4, min_items=20).row(0, named=True)
    assert not choice["ensemble_used"] and "does not beat each judge" in choice["ensemble_reason"], choice
    single = E.choose_scorer(_labelled({"perfect": lambda i: True}), 4, 0.4, 20).row(0, named=True)
    assert not single["ensemble_used"] and single["ensemble_reason"] == "fewer than two judges: no ensemble"


def test_the_halves_are_fixed_by_the_item_and_both_used():
    halves = [E.half(f"it{i}") for i in range(200)]
    assert halves == [E.half(f"it{i}") for i in range(200)] and 70 < halves.count("choose") < 130


def _night() -> pl.DataFrame:
    keys = {"case_id": ["c1", "c1", "c2", "c2"], "system_id": ["s"] * 4, "dimension": ["groundedness"] * 4}
    return pl.DataFrame({**keys, "judge_model": ["small", "large", "small", "large"], "score": [5, 2, 4, 5]})


def test_ensemble_rows_name_each_member_and_say_where_they_disagree():
    ens = E.ensemble_rows(_night(), pass_threshold=4).sort("case_id")
    assert ens["score"].to_list() == [3.5, 4.5] and ens["passed"].to_list() == [False, True]
    assert ens["judges_agree"].to_list() == [False, True] and ens["scores"][0] == "large 2/5 · small 5/5"
    table = E.agreement_table(_night(), pass_threshold=4).row(0, named=True)
    assert (table["judge_a"], table["judge_b"], table["n"], table["agree"]) == ("large", "small", 2, 1)
    assert table["agree_ci_low"] < 0.5 < table["agree_ci_high"]  # one of two: the interval says how little that is


def _stored_ensemble(used: bool) -> pl.DataFrame:
    ens = E.ensemble_rows(_night(), 4).with_columns(pl.lit(E.ENSEMBLE).alias("judge_model"), pl.lit(used).alias("used"),
                                                  pl.lit(True).alias("validated"), pl.lit(0.8).alias("validation_kappa"),
                                                  pl.lit(None, pl.String).alias("validation_reason"))  # fmt: skip
    return ens


def test_disagreement_sends_the_item_to_the_review_queue_flags():
    flags = E.disagreement_flags(_stored_ensemble(False))
    assert flags["case_id"].to_list() == ["c1"] and flags["judge_reason"][0] == "judges disagree: large 2/5 · small 5/5"
    calibrated = pl.DataFrame({"case_id": ["c1", "c2"], "system_id": ["s", "s"], "dimension": ["groundedness"] * 2,
                               "machine_verdict": ["pass", "pass"]})  # fmt: skip
    queue_flags = judge_review_flags(None, calibrated, ensemble=_stored_ensemble(False))
    assert queue_flags.select("case_id", "judge_reason").rows() == [("c1", "judges disagree: large 2/5 · small 5/5")]


def test_the_gates_read_the_ensemble_only_where_it_was_chosen():
    primary = pl.DataFrame({"case_id": ["c1", "c2"], "system_id": ["s", "s"], "dimension": ["groundedness"] * 2, "score": [5, 4],
                            "passed": [True, True], "validated": [False, False], "validation_kappa": [0.1, 0.1],
                            "validation_reason": ["κ below floor"] * 2, "judge_model": ["small"] * 2, "justification": ["ok"] * 2})  # fmt: skip
    assert E.with_ensemble(primary, _stored_ensemble(False)).equals(primary)
    read = E.with_ensemble(primary, _stored_ensemble(True)).sort("case_id")
    assert read["passed"].to_list() == [False, True] and read["score"].to_list() == [3, 4]  # the mean floored: 3.5 fails, as 3 does
    assert read["judge_model"].to_list() == [E.ENSEMBLE] * 2 and read["validated"].all()


def test_the_report_section_shows_agreement_with_its_interval_and_who_decides():
    from hcat_pipeline.reports.decision import ensemble_section

    members = _night().with_columns(pl.col("score").cast(pl.Float64), (pl.col("score") >= 4).alias("passed"))
    stored = pl.concat([members, _stored_ensemble(False)], how="diagonal_relaxed")
    sec = ensemble_section(stored)
    (row,) = sec.rows
    assert row[:4] == ["groundedness", "large", "small", "2"] and row[4].startswith("0.50 [")
    assert row[6] == "1" and row[7].startswith("no — ")  # one disagreement sent to the queue; the judge decides
    assert ensemble_section(None).why.startswith("no ensemble this night")


def test_the_ensemble_never_replaces_a_row_the_judge_could_not_score_nor_stands_in_with_one_member():
    primary = pl.DataFrame({"case_id": ["c1", "c2"], "system_id": ["s", "s"], "dimension": ["groundedness"] * 2, "score": [None, 4],
                            "passed": [None, True], "validated": [False, False], "validation_kappa": [0.1, 0.1],
                            "validation_reason": ["x"] * 2, "judge_model": ["small"] * 2, "justification": [None, "ok"]})  # fmt: skip
    single = _night().filter(~((pl.col("case_id") == "c2") & (pl.col("judge_model") == "large")))  # c2: one judge only
    ens = E.ensemble_rows(single, 4).with_columns(pl.lit(E.ENSEMBLE).alias("judge_model"), pl.lit(True).alias("used"),
                                                  pl.lit(True).alias("validated"), pl.lit(0.8).alias("validation_kappa"),
                                                  pl.lit(None, pl.String).alias("validation_reason"))  # fmt: skip
    assert E.with_ensemble(primary, ens).equals(primary)  # c1: the judge errored; c2: a member alone is not an ensemble


def test_the_ensemble_is_held_to_the_judges_rule():
    # each judge wrong on its own third, and all three wrong on every tenth item: the ensemble is right on 9 in 10
    judges = {f"judge{j}": (lambda i, j=j: (i // 2) % 3 != j and i % 10 != 0) for j in range(3)}
    point = E.choose_scorer(_labelled(judges, n=60), 4, kappa_floor=0.6, min_items=10).row(0, named=True)
    ci_low = E.choose_scorer(_labelled(judges, n=60), 4, kappa_floor=0.6, min_items=10, rule="ci_low").row(0, named=True)
    assert point["ensemble_kappa"] > 0.6 > point["ensemble_kappa_ci_low"], point
    assert point["ensemble_used"] and not ci_low["ensemble_used"]  # the point κ clears the floor, its CI's low end does not
