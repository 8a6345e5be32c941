"""Stage 1 / Stage 2 / evaluation splits and the label-sufficiency verdict."""

import numpy as np
import pytest

from hcat_pipeline.calibration import SPLITS, SplitConformal, allocate, label_sufficiency, make_splits, min_holdout_size


def _items(n0=150, n1=50):
    ids = [f"case{i:03d}|sys" for i in range(n0 + n1)]
    labels = [0] * n0 + [1] * n1
    return ids, labels


def test_allocate_largest_remainder_by_hand():
    assert allocate(7, (0.4, 0.4, 0.2)) == (3, 3, 1)  # 2.8 2.8 1.4 → 2 2 1, two left for the .8s
    assert allocate(3, (0.4, 0.4, 0.2)) == (1, 1, 1)  # 1.2 1.2 0.6 → 1 1 0, one left for the .6
    assert allocate(10, (0.5, 0.3, 0.2)) == (5, 3, 2)
    assert all(sum(allocate(n)) == n for n in range(60))
    with pytest.raises(ValueError):
        allocate(5, (0.5, 0.5, 0.5))


def test_splits_are_disjoint_complete_and_stratified():
    ids, labels = _items()
    sp = make_splits(ids, labels, seed=3)
    parts = [set(sp.ids(s)) for s in SPLITS]
    assert sum(len(p) for p in parts) == len(ids) and set().union(*parts) == set(ids)
    assert all(not (a & b) for i, a in enumerate(parts) for b in parts[i + 1 :])
    y = np.array(labels)
    for split, (want0, want1) in zip(SPLITS, zip(allocate(150), allocate(50))):
        m = sp.mask(split)
        assert (np.sum(y[m] == 0), np.sum(y[m] == 1)) == (want0, want1)
    assert sp.record["counts"]["stage2"] == {"0": 60, "1": 20}
    assert sp.record["seed"] == 3 and set(sp.record["ids_hash"]) == set(SPLITS)


def test_splits_are_deterministic_order_free_and_seeded():
    ids, labels = _items()
    a = make_splits(ids, labels, seed=3)
    b = make_splits(ids, labels, seed=3)
    assert a.assignment.equals(b.assignment) and a.record == b.record
    order = np.random.default_rng(0).permutation(len(ids))
    c = make_splits([ids[i] for i in order], [labels[i] for i in order], seed=3)
    assert dict(zip(c.assignment["item_id"], c.assignment["split"])) == dict(zip(a.assignment["item_id"], a.assignment["split"]))
    d = make_splits(ids, labels, seed=4)
    assert set(d.ids("stage1")) != set(a.ids("stage1"))
    assert d.record["counts"] == a.record["counts"]


def test_splits_refuse_repeated_items():
    with pytest.raises(ValueError, match="unique"):
        make_splits(["a", "b", "a"], [0, 1, 0])


def test_min_holdout_size_is_one_over_alpha_minus_one():
    assert [min_holdout_size(a) for a in (0.1, 0.05, 0.2, 0.3, 0.01)] == [9, 19, 4, 3, 99]
    for alpha in (0.1, 0.05, 0.2, 0.3):
        n = min_holdout_size(alpha)
        y = np.ones(n, int)
        assert SplitConformal(alpha).fit(np.full(n, 0.7), y).trivial is False
        assert SplitConformal(alpha).fit(np.full(n - 1, 0.7), y[:-1]).trivial is True


def test_sufficiency_names_the_class_that_is_short():
    v = label_sufficiency([0] * 20 + [1] * 3, alpha=0.1)
    assert not v.sufficient
    # Stage 1 needs ≥ 10 of each class: 24 labels give allocate(24) = (10, 9, 5)
    assert v.more_per_class == {0: 4, 1: 21}
    assert "class 1: 3 labels, needs 21 more" in v.message
    assert allocate(24)[0] == 10 and allocate(23)[0] == 9


def test_sufficiency_fills_a_short_holdout_and_the_fix_works():
    labels = [0] * 20 + [1] * 20
    v = label_sufficiency(labels, alpha=0.05, min_per_class_stage1=5)
    assert v.holdout_size == 16 == len(make_splits(range(40), labels).ids("stage2"))
    assert v.holdout_needed == 19 and not v.sufficient and "1/α − 1" in v.message
    assert v.more_per_class == {0: 5, 1: 4} and v.more_total == 9
    fixed = labels + [0] * 5 + [1] * 4
    assert label_sufficiency(fixed, alpha=0.05, min_per_class_stage1=5).sufficient
    assert len(make_splits(range(len(fixed)), fixed).ids("stage2")) == 19
    less = labels + [0] * 4 + [1] * 4
    assert not label_sufficiency(less, alpha=0.05, min_per_class_stage1=5).sufficient


def test_sufficiency_class_conditional_and_missing_classes():
    v = label_sufficiency([0] * 30 + [1] * 30 + [2] * 30, alpha=0.1, n_classes=4, min_per_class_stage1=5)
    assert v.more_per_class == {3: 11}  # class 3 never labelled: allocate(11) = (5, 4, 2), allocate(10) = (4, 4, 2)
    c = label_sufficiency([0] * 40 + [1] * 10, alpha=0.1, class_conditional=True, min_per_class_stage1=1)
    assert c.more_per_class == {1: 12}  # 9 in its own hold-out: allocate(22) = (9, 9, 4), allocate(21) = (9, 8, 4)
    ok = label_sufficiency([0] * 30 + [1] * 30, alpha=0.1)
    assert ok.sufficient and ok.reasons == [] and ok.to_dict()["message"].startswith("enough labels")
