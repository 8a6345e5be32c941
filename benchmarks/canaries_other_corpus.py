"""Canaries on someone else's documents: would the gates catch a broken copy of *your own* http service?

    python benchmarks/canaries_other_corpus.py DOCS_DIR [--pages 20] [--local-systems] [--out /tmp/canary_night]

DOCS_DIR: any folder of HTML / text pages (e.g. a Debian ``*-doc`` package: ``apt-get download aptitude-doc-en``,
``dpkg-deb -x aptitude-doc-en_*.deb x``, then ``x/usr/share/doc/aptitude/html/en``). The first ``--pages`` files
(sorted) are the corpus. An honest extractive RAG service of your own (``hcat_pipeline_tests.servers.UserRag``: its own
document ids, sources as objects, no cost reported) serves them on loopback; the campaign file is the one ``hcat init --corpus --http`` writes
(``campaign_file``: the service's reply paths filled in) and plants every catalogue fault in copies of the service. Prints the detection table, the false
alarms on the honest parent (its hard gates, how many decided), the release decision and the seconds the night took.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret"


def campaign_file(url: str, corpus: Path, out: Path, env: dict, local_systems: bool) -> tuple[Path, str]:
    """The campaign file a new user has: ``hcat init --corpus … --http …`` as written (certify_below, suites, max_cases,
    canaries of the service), then the edits the init file's comments ask for — where the service puts its answer and
    sources, its key's env var — and, unless ``local_systems``, the two packaged reference systems removed (each answers
    every case with the local LLM: an hour of CPU on two cores) and the LLM judge off (the same reason)."""
    import yaml

    cfg = out / "campaign.yaml"
    subprocess.run([sys.executable, "-m", "hcat_pipeline.cli", "init", "--corpus", str(corpus), "--http", url, "--out", str(cfg)],
                   env=env, cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    spec = yaml.safe_load(cfg.read_text())
    mine = next(s for s in spec["systems"] if "http" in s)
    mine["http"] |= {"request_template": '{"question": "{{query}}"}', "answer_path": "result.answer.text", "contexts_path": "result.sources",
                     "context_text_field": "content", "context_id_field": "id", "auth_header": "X-Api-Key",
                     "auth_env_var": "BENCH_RAG_KEY", "auth_scheme": ""}  # fmt: skip
    if not local_systems:
        spec["systems"] = [mine]
        spec["judge"] = {"enabled": "off"}
    cfg.write_text(yaml.safe_dump(spec, sort_keys=False))
    return cfg, mine["system_id"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("docs", type=Path)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--local-systems", action="store_true", help="keep the packaged reference systems and the judge hcat init writes")
    ap.add_argument("--out", type=Path, default=Path("/tmp/canary_night"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from hcat_pipeline.corpus.ingest import ingest
    from hcat_pipeline_tests.servers import UserRag, user_rag_server

    shutil.rmtree(args.out, ignore_errors=True)
    corpus = args.out / "corpus"
    corpus.mkdir(parents=True)
    pages = sorted(p for p in args.docs.iterdir() if p.suffix in (".html", ".htm", ".txt", ".md"))[: args.pages]
    for p in pages:
        shutil.copy(p, corpus / p.name)
    docs, _, _ = ingest(include_embedded=False, drop_folder=None, paths=[str(corpus)])  # the service reads the same text
    texts = {r["doc_id"]: r["text"] for r in docs.select("doc_id", "text").to_dicts()}
    home = args.out / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "HCAT_DATA_DIR": str(args.out / "data"), "BENCH_RAG_KEY": SECRET}
    for k in ("HCAT_WAREHOUSE_DIR", "HCAT_GOLDEN_SETS_DIR", "HCAT_REPORTS_DIR"):
        env.pop(k, None)
    t0 = time.perf_counter()
    with user_rag_server(UserRag(texts, SECRET)) as url:
        cfg, service = campaign_file(url, corpus, args.out, env, args.local_systems)
        run = subprocess.run([sys.executable, "-m", "hcat_pipeline.cli", "campaign", "--config", str(cfg)], env=env, cwd=ROOT,
                             capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - t0
    (args.out / "console.txt").write_text(run.stdout + run.stderr)
    print(run.stdout[run.stdout.find("─" * 72):] if "─" * 72 in run.stdout else run.stdout[-4000:] + run.stderr[-4000:])
    wh = args.out / "data" / "warehouse"
    found = sorted(wh.glob("canary_detection/*/*.parquet"))
    if not found:
        print("no canary_detection table: the night did not get that far")
        return 1
    det = pl.read_parquet(found[-1])
    pl.Config.set_tbl_rows(200), pl.Config.set_fmt_str_lengths(90), pl.Config.set_tbl_width_chars(250)
    print(det.select("canary_id", "check", "observed", "caught"))
    run_dir = found[-1].parent.name, found[-1].stem
    gates = pl.read_parquet(wh / "gate_verdicts" / run_dir[0] / f"{run_dir[1]}.parquet")
    honest = gates.filter((pl.col("system_id") == service) & (pl.col("kind") == "hard"))
    print(f"honest parent's ({service}) hard gates (a FAIL is a false alarm unless read as real):")
    print(honest.select("gate", "verdict", "estimate", "ci_low", "ci_high", "n", "reason"))
    undecided = honest.filter(pl.col("verdict") == "INDETERMINATE")
    print(f"honest parent's hard gates decided: {honest.height - undecided.height}/{honest.height}"
          + (f" (undecided: {', '.join(undecided['gate'])})" if undecided.height else ""))
    print(gates.filter(pl.col("gate").str.contains("yes_no")).select("system_id", "gate", "verdict", "estimate", "ci_low", "ci_high", "n"))
    print(pl.read_parquet(wh / "release_decision" / run_dir[0] / f"{run_dir[1]}.parquet"))
    print(pl.read_parquet(wh / "retrieval_metrics" / run_dir[0] / f"{run_dir[1]}.parquet").select(
        "system_id", "recall_at_k", "precision_at_k", "mrr", "matched_by"))
    per = det.filter(pl.col("caught").is_not_null()).group_by("canary_id").agg(pl.col("caught").all())
    print(f"canaries caught: {int(per['caught'].sum())}/{per.height}; night incl. generation: {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
