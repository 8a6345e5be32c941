import json

import polars as pl
import pytest

from hcat_pipeline.golden.cases import (
    CaseImportError,
    GoldenSetIntegrityError,
    VersionConflict,
    case_id_for,
    cases_frame,
    export_cases,
    file_sha256,
    freeze_version,
    import_cases,
    list_versions,
    load_version,
    verify_version,
)
from hcat_pipeline.schemas import GOLDEN_SET
from hcat_pipeline_tests.golden_data import sample_cases as _cases  # noqa: F401


def test_case_ids_are_stable_and_content_defined():
    a, b = _cases()[0], _cases()[0]
    assert a["case_id"] == b["case_id"] and a["case_id"].startswith("gc-")
    changed = dict(a, query="What does the break statement do?")
    assert case_id_for(changed) != a["case_id"]
    # provenance does not change the id
    assert case_id_for(dict(a, model="other", seed=7)) == case_id_for(a)


def test_cases_frame_matches_contract():
    frame = cases_frame(_cases())
    assert frame.columns[: len(GOLDEN_SET)] == list(GOLDEN_SET)
    assert frame["case_id"].to_list() == sorted(frame["case_id"].to_list())


def test_freeze_verify_reuse_and_refuse(tmp_path):
    frame = cases_frame(_cases())
    m = freeze_version(frame, "v1", tmp_path, created_at="2025-01-02")
    vdir = tmp_path / "v1"
    assert (vdir / "golden_set.parquet").exists() and (vdir / "manifest.json").exists()
    assert m["content_sha256"] == file_sha256(vdir / "golden_set.parquet")
    assert m["n_cases"] == 4 and m["counts"]["category"]["out_of_scope"] == 1
    stored, manifest = load_version("v1", tmp_path)
    assert set(stored["version"]) == {"v1"} and set(stored["created_at"]) == {"2025-01-02"}
    before = (vdir / "golden_set.parquet").read_bytes()
    # identical content: reused, not rewritten
    assert freeze_version(frame, "v1", tmp_path, created_at="2025-01-02")["content_sha256"] == m["content_sha256"]
    assert (vdir / "golden_set.parquet").read_bytes() == before
    # different content under the same version: refused, nothing touched
    with pytest.raises(VersionConflict, match="already frozen"):
        freeze_version(frame.head(2), "v1", tmp_path, created_at="2025-01-02")
    assert (vdir / "golden_set.parquet").read_bytes() == before
    assert list_versions(tmp_path) == ["v1"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_tampered_version_fails_verification(tmp_path):
    freeze_version(cases_frame(_cases()), "v1", tmp_path)
    path = tmp_path / "v1" / "golden_set.parquet"
    pl.read_parquet(path).head(1).write_parquet(path)
    with pytest.raises(GoldenSetIntegrityError, match="modified"):
        verify_version("v1", tmp_path)


def test_created_at_is_not_wall_clock(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    freeze_version(cases_frame(_cases()), "a", tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1735689600")  # 2025-01-01
    freeze_version(cases_frame(_cases()), "b", tmp_path)
    assert set(load_version("a", tmp_path)[0]["created_at"]) == {"1970-01-01"}
    assert set(load_version("b", tmp_path)[0]["created_at"]) == {"2025-01-01"}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_export_edit_import_roundtrip(tmp_path, suffix):
    frame = cases_frame(_cases())
    path = export_cases(frame, tmp_path / f"cases{suffix}")
    m = import_cases(path, "curated-1", tmp_path / "gs", created_at="2025-03-04")
    got, _ = load_version("curated-1", tmp_path / "gs")
    assert m["source"] == "curated" and got.height == frame.height
    assert got.sort("case_id")["options"].to_list() == frame.sort("case_id")["options"].to_list()
    assert got["case_id"].to_list() == frame["case_id"].to_list()


def test_import_reports_bad_rows_and_imports_nothing(tmp_path):
    frame = cases_frame(_cases())
    path = export_cases(frame, tmp_path / "cases.jsonl")
    lines = path.read_text().splitlines()
    bad2 = json.loads(lines[1])
    bad2["category"] = "happy"  # unknown category
    bad4 = json.loads(lines[3])
    bad4["query"] = "  "
    bad4["stratum"] = "two"
    lines[1], lines[3] = json.dumps(bad2), json.dumps(bad4)
    lines.append("{not json")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseImportError) as e:
        import_cases(path, "v2", tmp_path / "gs")
    rows = sorted({r for r, _ in e.value.errors})
    assert rows == [2, 4, 5]
    assert "row 2: category 'happy'" in str(e.value)
    assert not (tmp_path / "gs" / "v2").exists()


def test_import_csv_row_numbers(tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text(
        "category,query,expected_behavior,reference_answer,query_type,options\n"
        "happy_path,What does pass do?,answer,Nothing.,simple,\n"
        "happy_path,Which one is a null operation?,answer,pass,multiple_choice,\"[\"\"break\"\",\"\"del\"\"]\"\n"
        "out_of_scope,Capital of Mongolia?,abstain,,,\n"
    )
    with pytest.raises(CaseImportError) as e:
        import_cases(path, "v3", tmp_path / "gs")
    assert [r for r, _ in e.value.errors] == [3]  # spreadsheet row: header is row 1
    assert "row 3: the reference_answer of a multiple_choice case" in str(e.value)
    assert not (tmp_path / "gs").exists() or not list((tmp_path / "gs").iterdir())


def test_cli_freeze_export_import(tmp_path, capsys):
    from hcat_pipeline.cli import main

    cand = tmp_path / "cand.parquet"
    cases_frame(_cases()).write_parquet(cand)
    gs = str(tmp_path / "gs")
    assert main(["freeze", "v1", "--candidates", str(cand), "--golden-dir", gs, "--created-at", "2025-01-01"]) == 0
    assert main(["freeze", "v1", "--candidates", str(cand), "--golden-dir", gs, "--created-at", "2025-01-01"]) == 0  # same: reused
    cases_frame(_cases()[:2]).write_parquet(cand)
    assert main(["freeze", "v1", "--candidates", str(cand), "--golden-dir", gs, "--created-at", "2025-01-01"]) == 1  # refused
    assert "already frozen" in capsys.readouterr().err
    out = tmp_path / "cases.csv"
    assert main(["export-cases", "v1", str(out), "--golden-dir", gs]) == 0
    out.write_text(out.read_text().replace("out_of_scope", "out-of-scope"))
    assert main(["import-cases", str(out), "v2", "--golden-dir", gs]) == 1
    assert "row " in capsys.readouterr().err and not (tmp_path / "gs" / "v2").exists()
    assert main(["golden-versions", "--golden-dir", gs]) == 0


def test_cli_import_runs_the_validity_checks(tmp_path, capsys, embedding_model):
    import polars as pl

    from hcat_pipeline.cli import main
    from hcat_pipeline.golden.cases import load_version

    chunks = tmp_path / "chunks.parquet"
    pl.DataFrame({"chunk_id": ["k1"], "text": ["The pass statement is a null operation: when it is executed, nothing happens."]}).write_parquet(chunks)
    good = {"category": "happy_path", "query": "What happens when a pass statement is executed?", "expected_behavior": "answer",
            "reference_answer": "Nothing happens.", "query_type": "simple", "source_chunk_ids": ["k1"]}  # fmt: skip
    bad = {**good, "query": "What does the passage say about it?"}  # not self-contained
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (good, bad)) + "\n")
    gs = str(tmp_path / "gs")
    args = ["import-cases", str(path), "v1", "--golden-dir", gs, "--chunks", str(chunks)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "invalid" in err and "not_self_contained" in err and not (tmp_path / "gs" / "v1").exists()
    assert main([*args, "--keep-invalid"]) == 0
    frame, _ = load_version("v1", gs)
    verdicts = dict(zip(frame["query"], frame["validity_verdict"], strict=True))
    assert verdicts == {good["query"]: "valid", bad["query"]: "invalid"}
    assert frame["validity_score"].null_count() == 0 and frame.filter(pl.col("validity_verdict") == "invalid")["validity_reasons"][0].len() >= 1
