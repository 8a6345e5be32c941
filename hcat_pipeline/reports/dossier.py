"""The release dossier (issue 67 item 6): one self-contained folder a model-risk file can hold — ``dossier.html``, the
same page printed to ``dossier.pdf`` by the project's Chromium, the night's full report, and ``evidence/`` (the bundle
and every file it hashes, ``release.export``) so ``hcat verify FOLDER`` checks it without the project's data.

The page is laid out as a model-risk file expects (SR 26-2 validation documentation; EU AI Act Annex IV): the decision,
its sign-offs and the intended use on the first page; then the test setting and what the results do not speak for; the
data; the methods; the results; the limitations; the contested flags; the sign-off log; the evidence manifest. Its
figures are the night report's own (``report.json``, written beside ``report.html``), each with its CI and n."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl

from hcat_pipeline.gates.flags import detector_precision, precision_text, read_flag_reviews
from hcat_pipeline.golden.review import with_review_columns
from hcat_pipeline.paths import CHROMIUM, CHROMIUM_FLAGS
from hcat_pipeline.release.export import copy_evidence
from hcat_pipeline.release.night import release_dir, signoff_log, verify_night
from hcat_pipeline.release.plan import plan_history
from hcat_pipeline.release.signoff import read_log
from hcat_pipeline.reports.campaign_report import RECORD_FILE, Section, environment, fmt
from hcat_pipeline.reports.signoffs import night_signoffs, signoff_block

# the report's sections in the dossier's chapters (a key the night's report lacks is left out)
CHAPTERS = {
    "setting": ("test_setting",),
    "methods": ("validity", "construct_validity", "judge", "judge_ensemble", "calibrated"),
    "results": ("decision", "gates", "gate_review", "trace_cheating", "gates_detail", "canaries", "headline", "rankings", "paired", "pareto", "weakest", "robustness",
                "paraphrase", "difficulty", "failures"),
}  # fmt: skip
METHOD_LINES = ("Human labels wanted", "LLM judge", "Calibrat", "Metric validity", "Construct")  # the first screen's lines on methods
NOT_SPOKEN_FOR = (
    "systems other than the ones named here, or these systems with another configuration (each system's configuration hash is in the plan)",
    "documents other than this corpus, and questions unlike the golden set's kinds and topics (the test setting above bounds them)",
    "cases the gates did not read (see 'cases read'), nor cases left out for contamination risk",
    "production traffic, except where the monitoring below reports it",
    "failure rates below the level a PASS certifies (each certificate states its level at 95 %)",
)  # fmt: skip


def _section(d: dict) -> Section:
    return Section(**d)


def front_decision(decision: Section) -> Section:
    """The first page's decision: per system, released or not, the gates that block it, its hard gates' counts (the full
    table, with each gate's evidence, is in the results)."""
    systems: dict[str, dict] = {}
    for row in decision.rows:
        s = systems.setdefault(row[0], {"release": row[1], "blocking": [], "counts": ""})
        if row[2].startswith("hard PASSes"):
            s["counts"] = f"{row[3]} (hard PASSes: {row[2].split('(')[-1].rstrip(')')})"
        else:
            s["blocking"].append(row[2].replace(" (hard)", ""))
    rows = [[sid, s["release"], "; ".join(s["blocking"]) or "none", s["counts"]] for sid, s in systems.items()]
    return Section("front_decision", "Decision", columns=["system", "release", "blocking gates", "gates (n)"], rows=rows,
                   row_classes=["PASS" if r[1] == "CLEARED" else "FAIL" for r in rows],
                   note="Each blocking gate's verdict, CI, n and evidence: section 4 (Results).")  # fmt: skip


def _review_record(golden: pl.DataFrame) -> Section:
    """Who reviewed which cases of the golden set: per category, cases by reviewer and verdict, and the unreviewed."""
    g = with_review_columns(golden).with_columns(
        pl.col("reviewed_by").fill_null("not reviewed"), pl.col("review_verdict").fill_null("–"))  # fmt: skip
    t = g.group_by("category", "reviewed_by", "review_verdict").len().sort("category", "reviewed_by", "review_verdict")
    rows = [[r["category"], r["reviewed_by"], r["review_verdict"], str(r["len"])] for r in t.iter_rows(named=True)]
    return Section("review_record", "The golden set's review record", columns=["category", "reviewer", "verdict", "cases"], rows=rows,
                   note=f"{golden.height} cases in all; a case 'not reviewed' was generated and checked by rule only.")  # fmt: skip


def _flags(labels_dir: Path, cases: set[str]) -> tuple[Section, list[str]]:
    reviews = [r for r in read_flag_reviews(labels_dir).values() if r.case_id in cases]
    rows = [[r.gate, r.system_id, r.case_id, r.detector or "–", r.decision, r.reviewer, r.reviewed_at, r.reason] for r in
            sorted(reviews, key=lambda r: (r.gate, r.system_id, r.case_id))]  # fmt: skip
    precision = precision_text(detector_precision(reviews)) if reviews else {}
    lines = [f"detector {d}: {t}" for d, t in sorted(precision.items())] or [
        "no flag of this night was reviewed by a person: every detector's false-positive rate is unknown (n=0)"]
    return Section("flags", "Contested flags: each review of a counted failure", columns=["gate", "system", "case", "detector", "decision",
                   "reviewer", "when", "why"], rows=rows, note="A confirmed flag counts; an overturned one does not, and the "
                   "overturn is recorded with its reason.") if rows else Section.missing(
                   "flags", "Contested flags", "no flag of this night's cases has been reviewed"), lines  # fmt: skip


def _limitations(record: dict, plan: dict, precision_lines: list[str]) -> list[str]:
    sections, out = record["sections"], []
    judge = sections.get("judge") or {}
    if not (plan.get("judge") or {}).get("enabled") or plan["judge"]["enabled"] == "off" or not judge.get("available"):
        out.append("No LLM judge decided anything this night (judge off or not run): the open-ended dimensions rest on the metrics only.")
    else:
        out += [f"LLM judge {r[1]} for {r[0]} is not validated against people (n={r[2]}): it decides no gate." for r in judge["rows"]
                if str(r[-1]).startswith("no")]  # fmt: skip
    out += [f"Detector false positives — {line}." for line in precision_lines]
    out += [line for line in record["summary"] if line.startswith(("Contamination", "INTENDED USE NOT DECLARED"))]
    out += [line for line in record["summary"] if "INDETERMINATE" in line or "SHIPPED REVIEW" in line]
    return out


def _monitoring(warehouse: Path, entries: list[dict], night: str) -> tuple[str, list[list[str]]]:
    """Production days stored since the last approved sign-off before this night, with their anomalies."""
    since = max((e["at"][:10] for e in entries if e["night"] < night and e["decision"] != "reject"), default="")
    days = sorted(p for p in (warehouse / "production_anomalies").glob("*.parquet") if p.stem > since)
    rows = []
    for p in days:
        a = pl.read_parquet(p)
        kinds = ", ".join(f"{k} {n}" for k, n in a.group_by("kind").len().sort("kind").iter_rows()) if a.height and "kind" in a.columns else ""
        rows.append([p.stem, str(a.height), kinds or "none"])
    head = f"since the last signed release ({since})" if since else "no earlier night was signed: every stored day"
    return head, rows


def dossier_context(data_dir: Path, reports_dir: Path, labels_dir: Path, warehouse: Path, version: str, night: str, gates_file: Path) -> dict:
    directory = release_dir(data_dir, version, night)
    history = plan_history(directory)
    record_path = Path(reports_dir) / version / night / RECORD_FILE
    if not history or not (directory / "bundle.json").is_file():
        raise FileNotFoundError(f"night {night} of {version}: no plan or no sealed bundle in {directory} (run it with hcat campaign)")
    if not record_path.is_file():
        raise FileNotFoundError(f"{record_path} missing: the night's report predates the dossier; re-materialize campaign_report")
    record, plan, bundle = json.loads(record_path.read_text()), history[-1], json.loads((directory / "bundle.json").read_text())
    golden_path = next((data_dir / e["path"] for e in bundle["files"] if e["name"] in ("golden_set_read", "golden_set")), None)
    golden = pl.read_parquet(golden_path)
    flags, precision_lines = _flags(labels_dir, set(golden["case_id"].to_list()))
    entries = read_log(signoff_log(data_dir))
    since, monitoring = _monitoring(Path(warehouse), entries, night)
    sections = {k: _section(v) for k, v in record["sections"].items()}
    return {
        "title": f"Release dossier — {plan['plan']['campaign']} — {version} — {night}", "night": night, "version": version,
        "plan": plan, "use": plan["plan"].get("intended_use") or {}, "problems": verify_night(directory, data_dir, gates_file),
        "decision": front_decision(sections["decision"]), "signoffs": signoff_block(night_signoffs(data_dir, version, night)),
        "summary": record["summary"], "method_lines": [line for line in record["summary"] if line.startswith(METHOD_LINES)], "provenance": record["provenance"], "review_record": _review_record(golden),
        "chapters": {k: [sections[s] for s in keys if s in sections] for k, keys in CHAPTERS.items()},
        "not_spoken_for": NOT_SPOKEN_FOR, "limitations": _limitations(record, plan["plan"], precision_lines), "flags": flags,
        "monitoring_since": since, "monitoring": monitoring, "entries": [e for e in entries if e["night"] == night],
        "bundle": bundle, "fmt": fmt,
    }  # fmt: skip


def print_pdf(html: Path, pdf: Path, chromium: str = CHROMIUM, timeout_s: float = 180) -> Path:
    """``html`` printed to ``pdf`` by headless Chromium (no header or footer); a clear error when it cannot be."""
    if not Path(chromium).is_file():
        raise FileNotFoundError(f"Chromium not found at {chromium} (scripts/setup.sh installs it; HCAT_CHROMIUM names another)")
    cmd = [chromium, *CHROMIUM_FLAGS, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", html.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        raise RuntimeError(f"Chromium did not print {html} (exit {done.returncode}): {done.stderr[-800:]}")
    return pdf


def export_dossier(data_dir: Path, reports_dir: Path, labels_dir: Path, warehouse: Path, version: str, night: str, gates_file: Path,
                   out: Path, pdf: bool = True) -> dict:  # fmt: skip
    """Write the dossier folder; what was written and whether the night verified when it was exported."""
    ctx = dossier_context(Path(data_dir), Path(reports_dir), Path(labels_dir), Path(warehouse), version, night, Path(gates_file))
    out.mkdir(parents=True, exist_ok=True)
    copy_evidence(Path(data_dir), version, night, out)
    html = out / "dossier.html"
    html.write_text(environment().get_template("dossier.html.j2").render(**ctx), encoding="utf-8")
    report = Path(reports_dir) / version / night / "report.html"
    if report.is_file():
        (out / "report.html").write_bytes(report.read_bytes())
    written = {"html": html, "pdf": print_pdf(html, out / "dossier.pdf") if pdf else None, "evidence": out / "evidence"}
    return {**written, "problems": ctx["problems"], "root": ctx["bundle"]["root"]}
