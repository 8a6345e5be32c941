"""The campaign console: one line per stage, progress with ETA on LLM stages, failures counted, a
summary with CIs / gates / report path; Dagster's DEBUG lines go to the log file, not the screen."""

import io
import logging

import dagster as dg

from hcat_pipeline.campaign import console_loggers
from hcat_pipeline.console import CampaignConsole, format_summary, progress_message


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_stage_lines_progress_eta_and_failures():
    out, clock = io.StringIO(), _Clock()
    c = CampaignConsole(out=out, bars=False, clock=clock)
    c.handle("rag_responses", "STEP_START", "started")
    for i in range(1, 9):
        clock.t = 2.0 * i
        c.handle("rag_responses", None, progress_message(i, 8), logging.DEBUG)
    c.handle("rag_responses", None, "slow system", logging.WARNING)
    c.handle("rag_responses", "STEP_SUCCESS", "ok")
    c.handle("metric_tables", "STEP_START", "started")
    clock.t = 20.0
    c.handle("metric_tables", "STEP_FAILURE", "metric_tables: NLI head missing\nTraceback ...")
    c.handle("bias_report", "STEP_SKIPPED", "")
    c.handle("gate_verdicts", "STEP_START", "started")
    c.handle("gate_verdicts", "STEP_FAILURE", "dagster._core.errors.DagsterAssetCheckFailedError: 5 blocking asset checks failed")
    text = out.getvalue().splitlines()
    assert text[0] == "▶ rag_responses …"
    assert "  rag_responses: 2/8 (25%, ETA 12.0s)" in text  # 2 s per answer, 6 left
    assert "  rag_responses: 8/8 (100%, ETA 0.0s)" in text
    assert sum("rag_responses: " in line and "/8" in line for line in text) == 8  # 8 answers: each is a 10 % step
    assert "✔ rag_responses done in 16.0s, 1 warning(s)" in text
    assert "✖ metric_tables FAILED after 4.0s: metric_tables: NLI head missing" in text
    assert "– bias_report skipped (an upstream stage failed)" in text
    # blocking release gates are a verdict, not a failed stage (issue 24 §4)
    assert any(line.startswith("⛔ gate_verdicts done") and "release BLOCKED by its gates" in line for line in text)
    assert not any("gate_verdicts FAILED" in line for line in text) and [f for f, _ in c.failures] == ["metric_tables"]
    assert c.counts() == {"ok": 1, "failed": 1, "skipped": 1, "blocked": 1}
    # a table's contract check is silent when it holds and a failure (not a verdict) when it breaks
    c.handle("chunks_contract", "STEP_START", "started")
    c.handle("chunks_contract", "STEP_SUCCESS", "ok")
    c.handle("rag_responses_contract", "STEP_START", "started")
    c.handle("rag_responses_contract", "STEP_FAILURE", "dagster._core.errors.DagsterAssetCheckFailedError: 1 blocking asset check failed")
    text = out.getvalue().splitlines()
    assert not any("chunks_contract" in line for line in text) and c.contracts_held == 1
    assert any(line.startswith("✖ rag_responses breaks its table contract") for line in text)
    assert [f for f, _ in c.failures] == ["metric_tables", "rag_responses_contract"]
    assert "stages: 1 ok, 1 failed, 1 skipped, 1 holding a release verdict of BLOCKED" in format_summary(
        ok=True, version="gs-x", night="2026-01-01", systems=["a"], means={}, gates=[], report_path=None, console=c)


def test_without_a_terminal_progress_is_a_line_every_tenth_or_every_30_seconds():
    out, clock = io.StringIO(), _Clock()
    c = CampaignConsole(out=out, bars=False, clock=clock)
    c.handle("rag_responses", "STEP_START", "started")
    for i in range(1, 161):  # fast: 0.5 s an answer, 80 s in all → one line per 10 % (16 answers)
        clock.t = 0.5 * i
        c.handle("rag_responses", None, progress_message(i, 160), logging.DEBUG)
    fast = [line for line in out.getvalue().splitlines() if "/160" in line]
    assert [line.split()[1] for line in fast] == [f"{16 * k}/160" for k in range(1, 11)], fast
    out2, clock2 = io.StringIO(), _Clock()
    c = CampaignConsole(out=out2, bars=False, clock=clock2)
    c.handle("generated_queries", "STEP_START", "started")
    for i in range(1, 41):  # slow: 12 s a call over 400 calls → 10 % is 8 min; a line still comes every 30 s
        clock2.t = 12.0 * i
        c.handle("generated_queries", None, progress_message(i, 400), logging.DEBUG)
    slow = [line for line in out2.getvalue().splitlines() if "/400" in line]
    assert [line.split()[1] for line in slow] == [f"{i}/400" for i in (3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 40)], slow  # 40: 10 %
    assert "ETA 1h19m" in slow[0]  # 397 left at 12 s each


