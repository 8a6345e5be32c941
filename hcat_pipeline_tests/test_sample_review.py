"""Review by sample or by case (issue 68), the core's known answers: the plan's size from the tolerance, a seeded
sample that does not depend on the cases' order, a sound kind accepted by its sample and its unsampled cases stamped
with the bound (never as reviewed), a kind with a fifth unsound almost never accepted (and then sent case by case),
a kind no bigger than its sample reviewed whole. Pure, milliseconds."""

import polars as pl

from hcat_pipeline.golden.sample_review import (
    case_kind,
    draw_sample,
    kind_status,
    plan_kinds,
    sample_size,
    sample_stamps,
    unsound_bound,
)


def _set(n_jail: int = 60, n_simple: int = 12) -> pl.DataFrame:
    rows = [{"case_id": f"j{i:03d}", "category": "adversarial", "variant_kind": "jailbreak", "query_type": None} for i in range(n_jail)]
    rows += [{"case_id": f"s{i:03d}", "category": "happy_path", "variant_kind": None, "query_type": "simple"} for i in range(n_simple)]
    return pl.DataFrame(rows)


def test_the_plan_size_is_the_least_that_bounds_the_unsound_share_within_the_tolerance():
    assert sample_size(0.10) == 29 and unsound_bound(0, 29) <= 0.10 < unsound_bound(0, 28)
    assert sample_size(0.10, acceptance=1) == 46 and unsound_bound(1, 46) <= 0.10 < unsound_bound(1, 45)
    assert unsound_bound(3, 3) == 1.0 and unsound_bound(0, 0) == 1.0


def test_the_sample_is_seeded_and_independent_of_the_cases_order():
    ids = [f"c{i}" for i in range(100)]
    assert draw_sample(ids, 29, seed=3) == draw_sample(list(reversed(ids)), 29, seed=3) != draw_sample(ids, 29, seed=4)
    assert len(draw_sample(ids, 29, 0)) == 29


def test_kinds_are_named_by_how_the_case_was_made():
    assert case_kind({"category": "happy_path", "query_type": "yes_no"}) == "happy_path:yes_no"
    assert case_kind({"category": "adversarial", "variant_kind": "jailbreak"}) == "jailbreak"
    assert case_kind({"category": "out_of_scope"}) == "out_of_scope"


def test_a_sound_kind_is_accepted_by_its_sample_and_the_rest_stamped_with_the_bound_never_as_reviewed():
    frame = _set()
    plans = plan_kinds(frame, tolerance=0.10, seed=0)
    jail = plans["jailbreak"]
    ids = frame.filter(pl.col("variant_kind") == "jailbreak")["case_id"].to_list()
    assert len(jail.sample) == 29 and kind_status(jail, ids, {}).state == "sampling"
    actions = {c: "accept" for c in jail.sample}
    status = kind_status(jail, ids, actions)
    assert status.state == "accepted_by_sample" and status.bound <= 0.10 and status.to_review == []
    stamps = sample_stamps(frame, plans, actions)
    assert set(stamps) == set(ids) - set(jail.sample) and all(b == status.bound for b in stamps.values())
    small = plans["happy_path:simple"]  # 12 cases < 29: the sample is the kind, reviewed whole
    assert len(small.sample) == 12 and kind_status(small, small.sample, {c: "accept" for c in small.sample}).state == "reviewed_by_case"


def test_a_kind_a_fifth_unsound_is_almost_never_accepted_and_a_failed_sample_goes_case_by_case():
    ids = [f"k{i:03d}" for i in range(200)]
    unsound = set(ids[::5])  # 20 % unsound
    frame = pl.DataFrame({"case_id": ids, "category": "robustness", "variant_kind": "typo", "query_type": None})
    accepted = 0
    for seed in range(300):
        plan = plan_kinds(frame, tolerance=0.10, seed=seed)["typo"]
        actions = {c: ("edit" if c in unsound else "accept") for c in plan.sample}
        status = kind_status(plan, ids, actions)
        accepted += status.state == "accepted_by_sample"
        if status.state == "case_by_case":
            assert set(status.to_review) == set(ids) - set(plan.sample)  # every other case, once the sample failed
    assert accepted <= 0.05 * 300  # the bound's guarantee: at most 5 % of the seeds accept a kind above the tolerance
