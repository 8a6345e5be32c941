"""A night's plan and evidence bundle from what the project stores (issue 67 items 2-3): where they live, which files a
decision rests on. Paths in, files out; the campaign (``hcat_pipeline.campaign``) calls ``lock_plan`` before any system
answers and ``seal_bundle`` after the night; ``hcat verify`` / ``hcat sign`` read them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from hcat_pipeline.common.ids import canonical_json, sha256_hex
from hcat_pipeline.corpus.content_hash import file_sha256
from hcat_pipeline.gates.night import SETTINGS_FILE
from hcat_pipeline.release.bundle import BUNDLE_FILE, current_root, make_bundle, rel_path, verify_bundle, write_bundle
from hcat_pipeline.release.inputs import changed_since_sealed, snapshot
from hcat_pipeline.release.plan import NightPlan, bar_moved, plan_hash, plan_history, write_plan
from hcat_pipeline.release.rederive import gate_input_files, read_settings, rederive_gates
from hcat_pipeline.release.signoff import LOG_FILE, read_log, verify_log

# per-run tables a decision rests on: the verdicts and their certificates, the answers behind every counted failure, the
# checks and scores the gates read, the labelling design's queue (and every table the gates read: release.rederive)
RUN_TABLES = ("gate_verdicts", "release_decision", "rag_responses", "behaviour_checks", "metric_tables", "review_queue",
              "calibrated_scores", "llm_judge_scores")  # fmt: skip


def release_dir(data_dir: str | Path, version: str, night: str) -> Path:
    return Path(data_dir) / "release" / version / night


def signoff_log(data_dir: str | Path) -> Path:
    """The sign-off log, one for every night (its chain runs across them)."""
    return Path(data_dir) / "release" / LOG_FILE


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def folder_sha256(folder: str | Path, pattern: str = "*") -> str:
    """SHA-256 over a folder's files (names and contents, sorted); empty when the folder has none."""
    files = sorted(p for p in Path(folder).glob(pattern) if p.is_file()) if folder and Path(folder).is_dir() else []
    return sha256_hex(canonical_json([[p.name, file_sha256(p)] for p in files], compact=True)) if files else ""


def lock_plan(plan: NightPlan, directory: Path) -> tuple[str, list[dict]]:
    """Write the plan (``release.plan.write_plan``); its hash and what the bar moved from the night's previous plan."""
    _, digest = write_plan(plan, directory, now())
    history = plan_history(directory)
    moved = bar_moved(history[-2], history[-1]) if len(history) > 1 else []
    return digest, moved


def evidence_files(data_dir: str | Path, warehouse: str | Path, golden_dir: str | Path, labels_dir: str | Path, version: str,
                   night: str, gates_file: str | Path) -> dict[str, Path]:  # fmt: skip
    """name → path of every stored file the night's decision rests on (the ones that exist). The night's share of the
    stores later nights rewrite — its labels, the calibrators, its design, the reviews of its flags — is snapshot into
    the release dir first (``release.inputs``) and bundled from there."""
    directory = release_dir(data_dir, version, night)
    out = {"plan": directory / "plan.json", "gates_file": Path(gates_file),
           "golden_set": Path(golden_dir) / version / "golden_set.parquet", "golden_set_manifest": Path(golden_dir) / version / "manifest.json"}  # fmt: skip
    out |= {f"plan_{p.stem}": p for p in sorted(directory.glob("plan.*.json"))}  # the earlier plans: the bar's history
    for table in RUN_TABLES:
        out[table] = Path(warehouse) / table / version / f"{night}.parquet"
    if (settings := read_settings(directory)) is not None:  # what the gates read and how, so verify can re-derive them
        out |= {"gate_settings": directory / SETTINGS_FILE, **gate_input_files(Path(warehouse), version, night, settings, Path(gates_file))}
    out |= snapshot(directory, Path(warehouse), Path(labels_dir), version, night)
    return {k: v for k, v in out.items() if v.is_file()}


def seal_bundle(files: dict[str, Path], base: str | Path, directory: Path, warehouse: str | Path | None = None,
                labels_dir: str | Path | None = None) -> dict:  # fmt: skip
    """The bundle of ``files`` written to ``<directory>/bundle.json``; returned. ``warehouse`` / ``labels_dir`` (the live
    stores, relative to ``base`` when inside it) are recorded so a label or flag review of this night added later is
    found (``release.inputs.changed_since_sealed``)."""
    bundle = make_bundle(files, base)
    if warehouse is not None and labels_dir is not None:
        bundle["live"] = {k: str(rel_path(v, base)) for k, v in (("warehouse", warehouse), ("labels_dir", labels_dir))}
    write_bundle(bundle, directory / BUNDLE_FILE)
    return bundle


