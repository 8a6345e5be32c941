"""The campaign file: validated on load with file, line and reason; used by the schedule and `hcat campaign`."""

import json
import re

import dagster as dg
import pytest

from hcat_pipeline.campaign_spec import CampaignFileError, campaign_sha256, load_campaign, parse_campaign
from hcat_pipeline.cli import main
from hcat_pipeline.gates.canaries import FAULTS
from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case
from hcat_pipeline.paths import PROJECT_ROOT
from hcat_pipeline.schedules import nightly_request

GOOD = """\
name: nightly
max_cases: 10
systems:
  - system_id: bm25
    retriever: bm25
  - system_id: svc
    http:
      url: http://127.0.0.1:9/q
"""


def test_shipped_campaign_files_load_and_hash_ignores_formatting():
    default = load_campaign(PROJECT_ROOT / "campaign.yaml")
    full = load_campaign(PROJECT_ROOT / "campaigns" / "full.yaml")
    # the full profile: every case, and every reference system (the default's three plus bm25 and dense)
    assert default.max_cases > 0 and full.max_cases == 0
    assert {s.system_id for s in default.systems} < {s.system_id for s in full.systems} == {"closed_book", "bm25", "dense", "dense_use", "hybrid", "oracle"}
    a = parse_campaign(GOOD)
    b = parse_campaign("# a comment\n" + GOOD.replace("max_cases: 10", "max_cases:   10   # ten"))
    assert campaign_sha256(a) == campaign_sha256(b)
    assert campaign_sha256(a) != campaign_sha256(parse_campaign(GOOD.replace("10", "11")))
    assert a.systems[1].http.url.endswith("/q") and a.systems[0].top_k == 3  # defaults filled in


@pytest.mark.parametrize(
    "text, line, words",
    [
        (GOOD.replace("retriever: bm25", "retriever: bm52"), 5, ["systems.0.retriever", "'dense'"]),
        (GOOD.replace("max_cases: 10", "max_case: 10"), 2, ["max_case", "unknown key"]),
        (GOOD.replace("max_cases: 10", "max_cases: ten"), 2, ["max_cases", "integer"]),
        (GOOD.replace("      url: http://127.0.0.1:9/q", "      uri: http://127.0.0.1:9/q"), 8, ["systems.1.http"]),
        (GOOD.replace("max_cases: 10", "max_cases: 10\n\tname: tab"), 3, ["not valid YAML", "'\\t'"]),
        ("name: x\n", 1, ["systems:"]),  # no systems at all
        ("reuse: sometimes\nsystems:\n  - system_id: a\n", 1, ["reuse", "deterministic_local"]),
    ],
)
def test_bad_campaign_file_is_refused_with_line_and_reason(tmp_path, text, line, words):
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    with pytest.raises(CampaignFileError) as e:
        load_campaign(path)
    msg = str(e.value)
    assert f"{path}:{line}" in msg, msg
    assert all(w in msg for w in words), msg


def test_duplicate_system_ids_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("systems:\n  - system_id: a\n  - system_id: a\n    retriever: dense\n")
    with pytest.raises(CampaignFileError, match="duplicate system_id"):
        load_campaign(path)


