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
