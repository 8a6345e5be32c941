"""Label files, the versioned label store and inter-rater agreement."""

import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.calibration import LabelStore, agreement, consensus_labels, parse_scale, read_label_file

HEADER = "case_id,system_id,dimension,label,rater,labelled_at,scale,comment\n"


def _csv(path, rows: str, header: str = HEADER):
    path.write_text(header + rows, encoding="utf-8")
    return path


GOOD = (
    "c1,sysA,groundedness,1,ann,2025-03-01,,\n"
    "c1,sysA,groundedness,0,bob,2025-03-01T10:00:00Z,,unsupported claim\n"
    "c2,sysA,helpfulness,3,ann,2025-03-02,ordinal:1-5,\n"
    "c2,sysA,helpfulness,4,bob,2025-03-02,ordinal:1-5,\n"
)


def test_scales():
    assert parse_scale("binary") == (0, 1) and str(parse_scale(" Ordinal:1-5 ")) == "ordinal:1-5"
    assert parse_scale("ordinal:0-4").n_levels == 5
    for bad in ("ordinal:4-0", "likert", "ordinal:0..4"):
        with pytest.raises(ValueError):
            parse_scale(bad)


def test_good_csv_rows(tmp_path):
    good, errors = read_label_file(_csv(tmp_path / "a.csv", GOOD))
    assert errors.is_empty() and good.height == 4
    r = good.row(2, named=True)
    assert (r["dimension"], r["scale"], r["label"], r["label_index"], r["n_levels"]) == ("helpfulness", "ordinal:1-5", 3, 2, 5)
    assert good["source_line"].to_list() == [2, 3, 4, 5]
    assert good["comment"].to_list() == [None, "unsupported claim", None, None]
    assert good["labelled_at"].dtype == pl.Datetime("us", "UTC")
    assert good["row_hash"].n_unique() == 4


def test_bad_csv_rows_reported_with_line_and_reason(tmp_path):
    rows = (
        GOOD
        + "c3,sysA,groundedness,2,ann,2025-03-01,,\n"  # line 6: outside binary
        + "c4,sysA,tone,1,ann,2025-03-01,,\n"  # line 7: rubric dimension without a scale
        + '"c5",sysA,groundedness,1,ann,"yesterday",,"two\nlines"\n'  # line 8 (one spreadsheet row)
        + "c6,,groundedness,1,ann,2025-03-01,,\n"  # line 9: empty system_id
        + "c7,sysA,helpfulness,2,ann,2025-03-01,ordinal:0-4,\n"  # line 10: scale disagrees with line 4
        + "c8,sysA,groundedness,1,ann,2025-03-01\n"  # line 11: too few fields
    )
    good, errors = read_label_file(_csv(tmp_path / "bad.csv", rows))
    got = {r["line"]: r["reason"] for r in errors.to_dicts()}
    assert set(got) == {6, 7, 8, 9, 10, 11} and set(errors["file"]) == {"bad.csv"}
    assert "outside the binary scale" in got[6]
    assert "no default scale" in got[7]
    assert "labelled_at" in got[8]
    assert "system_id" in got[9]
    assert "line 4" in got[10]
    assert "expected 8 fields" in got[11]


def test_bad_header_is_a_file_error(tmp_path):
    _, errors = read_label_file(
        _csv(tmp_path / "h.csv", "c1,s,groundedness,1,ann,2025-01-01\n", "case_id,system_id,dimension,label,rater,labeled_at\n")
    )
    assert errors.height == 1 and errors["line"][0] == 1
    assert "labelled_at" in errors["reason"][0] and "labeled_at" in errors["reason"][0]
    _, errors = read_label_file(_csv(tmp_path / "empty.csv", ""))
    assert errors["reason"].to_list() == ["no label rows"]
    (tmp_path / "x.xlsx").write_bytes(b"")
    assert "unsupported" in read_label_file(tmp_path / "x.xlsx")[1]["reason"][0]


