"""Every gate verdict of a night re-derived offline (issue 67 item 5): the tables the ``gate_verdicts`` asset read, the
gates file and the settings it ran with are in the night's evidence bundle; ``rederive_gates`` runs the same core
(``gates.night.night_gate_table``) on them and names each stored row that differs — a gate row edited after the night
and re-hashed into a forged bundle is still found, because its verdict no longer follows from its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.corpus.content_hash import file_sha256
from hcat_pipeline.gates.apply import decide_release, history_files
from hcat_pipeline.gates.night import GATE_INPUTS, SETTINGS_FILE, GateSettings, night_gate_table, verdict_differences
from hcat_pipeline.gates.spec import GatesFileError, load_gates

UNPARTITIONED = ("human_labels", "calibrators")  # one table for every night (their rows say which night they belong to)


def write_settings(settings: GateSettings, directory: Path) -> Path:
    path = Path(directory) / SETTINGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings.as_dict(), indent=1, sort_keys=True))
    return path


def read_settings(directory: Path) -> GateSettings | None:
    path = Path(directory) / SETTINGS_FILE
    return GateSettings.from_dict(json.loads(path.read_text())) if path.is_file() else None


def _input_name(table: str) -> str:
    return "golden_set_read" if table == "golden_set" else table  # "golden_set" names the frozen version's file


def gate_input_files(warehouse: Path, version: str, night: str, settings: GateSettings, gates_file: Path) -> dict[str, Path]:
    """bundle name → stored file of each table the night's gate verdicts read (those that exist), the earlier nights its
    trend gates read (``history/<table>/<version>/<night>``) and the settings file is added by the caller."""
    warehouse = Path(warehouse)
    out = {}
    for table in GATE_INPUTS:
        if table in UNPARTITIONED:
            continue  # every later night rewrites them: the night's share is snapshot (release.inputs) under the same name
        if table == "golden_set":
            out[_input_name(table)] = warehouse / table / f"{version}.parquet"
        else:
            out[table] = warehouse / table / version / f"{night}.parquet"
    try:
        trend = sorted({g.table for g in load_gates(gates_file).gates if g.kind == "trend"})
    except GatesFileError:
        trend = []
    for table in trend:
        for n, v, p in history_files(warehouse, table, version, night, limit=settings.history_runs,
                                     across_versions=settings.trend_across_versions):  # fmt: skip
            out[f"history/{table}/{v}/{n}"] = p
    return {k: v for k, v in out.items() if v.is_file()}


def _paths(bundle: dict, base: Path) -> dict[str, Path]:
    return {e["name"]: Path(base) / e["path"] for e in bundle["files"]}


def _labels_dir(paths: dict[str, Path]) -> Path:
    """The labels folder the bundle's ``labels/…`` entries live in (a path that does not exist when there were none)."""
    for name, p in paths.items():
        if name.startswith("labels/"):
            return p.parents[len(Path(name).parts) - 2]  # labels/a/b.jsonl at <dir>/a/b.jsonl: <dir>
    return Path("/nonexistent-labels")


def rederive_gates(directory: Path, bundle: dict, base: Path, version: str, night: str) -> tuple[list[str], str]:
    """(what differs between the stored gate rows and the ones re-derived from the bundle's tables — empty: every verdict
    follows from its evidence, a line saying what was checked). A night sealed without its gate settings (an older hcat,
    a hand-made night) is not re-derived, and the line says so; one sealed with them whose tables are gone is broken."""
    settings = read_settings(directory)
    paths = _paths(bundle, base)
    planned = _planned_settings(directory)
    if planned and ("gate_settings" not in paths or not paths["gate_settings"].is_file() or file_sha256(paths["gate_settings"]) != planned):
        return ["the gate settings the plan names are not the bundle's (removed or swapped after the night): nothing re-derived"], ""
    needed = ("gate_verdicts", "gates_file", "metric_tables", "behaviour_checks", "golden_set_read")
    if settings is None or "gate_settings" not in paths:
        return [], "gate verdicts NOT re-derived: the night was sealed without its gate settings (an older hcat); only hashes checked"
    if missing := [n for n in needed if n not in paths or not paths[n].is_file()]:
        return [f"gate verdicts not re-derivable: {', '.join(missing)} missing from the bundle's files"], ""
    inputs = {t: pl.read_parquet(paths[_input_name(t)]) if _input_name(t) in paths and paths[_input_name(t)].is_file() else None
              for t in GATE_INPUTS}  # fmt: skip
    warehouse = paths["gate_verdicts"].parents[2]  # <warehouse>/gate_verdicts/<version>/<night>.parquet
    try:
        derived, _ = night_gate_table(load_gates(paths["gates_file"]), inputs, settings, version, night, _labels_dir(paths), warehouse)
    except Exception as e:  # noqa: BLE001 — a verdict that cannot be re-derived is a broken link, named with its reason
        return [f"gate verdicts not re-derivable from the stored tables: {type(e).__name__}: {e}"], ""
    differences = verdict_differences(pl.read_parquet(paths["gate_verdicts"]), derived)
    if "release_decision" in paths and paths["release_decision"].is_file():  # the first screen's decision follows from them too
        differences += decision_differences(pl.read_parquet(paths["release_decision"]), decide_release(drop_canaries(derived)))
    return differences, f"gate verdicts: {derived.height} rows re-derived from the stored tables, {len(differences)} differ"


def _planned_settings(directory: Path) -> str:
    plan = Path(directory) / "plan.json"
    return json.loads(plan.read_text())["plan"].get("gate_settings_sha256", "") if plan.is_file() else ""


def decision_differences(stored: pl.DataFrame, derived: pl.DataFrame) -> list[str]:
    """Each system whose stored release decision (cleared, blocking gates) is not the one its gate rows give."""
    a = {r["system_id"]: (r["cleared"], sorted(r["blocking_gates"] or [])) for r in stored.iter_rows(named=True)}
    b = {r["system_id"]: (r["cleared"], sorted(r["blocking_gates"] or [])) for r in derived.iter_rows(named=True)}
    return [f"release decision of {s}: stored {a.get(s)}, re-derived from the gate rows {b.get(s)}" for s in sorted(a.keys() | b.keys())
            if a.get(s) != b.get(s)]
