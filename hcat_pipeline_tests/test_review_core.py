"""The review page's core: labels saved without overwriting anyone's, agreement with intervals, coverage per stratum,
one answer a screen with the flagged sentences, curation frozen the way import-cases freezes."""

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.calibration.agreement import agreement, disagreements
from hcat_pipeline.calibration.labels import read_label_file
from hcat_pipeline.golden.cases import CaseImportError, list_versions, load_version
from hcat_pipeline.review.curation import CurationLog, apply_decisions, freeze_curated
from hcat_pipeline.review.items import Flag, QueueError, build_items, highlight, load_queue, metric_tables_for, stored_queue
from hcat_pipeline.review.labelling import PageLabels, progress, stratum_coverage
from hcat_pipeline_tests.review_data import NIGHT, VERSION, make_project


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def test_a_label_lands_in_the_store_and_a_stale_tab_cannot_overwrite_it(project):
    labels = PageLabels(project.labels_dir)
    first = labels.save("alice", "c1", "hybrid", "groundedness", 1, "binary", "fine")
    assert first.status == "saved" and first.version == "v000001"
    stored = labels.store.labels()
    assert stored.height == 1 and stored["rater"][0] == "alice" and stored["comment"][0] == "fine"
    assert (dt.datetime.now(dt.UTC) - stored["labelled_at"][0]).total_seconds() < 60
    # a second tab that loaded the page before the first label: its save names no label (seen="") → conflict, nothing written
    stale = labels.save("alice", "c1", "hybrid", "groundedness", 0, "binary", seen="")
    assert stale.status == "conflict" and stale.current["label"] == 1 and stale.current["row_hash"] == first.row_hash
    assert labels.store.labels().height == 1 and len(labels.file_for("alice").read_text().splitlines()) == 1
    # the reviewer saw the other label and chose theirs: a re-label (both kept, the latest counts)
    again = labels.save("alice", "c1", "hybrid", "groundedness", 0, "binary", seen=first.row_hash)
    assert again.status == "saved" and labels.latest("alice")["label"].to_list() == [0] and labels.store.labels().height == 2
    # another rater is not a conflict
    assert labels.save("bob", "c1", "hybrid", "groundedness", 1, "binary").status == "saved"
    # the rater's file is a label file like any other: the label_file_sensor / human_labels import it as it is
    good, errors = read_label_file(labels.file_for("alice"))
    assert errors.height == 0 and good["label"].to_list() == [1, 0]


@pytest.mark.parametrize(("rater", "label", "scale", "why"), [
    ("al ice", 1, "binary", "rater 'al ice'"), ("alice", 3, "binary", "label 3 outside the binary scale"),
    ("alice", 1, "ordinal:1-3", "is stored with scale binary"), ("alice", 1, "sometimes", "neither 'binary' nor"),
])  # fmt: skip
def test_bad_labels_are_refused_with_the_reason_and_nothing_is_written(project, rater, label, scale, why):
    labels = PageLabels(project.labels_dir)
    assert labels.save("bob", "c0", "oracle", "groundedness", 1, "binary").status == "saved"
    res = labels.save(rater, "c1", "hybrid", "groundedness", label, scale)
    assert res.status == "rejected" and why in res.message
    assert labels.store.labels().height == 1 and not labels.file_for("alice").exists()


def _two_raters(a: list[int], b: list[int]) -> pl.DataFrame:
    at = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    rows = [{"case_id": f"c{i}", "system_id": "s", "dimension": "groundedness", "label": v, "scale": "binary", "rater": r,
             "labelled_at": at, "label_index": v, "n_levels": 2} for r, vals in (("alice", a), ("bob", b)) for i, v in enumerate(vals)]  # fmt: skip
    return pl.DataFrame(rows)


