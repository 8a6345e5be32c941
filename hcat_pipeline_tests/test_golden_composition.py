"""A golden set's size and shares against the campaign file's targets (golden-eval §2.2-2.3): the core with known
counts, the campaign file's budget, and the freeze recording it for the report."""

import dagster as dg
import polars as pl

from hcat_pipeline.golden.composition import CompositionTarget, composition, describe, happy_path_target, per_stratum


def test_composition_says_why_a_set_falls_short():
    target = CompositionTarget(200, 0.5)
    gen = {"cases_per_stratum": 4, "kept_per_stratum": {"0": 4, "1": 1, "2": 0}, "short_strata": {"1": "1 of 4", "2": "0 of 4"}}
    comp = composition(["happy_path"] * 44 + ["adversarial"] * 234, target, gen)
    assert comp["cases"] == 278 and comp["happy_path"] == 44 and comp["happy_path_share"] == round(44 / 278, 3)
    assert not comp["meets_target"] and len(comp["why_not"]) == 1  # 278 ≥ 200: only the share is short
    why = comp["why_not"][0]
    assert "happy path 44 of 278 (16%) < 50%" in why and "234 happy-path cases" in why  # the share beside the 234 others
    assert "asked 4 a stratum × 3 strata and kept 5" in why and "2 strata short" in why
    small = composition(["happy_path"] * 60 + ["out_of_scope"] * 40, target)
    assert small["why_not"] == ["100 cases < the target 200"]  # 60 % happy path holds; the size does not
    assert composition(["happy_path"] * 110 + ["edge_case"] * 90, target)["meets_target"]
    lopsided = composition(["happy_path"] * 180 + ["edge_case"] * 20, target)
    assert not lopsided["meets_target"] and "> 60%" in lopsided["why_not"][0]
    assert describe(comp).startswith("278 cases (target 200), happy path 44 (16%; target 50%) — short: ")
    assert describe(composition(["happy_path"] * 110 + ["edge_case"] * 90, target)).endswith("— meets the target")
    # issue 69 item 5: why the default cannot reach the share, with this machine's own figure
    timed = composition(["happy_path"] * 44 + ["adversarial"] * 234, target, {**gen, "llm_seconds": 60.0})
    assert "at this generation's 12 s a kept case, the 190 more would add ~38 min of generation" in timed["why_not"][0]
    assert "min of generation" not in why  # no time recorded: no figure made up


def test_happy_path_target_holds_the_share_beside_the_other_categories():
    assert happy_path_target(CompositionTarget(200, 0.5), 50) == 100  # the share of the target size
    assert happy_path_target(CompositionTarget(200, 0.5), 254) == 254  # beside 254 others, half needs 254
    assert happy_path_target(CompositionTarget(500, 0.55), 430) == 526
    assert per_stratum(254, 16) == 16 and per_stratum(3, 16) == 1 and per_stratum(10, 0) == 10


def test_campaign_file_sets_the_budget_and_the_target(tmp_path):
    from hcat_pipeline.campaign_spec import generation_run_config, load_campaign, planned_other_cases

    base = "name: t\nsystems:\n  - system_id: s\n    retriever: bm25\n"
    (tmp_path / "a.yaml").write_text(base + "generation:\n  cases_per_stratum: 3\n  target_size: 300\n  happy_path_share: 0.6\n")
    (tmp_path / "b.yaml").write_text(base + "generation:\n  happy_path_share: 0.5\n  pairs_per_attribute: 2\n  robustness: {distractor: 10}\n")
    a, b = load_campaign(tmp_path / "a.yaml"), load_campaign(tmp_path / "b.yaml")
    ops = generation_run_config(a)["ops"]
    assert ops["generated_queries"]["config"]["cases_per_stratum"] == 3 and "happy_path_target" not in ops["generated_queries"]["config"]
    assert ops["golden_candidates"]["config"] == {"target_size": 300, "happy_path_share": 0.6}
    other = planned_other_cases(b)
    # the file's 10 distractors instead of the plan's 32 (certify_below: each gate's own, 5 % → 65), 2 pairs an attribute
    # instead of the bias gate's 65 spread over 5 attributes (13)
    assert other == planned_other_cases(a) - (65 - 10) - 2 * (13 - 2) * 5
    assert generation_run_config(b)["ops"]["generated_queries"]["config"]["happy_path_target"] == max(100, other)


