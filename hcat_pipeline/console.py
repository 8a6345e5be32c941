"""What a person sees while ``hcat campaign`` runs: one line per stage as it starts and ends, a progress
bar with ETA on the long LLM stages (tqdm), failure counts, and a closing summary. The full Dagster log
goes to the instance and to a log file; this module only formats (no dagster import).

``CampaignConsole.handle(step, event, message, level)`` is fed by a Dagster logger (campaign.py) with
the step key, the Dagster event type name (``STEP_START`` …, or None for a plain log line), the
message and the logging level.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

LLM_STAGES = frozenset({"rag_responses", "llm_judge_scores", "generated_queries", "exam_responses"})
# "[progress] 12/40" or "[progress] 12/40 hybrid 4/16" (rag_responses: the system answering and its own count), "judge 25/80"
PROGRESS = re.compile(r"(?:^\[progress\]\s+|^judge\s+)(\d+)/(\d+)(?:\s+(\S+)\s+(\d+)/(\d+))?\s*$")


def stage_of(step: str) -> str:
    """The lineage stage of a step key: ``rag_responses`` of ``rag_responses.answer_shard[hybrid_0_0]``."""
    return step.split(".", 1)[0].split("[", 1)[0]


def progress_message(done: int, total: int, system: str | None = None, system_done: int = 0, system_total: int = 0) -> str:
    """The log line an LLM stage emits so the console can draw its bar (and estimate from each system's own rate)."""
    return f"[progress] {done}/{total}" + (f" {system} {system_done}/{system_total}" if system else "")


PLAIN_STEPS, PLAIN_EVERY_S = 10, 30.0  # not on a terminal: a progress line every 10 % or 30 s, whichever first
_SAY = threading.Lock()  # the heartbeat thread and the event handler print to the same stream


@dataclass
class StageState:
    started: float
    bar: object | None = None
    warnings: int = 0
    said_at: float | None = None  # when the last plain progress line was printed
    said_step: int = 0  # the last 10 % step printed
    systems: dict = field(default_factory=dict)  # system → [its start (clock), done, total]: each system's own rate
    last_progress: float | None = None  # when the last progress line came (a new system starts from there)
    series: tuple[float, int] | None = None  # (start, total) of the current progress series: a stage may count twice
    ended: bool = False

    def eta(self, now: float, done: int, total: int) -> str:
        """Seconds left from each system's own rate (systems answer one after another: a fast http system says nothing
        of the slow LLM one behind it); systems not started yet are named, not guessed."""
        if not self.systems:
            rate = done / max(now - (self.series[0] if self.series else self.started), 1e-9)
            return _dur((total - done) / rate if rate else 0.0)
        left = sum((t - d) * (now - t0) / d for t0, d, t in self.systems.values() if d)
        per = next(iter(self.systems.values()))[2] or 1
        unseen = max(total // per - len(self.systems), 0)
        return f"{_dur(left)}" + (f" + {unseen} system(s) not started" if unseen else "")


GATE_CHECK_FAILURE = "DagsterAssetCheckFailedError"  # how a blocking asset check reports itself in the step failure
RELEASE_CHECK = "hard_gates"  # the blocking check on release_decision: its failure is a verdict, not a broken stage
CONTRACT_CHECK = "contract"  # the blocking table-contract check on every stored table (assets/contracts.py)


def is_release_verdict(message: str, step: str | None = None) -> bool:
    """A step failure that is only a blocking check failing on its own asset's step (``release_decision: hard_gates``):
    a verdict. A table's contract check fails in a step of its own (``<asset>_contract``): a failure of the run."""
    return GATE_CHECK_FAILURE in message and not (step or "").endswith(f"_{CONTRACT_CHECK}")


@dataclass
class CampaignConsole:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    bars: bool | None = None  # None: only on a terminal
    clock: object = time.monotonic
    stages: dict[str, StageState] = field(default_factory=dict)
    finished: list[tuple[str, str, float]] = field(default_factory=list)  # (stage, status, seconds)
    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: int = 0
    contracts_held: int = 0  # table-contract checks that passed (quiet: one line in the summary)

    def say(self, line: str) -> None:
        with _SAY:
            print(line, file=self.out, flush=True)

    def heartbeat(self) -> None:
        """A line for every running step that has said nothing for ``PLAIN_EVERY_S``: a long step is never silent."""
        now = self.clock()
        for step, state in list(self.stages.items()):
            last = max(t for t in (state.started, state.said_at, state.last_progress) if t is not None)
            if not state.ended and now - last >= PLAIN_EVERY_S:
                state.said_at = now
                self.say(f"  … {step} still running ({_dur(now - state.started)})")

    def start_heartbeat(self, every_s: float = 5.0) -> threading.Event:
        """Call ``heartbeat`` every ``every_s`` on a daemon thread until the returned event is set."""
        stop = threading.Event()

        def beat():
            while not stop.wait(every_s):
                self.heartbeat()

        threading.Thread(target=beat, name="console-heartbeat", daemon=True).start()
        return stop

    def _bar(self, stage: str, total: int):
        from tqdm import tqdm

        use = self.bars if self.bars is not None else self.out.isatty()
        return tqdm(total=total, desc=f"  {stage}", unit="answer" if stage == "rag_responses" else "call", file=self.out,
                    disable=not use, leave=False, dynamic_ncols=True)  # fmt: skip

    def handle(self, step: str | None, event: str | None, message: str, level: int = logging.INFO) -> None:
        if not step:
            return
        if step.endswith(f"_{CONTRACT_CHECK}"):  # a table's contract check: silent when it holds
            if event == "STEP_SUCCESS":
                self.contracts_held += 1
            elif event == "STEP_FAILURE":
                reason = _first_line(message)
                self.failures.append((step, reason))
                self.say(f"✖ {step.removesuffix('_' + CONTRACT_CHECK)} breaks its table contract: {reason}")
            return
        now = self.clock()
        state = self.stages.get(step)
        if event == "STEP_START":
            self.stages[step] = StageState(started=now)
            self.say(f"▶ {step} …")
        elif event in ("STEP_SUCCESS", "STEP_FAILURE") and state is not None:
            state.ended = True
            if state.bar is not None:
                state.bar.close()
            secs = now - state.started
            ok = event == "STEP_SUCCESS"
            extra = f", {state.warnings} warning(s)" if state.warnings else ""
            status = "ok" if ok else "blocked" if is_release_verdict(message, step) else "failed"
            if ok:
                self.say(f"✔ {step} done in {_dur(secs)}{extra}")
            elif status == "blocked":  # blocking release gates: a verdict, stored with the table; not a broken stage
                self.say(f"⛔ {step} done in {_dur(secs)}: release BLOCKED by its gates (a verdict; see the gates below and the report)")
            else:
                reason = _first_line(message)
                self.failures.append((step, reason))
                self.say(f"✖ {step} FAILED after {_dur(secs)}: {reason}")
            self.finished.append((step, status, secs))
        elif event == "STEP_SKIPPED" or (event is None and "skipped" in message and "upstream" in message.lower()):
            self.finished.append((step, "skipped", 0.0))
            self.say(f"– {step} skipped (an upstream stage failed)")
        elif event is None and state is not None:
            m = PROGRESS.search(message.strip())
            if m and stage_of(step) in LLM_STAGES:  # a sharded stage's steps: rag_responses.answer_shard[hybrid_0_0]
                done, total = int(m.group(1)), int(m.group(2))
                if state.series is None or state.series[1] != total or (state.bar is not None and done < state.bar.n):
                    state.series = (state.last_progress if state.last_progress is not None else state.started, total)
                    state.said_step = 0
                    if state.bar is not None:  # a new series (e.g. the second pass of a stage): its own bar
                        state.bar.close()
                        state.bar = None
                if m.group(3):
                    start = state.last_progress if state.last_progress is not None else state.started
                    state.systems.setdefault(m.group(3), [start, 0, int(m.group(5))])[1] = int(m.group(4))
                state.last_progress = now
                if state.bar is None:
                    state.bar = self._bar(step, total)
                state.bar.n = done
                state.bar.refresh()
                if not getattr(state.bar, "disable", True):
                    return
                self._plain_progress(step, state, done, total, now)
            elif level >= logging.WARNING:
                state.warnings += 1
                self.warnings += 1

    def _plain_progress(self, step: str, state: StageState, done: int, total: int, now: float) -> None:
        """No terminal (a log file, CI): a line at every 10 % step of the stage and at least every 30 s."""
        share_step = done * PLAIN_STEPS // max(total, 1)
        quiet_for = now - (state.said_at if state.said_at is not None else state.started)
        if done != total and share_step <= state.said_step and quiet_for < PLAIN_EVERY_S:
            return
        state.said_at, state.said_step = now, share_step
        self.say(f"  {step}: {done}/{total} ({100 * done // max(total, 1)}%, ETA {state.eta(now, done, total)})")

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "failed": 0, "skipped": 0, "blocked": 0}
        for _, status, _ in self.finished:
            out[status] += 1
        return out


def flag_lines(gates: list[dict]) -> list[str]:
    """The counted failures a person has to confirm: per blocking count gate, confirmed / unconfirmed / overturned, and
    the gates whose FAIL rests on unconfirmed flags only (pending confirmation on the review page's /flags)."""
    rows = [g for g in gates if g.get("n_flagged")]
    if not rows:
        return []
    k = {c: sum(int(g.get(c) or 0) for g in rows) for c in ("n_confirmed", "n_unconfirmed", "n_overturned")}
    out = [f"  flagged answers: {k['n_confirmed']} confirmed / {k['n_unconfirmed']} unconfirmed / {k['n_overturned']} overturned "
           "(confirm or overturn each on the review page: hcat review → /flags)"]  # fmt: skip
    pending = sorted({f"{g['gate']} ({g['system_id']})" for g in rows if g.get("blocking") and g.get("fail_evidence") == "pending_confirmation"})
    if pending:
        out.append("  FAIL pending confirmation (no person confirmed a flag yet): " + ", ".join(pending))
    return out


def gate_evidence_lines(gates: list[dict]) -> list[str]:
    """What the hard PASSes certify (zero-tolerance failure rates, exact 95 % bound) and what the verdicts rest on."""
    read = sorted({g["cases_read"] for g in gates if g.get("cases_read")})
    out = [f"  cases: {read[0]}"] if read else []
    certified: dict[tuple[str, float], list[str]] = {}
    for g in gates:
        if g.get("kind") == "hard" and g.get("verdict") == "PASS" and g.get("certify_below") is not None:
            certified.setdefault((g["gate"], g["certify_below"]), []).append(str(g.get("system_id")))
    if certified:
        out.append("  certified (95 %): " + "; ".join(f"{gate} < {level:.0%} ({', '.join(sorted(s))})"
                                                      for (gate, level), s in sorted(certified.items())))  # fmt: skip
    rests: dict[str, int] = {}
    for g in gates:
        if g.get("evidence"):
            rests[g["evidence"]] = rests.get(g["evidence"], 0) + 1
    if rests:
        from hcat_pipeline.gates.calibrated import EVIDENCE_TEXT

        out.append("  verdicts rest on: " + ", ".join(f"{EVIDENCE_TEXT.get(k, k)} {n}" for k, n in sorted(rests.items())))
    return out


def _first_line(text: str) -> str:
    text = (text or "").strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return "(no message)"


def _dur(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def fmt_ci(r: dict | None) -> str:
    """``0.812 [0.77, 0.85] n=40`` from a mean_ci dict (coverage.mean_ci); ``n=0`` when empty."""
    if not r or r.get("mean") is None or r.get("n", 0) == 0:
        return "n=0"
    if r.get("ci_low") is None or r.get("ci_high") is None or r.get("n", 0) < 2:
        return f"{r['mean']:.3f} (no CI, n={r.get('n')})"
    return f"{r['mean']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] n={r['n']}"


def canary_lines(rows: list[dict] | None) -> list[str]:
    """Would these gates catch a broken system? — the canaries caught, and each miss with what was expected."""
    if not rows:
        return ["canaries: none planted (campaign file `canaries:`)"]
    per: dict[str, list[dict]] = {}
    for r in rows:
        per.setdefault(r["canary_id"], []).append(r)
    applicable = {c: [r for r in rs if r["caught"] is not None] for c, rs in per.items()}
    caught = sorted(c for c, rs in applicable.items() if rs and all(r["caught"] for r in rs))
    missed = {c: [r for r in rs if not r["caught"]] for c, rs in applicable.items() if rs and c not in caught}
    n = len(caught) + len(missed)
    out = [f"canaries: {len(caught)}/{n} caught" + (" — every planted fault got its verdicts" if not missed else "")]
    for c, rs in sorted(missed.items()):
        out.append(f"  ✖ MISSED {c} (the evaluator would not catch it): " + "; ".join(f"{r['expected']}, saw {r['observed']}" for r in rs))
    undecided = [r for rs in per.values() for r in rs if r["caught"] is None and str(r.get("evidence") or "").startswith("undecided")]
    for r in undecided:  # too few cases tonight to test this expectation (not a miss; more cases would decide it)
        out.append(f"  … {r['canary_id']}: {r['expected']} {r['evidence']}")
    apart = sorted(c for c, rs in per.items() if c not in caught and c not in missed
                   and any(str(r.get("evidence") or "").startswith("not separable") for r in rs))  # fmt: skip
    for c in apart:  # the parent fails the same gates: nothing could tell them apart (not a miss)
        why = next(r["evidence"] for r in per[c] if str(r.get("evidence") or "").startswith("not separable"))
        out.append(f"  ≈ NOT SEPARABLE {c}: {why.split(';')[0]}")
    return out


def format_summary(
    *,
    version: str | None,
    night: str | None,
    systems: list[str],
    ok: bool,
    console: CampaignConsole | None = None,
    means: dict | None = None,
    gates: list[dict] | None = None,
    report_path: str | None = None,
    log_path: str | None = None,
    max_metrics: int = 6,
    seconds: float | None = None,
    canaries: list[dict] | None = None,
    rubric: list[str] | None = None,
) -> str:
    """The closing block of ``hcat campaign``: version, systems, headline scores with CIs (the
    ``means`` metadata of metric_tables: {system: {rows, failed, metric: mean_ci}}), gate verdicts
    (rows of gate_verdicts: gate, kind, system_id, verdict, blocking), report path, how to open the UI."""
    lines = ["", "─" * 72, f"campaign {'completed' if ok else 'FAILED'}" + (f" in {_dur(seconds)}" if seconds is not None else "")]
    lines.append(f"golden-set version: {version or '-'}   night: {night or '-'}")
    lines.append(f"systems ({len(systems)}): {', '.join(systems) if systems else '-'}")
    if console is not None:
        c = console.counts()
        verdict = f", {c['blocked']} holding a release verdict of BLOCKED" if c["blocked"] else ""
        lines.append(f"stages: {c['ok']} ok, {c['failed']} failed, {c['skipped']} skipped{verdict}; {console.warnings} warning(s) logged")
        broken = sum(step.endswith(f"_{CONTRACT_CHECK}") for step, _ in console.failures)
        lines.append(f"table contracts: {console.contracts_held} held, {broken} broken")
        for step, reason in console.failures:
            lines.append(f"  ✖ {step}: {reason}")
    if means:
        lines.append("headline scores (mean [95% CI] n):")
        for sid, row in means.items():
            metrics = [k for k, v in row.items() if isinstance(v, dict)]
            shown = ", ".join(f"{m} {fmt_ci(row[m])}" for m in metrics[:max_metrics])
            more = f" (+{len(metrics) - max_metrics} more in the report)" if len(metrics) > max_metrics else ""
            lines.append(f"  {sid}: {row.get('rows', '?')} rows, {row.get('failed', 0)} failed — {shown}{more}")
    else:
        lines.append("headline scores: not available (metric_tables did not run)")
    if gates:
        tally: dict[str, int] = {}
        for g in gates:
            tally[g["verdict"]] = tally.get(g["verdict"], 0) + 1
        lines.append("gates: " + ", ".join(f"{v} {n}" for v, n in sorted(tally.items())))
        blocking = sorted({f"{g['gate']} ({g.get('system_id') or 'all'})" for g in gates if g.get("blocking")})
        lines.append("  release BLOCKED by hard gate(s): " + ", ".join(blocking) if blocking else "  no blocking hard gate")
        lines += flag_lines(gates)
        lines += gate_evidence_lines(gates)
    else:
        lines.append("gates: not evaluated")
    lines += canary_lines(canaries)
    if rubric:  # safety per harm category, citations, formats, stated confidence, validity (the report's rubric sections)
        lines.append("rubric dimensions (mean [95% CI] n):")
        lines += [f"  {line}" for line in rubric]
    lines.append(f"report: {report_path}" if report_path else "report: not written")
    if log_path:
        lines.append(f"full log: {log_path}")
    lines.append("UI: bash scripts/ui.sh, then open http://127.0.0.1:3000 (runs, asset metadata, plots)")
    lines.append("─" * 72)
    return "\n".join(lines)