def test_agreement_gives_cohens_kappa_and_krippendorffs_alpha_with_intervals_and_lists_the_disagreements():
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1]
    b = [1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 1]
    row = agreement(_two_raters(a, b)).row(0, named=True)
    # by hand: p_o = 17/20; p_e = (12·11 + 8·9) / 400 = 0.51 → κ = (0.85 − 0.51) / 0.49
    assert row["method"] == "cohen" and row["n_items"] == 20 and row["kappa"] == pytest.approx((0.85 - 0.51) / 0.49)
    assert row["kappa_ci_low"] < row["kappa"] < row["kappa_ci_high"] and row["kappa_ci_high"] - row["kappa_ci_low"] > 0.1
    # Krippendorff's α (nominal, 2 raters, no missing) = 1 − (n−1)·D_o / D_e over the 40 pairable values
    values = np.array(a + b)
    n1 = values.sum()
    n0 = len(values) - n1
    d_o = 2 * sum(x != y for x, y in zip(a, b, strict=True))
    alpha = 1 - (len(values) - 1) * d_o / (2 * n0 * n1)
    assert row["alpha"] == pytest.approx(alpha) and row["alpha_ci_low"] < alpha < row["alpha_ci_high"]
    assert agreement(_two_raters(a, b)).equals(agreement(_two_raters(a, b)))  # seeded bootstrap: the same interval
    dis = disagreements(_two_raters(a, b))
    assert dis["case_id"].to_list() == ["c18", "c5", "c9"]  # the three items where a and b differ
    assert dis.filter(pl.col("case_id") == "c5")["labels"][0] == "alice=1, bob=0"


def test_one_answer_a_screen_with_the_flagged_sentence_marked(project):
    queue = load_queue(stored_queue(project.warehouse, f"{VERSION}/{NIGHT}"))
    items = build_items(queue, metric_tables_for(project.queue_path, project.warehouse))
    assert len(items) == 10 and [i.priority for i in items] == sorted(i.priority for i in items)
    hybrid = next(i for i in items if i.system_id == "hybrid")
    assert hybrid.reference and len(hybrid.passages) == 2 and hybrid.scores["groundedness_nli"] == 0.4
    assert [f.why for f in hybrid.flags] == ["least grounded sentence (NLI)"]
    marked = [s for s in highlight(hybrid.answer, hybrid.flags) if s["why"]]
    assert [s["text"] for s in marked] == ["It was added in Python 2.0."]
    # whitespace differences (a passage's line breaks) do not hide a flagged sentence
    segs = highlight("Intro.\nThe pass\n   statement does nothing. End.", [Flag("The pass statement does nothing.", "passages", "x")])
    assert [s["text"] for s in segs if s["why"]] == ["The pass\n   statement does nothing."] and "".join(s["text"] for s in segs).startswith("Intro.")
    with pytest.raises(QueueError, match="no stored review queue"):
        stored_queue(project.warehouse, f"{VERSION}/2020-01-01")
    with pytest.raises(QueueError, match="<golden-set version>/<night>"):
        stored_queue(project.warehouse, "../../etc/passwd")


def test_progress_and_the_labels_each_stratum_still_needs(project):
    queue = load_queue(project.queue_path)
    labels = PageLabels(project.labels_dir)
    stratum0 = queue.filter(pl.col("stratum") == "0").head(3)
    for r in stratum0.iter_rows(named=True):
        assert labels.save("alice", r["case_id"], r["system_id"], "groundedness", 1, "binary").status == "saved"
    prog = progress(queue, labels.store.labels(), "alice")
    assert prog["queued"] == 10 and prog["mine"] == 3 and prog["anyone"] == 3
    assert {r["stratum"]: r["mine"] for r in prog["by_stratum"]} == {"0": 3, "1": 0}
    assert progress(queue, labels.store.labels(), "bob")["mine"] == 0
    cov = {r["stratum"]: r for r in stratum_coverage(queue, labels.store.labels())}
    # 3 labels, all of class 1: a fit needs ≥ 10 of each class in Stage 1; what it needs in all is spread over the 2 strata
    assert not cov["0"]["sufficient"] and cov["0"]["target"] == cov["1"]["target"] > 3
    assert cov["0"]["have"] == 3 and cov["0"]["more"] == cov["0"]["target"] - 3 and cov["1"]["more"] == cov["1"]["target"]