def test_the_freeze_records_the_composition_for_the_report(tmp_path, embedding_model):
    from hcat_pipeline.assets.golden_set import golden_candidates, golden_set
    from hcat_pipeline.golden.cases import case_from_query, cases_frame, new_case
    from hcat_pipeline.io import PolarsParquetIOManager
    from hcat_pipeline.reports.sections import composition_line
    from hcat_pipeline.resources.nli import NLIModel
    from hcat_pipeline.schemas import SELECTED_QUERIES
    from hcat_pipeline_tests.stubs import stub_asset

    text = "The pass statement is a null operation: when it is executed, nothing happens."
    row = {"query_id": "q1", "query_type": "simple", "chunk_id": "c1", "source_chunk_ids": ["c1"], "stratum": 0, "stratum_label": "s",
           "query": "What happens when the pass statement is executed?", "reference_answer": text, "options": [], "seed": 0}
    sel = pl.DataFrame([{k: row.get(k) for k in SELECTED_QUERIES}], schema=SELECTED_QUERIES)
    base = case_from_query(row, "h")
    ood = [new_case(category="out_of_scope", query=q, expected_behavior="abstain", tags=["answerability:unanswerable"])
           for q in ("What is the capital of Peru?", "Who won the 1998 football world cup?", "How tall is Mount Kenya?")]  # fmt: skip
    rob = cases_frame(ood).select(cases_frame([base]).columns)
    assets = [stub_asset("selected_queries", lambda: sel), stub_asset("robustness_cases", lambda: rob),
              stub_asset("chunks", lambda: pl.DataFrame({"chunk_id": ["c1"], "doc_id": ["d1"], "text": [text]})), golden_candidates]  # fmt: skip
    wh = tmp_path / "wh"
    instance = dg.DagsterInstance.ephemeral()
    res = {"io_manager": PolarsParquetIOManager(base_dir=str(wh)), "embedding_model": embedding_model, "nli_model": NLIModel()}
    r = dg.materialize(assets, instance=instance, resources=res, raise_on_error=False,
                       run_config={"ops": {"golden_candidates": {"config": {"target_size": 10, "happy_path_share": 0.5}}}})  # fmt: skip
    assert r.success
    meta = {k: v.value for k, v in [e.materialization for e in r.get_asset_materialization_events()
                                    if e.materialization.asset_key.to_user_string() == "golden_candidates"][0].metadata.items()}  # fmt: skip
    comp = meta["composition"]
    assert comp["cases"] == 4 and comp["happy_path"] == 1 and comp["target_size"] == 10 and not comp["meets_target"]
    assert comp["why_not"][0] == "4 cases < the target 10" and "happy path 1 of 4 (25%) < 50%" in comp["why_not"][1]
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    golden_dir = tmp_path / "golden_sets"
    r2 = dg.materialize([golden_set], partition_key="v1", instance=instance, resources={"io_manager": res["io_manager"]},
                        run_config={"ops": {"golden_set": {"config": {"golden_dir": str(golden_dir),
                                                                      "candidates_path": str(wh / "golden_candidates.parquet")}}}})  # fmt: skip
    assert r2.success
    import json

    manifest = json.loads((golden_dir / "v1" / "manifest.json").read_text())
    assert manifest["provenance"]["composition"] == comp
    assert composition_line(manifest).startswith("4 cases (target 10), happy path 1 (25%; target 50%) — short: 4 cases < the target 10")
    assert composition_line({"provenance": {}}).startswith("not recorded")
    curated = pl.DataFrame({"category": ["happy_path"] * 3 + ["adversarial"]})  # a curated version: read from its cases
    assert composition_line({"provenance": {}}, curated).startswith("4 cases (target 200), happy path 3 (75%") and "(read from the cases)" in composition_line({}, curated)


def test_a_curated_versions_first_screen_line_keeps_its_generations_reason():
    """The default night reads the curated version: its composition line says why the share is short, with the time the
    missing happy-path cases would take, from the generation record the freeze carries over from the base."""
    from hcat_pipeline.reports.sections import composition_line

    gen = {"cases_per_stratum": 4, "kept_per_stratum": {"0": 4, "1": 4}, "short_strata": {}, "llm_seconds": 80.0}
    frame = pl.DataFrame({"category": ["happy_path"] * 8 + ["adversarial"] * 30})
    line = composition_line({"provenance": {"curated_from": "gs-x", "generation": gen}}, frame)
    assert line.endswith("(read from the cases)") and "at this generation's 10 s a kept case, the 22 more would add ~4 min of generation" in line
    assert "min of generation" not in composition_line({"provenance": {"curated_from": "gs-x"}}, frame)