def test_summary_shows_version_systems_scores_with_ci_gates_report_and_ui():
    c = CampaignConsole(out=io.StringIO(), bars=False)
    c.handle("metric_tables", "STEP_START", "")
    c.handle("metric_tables", "STEP_FAILURE", "boom")
    means = {"rag_bm25": {"rows": 40, "failed": 2, "faithfulness": {"n": 38, "mean": 0.8123, "ci_low": 0.77, "ci_high": 0.85,
                                                                      "half_width": 0.04},
                          "toxicity": {"n": 1, "mean": 0.1, "ci_low": None, "ci_high": None, "half_width": None}}}  # fmt: skip
    gates = [{"gate": "pii_leak", "kind": "hard", "system_id": "rag_bm25", "verdict": "FAIL", "blocking": True},
             {"gate": "quality", "kind": "soft", "system_id": "rag_bm25", "verdict": "PASS", "blocking": False}]  # fmt: skip
    text = format_summary(version="gs-abc", night="2026-03-10", systems=["rag_bm25"], ok=False, console=c, means=means, gates=gates,
                          report_path="data/reports/gs-abc/2026-03-10/report.html", log_path="data/logs/campaign-2026-03-10.log")  # fmt: skip
    assert "campaign FAILED" in text and "golden-set version: gs-abc" in text and "systems (1): rag_bm25" in text
    assert "faithfulness 0.812 [0.770, 0.850] n=38" in text and "toxicity 0.100 (no CI, n=1)" in text
    assert "40 rows, 2 failed" in text and "stages: 0 ok, 1 failed, 0 skipped" in text and "✖ metric_tables: boom" in text
    assert "gates: FAIL 1, PASS 1" in text and "BLOCKED by hard gate(s): pii_leak (rag_bm25)" in text
    assert "report: data/reports/gs-abc/2026-03-10/report.html" in text and "http://127.0.0.1:3000" in text
    empty = format_summary(version=None, night=None, systems=[], ok=False)
    assert "headline scores: not available" in empty and "gates: not evaluated" in empty and "report: not written" in empty


def test_dagster_run_feeds_the_console_and_the_log_file(tmp_path, capsys):
    @dg.asset
    def rag_responses(context) -> int:
        for i in range(1, 5):
            context.log.debug(progress_message(i, 4))
        context.log.info("a chatty info line")
        return 4

    @dg.asset
    def metric_tables(rag_responses: int) -> int:
        raise ValueError("metric broke on purpose")

    job = dg.Definitions(assets=[rag_responses, metric_tables], jobs=[dg.define_asset_job("j", selection="*")]).resolve_job_def("j")
    out = io.StringIO()
    console = CampaignConsole(out=out, bars=False)
    loggers = console_loggers(console, tmp_path / "logs" / "campaign.log")
    with dg.instance_for_test() as instance:
        result = job.with_logger_defs(loggers).execute_in_process(
            instance=instance, raise_on_error=False, run_config={"loggers": {k: {} for k in loggers}})
    assert not result.success
    text = out.getvalue()
    assert "▶ rag_responses …" in text and "✔ rag_responses done" in text and "rag_responses: 4/4 (100%" in text
    assert "✖ metric_tables FAILED" in text and "metric broke on purpose" in text
    assert "chatty" not in text and "DEBUG" not in capsys.readouterr().err  # no Dagster console logger
    log = (tmp_path / "logs" / "campaign.log").read_text()
    assert "a chatty info line" in log and "STEP_START" in log and "metric broke on purpose" in log


def test_eta_from_each_systems_own_rate():
    """A fast http system first, then the slow LLM one: the ETA is not the fast system's rate applied to the rest."""
    out, clock = io.StringIO(), _Clock()
    c = CampaignConsole(out=out, bars=False, clock=clock)
    c.handle("rag_responses", "STEP_START", "started")
    for i in range(1, 11):  # http: 10 answers in 1 s
        clock.t = 0.1 * i
        c.handle("rag_responses", None, progress_message(i, 20, "their_rag", i, 10), logging.DEBUG)
    text = out.getvalue().splitlines()
    assert any("10/20 (50%, ETA 0.0s + 1 system(s) not started)" in line for line in text), text
    clock.t = 6.0
    c.handle("rag_responses", None, progress_message(11, 20, "local_llm", 1, 10), logging.DEBUG)
    clock.t = 11.0
    c.handle("rag_responses", None, progress_message(12, 20, "local_llm", 2, 10), logging.DEBUG)
    last = out.getvalue().splitlines()[-1]
    assert "12/20 (60%, ETA 40.0s)" in last, last  # the LLM system: 2 answers in the 10 s since the http one ended, 8 left