def test_curation_rejects_edits_and_freezes_a_curated_version_the_sensor_sees(project):
    from dagster import DagsterInstance, RunRequest, SensorResult, build_sensor_context

    from hcat_pipeline.sensors import build_golden_set_sensor

    base, _ = load_version(VERSION, project.golden_dir)
    variant = base.filter(pl.col("base_case_id").is_not_null()).row(0, named=True)
    parent, other = variant["base_case_id"], base.filter(pl.col("base_case_id").is_null() & (pl.col("case_id") != variant["base_case_id"]))
    edited = other["case_id"][0]
    log = CurationLog(project.curation_dir, VERSION)
    known = set(base["case_id"].to_list())
    with pytest.raises(ValueError, match="needs a reason"):
        log.record(parent, "reject", "alice", "", known=known)
    with pytest.raises(ValueError, match="not in version"):
        log.record("gc-nope", "accept", "alice", known=known)
    log.record(parent, "reject", "alice", "the reference copies the source verbatim", known=known)
    log.record(edited, "edit", "alice", edits={"query": other["query"][0].replace("What", "Which thing")}, known=known)
    log.record(other["case_id"][1], "accept", "bob", known=known)
    cur = apply_decisions(base, log.decisions())
    assert cur.rejected == {parent: "the reference copies the source verbatim"} and variant["case_id"] in cur.cascaded
    assert cur.summary == {"cases": base.height - 2, "accepted": 1, "rejected": 1, "left_with_their_base": 1, "edited": 1, "reviewed": 2,
                           "accepted_by_sample": 0}
    assert edited not in cur.frame["case_id"].to_list() and cur.renamed[edited] in cur.frame["case_id"].to_list()
    # a check that refuses → nothing frozen, the problems said
    refuse = lambda frame: (frame, [(0, "case x: invalid (0.10): not_self_contained")])  # noqa: E731
    with pytest.raises(CaseImportError, match="not_self_contained"):
        freeze_curated(log, project.golden_dir, "curated-1", refuse, "alice")
    assert list_versions(project.golden_dir) == [VERSION]
    manifest = freeze_curated(log, project.golden_dir, "curated-1", None, "alice")
    assert manifest["source"] == "curated" and manifest["n_cases"] == base.height - 2
    prov = manifest["provenance"]
    assert prov["curated_from"] == VERSION and prov["rejected_reasons"] == cur.rejected and prov["curated_by"] == "alice"
    frozen, _ = load_version("curated-1", project.golden_dir)
    assert sorted(frozen["case_id"].to_list()) == sorted(cur.frame["case_id"].to_list())
    assert json.loads((project.curation_dir / f"{VERSION}.decisions.jsonl").read_text().splitlines()[0])["rater"] == "alice"
    with build_sensor_context(instance=DagsterInstance.ephemeral()) as ctx:
        ctx.instance.add_dynamic_partitions("golden_set_version", [VERSION])
        res = build_golden_set_sensor(str(project.golden_dir))(ctx)
    assert isinstance(res, SensorResult) and [r.partition_key for r in res.run_requests if isinstance(r, RunRequest)] == ["curated-1"]


def test_two_saves_at_the_same_moment_on_the_same_label_one_wins_the_other_is_told(project):
    from concurrent.futures import ThreadPoolExecutor

    labels = PageLabels(project.labels_dir)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda v: labels.save("alice", "c1", "hybrid", "groundedness", v, "binary", seen=""), [0, 1]))
    assert sorted(r.status for r in results) == ["conflict", "saved"]
    assert labels.store.labels().height == 1 and len(labels.file_for("alice").read_text().splitlines()) == 1


