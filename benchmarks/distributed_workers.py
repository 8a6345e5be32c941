"""One Celery worker vs two on the distributed profile: the same whole night (``hcat campaign`` on Postgres + Redis +
``dagster-celery``; the bank corpus, 31 cases — six questions asked five ways and one out-of-scope —, ``bm25`` on an
OpenAI-compatible stub and an http RAG service on loopback), wall time of the night and the steps each worker ran.

    python benchmarks/distributed_workers.py [--copies 5] [--out benchmarks/results/distributed_workers.json]

Needs what ``scripts/setup.sh`` installs (postgresql, redis-server). Run it alone: on a 2-core machine two workers
share the same two cores (each model call already uses both), so the gain is what overlapping I/O, process start-up
and model loading buys, not a second machine's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hcat_pipeline_tests.distributed_night import run_distributed_night, steps_on_workers  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=5, help="ways each bank question is asked (1-5)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "distributed_workers.json"))
    a = ap.parse_args()
    out = {"load_before": os.getloadavg(), "cpus": os.cpu_count(), "runs": []}
    for workers in (["w1"], ["w1", "w2"]):
        night = run_distributed_night(Path(tempfile.mkdtemp(prefix="hcat-workers-")), workers, copies=a.copies)
        if night["campaign"].returncode != 0:
            raise SystemExit(f"the night failed with {workers}: {(night['campaign'].stdout + night['campaign'].stderr)[-3000:]}")
        by_worker = Counter(steps_on_workers(night["events"]).values())
        row = {"workers": len(workers), "cases": night["cases"], "systems": 2, "night_s": round(night["night_s"], 1), "steps_by_worker": dict(by_worker)}
        out["runs"].append(row)
        print(json.dumps(row), flush=True)
    one, two = (r["night_s"] for r in out["runs"])
    out["speedup_two_vs_one"] = round(one / two, 3)
    out["load_after"] = os.getloadavg()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"two workers vs one: {out['speedup_two_vs_one']}× ({one} s → {two} s); wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