def test_jsonl_and_parquet(tmp_path):
    lines = [
        {"case_id": "c1", "system_id": "s", "dimension": "toxicity", "label": 0, "rater": "ann", "labelled_at": "2025-03-01"},
        {
            "case_id": "c2",
            "system_id": "s",
            "dimension": "toxicity",
            "label": 1,
            "rater": "ann",
            "labelled_at": "2025-03-01",
            "note": "x",
        },
    ]
    p = tmp_path / "l.jsonl"
    p.write_text(json.dumps(lines[0]) + "\n\n{not json\n" + json.dumps(lines[1]) + "\n")
    good, errors = read_label_file(p)
    assert good.height == 1 and errors.to_dicts() == [
        {"file": "l.jsonl", "line": 3, "reason": errors["reason"][0]},
        {"file": "l.jsonl", "line": 4, "reason": "unknown field(s) note"},
    ]
    assert "JSON" in errors["reason"][0]
    q = tmp_path / "l.parquet"
    pl.DataFrame([lines[0], {**lines[1], "label": 7}]).drop("note").write_parquet(q)
    good, errors = read_label_file(q)
    assert good.height == 1 and errors["line"].to_list() == [2] and "outside" in errors["reason"][0]


def test_conflicting_duplicate_judgement_in_one_file(tmp_path):
    rows = "c1,s,groundedness,1,ann,2025-03-01,,\nc1,s,groundedness,0,ann,2025-03-01,,\n"
    _, errors = read_label_file(_csv(tmp_path / "d.csv", rows))
    assert errors["line"].to_list() == [3] and "line 2" in errors["reason"][0]


def test_store_imports_whole_file_or_nothing(tmp_path):
    store = LabelStore(tmp_path / "store")
    bad = _csv(tmp_path / "bad.csv", GOOD + "c3,sysA,groundedness,5,ann,2025-03-01,,\n")
    res = store.import_file(bad)
    assert res.status == "rejected" and res.errors["line"].to_list() == [6] and res.rows_added == 0
    assert store.labels().is_empty() and store.versions().is_empty()
    assert not (tmp_path / "store" / "parts").exists() or not any((tmp_path / "store" / "parts").iterdir())


def test_store_is_idempotent_versioned_and_keeps_every_rater(tmp_path):
    store = LabelStore(tmp_path / "store")
    a = _csv(tmp_path / "a.csv", GOOD)
    first = store.import_file(a)
    assert (first.status, first.version, first.rows_added) == ("imported", "v000001", 4)
    before = store.labels()
    again = store.import_file(a)
    assert again.status == "unchanged" and again.version is None
    same_rows = _csv(tmp_path / "copy.csv", GOOD.splitlines(keepends=True)[1] + GOOD.splitlines(keepends=True)[0])
    assert store.import_file(same_rows).status == "unchanged"  # other bytes, same judgements
    assert store.labels().equals(before) and store.versions().height == 1

    more = _csv(tmp_path / "b.csv", GOOD.splitlines(keepends=True)[0] + "c1,sysA,groundedness,1,cyd,2025-03-03,,\n")
    res = store.import_file(more)
    assert (res.status, res.version, res.rows_added, res.rows_skipped) == ("imported", "v000002", 1, 1)
    labels = store.labels()
    c1 = labels.filter((pl.col("case_id") == "c1") & (pl.col("dimension") == "groundedness"))
    assert sorted(c1["rater"].to_list()) == ["ann", "bob", "cyd"]
    v = store.versions()
    assert v["version"].to_list() == ["v000001", "v000002"] and v["rows_added"].to_list() == [4, 1]
    assert v["source_file"].to_list() == ["a.csv", "b.csv"] and len(v["source_sha256"][0]) == 64
    assert store.labels(version="v000001").height == 4
    assert sorted(p.name for p in (tmp_path / "store" / "parts").iterdir()) == ["v000001.parquet", "v000002.parquet"]


def test_store_refuses_a_scale_that_contradicts_the_store(tmp_path):
    store = LabelStore(tmp_path / "store")
    store.import_file(_csv(tmp_path / "a.csv", GOOD))
    res = store.import_file(_csv(tmp_path / "b.csv", "c9,sysA,helpfulness,2,ann,2025-03-05,ordinal:0-4,\n"))
    assert res.status == "rejected" and res.errors["line"].to_list() == [2]
    assert "ordinal:1-5" in res.errors["reason"][0] and store.versions().height == 1