def test_the_page_answers_bad_requests_with_what_is_wrong(project):
    from fastapi.testclient import TestClient

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir)  # fmt: skip
    client = TestClient(create_app(settings))
    ok = {"rater": "alice", "case_id": "c1", "system_id": "hybrid", "dimension": "groundedness", "label": 1}
    assert client.post("/api/labels", json=ok).json()["status"] == "saved"
    r = client.post("/api/labels", json={**ok, "label": "yes"})
    assert r.status_code == 400 and "label" in r.json()["message"] and "integer" in r.json()["message"]
    r = client.post("/api/labels", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["message"].startswith("bad request")
    r = client.post("/api/labels", json={**ok, "label": 0})  # the page showed no label: another tab's is there now
    assert r.status_code == 409 and r.json()["current"]["label"] == 1
    r = client.post("/api/curation", json={"rater": "alice", "version": "nope", "case_id": "x", "action": "accept"})
    assert r.status_code == 400 and "no frozen golden-set version 'nope'" in r.json()["message"]
    r = client.post("/api/curation", json={"rater": "alice", "version": VERSION, "case_id": project.case_ids[0], "action": "delete"})
    assert r.status_code == 400 and "is not one of" in r.json()["message"]
    r = client.post("/api/curation/freeze", json={"rater": "alice", "version": VERSION, "new_version": "../evil"})
    assert r.status_code == 400 and "not frozen" in r.json()["message"] and list_versions(project.golden_dir) == [VERSION]
    page = client.get("/label?queue=gs-review/1999-01-01")
    assert page.status_code == 404 and "no stored review queue for gs-review/1999-01-01" in page.text
    assert client.get(f"/label?queue={VERSION}/{NIGHT}&case={project.case_ids[0]}&system=oracle").status_code == 200
    assert "is not in the review queue" in client.get(f"/label?queue={VERSION}/{NIGHT}&case=gc-none").text


def test_a_screen_offers_the_calibrators_other_dimensions_on_the_scale_the_store_holds(project):
    from hcat_pipeline.review.views import Queue, ReviewSettings, label_view

    labels = PageLabels(project.labels_dir)
    assert labels.save("bob", "c0", "oracle", "completeness", 2, "ordinal:0-2").status == "saved"  # the store: completeness on 0-2
    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir)  # fmt: skip
    queue = Queue.load(settings, Queue.resolve(settings))
    hybrid = {d["dimension"]: d for d in label_view(queue, labels.store.labels(), "alice", 0)["item"]["dimensions"]}
    view = label_view(queue, labels.store.labels(), "alice", 1)
    dims = {d["dimension"]: d for d in view["item"]["dimensions"]}
    assert view["item"]["system_id"] == "oracle" and list(dims)[0] == "groundedness" and not dims["groundedness"]["optional"]
    assert dims["completeness"]["optional"] and [c["value"] for c in dims["completeness"]["choices"]] == [0, 1, 2]
    assert dims["answer_relevancy"]["raw_score_text"] == "0.700" and dims["toxicity"]["scale"] == "binary"
    assert "completeness" not in hybrid and "answer_relevancy" in hybrid  # no completeness score on that answer: nothing to calibrate
    # a label on an optional dimension is stored like any other, on the store's scale
    assert labels.save("alice", view["item"]["case_id"], "oracle", "completeness", 1, dims["completeness"]["scale"]).status == "saved"
    assert labels.save("alice", view["item"]["case_id"], "oracle", "completeness", 1, "binary").status == "rejected"


def test_a_screen_offers_the_dimensions_asked_for_and_their_labels_are_stored_for_the_judge(project, capsys):
    import argparse

    from hcat_pipeline.cli import main
    from hcat_pipeline.commands.review import asked_dimensions, settings_from
    from hcat_pipeline.review.views import Queue, label_view

    with pytest.raises(SystemExit):
        main(["review", "--help"])
    assert "--dimension" in capsys.readouterr().out
    args = argparse.Namespace(labels_dir=str(project.labels_dir), warehouse=str(project.warehouse), golden_dir=str(project.golden_dir),
                              curation_dir=str(project.curation_dir), queue="", rater="", chunks="",
                              dimension=["global_coherence", "groundedness"])  # fmt: skip
    settings = settings_from(args)
    assert settings.extra_dimensions == ("global_coherence", "groundedness")
    with pytest.raises(SystemExit, match="not a dimension name"):
        asked_dimensions(["Global Coherence"])
    assert asked_dimensions(["politeness", "politeness"]) == ("politeness",) and "no metric or judge dimension reads labels of 'politeness'" in capsys.readouterr().err
    labels = PageLabels(project.labels_dir)
    queue = Queue.load(settings, Queue.resolve(settings))
    dims = label_view(queue, labels.store.labels(), "alice", 1, settings.extra_dimensions)["item"]["dimensions"]
    names = [d["dimension"] for d in dims]
    assert names.count("groundedness") == 1 and names[-1] == "global_coherence"  # queued once; the asked one last
    gc = dims[-1]
    assert gc["optional"] and gc["scale"] == "binary" and gc["choices"][1]["meaning"].startswith("the parts of the answer are consistent")
    assert "global_coherence" not in [d["dimension"] for d in label_view(queue, labels.store.labels(), "alice", 1)["item"]["dimensions"]]
    item = label_view(queue, labels.store.labels(), "alice", 1)["item"]
    assert labels.save("alice", item["case_id"], item["system_id"], "global_coherence", 1, "binary").status == "saved"
    stored = labels.store.labels().filter(pl.col("dimension") == "global_coherence")
    assert stored.height == 1 and stored["scale"][0] == "binary"


