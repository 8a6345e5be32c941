"""Throughput of an http system against a RAG service on loopback: cases/s at concurrency 1 / 4 / 16, with and without
a per-request service time, and what a rate limit does.

    python benchmarks/http_throughput.py [--cases 200] [--latency 0.05]

The service (``hcat_pipeline_tests.servers.UserRag``) answers from the Python language reference topics that ship
with CPython (``pydoc_data.topics``): word-overlap retrieval, its best sentence as the answer. ``--latency`` makes
every answer take that long (a real service's own time). The client is ``HttpRagSystem.respond_many`` (the bounded
pool the responses stage uses), ``max_concurrency`` requests in flight at most. Run it alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hcat_pipeline.resources.http_system import HttpRagSystem  # noqa: E402
from hcat_pipeline_tests.servers import UserRag, user_rag_server  # noqa: E402

SECRET = "bench-secret"


def _cases(n: int) -> tuple[dict[str, str], list[dict]]:
    from pydoc_data.topics import topics

    docs = dict(sorted(topics.items()))
    sentences = [s.strip() for text in docs.values() for s in text.replace("\n", " ").split(". ") if 6 <= len(s.split()) <= 25]
    step = max(1, len(sentences) // n)
    return docs, [{"case_id": f"c{i}", "query": f"What does the reference say about {s[:80]}?"} for i, s in enumerate(sentences[::step][:n])]


def _run(url: str, cases: list[dict], concurrency: int, rps: float | None) -> dict:
    system = HttpRagSystem(system_id="bench", url=url, request_template='{"question": "{{query}}"}', answer_path="result.answer.text",
                           contexts_path="result.sources", context_text_field="content", context_id_field="id", auth_header="X-Api-Key",
                           auth_env_var="BENCH_RAG_KEY", auth_scheme="", max_concurrency=concurrency, rate_limit_rps=rps)  # fmt: skip
    t0 = time.perf_counter()
    out = system.respond_many(cases)
    took = time.perf_counter() - t0
    errors = sum(r["error"] is not None for r in out)
    return {"concurrency": concurrency, "rate_limit_rps": rps, "cases": len(cases), "errors": errors, "seconds": round(took, 3),
            "cases_per_s": round(len(cases) / took, 1), "max_in_flight": system.max_in_flight}  # fmt: skip


def main() -> int:
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.05, help="service time per request in seconds (the second series)")
    args = ap.parse_args()
    os.environ["BENCH_RAG_KEY"] = SECRET
    docs, cases = _cases(args.cases)
    rows = []
    for latency in (0.0, args.latency):
        rag = UserRag(docs, SECRET, latency_s=latency)
        with user_rag_server(rag) as url:
            _run(url, cases[:10], 4, None)  # warm: connection pool, server threads
            for c in (1, 4, 16):
                rows.append({"service_latency_s": latency, **_run(url, cases, c, None)})
            rows.append({"service_latency_s": latency, **_run(url, cases, 16, 20.0)})
    print(f"{len(cases)} cases, {len(docs)} documents")
    print(f"{'latency':>8} {'conc':>5} {'rps cap':>8} {'cases/s':>8} {'seconds':>8} {'in flight':>9} {'errors':>6}")
    for r in rows:
        print(f"{r['service_latency_s']:>8} {r['concurrency']:>5} {str(r['rate_limit_rps'] or '-'):>8} {r['cases_per_s']:>8} "
              f"{r['seconds']:>8} {r['max_in_flight']:>9} {r['errors']:>6}")  # fmt: skip
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
