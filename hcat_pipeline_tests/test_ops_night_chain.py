"""The sensors and backfills as the design promises them, on the project's own definitions and jobs (a temporary
instance, real runs, the packaged LLM):

1. documents in the campaign's corpus folder → ``corpus_files`` observation → ``corpus_change_sensor`` →
   ``test_generation_job`` (the campaign file's generation budget) → ``golden_candidates_sensor`` → a new frozen
   version → ``new_version_campaign_sensor`` → its first campaign run; an unchanged corpus asks nothing;
   one more document → the whole chain again, a second version and its first night;
2. a curated re-freeze (``hcat export-cases`` → edit → ``hcat import-cases``) → ``golden_set_version_sensor`` adds the
   version; ``hcat backfill`` of it over two nights, killed after the first night, resumes with the second only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline_tests.bank_corpus import DOCS

ROOT = Path(__file__).resolve().parents[1]
NIGHTS = ("2026-11-21", "2026-11-22")

CAMPAIGN = """name: chain
corpus: {paths: [corpus]}
generation:
  llm: {model: qwen2.5-0.5b-instruct-q4_k_m, reuse_prompt_prefix: true}   # the generator is not what this chain tests
  sample_size: 4
  cases_per_stratum: 1
  max_requests_per_stratum: 2
  query_types: [simple]
  pairs_per_attribute: 0
  robustness: {typo: 1, colloquial: 0, misleading_premise: 0, distractor: 0, injection: 0, ood: 1, ambiguous: 0,
               edge_case: 0, partially_answerable: 0, jailbreak: 0, pii_elicitation: 0, format_constraint: 0,
               boundary_probe: 0, follow_up: 0, correction: 0, long_history: 0, paraphrase: 0, instruction_hierarchy: 0, yes_no: 0,
               sensitive_topic: 0, exfiltration: 0}
max_cases: 4
judge: {enabled: "off"}
systems:
  - system_id: reference
    retriever: bm25
    max_tokens: 32
