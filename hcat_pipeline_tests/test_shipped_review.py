"""Issue 59 item 4: the maintainers' review ships with the campaign; the night reads the curated version, says "N reviewed
cases (by …, on …)" on the first screen, and says in capitals when the generated version has no shipped review. A
change to the generator fails ``test_the_default_campaigns_shipped_review_is_of_what_the_generator_makes_today``."""

import json
import shutil

import pytest

from hcat_pipeline.golden.cases import load_version, read_manifest
from hcat_pipeline.golden.review import review_summary
from hcat_pipeline.review.curation import CurationLog
from hcat_pipeline.review.shipped import (
    apply_shipped_review,
    generator_fingerprint,
    recorded_fingerprint,
    ship_review,
    shipped_versions,
)
from hcat_pipeline_tests.review_data import VERSION, make_project


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def _decide(project) -> list[str]:
    base, _ = load_version(VERSION, project.golden_dir)
    ids = [r["case_id"] for r in base.iter_rows(named=True) if r["base_case_id"] is None]
    log = CurationLog(project.curation_dir, VERSION)
    log.record(ids[0], "accept", "maintainer")
    log.record(ids[1], "edit", "maintainer", edits={"reference_answer": "The nearest enclosing loop."})
    log.record(ids[2], "reject", "maintainer", "the reference is cut short")
    return ids


def test_a_shipped_review_curates_the_generated_version_and_the_first_screen_names_it(project, tmp_path):
    ids = _decide(project)
    shipped = tmp_path / "campaigns" / "review"
    path = ship_review(project.curation_dir, VERSION, shipped, "f" * 16)
    assert path.is_file() and shipped_versions(shipped) == [VERSION] and recorded_fingerprint(shipped, VERSION) == "f" * 16
    out = apply_shipped_review(shipped, VERSION, project.golden_dir, tmp_path / "work")
    assert out.matched and out.version.startswith(f"{VERSION}-reviewed-")
    frame, manifest = load_version(out.version, project.golden_dir)
    assert manifest["source"] == "curated" and ids[2] not in frame["case_id"].to_list()
    s = review_summary(frame, "reviewed")
    assert s["n_reviewed"] == 2 and s["reviewers"] == ["maintainer"]
    assert out.note.startswith("2 reviewed cases (by maintainer, on ") and "1 rejected, 1 edited" in out.note
    assert "(by maintainer, on " in s["text"]  # the gates' "cases read" line, on the report's first screen and the console
    assert not list(shipped.glob("*.curated.jsonl"))  # the shipped folder is only read
    again = apply_shipped_review(shipped, VERSION, project.golden_dir, tmp_path / "work")  # a second night reuses the frozen one
    assert again.version == out.version


def test_a_generated_version_without_a_shipped_review_is_said_in_capitals(project, tmp_path):
    shipped = tmp_path / "review"
    shipped.mkdir()
    (shipped / "gs-000000000000.decisions.jsonl").write_text("")
    out = apply_shipped_review(shipped, VERSION, project.golden_dir, tmp_path / "work")
    assert not out.matched and out.version == VERSION
    assert out.note.startswith("SHIPPED REVIEW NOT APPLIED") and "gs-000000000000" in out.note and VERSION in out.note