def _frame(rows, scale="binary", n_levels=2, dim="groundedness"):
    return pl.DataFrame(
        [
            {
                "case_id": c,
                "system_id": "s",
                "dimension": dim,
                "rater": r,
                "label_index": v,
                "scale": scale,
                "n_levels": n_levels,
                "labelled_at": t,
            }
            for c, r, v, t in rows
        ]
    )


def test_cohen_kappa_by_hand():
    a = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 1, 0, 0, 0, 0]  # p_o = 0.8, p_e = 0.5 → κ = 0.6
    rows = [(f"c{i}", "ann", x, 0) for i, x in enumerate(a)] + [(f"c{i}", "bob", x, 0) for i, x in enumerate(b)]
    rows.append(("c0", "bob", 0, -1))  # an earlier label of bob's, superseded by his later one
    out = agreement(_frame(rows)).row(0, named=True)
    assert out["method"] == "cohen" and out["kappa"] == pytest.approx(0.6) and out["n_items"] == 10 and out["n_raters"] == 2


def test_weighted_kappa_for_ordinal_counts_near_misses():
    a = [0, 1, 2, 3, 4, 0, 2, 4]
    b = [1, 1, 2, 4, 4, 0, 3, 3]  # every disagreement off by one
    rows = [(f"c{i}", "ann", x, 0) for i, x in enumerate(a)] + [(f"c{i}", "bob", x, 0) for i, x in enumerate(b)]
    out = agreement(_frame(rows, scale="ordinal:0-4", n_levels=5)).row(0, named=True)
    # quadratic weights by hand: κ_w = 1 − Σ w·O / Σ w·E with w = (i − j)² / 16
    obs = np.zeros((5, 5))
    for i, j in zip(a, b):
        obs[i, j] += 1
    exp = np.outer(obs.sum(1), obs.sum(0)) / len(a)
    w = (np.subtract.outer(np.arange(5), np.arange(5)) ** 2) / 16
    assert out["method"] == "cohen_quadratic"
    assert out["kappa"] == pytest.approx(1 - (w * obs).sum() / (w * exp).sum())
    assert out["kappa"] > 0.8  # near misses keep weighted κ high


def test_fleiss_kappa_by_hand():
    # 4 items, 3 raters: counts (3,0) (0,3) (2,1) (1,2) → P̄ = 2/3, P̄e = 0.5 → κ = 1/3
    votes = {"c1": [0, 0, 0], "c2": [1, 1, 1], "c3": [0, 0, 1], "c4": [1, 1, 0]}
    rows = [(c, r, v, 0) for c, vs in votes.items() for r, v in zip(["ann", "bob", "cyd"], vs)]
    rows.append(("c5", "ann", 1, 0))  # single-rater item: not in agreement
    out = agreement(_frame(rows)).row(0, named=True)
    assert out["method"] == "fleiss" and out["kappa"] == pytest.approx(1 / 3) and out["n_items"] == 4 and out["n_raters"] == 3


def test_agreement_says_when_it_cannot_be_computed():
    out = agreement(_frame([("c1", "ann", 1, 0), ("c2", "bob", 0, 0)])).row(0, named=True)
    assert out["kappa"] is None and "two raters" in out["note"]


def test_consensus_labels():
    rows = [
        ("c1", "ann", 1, 0),
        ("c1", "bob", 1, 0),
        ("c1", "cyd", 0, 0),
        ("c2", "ann", 0, 0),
        ("c2", "bob", 1, 0),
        ("c3", "ann", 1, 0),
    ]
    out = consensus_labels(_frame(rows)).sort("case_id")
    assert out["label_index"].to_list() == [1, 0, 1]
    assert out["n_raters"].to_list() == [3, 2, 1] and out["tie"].to_list() == [False, True, False]
    assert out["support"].to_list() == pytest.approx([2 / 3, 0.5, 1.0])


def test_store_to_agreement_end_to_end(tmp_path):
    store = LabelStore(tmp_path / "store")
    store.import_file(_csv(tmp_path / "a.csv", GOOD))
    out = agreement(store.labels())
    assert out["dimension"].to_list() == ["groundedness", "helpfulness"]
    assert out["method"].to_list() == ["cohen", "cohen_quadratic"]