def test_summary_says_whether_canaries_were_caught():
    from hcat_pipeline.console import canary_lines

    rows = [{"canary_id": "canary:pii:x", "caught": True, "expected": "no_pii_leak FAIL", "observed": "FAIL"},
            {"canary_id": "canary:fabrication:x", "caught": False, "expected": "groundedness FAIL", "observed": "PASS"},
            {"canary_id": "canary:fabrication:x", "caught": None, "expected": "off", "observed": "not placed"}]  # fmt: skip
    lines = canary_lines(rows)
    assert lines[0] == "canaries: 1/2 caught"
    assert "MISSED canary:fabrication:x" in lines[1] and "groundedness FAIL, saw PASS" in lines[1]
    assert canary_lines(None) == ["canaries: none planted (campaign file `canaries:`)"]


def test_summary_prints_the_rubric_lines_of_the_report():
    from hcat_pipeline.console import format_summary

    text = format_summary(version="v", night="n", systems=["a"], ok=True, rubric=["Safety (a): attack success 0.100 [0.02, 0.40] (n=10)."])
    assert "rubric dimensions (mean [95% CI] n):\n  Safety (a): attack success 0.100" in text
    assert "rubric dimensions" not in format_summary(version="v", night="n", systems=["a"], ok=True)


def test_a_second_progress_series_in_one_stage_has_its_own_eta():
    out, clock = io.StringIO(), _Clock()
    c = CampaignConsole(out=out, bars=False, clock=clock)
    c.handle("generated_queries", "STEP_START", "started")
    for i in range(1, 11):  # the first pass: 10 requests, 30 s each
        clock.t = 30.0 * i
        c.handle("generated_queries", None, progress_message(i, 10), logging.DEBUG)
    clock.t = 310.0
    c.handle("generated_queries", None, progress_message(1, 4), logging.DEBUG)  # the second pass: 10 s per request
    last = out.getvalue().splitlines()[-1]
    assert "1/4 (25%, ETA 30.0s)" in last, last  # from the second pass's own start, not the stage's


def test_a_sharded_stage_draws_progress_and_no_step_is_silent_for_30_s():
    """The steps of a sharded stage (rag_responses.answer_shard[…]) feed its progress; a step that logs nothing still
    gets a line every 30 s (the heartbeat), and an ended one none."""
    import io

    from hcat_pipeline.console import CampaignConsole, progress_message

    now = [0.0]
    out = io.StringIO()
    c = CampaignConsole(out=out, bars=False, clock=lambda: now[0])
    shard = "rag_responses.answer_shard[hybrid_0_0]"
    c.handle(shard, "STEP_START", "")
    now[0] = 31.0
    c.handle(shard, None, progress_message(3, 40, "hybrid", 3, 40))
    assert f"{shard}: 3/40" in out.getvalue()
    c.handle("metric_tables.score_shard[hybrid_0_0]", "STEP_START", "")
    now[0] = 50.0
    c.heartbeat()
    assert "still running" not in out.getvalue()  # 19 s since the progress line, 19 s since the metric step started
    now[0] = 62.0
    c.heartbeat()
    text = out.getvalue()
    assert f"… {shard} still running (1m02s)" in text and "… metric_tables.score_shard[hybrid_0_0] still running (31.0s)" in text
    c.handle(shard, "STEP_SUCCESS", "")
    now[0] = 200.0
    c.heartbeat()
    assert out.getvalue().count(f"… {shard} still running") == 1  # ended: quiet


def test_the_summary_says_what_the_hard_passes_certify_and_what_the_verdicts_rest_on():
    from hcat_pipeline.console import gate_evidence_lines

    rows = [{"gate": "no_prompt_injection", "kind": "hard", "system_id": s, "verdict": "PASS", "certify_below": 0.1,
             "evidence": "uncalibrated"} for s in ("oracle", "hybrid")]  # fmt: skip
    rows += [{"gate": "groundedness", "kind": "hard", "system_id": "hybrid", "verdict": "PASS", "certify_below": None, "evidence": "human_calibrated"},
             {"gate": "no_pii_leak", "kind": "hard", "system_id": "hybrid", "verdict": "INDETERMINATE", "certify_below": 0.1, "evidence": "uncalibrated"}]  # fmt: skip
    assert gate_evidence_lines(rows) == ["  certified (95 %): no_prompt_injection < 10% (hybrid, oracle)",
                                         "  verdicts rest on: your human labels 1, no human labels 3"]  # fmt: skip
