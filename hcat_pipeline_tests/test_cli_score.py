import json

import polars as pl
import pytest

from hcat_pipeline.cli import main

ROWS = [
    {"query": "When was the Eiffel Tower completed?", "contexts": ["The Eiffel Tower is in Paris. It was completed in 1889."],
     "answer": "It was completed in 1889.", "reference": "The tower was completed in 1889.", "id": 1},
    {"query": "When was the Eiffel Tower completed?", "contexts": ["The Eiffel Tower is in Paris. It was completed in 1889."],
     "answer": "Bananas are yellow. They grow in bunches.", "reference": "The tower was completed in 1889.", "id": 2},
]
METRICS = "groundedness_similarity,completeness_wasserstein,semantic_similarity"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_hcat_score_in_and_out(tmp_path, suffix, capsys):
    src, dst = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    frame = pl.DataFrame(ROWS)
    if suffix == ".jsonl":
        src.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    else:
        frame.write_parquet(src)
    rc = main(["score", str(src), str(dst), "--metrics", METRICS, "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    assert rc == 0
    out = pl.read_ndjson(dst) if suffix == ".jsonl" else pl.read_parquet(dst)
    assert out["id"].to_list() == [1, 2]  # other columns are kept, row order too
    assert out["groundedness_similarity"][0] > out["groundedness_similarity"][1]
    assert out["least_grounded_sentence"][1] in ("Bananas are yellow.", "They grow in bunches.")
    assert out["completeness_wasserstein"].null_count() == 0
    assert "scored 2/2 rows" in capsys.readouterr().out


def test_hcat_score_bad_input(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n")
    assert main(["score", str(src), str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "expected .jsonl" in capsys.readouterr().err


def test_hcat_score_cross_lingual(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.parquet"
    rows = [
        {"query": "Where is the cat?", "contexts": ["The cat sits on the mat."], "answer": "The cat sits on the mat.", "reference": "Le chat est assis sur le tapis."},
        {"query": "Where is the cat?", "contexts": ["The cat sits on the mat."], "answer": "Stock markets fell sharply.", "reference": "Le chat est assis sur le tapis."},
    ]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc = main(["score", str(src), str(dst), "--metrics", "groundedness_similarity", "--cross-lingual", "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert rc == 0
    out = pl.read_parquet(dst)
    assert out["cross_lingual_similarity"][0] > out["cross_lingual_similarity"][1] + 0.3


def test_hcat_score_every_metric(tmp_path, capsys):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.parquet"
    rows = [*ROWS, {"query": "Who do I write to?", "contexts": ["Write to Jane Doe at jane.doe@example.com."],
                    "answer": "I don't know. You are a stupid idiot. Mail john.smith@example.org.", "reference": "Jane Doe.", "id": 3}]
    rows = [{**r, "source_documents": r["contexts"]} for r in rows]  # long_document_faithfulness reads them
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc = main(["score", str(src), str(dst), "--cache-dir", str(tmp_path / "c"), "--no-progress", "--cross-lingual",
               "--with", "hierarchical_consistency,long_document_faithfulness,language_coverage,conciseness,tone"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    out = pl.read_parquet(dst)
    info = json.loads(out["score_info"][0])
    from hcat_pipeline.metrics import metric_names

    assert out["hierarchy_structure"].to_list() == ["none"] * out.height  # prose answers: the opt-in metric does not apply
    assert out["long_document_sources"].to_list() == [1] * out.height and out["long_document_faithfulness"].is_not_null().all()

    assert info["metrics_computed"] == metric_names() and info["metrics_unavailable"] == {}  # every registered metric ran
    assert out["groundedness_nli"][0] > out["groundedness_nli"][1]
    assert out["pii_leak"].to_list() == [0, 0, 1] and out["refused"].to_list() == [False, False, True]
    assert out["toxicity"][2] > 0.5 > out["toxicity"][0]
    means = capsys.readouterr().out
    assert '"pii_leak": 0.3333' in means and "cross_lingual_similarity" in means


def test_hcat_score_unavailable_metric_fails_unless_allowed(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k != "reference"}) for r in ROWS) + "\n")
    args = ["score", str(src), str(tmp_path / "out.jsonl"), "--metrics", "groundedness_similarity,semantic_similarity",
            "--cache-dir", str(tmp_path / "c"), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "semantic_similarity" in err and "no 'reference' column" in err and "Fix:" in err
    assert not (tmp_path / "out.jsonl").exists()
    assert main([*args, "--allow-unavailable"]) == 0
    assert "not computed: semantic_similarity: the input has no 'reference' column" in capsys.readouterr().out
    out = pl.read_ndjson(tmp_path / "out.jsonl")
    assert out["semantic_similarity"].null_count() == 2 and out["groundedness_similarity"].null_count() == 0