def test_a_review_of_another_version_still_decides_the_cases_both_hold(project, tmp_path):
    """The generation moved on part of the set (another machine's arithmetic, say): the shipped decisions on the cases the
    new version still holds (same case id = same content) apply, the new cases stay unreviewed, the note says so in capitals."""
    from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case

    ids = _decide(project)  # accept ids[0], edit ids[1], reject ids[2]
    shipped = tmp_path / "review"
    ship_review(project.curation_dir, VERSION, shipped, "f" * 16)
    base, _ = load_version(VERSION, project.golden_dir)
    moved = [r for r in base.iter_rows(named=True) if r["case_id"] != ids[0] and r["base_case_id"] != ids[0]]  # one case changed…
    fresh = new_case(category="happy_path", query_type="simple", query="What does the pass statement do when executed?",
                     reference_answer="Nothing happens.", expected_behavior="answer", source_chunk_ids=["c1"])  # … into this one
    freeze_version(cases_frame([*moved, fresh]), "gs-moved", project.golden_dir, created_at="2026-11-27")
    out = apply_shipped_review(shipped, "gs-moved", project.golden_dir, tmp_path / "work")
    assert out.matched and out.version.startswith("gs-moved-reviewed-")
    frame, _ = load_version(out.version, project.golden_dir)
    s = review_summary(frame, "reviewed")
    assert s["n_reviewed"] == 1  # the edit of ids[1]; ids[0] (accepted) is not in this version, ids[2] was rejected
    assert ids[2] not in frame["case_id"].to_list() and fresh["case_id"] in frame["case_id"].to_list()
    n = len(moved) + 1
    assert out.note.startswith(f"SHIPPED REVIEW PARTLY APPLIED: the shipped review of {VERSION} decides 2 of the {n} cases of gs-moved")
    assert f"the other {n - 2} were generated differently" in out.note and "1 rejected, 1 edited" in out.note


def test_the_note_reaches_the_gates_cases_read_line():
    from hcat_pipeline.campaign_spec import CampaignSpec, campaign_run_config

    spec = CampaignSpec.model_validate({"systems": [{"system_id": "s"}], "gates_read": "reviewed", "shipped_review": "campaigns/review"})
    cfg = campaign_run_config(spec, "SHIPPED REVIEW NOT APPLIED: …")["ops"]["gate_verdicts"]["config"]
    assert cfg == {"gates_read": "reviewed", "review_note": "SHIPPED REVIEW NOT APPLIED: …"}


def test_the_fingerprint_moves_with_the_generator_and_its_config(tmp_path, monkeypatch):
    import hcat_pipeline.review.shipped as shipped

    a = generator_fingerprint({"ops": {}}, "c1", "m")
    assert a == generator_fingerprint({"ops": {}}, "c1", "m")
    assert len({a, generator_fingerprint({"ops": {"x": 1}}, "c1", "m"), generator_fingerprint({"ops": {}}, "c2", "m"),
                generator_fingerprint({"ops": {}}, "c1", "m2")}) == 4  # fmt: skip
    pkg = tmp_path / "pkg"
    for part in ("golden", "corpus", "prompts"):
        shutil.copytree(shipped._PACKAGE / part, pkg / part, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(shipped, "_PACKAGE", pkg)
    assert generator_fingerprint({"ops": {}}, "c1", "m") == a
    (pkg / "golden" / "yes_no.py").write_text((pkg / "golden" / "yes_no.py").read_text() + "\n# a rule changed\n")
    assert generator_fingerprint({"ops": {}}, "c1", "m") != a  # a generator change moves it
    (pkg / "golden" / "review.py").write_text("# the review page's code is not the generator\n")
    before = generator_fingerprint({"ops": {}}, "c1", "m")
    (pkg / "golden" / "review.py").write_text("# changed again\n")
    assert generator_fingerprint({"ops": {}}, "c1", "m") == before


def test_the_default_campaigns_shipped_review_is_of_what_the_generator_makes_today():
    """When the default campaign ships a review, the generation it was made on is today's: a change to the generator, its
    prompts, its config or the corpus fails here, so the review is redone before such a change lands."""
    from hcat_pipeline.campaign_spec import load_campaign
    from hcat_pipeline.review.shipped import campaign_fingerprint

    spec = load_campaign()
    if not spec.shipped_review:
        assert spec.gates_read == "all", "gates_read: reviewed without a shipped review reads no case"
        return
    versions = shipped_versions(spec.shipped_review)
    assert versions, f"{spec.shipped_review} ships no review"
    now = campaign_fingerprint(spec)
    recorded = {v: recorded_fingerprint(spec.shipped_review, v) for v in versions}
    assert now in recorded.values(), (
        f"the generator changed since the shipped review ({json.dumps(recorded)}; today {now}): regenerate "
        "(bash scripts/campaign.sh --regenerate), review the new version on the curate page and ship it (hcat ship-review VERSION)")


def test_read_manifest_says_a_generated_version_is_generated(project):
    assert read_manifest(VERSION, project.golden_dir).get("source") in ("generated", "imported", "curated")