def test_hcat_campaign_refuses_a_bad_file_before_any_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    path = tmp_path / "c.yaml"
    path.write_text(GOOD.replace("retriever: bm25", "retriever: bm52"))
    assert main(["campaign", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:5: systems.0.retriever" in err
    assert not (tmp_path / "home").exists()  # no instance touched, no run started


def _freeze(golden, version, query):
    frame = cases_frame([new_case(category="happy_path", query_type="simple", query=query, reference_answer="x",
                                  expected_behavior="answer", source_chunk_ids=["c1"])])  # fmt: skip
    return freeze_version(frame, version, golden)


def test_nightly_schedule_evaluates_the_latest_frozen_version_tonight(tmp_path, monkeypatch):
    golden = tmp_path / "golden_sets"
    monkeypatch.setenv("HCAT_GOLDEN_SETS_DIR", str(golden))
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(GOOD)
    with dg.instance_for_test() as instance:
        assert isinstance(nightly_request(instance, str(campaign), night="2026-11-20"), dg.SkipReason)  # nothing frozen
        _freeze(golden, "v-old", "What does pass do?")
        m = json.loads((golden / "v-old" / "manifest.json").read_text())
        m["frozen_at"] = "2026-01-01T00:00:00+00:00"
        (golden / "v-old" / "manifest.json").write_text(json.dumps(m))
        _freeze(golden, "v-new", "What does break do?")
        instance.add_dynamic_partitions("golden_set_version", ["v-old", "v-new"])
        req = nightly_request(instance, str(campaign), night="2026-11-20")
        assert isinstance(req, dg.RunRequest)
        assert req.partition_key == "v-new|2026-11-20" and req.run_key == "campaign:v-new|2026-11-20"
        cfg = req.run_config["ops"]["rag_responses"]["config"]["campaign"]
        assert cfg["max_cases"] == 10 and [s["system_id"] for s in cfg["systems"]] == ["bm25", "svc"]
        # a pinned version in the campaign file wins over "latest"
        campaign.write_text("golden_set_version: v-old\n" + GOOD)
        assert nightly_request(instance, str(campaign), night="2026-11-21").partition_key == "v-old|2026-11-21"
        campaign.write_text(GOOD.replace("retriever: bm25", "retriever: bm52"))
        with pytest.raises(CampaignFileError):
            nightly_request(instance, str(campaign))


def test_hcat_campaign_refuses_a_future_or_malformed_night(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["campaign", "--night", "2999-01-01"]) == 2
    assert "is in the future" in capsys.readouterr().err
    assert main(["campaign", "--night", "23/11/2026"]) == 2
    assert "not a date" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()


def test_campaign_file_owns_corpus_and_generation(tmp_path):
    from hcat_pipeline.campaign_spec import corpus_sources, generation_run_config

    (tmp_path / "docs").mkdir()
    path = tmp_path / "my.yaml"
    path.write_text(
        "corpus:\n  paths: [docs, 'extra/*.html']\ngeneration:\n  cases_per_stratum: 2\n  query_types: [simple, yes_no]\n"
        "  robustness: {typo: 1, ood: 0}\n  bias_attributes: [age, income]\nsystems:\n  - system_id: s\n"
    )
    spec = load_campaign(path)
    assert spec.corpus.paths == [str(tmp_path / "docs"), str(tmp_path / "extra/*.html")]  # relative to the file
    assert spec.corpus.embedded() is False  # paths given: the embedded reference only when asked for
    src = corpus_sources(spec.corpus)
    assert src["drop_folder"] is None and src["include_embedded"] is False
    ops = generation_run_config(spec)["ops"]
    assert ops["generated_queries"]["config"]["cases_per_stratum"] == 2 and ops["generated_queries"]["config"]["query_types"] == ["simple", "yes_no"]
    assert ops["robustness_cases"]["config"]["n_typo"] == 1 and ops["robustness_cases"]["config"]["attributes"] == ["age", "income"]
    assert ops["corpus"]["config"]["paths"] == spec.corpus.paths
    default = load_campaign()
    assert default.corpus.paths == [] and default.corpus.embedded() is True


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("corpus:\n  path: [docs]\nsystems:\n  - system_id: s\n", 2, "path"),  # a typo of paths
        ("generation:\n  query_types: [simple, essay]\nsystems:\n  - system_id: s\n", 2, "essay"),
        ("generation:\n  bias_attributes: [hair]\nsystems:\n  - system_id: s\n", 2, "hair"),
        ("generation:\n  robustness: {typo: -1}\nsystems:\n  - system_id: s\n", 2, "typo"),
    ],
)
def test_bad_corpus_or_generation_section_is_refused_with_its_line(tmp_path, text, line, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CampaignFileError) as e:
        load_campaign(path)
    assert f"bad.yaml:{line}" in str(e.value) and words in str(e.value)