def test_the_label_file_sensor_waits_until_a_page_file_is_quiet(project):
    import os
    import time

    from dagster import DagsterInstance, RunRequest, SkipReason, build_sensor_context

    from hcat_pipeline.sensors import build_label_file_sensor

    labels = PageLabels(project.labels_dir)
    assert labels.save("alice", "c1", "hybrid", "groundedness", 1, "binary").status == "saved"
    sensor = build_label_file_sensor(str(project.labels_dir), settle_s=60)
    with build_sensor_context(instance=DagsterInstance.ephemeral()) as ctx:
        assert isinstance(sensor(ctx), SkipReason)  # labelled a moment ago: the reviewer may go on
        old = time.time() - 120
        os.utime(labels.file_for("alice"), (old, old))
        first = sensor(ctx)
        assert isinstance(first, RunRequest) and "review-page_alice.jsonl" in first.tags["label_files"]
        assert isinstance(sensor(ctx), SkipReason)  # nothing new since


def test_a_variant_screen_shows_the_same_systems_answer_to_its_base_case(project):
    from hcat_pipeline.review.items import paired_answers

    pairs = paired_answers(project.queue_path, project.warehouse)
    base, _ = load_version(VERSION, project.golden_dir)
    variant = base.filter(pl.col("base_case_id").is_not_null()).row(0, named=True)
    assert set(pairs) == {(variant["case_id"], "hybrid"), (variant["case_id"], "oracle")}  # only variants have a pair
    pair = pairs[(variant["case_id"], "oracle")]
    assert pair["variant_kind"] == "typo" and pair["compare"] == [{
        "relation": "base case", "case_id": variant["base_case_id"], "query": "What happens when a pass statement is executed?",
        "answer": "oracle says: Nothing happens."}]  # fmt: skip
    assert paired_answers(project.root / "queue.csv", project.warehouse) == {}  # a CSV queue names no run


def test_answers_and_passages_are_shown_as_text_never_as_markup(project):
    from fastapi.testclient import TestClient

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    queue = pl.read_parquet(project.queue_path)
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    queue.with_columns(pl.lit(evil).alias("answer"), pl.lit("<b>bold</b> passage").alias("contexts")).write_parquet(project.queue_path)
    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir)  # fmt: skip
    html = TestClient(create_app(settings)).get("/label?item=0").text
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html and "&lt;b&gt;bold&lt;/b&gt; passage" in html


def test_every_screen_renders_on_a_fresh_project_and_says_what_is_missing(project, tmp_path):
    from fastapi.testclient import TestClient

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    client = TestClient(create_app(ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse,
                                                  golden_dir=project.golden_dir, curation_dir=project.curation_dir)))  # fmt: skip
    for path in ("/label", "/progress", "/agreement", "/curate", f"/curate?version={VERSION}&verdict=valid"):
        assert client.get(path).status_code == 200, path
    assert "no labels yet" in client.get("/agreement").text
    empty = TestClient(create_app(ReviewSettings(labels_dir=tmp_path / "l", warehouse=tmp_path / "w", golden_dir=tmp_path / "g",
                                                 curation_dir=tmp_path / "c")))  # fmt: skip
    assert "No frozen golden-set version" in empty.get("/curate").text
    missing = empty.get("/label")
    assert missing.status_code == 404 and "run a campaign first" in missing.text


def test_a_new_nights_queue_shows_up_without_restarting_the_page(project):
    from fastapi.testclient import TestClient

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    client = TestClient(create_app(ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse,
                                                  golden_dir=project.golden_dir, curation_dir=project.curation_dir)))  # fmt: skip
    assert f"queue <code>{VERSION}/{NIGHT}</code>" in client.get("/label").text
    later = project.queue_path.with_name("2026-11-28.parquet")
    pl.read_parquet(project.queue_path).head(2).write_parquet(later)
    page = client.get("/label").text
    assert f"queue <code>{VERSION}/2026-11-28</code>" in page and "answer 1 of 2" in page
