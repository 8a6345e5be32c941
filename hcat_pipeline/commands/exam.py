"""``hcat exam``: the exam paper end to end as one real Dagster run of ``exam_job`` (recorded in the instance,
visible in the UI): generate (resuming the checkpointed candidates), freeze, take with every campaign system,
fit IRT, report. Prints the exam version, survival, baselines, accuracy per taker and the IRT summary.

    hcat exam [--sample-size 80] [--icl-levels 0,1,2] [--max-questions 0] [--run-label default] [--campaign FILE]

``--campaign`` names the systems that take the exam and, when that file names ``exam_chunkings``, the two chunkings
``exam_chunking`` compares (campaigns/exam.yaml does both).
"""

from __future__ import annotations

import argparse
import json
import sys

from hcat_pipeline.commands import command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample-size", type=int, default=None, help="chunks drawn for the exam (default: the asset's)")
    p.add_argument("--icl-levels", default=None, help="comma list of in-context example counts (default: the asset's 0,1,2)")
    p.add_argument("--max-questions", type=int, default=0, help="first N questions by id (0 = all)")
    p.add_argument("--run-label", default="default", help="exam_responses checkpoint label (same label resumes)")
    p.add_argument("--campaign", default=None, help="campaign file whose systems take the exam (default: campaign.yaml)")


def run_config(args: argparse.Namespace) -> dict:
    gen: dict = {}
    if args.sample_size is not None:
        gen["sample_size"] = args.sample_size
    resp: dict = {"max_questions": args.max_questions, "run_label": args.run_label}
    if args.icl_levels is not None:
        resp["icl_levels"] = [int(x) for x in args.icl_levels.split(",") if x.strip()]
    chunking: dict = {"max_questions": args.max_questions, "run_label": args.run_label}
    if args.campaign:
        resp["campaign_file"] = chunking["campaign_file"] = args.campaign
    return {"ops": {"exam_candidates": {"config": gen}, "exam_responses": {"config": resp}, "exam_chunking": {"config": chunking}}}


def _meta(result, node: str) -> dict:
    mats = result.asset_materializations_for_node(node)
    return {k: getattr(v, "value", v) for k, v in mats[0].metadata.items()} if mats else {}


@command("exam", "generate, freeze, take and analyse the exam (exam_job) as one Dagster run; prints the figures", add_arguments)
def _exam(args: argparse.Namespace) -> int:
    import dagster as dg

    from hcat_pipeline.definitions import defs

    job = defs.resolve_job_def("exam_job")
    result = job.execute_in_process(run_config=run_config(args), instance=dg.DagsterInstance.get(), raise_on_error=False)
    if not result.success:
        failed = [e.step_key for e in result.all_events if e.is_step_failure]
        print(f"exam_job failed at {failed} (run {result.run_id}); see the run in the UI", file=sys.stderr)
        return 1
    gen, ex, irt = _meta(result, "exam_candidates"), _meta(result, "exam"), _meta(result, "irt_model")
    print(f"exam {ex.get('exam_version')}: {ex.get('questions')} questions from {gen.get('chunks')} chunks "
          f"({gen.get('candidates')} candidates, survival {gen.get('candidate_survival_rate')}; {gen.get('llm_seconds')} s of generation this run, the rest from its checkpoint)")
    print(f"rejections: {json.dumps(gen.get('rejections_by_reason'))}")
    print(f"baselines: fixed position {ex.get('fixed_position_baseline')}; longest answer {ex.get('longest_answer_baseline')}")
    report = result.output_for_node("exam_report")
    for r in report.sort("accuracy", descending=True).iter_rows(named=True):
        print(f"  {r['system_id']:<22} accuracy {r['accuracy']:.3f} (n={r['n']}, 95% CI {r['ci_low']:.3f}-{r['ci_high']:.3f})"
              f"  theta {r.get('theta') if r.get('theta') is None else round(r['theta'], 2)}")
    print(f"IRT: {irt.get('questions_kept')}/{irt.get('questions')} questions kept ({irt.get('stop_reason')}); "
          f"RMSE {irt.get('rmse_irt')} vs mean-prediction {irt.get('rmse_mean_prediction_baseline')}")
    _print_topics(result.output_for_node("exam_topics"))
    _print_chunking(result.output_for_node("exam_chunking"), _meta(result, "exam_chunking"))
    print(f"run {result.run_id}")
    return 0


def _print_topics(topics) -> None:
    """Per taker, its weakest and strongest topic stratum (accuracy with n and CI; the whole table is the asset)."""
    for sid in sorted(topics["system_id"].unique().to_list()):
        rows = topics.filter((topics["system_id"] == sid) & (topics["n"] > 0)).sort("accuracy")
        if rows.height:
            lo, hi = rows.row(0, named=True), rows.row(-1, named=True)
            print(f"  {sid:<22} weakest topic {lo['topic']!r} {lo['accuracy']:.2f} (n={lo['n']}, {lo['ci_low']:.2f}-{lo['ci_high']:.2f}); "
                  f"strongest {hi['topic']!r} {hi['accuracy']:.2f} (n={hi['n']}, {hi['ci_low']:.2f}-{hi['ci_high']:.2f})")


def _print_chunking(table, meta: dict) -> None:
    if table.height == 0:
        print(f"chunk size: not compared ({meta.get('skipped', 'no rows')})")
        return
    for r in table.sort("taker", "chunking").iter_rows(named=True):
        theta = "—" if r["theta"] is None else f"{r['theta']:+.2f} ({r['ci_low']:+.2f} to {r['ci_high']:+.2f})"
        print(f"  {r['taker']:<22} {r['chunking']:<8} ({r['chunks']} chunks) θ {theta}"
              f"  accuracy {'—' if r['accuracy'] is None else format(r['accuracy'], '.3f')} (n={r['n']})")
    r = table.row(0, named=True)
    print(f"chunk size: {r['comparison']} Δθ {r['delta']:+.3f} (95% CI {r['delta_ci_low']:+.3f} to {r['delta_ci_high']:+.3f}) → {r['verdict']}")
