"""The score cache (metrics.score_cache): the same scoring inputs give the stored scores without running a model again;
any change to what scoring reads is a miss. Stand-in embedding, seconds."""

import inspect
import re

import polars as pl
import pytest

from hcat_pipeline.metrics import batch
from hcat_pipeline.metrics.score_cache import INPUT_COLUMNS, ScoreCache
from hcat_pipeline.metrics.scoring import merge_score_infos, score_frame
from hcat_pipeline_tests.metrics_data import FRAME, fake_embed

METRICS = ["groundedness_similarity", "answer_relevancy"]


class CountingEmbed:
    def __init__(self):
        self.calls = 0

    def __call__(self, texts):
        self.calls += 1
        return fake_embed(texts)


def _score(frame, cache, embed, **kw):
    return score_frame(frame, METRICS, embed=embed, cache=cache, **kw)


def test_the_same_inputs_are_read_back_and_a_run_stamp_does_not_count(tmp_path):
    cache, embed = ScoreCache(tmp_path, {"embed": "fake"}), CountingEmbed()
    first, info1 = _score(FRAME, cache, embed)
    assert info1["cache"] == "miss" and embed.calls == 1
    later_night = FRAME.with_columns(pl.lit("2026-12-08").alias("night"), pl.lit(0.4).alias("latency_s"))
    second, info2 = _score(later_night, cache, embed)
    assert info2["cache"] == "hit" and embed.calls == 1  # no model ran
    assert second.drop("night", "latency_s").equals(first)
    assert second["night"].to_list() == ["2026-12-08"] * 2


@pytest.mark.parametrize("change", ["answer", "contexts", "error", "metrics", "option", "models", "reference"])
def test_a_change_to_what_scoring_reads_is_a_miss(tmp_path, change):
    embed = CountingEmbed()
    _score(FRAME, ScoreCache(tmp_path, {"embed": "fake"}), embed)
    frame, metrics, kw, models = FRAME, METRICS, {}, {"embed": "fake"}
    if change == "answer":
        frame = FRAME.with_columns(pl.Series("answer", ["The tower is in Rome.", None]))
    elif change == "contexts":
        frame = FRAME.with_columns(pl.Series("contexts", [["The tower is in Rome."], ["The tower is in Paris."]]))
    elif change == "error":
        frame = FRAME.with_columns(pl.Series("error", [None, "503"]))
    elif change == "reference":
        frame = FRAME.with_columns(pl.Series("reference", ["Paris", "Paris"]))
    elif change == "metrics":
        metrics = METRICS[:1]
    elif change == "option":
        kw = {"coverage_threshold": 0.6}
    elif change == "models":
        models = {"embed": "another"}
    _, info = score_frame(frame, metrics, embed=embed, cache=ScoreCache(tmp_path, models), **kw)
    assert info["cache"] == "miss" and embed.calls == 2


def test_an_unavailable_metric_is_never_stored_and_custom_weights_are_not_cached(tmp_path):
    cache = ScoreCache(tmp_path, {})
    _, info = score_frame(FRAME, ["groundedness_similarity", "pii_leak"], embed=fake_embed, allow_unavailable=True, cache=cache)
    assert info["metrics_unavailable"] and not list(tmp_path.rglob("*.parquet"))
    _, info = score_frame(FRAME, METRICS, embed=fake_embed, cache=cache, sentence_weights=lambda s: [1.0] * len(s))
    assert "cache" not in info and not list(tmp_path.rglob("*.parquet"))


def test_merged_shards_count_the_reused_ones(tmp_path):
    cache = ScoreCache(tmp_path, {})
    infos = [_score(FRAME, cache, fake_embed)[1], _score(FRAME, cache, fake_embed)[1]]
    merged = merge_score_infos(infos)
    assert merged["shards"] == 2 and merged["shards_reused"] == 1 and "cache" not in merged


def test_the_key_covers_every_column_a_batch_reads():
    """Batch is the only reader of a frame's columns in scoring: each column it names must be in the key."""
    named = set(re.findall(r'frame\["([a-z_]+)"\]', inspect.getsource(batch.Batch.__init__)))
    assert named and named <= set(INPUT_COLUMNS), named - set(INPUT_COLUMNS)