"""


def _env(tmp: Path) -> dict:
    env = {**os.environ, "DAGSTER_HOME": str(tmp / "dagster_home"), "HCAT_DATA_DIR": str(tmp / "data"),
           "HCAT_CAMPAIGN_FILE": str(tmp / "campaign.yaml")}  # fmt: skip
    for k in ("HCAT_WAREHOUSE_DIR", "HCAT_GOLDEN_SETS_DIR", "HCAT_REPORTS_DIR", "HCAT_LABELS_DIR"):
        env.pop(k, None)
    return env


def _tick(env: dict) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "hcat_pipeline_tests.night_chain", "tick"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=3600)  # a stall guard only  # fmt: skip
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and events and events[-1] == {"done": True}, out.stdout[-2000:] + out.stderr[-4000:]
    return [e for e in events if "job" in e]


def _hcat(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hcat_pipeline.cli", *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=3600)  # a stall guard only  # fmt: skip


def _runs(events: list[dict]) -> list[tuple[str, str]]:
    assert all(e["success"] for e in events), events
    return [(e["sensor"], e["job"]) for e in events]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chain")
    (tmp / "dagster_home").mkdir()
    shutil.copy(ROOT / "dagster.yaml", tmp / "dagster_home" / "dagster.yaml")
    (tmp / "corpus").mkdir()
    (tmp / "campaign.yaml").write_text(CAMPAIGN)
    env = _env(tmp)
    for name in ("overdraft.md", "cards.md"):
        (tmp / "corpus" / name).write_text(DOCS[name])
    first = _tick(env)
    unchanged = _tick(env)
    (tmp / "corpus" / "mortgages.md").write_text(DOCS["mortgages.md"])  # a user drops one more document in
    second = _tick(env)
    return {"tmp": tmp, "env": env, "first": first, "unchanged": unchanged, "second": second}


CHAIN = [("corpus_change_sensor", "test_generation_job"), ("golden_candidates_sensor", "golden_set_job"),
         ("new_version_campaign_sensor", "campaign_run_job")]  # fmt: skip


def _versions(tmp: Path) -> list[str]:
    return sorted(p.name for p in (tmp / "data" / "golden_sets").iterdir() if (p / "manifest.json").exists())


def test_new_documents_run_the_chain_to_a_first_campaign_night_and_an_unchanged_corpus_asks_nothing(chain):
    tmp = chain["tmp"]
    assert _runs(chain["first"]) == CHAIN
    assert chain["unchanged"] == []  # observed again, same content hash: no run
    assert _runs(chain["second"]) == CHAIN
    v1, v2 = chain["first"][1]["partition"], chain["second"][1]["partition"]
    assert v1 != v2 and v1.startswith("gs-") and _versions(tmp) == sorted([v1, v2])
    # the generation ran with the campaign file's corpus (its folder, not the embedded reference) and budget
    sources = set(pl.read_parquet(tmp / "data" / "warehouse" / "corpus.parquet")["source"])
    assert len(sources) == 3 and all("mortgages.md" in s or "cards.md" in s or "overdraft.md" in s for s in sources), sources
    for version, event in ((v1, chain["first"][2]), (v2, chain["second"][2])):
        night = event["partition"].split("|")[1]
        assert event["partition"] == f"{version}|{night}"
        responses = pl.read_parquet(tmp / "data" / "warehouse" / "rag_responses" / version / f"{night}.parquet")
        assert set(responses["system_id"]) == {"reference"} and 0 < responses.height <= 4
        assert (tmp / "data" / "reports" / version / night / "report.html").exists()
    # the second version's cases come from the new document too
    cases = pl.read_parquet(tmp / "data" / "golden_sets" / v2 / "golden_set.parquet")
    assert cases.height > 0


def test_a_curated_refreeze_is_noticed_and_its_backfill_resumes_after_a_kill(chain):
    tmp, env = chain["tmp"], chain["env"]
    v2 = chain["second"][1]["partition"]
    exported = tmp / "curated.jsonl"
    assert _hcat(env, "export-cases", v2, str(exported)).returncode == 0
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    bases = {r.get("base_case_id") for r in rows}
    drop = next(i for i, r in enumerate(rows) if r["case_id"] not in bases)  # a case no variant is built on
    exported.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(rows) if i != drop))  # the curator drops a case
    imported = _hcat(env, "import-cases", str(exported), "curated-1", "--no-validity")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    # the daemon's next tick: the version sensor adds the partition and verifies it; it is not a new freeze: no night
    assert _runs(_tick(env)) == [("golden_set_version_sensor", "golden_set_job")]

    cmd = [sys.executable, "-m", "hcat_pipeline.cli", "backfill", "--job", "campaign_run_job", "--versions", "curated-1",
           "--nights", f"{NIGHTS[0]}..{NIGHTS[1]}"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)  # fmt: skip
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if f"curated-1|{NIGHTS[0]}: succeeded" in line:
            os.killpg(proc.pid, signal.SIGKILL)  # the machine goes down in the middle of the second night
            break
    proc.wait(timeout=60)
    assert any("succeeded" in line for line in lines), lines
    resumed = _hcat(env, *cmd[3:])
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"curated-1|{NIGHTS[0]}: done by an earlier attempt, skipped" in resumed.stdout, resumed.stdout
    assert f"curated-1|{NIGHTS[1]}: succeeded" in resumed.stdout, resumed.stdout
    wh = tmp / "data" / "warehouse"
    for night in NIGHTS:
        assert (wh / "rag_responses" / "curated-1" / f"{night}.parquet").exists()
        assert (wh / "gate_verdicts" / "curated-1" / f"{night}.parquet").exists()
    assert 0 < pl.read_parquet(wh / "rag_responses" / "curated-1" / f"{NIGHTS[1]}.parquet").height <= 4  # max_cases
    again = _hcat(env, *cmd[3:])
    assert again.returncode == 0 and "2 already done" in again.stdout, again.stdout