def live_changes(directory: Path, bundle: dict, base: str | Path) -> list[str]:
    """What of the night's share changed in the live stores since sealing (none for a dossier folder: no live stores)."""
    live = bundle.get("live")
    if not live:
        return []
    return changed_since_sealed(directory, Path(base) / live["warehouse"], Path(base) / live["labels_dir"], directory.parent.name, directory.name)


def evidence_root_now(bundle: dict, base: str | Path, directory: Path | None = None) -> str:
    """The root the night's evidence hashes to now — its files as they are, and its share of the live stores: equal to
    the sealed root only while nothing a decision rests on has changed (a signature on it is stale otherwise)."""
    changes = live_changes(directory, bundle, base) if directory is not None else []
    return current_root(bundle, base, [{"name": f"live: {c}", "sha256": sha256_hex(c), "bytes": 0} for c in changes])


def verify_night(directory: Path, data_dir: str | Path, gates_file: Path, notes: list[str] | None = None) -> list[str]:
    """Every broken link of a night's plan, bundle, gate verdicts (re-derived from the bundle's tables) and the sign-off
    log, one line each; ``notes`` (when given) gets what was checked beside them."""
    history = plan_history(directory)
    if not history:
        return [f"{directory}: no plan.json (the night wrote none: run it with this version of hcat)"]
    out = [f"plan {i + 1}: its hash is not its content's (edited after it was written)" for i, h in enumerate(history)
           if plan_hash(h["plan"]) != h["sha256"]]  # fmt: skip
    for earlier, later in zip(history, history[1:]):
        out += [
            f"the bar moved after the plan: {m['field']} from {m['from']} to {m['to']} (plan of {m['when']})"
            for m in bar_moved(earlier, later)
        ]
    if gates_file.is_file() and file_sha256(gates_file) != history[-1]["plan"]["gates_sha256"]:
        out.append(f"the gates file {gates_file} changed after the night's plan (the bar moved; re-run the night for a new plan)")
    bundle_path = directory / "bundle.json"
    if not bundle_path.is_file():
        out.append(f"{bundle_path} missing: the night did not complete, or its bundle was removed")
    else:
        bundle = json.loads(bundle_path.read_text())
        out += verify_bundle(bundle, data_dir)
        out += live_changes(directory, bundle, data_dir)
        problems, note = rederive_gates(directory, bundle, Path(data_dir), directory.parent.name, directory.name)
        out += problems
        if notes is not None and note:
            notes.append(note)
    out += [f"sign-off log: {p}" for p in verify_log(read_log(signoff_log(data_dir)))]
    return out


def plan_lines(directory: Path, night: str) -> list[str]:
    """The report's first lines on what the night was planned for: the intended use (or that it was not declared) and the
    plan's hash; nothing when the night locked no plan (a run outside ``hcat campaign``)."""
    history = plan_history(directory)
    if not history:
        return []
    plan, use = history[-1], history[-1]["plan"].get("intended_use") or {}
    missing = [k for k in ("purpose", "users", "in_scope", "out_of_scope", "decision") if not use.get(k)]
    if missing:
        first = (f"INTENDED USE NOT DECLARED: the campaign file's intended_use lacks {', '.join(missing)} — what this evaluation "
                 "is fit for is not stated")  # fmt: skip
    else:
        first = (f"Intended use: {use['purpose']} — for {use['users']}; in scope: {'; '.join(use['in_scope'])}; out of scope: "
                 f"{'; '.join(use['out_of_scope'])}. The decision it supports: {use['decision']}.")  # fmt: skip
    moved = [f"{m['field']} from {m['from']} to {m['to']}" for a, b in zip(history, history[1:]) for m in bar_moved(a, b)]
    second = (f"Plan locked before any system answered: sha256 {plan['sha256'][:16]}… ({plan['written_at']}); "
              + (f"THE BAR MOVED after an earlier plan of this night: {'; '.join(moved)}. " if moved else "")
              + f"Check it and the evidence offline with `hcat verify {night}`, sign it on the review page's /release.")  # fmt: skip
    return [first, second]
