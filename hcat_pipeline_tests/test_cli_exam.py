"""`hcat exam`: registered, and its flags become the exam_job run config (the job itself is exercised in
test_exam_assets.py with a scripted LLM and in test_exam_llm.py with the real local model)."""

from __future__ import annotations

import argparse

import pytest

from hcat_pipeline.cli import main
from hcat_pipeline.commands.exam import add_arguments, run_config


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def test_flags_become_run_config():
    cfg = run_config(_parse(["--sample-size", "12", "--icl-levels", "0,2", "--max-questions", "5", "--run-label", "x"]))
    assert cfg["ops"]["exam_candidates"]["config"] == {"sample_size": 12}
    assert cfg["ops"]["exam_responses"]["config"] == {"max_questions": 5, "run_label": "x", "icl_levels": [0, 2]}
    default = run_config(_parse([]))
    assert default["ops"]["exam_candidates"]["config"] == {} and "icl_levels" not in default["ops"]["exam_responses"]["config"]


def test_campaign_file_reaches_the_takers_and_the_chunking_comparison():
    cfg = run_config(_parse(["--campaign", "campaigns/exam.yaml", "--run-label", "y"]))
    assert cfg["ops"]["exam_responses"]["config"]["campaign_file"] == "campaigns/exam.yaml"
    assert cfg["ops"]["exam_chunking"]["config"] == {"max_questions": 0, "run_label": "y", "campaign_file": "campaigns/exam.yaml"}
    assert "campaign_file" not in run_config(_parse([]))["ops"]["exam_chunking"]["config"]  # the asset's default file


def test_the_shipped_exam_campaign_names_two_chunkings_and_both_dense_encoders():
    from hcat_pipeline.campaign_spec import load_campaign
    from hcat_pipeline.paths import PROJECT_ROOT

    spec = load_campaign(PROJECT_ROOT / "campaigns" / "exam.yaml")
    assert {s.retriever for s in spec.systems} >= {"dense", "dense_use", "bm25", "oracle", "closed_book"}
    assert [(c.max_tokens, c.overlap_tokens) for c in spec.exam_chunkings] == [(200, 40), (100, 20)]


def test_run_config_is_valid_for_exam_job():
    from dagster import DagsterInvalidConfigError, validate_run_config

    from hcat_pipeline.definitions import defs

    job = defs.resolve_job_def("exam_job")
    validate_run_config(job, run_config(_parse(["--sample-size", "12", "--icl-levels", "0,1"])))  # raises when invalid
    validate_run_config(job, run_config(_parse(["--campaign", "campaigns/exam.yaml"])))
    with pytest.raises(DagsterInvalidConfigError):
        validate_run_config(job, {"ops": {"exam_candidates": {"config": {"sample_size": "many"}}}})


def test_help_lists_the_command(capsys):
    with pytest.raises(SystemExit):
        main(["exam", "--help"])
    assert "--icl-levels" in capsys.readouterr().out