def test_hcat_init_writes_a_valid_commented_file_and_never_overwrites(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    out = tmp_path / "c.yaml"
    assert main(["init", "--corpus", str(docs), "--http", "http://127.0.0.1:9/ask", "--out", str(out)]) == 0
    spec = load_campaign(out)
    assert spec.corpus.paths == [str(docs)] and {s.system_id for s in spec.systems} == {"closed_book", "hybrid", "my_rag"}
    assert spec.systems[-1].http.url == "http://127.0.0.1:9/ask" and "# Your documents" in out.read_text()
    assert [(c.of, c.faults) for c in spec.canaries] == [("my_rag", list(FAULTS))] and "# faults: [pii, account_leak, insult" in out.read_text()
    # the intended use: every field written with its prompt, empty until the user states it (a night then says so)
    assert spec.intended_use.missing() == ["purpose", "users", "in_scope", "out_of_scope", "decision"]
    assert "# what the system is for" in out.read_text() and "# the decision this evaluation supports" in out.read_text()
    assert load_campaign().intended_use.missing() == []  # the default campaign states its own
    assert main(["init", "--out", str(out)]) == 2 and "exists" in capsys.readouterr().err
    assert main(["init", "--corpus", str(tmp_path / "nope"), "--out", str(tmp_path / "d.yaml")]) == 2


def test_generation_run_config_is_valid_for_the_generation_job(tmp_path):
    from hcat_pipeline.campaign_spec import generation_run_config
    from hcat_pipeline.definitions import defs

    (tmp_path / "docs").mkdir()
    path = tmp_path / "c.yaml"
    path.write_text("corpus:\n  paths: [docs]\ngeneration:\n  cases_per_stratum: 2\nsystems:\n  - system_id: s\n")
    job = defs.get_job_def("test_generation_job")
    for spec in (load_campaign(), load_campaign(path)):  # what `hcat campaign` hands the job when it generates
        dg.validate_run_config(job, generation_run_config(spec))


def test_canaries_name_a_system_of_the_campaign_and_no_system_takes_their_prefix(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("systems:\n  - system_id: hybrid\n    retriever: hybrid\ncanaries:\n  - of: hybird\n")
    with pytest.raises(CampaignFileError, match="'of' names \\['hybird'\\]"):
        load_campaign(path)
    path.write_text("systems:\n  - system_id: 'canary:x'\n    retriever: hybrid\n")
    with pytest.raises(CampaignFileError, match="names canaries"):
        load_campaign(path)
    path.write_text("systems:\n  - system_id: hybrid\n    retriever: hybrid\ncanaries:\n  - of: hybrid\n    faults: [sarcasm]\n")
    with pytest.raises(CampaignFileError, match="unknown canary fault"):
        load_campaign(path)
    path.write_text("systems:\n  - system_id: hybrid\n    retriever: hybrid\ncanaries:\n  - of: hybrid\n    faults: [pii, cost]\n")
    assert [p.system_id for p in load_campaign(path).canary_plans()] == ["canary:pii:hybrid", "canary:cost:hybrid"]


def test_campaign_device_configures_the_encoders_of_the_run_and_is_not_its_identity():
    from hcat_pipeline.campaign_spec import campaign_run_config
    from hcat_pipeline.definitions import defs
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.nli import NLIModel

    plain, on_gpu = parse_campaign(GOOD), parse_campaign(GOOD + "device: auto\n")
    assert on_gpu.device == "auto" and campaign_sha256(plain) == campaign_sha256(on_gpu)  # the same campaign, elsewhere
    assert "resources" not in campaign_run_config(plain)
    cfg = campaign_run_config(on_gpu)
    dg.validate_run_config(defs.get_job_def("campaign_run_job"), cfg)  # the nightly job accepts it
    seen = {}

    @dg.asset
    def encoders(embedding_model: EmbeddingModel, nli_model: NLIModel) -> None:
        seen.update(embedding=embedding_model.device, nli=nli_model.device)

    assert dg.materialize([encoders], resources={"embedding_model": EmbeddingModel(), "nli_model": NLIModel()},
                          run_config={"resources": cfg["resources"]}).success  # fmt: skip
    assert seen == {"embedding": "auto", "nli": "auto"}
    with pytest.raises(CampaignFileError, match="device"):
        parse_campaign(GOOD + "device: tpu\n")


def test_opt_in_metrics_and_judge_dimensions_are_named_in_the_campaign_file():
    """Every registered opt-in metric and judge dimension can be named in the campaign file; the run config the nightly
    schedule, the sensor and `hcat campaign` hand the run carries them; unknown or default names are refused by line."""
    from hcat_pipeline.campaign_spec import CampaignFileError, campaign_run_config, parse_campaign
    from hcat_pipeline.judge.scoring import DIMENSIONS, JudgeConfig
    from hcat_pipeline.metrics.registry import opt_in_metrics

    base = "name: t\nsystems:\n  - system_id: s\n    retriever: bm25\n"
    every = opt_in_metrics()
    assert {"cross_lingual_similarity", "hierarchical_consistency", "long_document_faithfulness"} <= set(every)
    spec = parse_campaign(base + f"metrics: [{', '.join(every)}]\njudge:\n  dimensions: [{', '.join(DIMENSIONS)}]\n")
    ops = campaign_run_config(spec)["ops"]
    assert ops["metric_tables"]["config"]["extra_metrics"] == every
    assert ops["llm_judge_scores"]["config"]["dimensions"] == list(DIMENSIONS)
    plain = campaign_run_config(parse_campaign(base))["ops"]
    assert "metric_tables" not in plain and "dimensions" not in plain["llm_judge_scores"]["config"]  # the defaults stand
    assert JudgeConfig().dimensions == ("groundedness", "answer_relevancy", "completeness", "correctness", "safety")
    for bad, said in (("metrics: [nope]\n", "unknown metric(s) ['nope']"), ("metrics: [toxicity]\n", "already computed on every night"),
                      ("judge: {dimensions: [vibes]}\n", "unknown judge dimension(s) ['vibes']")):
        with pytest.raises(CampaignFileError, match=re.escape(said)):
            parse_campaign(base + bad)


def test_a_sweep_builds_its_product_of_systems_once():
    """golden-eval §4.3 configuration sweep: retriever × prompt × ICL × top_k × LLM, ids naming what varies; the
    campaign re-read from the run config (what rag_responses does) builds nothing twice; too large or unknown: refused."""
    from hcat_pipeline.campaign_spec import CampaignSpec, campaign_run_config

    text = ("name: t\nsystems:\n  - system_id: closed_book\n    retriever: closed_book\nsweeps:\n  - name: abl\n"
            "    retriever: [bm25, hybrid]\n    icl_examples: [0, 2]\n    llm: [{model: qwen2.5-0.5b-instruct-q4_k_m}]\n")
    spec = parse_campaign(text)
    ids = [s.system_id for s in spec.systems]
    assert ids == ["closed_book", "abl-bm25-icl0", "abl-bm25-icl2", "abl-hybrid-icl0", "abl-hybrid-icl2"]
    built = {s.system_id: s for s in spec.systems}
    assert (built["abl-hybrid-icl2"].retriever, built["abl-hybrid-icl2"].icl_examples) == ("hybrid", 2)
    assert built["abl-bm25-icl0"].llm.model == "qwen2.5-0.5b-instruct-q4_k_m" and built["abl-bm25-icl0"].top_k == 3  # default
    again = CampaignSpec(**campaign_run_config(spec)["ops"]["rag_responses"]["config"]["campaign"])
    assert [s.system_id for s in again.systems] == ids and campaign_sha256(again) == campaign_sha256(spec)
    only = parse_campaign("name: t\nsweeps:\n  - name: k\n    top_k: [1, 5]\n")
    assert [s.system_id for s in only.systems] == ["k-k1", "k-k5"]  # a sweep alone is a campaign
    with pytest.raises(CampaignFileError, match="builds 18 systems > max_systems 16"):
        parse_campaign("name: t\nsweeps:\n  - retriever: [bm25, dense, hybrid]\n    icl_examples: [0, 1, 2]\n    top_k: [1, 3]\n")
    with pytest.raises(CampaignFileError, match="retriever"):
        parse_campaign("name: t\nsweeps:\n  - retriever: [nope]\n")
    with pytest.raises(CampaignFileError, match="at least one system"):
        parse_campaign("name: t\n")
