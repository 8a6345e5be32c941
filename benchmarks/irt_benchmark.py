"""IRT fit benchmark: hcat_pipeline.irt.fit_irt vs the exam paper's approach vs girth 0.8, on the same simulated 3PL data.

    nice -n 19 python benchmarks/irt_benchmark.py                       # all sizes, girth in its own venv
    python benchmarks/irt_benchmark.py --sizes 300x400 --paper-sizes none --no-girth

For each size (takers × items) a 3PL matrix is simulated with a fixed seed (θ ~ N(0,1), a ~ LogN(0, 0.3),
b ~ N(0,1), c ~ U(0, 0.3)) and fitted by
  ours   fit_irt(model="3pl"): vectorised NLL + analytic gradient, L-BFGS-B, θ standardised, weak item priors;
  ours (paper box)  the same under the paper's bounds a ∈ [0.5, 1.5], b ∈ [0.01, 1], c ∈ [0.2, 0.4];
  paper approach    a re-implementation, written for this benchmark, of the approach of the exam paper's code
                    (amazon-science/auto-rag-eval, ItemResponseModel.fit): a Python loop over items inside the NLL,
                    no gradient given to L-BFGS-B (so scipy differentiates numerically, one NLL per parameter),
                    the same bounds (θ ∈ [−3, 3]) and start (a = 1, b = 0, c = 0.25, θ = 0), default options;
  girth  girth 0.8 ``threepl_mml`` (marginal ML) + ``ability_eap`` abilities, run in its own venv
         (benchmarks/out/.venv-girth, built here from the package registry: girth==0.8.0, numpy<2).
Printed per fit: wall and CPU seconds (CPU = the fitting process's own time, meaningful on a shared machine),
the joint NLL of eq. 2 at the fitted parameters (girth's too, at its EAP abilities: MML does not maximise it),
and the correlations of true and fitted θ, b, a. Then the ratios, from this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parent
GIRTH_VENV = ROOT / "out" / ".venv-girth"
GIRTH_WORKER = ROOT / "irt_girth_worker.py"
PAPER_BOX = {"a": (0.5, 1.5), "b": (0.01, 1.0), "c": (0.2, 0.4), "theta": (-3.0, 3.0)}


def simulate(n: int, j: int, seed: int = 0):
    r = np.random.default_rng([seed, n, j])
    theta = r.normal(size=n)
    a = r.lognormal(0.0, 0.3, j)
    b = r.normal(size=j)
    c = r.uniform(0.0, 0.3, j)
    p = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (r.random((n, j)) < p).astype(float), {"theta": theta, "a": a, "b": b, "c": c}


def joint_nll(y, a, b, c, theta) -> float:
    p = c + (1 - c) / (1 + np.exp(-np.asarray(a) * (np.asarray(theta)[:, None] - np.asarray(b))))
    p = np.clip(p, 1e-300, 1 - 1e-16)
    obs = ~np.isnan(y)
    return float(-np.sum(np.where(obs, np.where(y == 1, np.log(p), np.log1p(-p)), 0.0)))


class PaperApproachIRT:
    """Re-implementation (for this comparison) of the approach of the exam paper's ItemResponseModel.fit."""

    def __init__(self, data: np.ndarray):
        self.data = data
        self.num_students, self.num_items = data.shape

    @staticmethod
    def p3(theta, a, b, c):
        return c + (1 - c) / (1 + np.exp(-a * (theta - b)))

    def nll(self, params: np.ndarray) -> float:
        j = self.num_items
        a, b, c, theta = params[:j], params[j:2 * j], params[2 * j:3 * j], params[3 * j:]
        total = 0.0
        for i in range(j):  # one item at a time, as the original does
            p = self.p3(theta, a[i], b[i], c[i])
            total += np.sum(self.data[:, i] * np.log(p) + (1 - self.data[:, i]) * np.log(1 - p))
        return -total

    def fit(self) -> dict:
        j, n = self.num_items, self.num_students
        x0 = np.concatenate([np.ones(j), np.zeros(j), np.full(j, 0.25), np.zeros(n)])
        bounds = [PAPER_BOX["a"]] * j + [PAPER_BOX["b"]] * j + [PAPER_BOX["c"]] * j + [PAPER_BOX["theta"]] * n
        res = minimize(self.nll, x0, method="L-BFGS-B", bounds=bounds)  # no jac: finite differences
        x = res.x
        return {"a": x[:j], "b": x[j:2 * j], "c": x[2 * j:3 * j], "theta": x[3 * j:], "nit": res.nit, "nfev": res.nfev,
                "message": str(res.message)}


def corr(u, v) -> float:
    u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))) or u.std() == 0 or v.std() == 0:
        return float("nan")
    return float(np.corrcoef(u, v)[0, 1])


def record(method, size, y, truth, est, wall, cpu, extra=None) -> dict:
    finite = all(np.all(np.isfinite(est[k])) for k in ("a", "b", "c", "theta"))
    row = {
        "method": method, "size": size, "wall_s": wall, "cpu_s": cpu,
        "nll": joint_nll(y, est["a"], est["b"], est["c"], est["theta"]) if finite else float("nan"),
        "corr_theta": corr(truth["theta"], est["theta"]), "corr_b": corr(truth["b"], est["b"]),
        "corr_a": corr(truth["a"], est["a"]), "finite": finite,
    }
    row.update(extra or {})
    print(f"  {method:<18} wall {wall:8.2f} s  cpu {cpu:8.2f} s  NLL {row['nll']:12.1f}  "
          f"r(θ) {row['corr_theta']:.3f}  r(b) {row['corr_b']:.3f}  r(a) {row['corr_a']:.3f}  finite {finite}"
          + (f"  {extra}" if extra else ""), flush=True)
    return row


def run_ours(y, truth, size, label="ours", **kw) -> dict:
    from hcat_pipeline.irt import fit_irt

    t0, c0 = time.perf_counter(), time.process_time()
    res = fit_irt(y, model="3pl", seed=0, **kw)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    est = {"a": res.a, "b": res.b, "c": res.c, "theta": res.theta}
    return record(label, size, y, truth, est, wall, cpu, {"nit": res.n_iter, "converged": res.converged})


def run_paper(y, truth, size) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    est = PaperApproachIRT(y).fit()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return record("paper approach", size, y, truth, est, wall, cpu, {"nit": est["nit"], "nfev": est["nfev"]})


def ensure_girth_venv() -> Path:
    py = GIRTH_VENV / "bin" / "python"
    probe = [str(py), "-c", "import girth, numpy; assert numpy.__version__ < '2'"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    print(f"building {GIRTH_VENV} (girth==0.8.0, numpy<2) from the package registry ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(GIRTH_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "girth==0.8.0", "numpy<2"], check=True)
    subprocess.run(probe, check=True)
    return py


def run_girth(py: Path, y, truth, size, timeout: float) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "y.npy", Path(tmp) / "out.npz"
        np.save(inp, y.astype(np.int64))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([str(py), str(GIRTH_WORKER), str(inp), str(out)], capture_output=True, text=True,
                                  timeout=timeout, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        except subprocess.TimeoutExpired:
            print(f"  girth              timed out after {timeout:.0f} s", flush=True)
            return None
        if proc.returncode != 0:
            print(f"  girth              failed: {proc.stderr.strip()[-400:]}", flush=True)
            return None
        d = np.load(out)
        est = {"a": d["a"], "b": d["b"], "c": d["c"], "theta": d["theta"]}
        info = json.loads(str(d["info"]))
        return record("girth 3PL MML+EAP", size, y, truth, est, info["wall_s"], info["cpu_s"],
                      {"process_wall_s": round(time.perf_counter() - t0, 2), "nan_theta": int(np.isnan(d["theta"]).sum())})


def run_real(path: Path, py: Path | None, timeout: float) -> list[dict]:
    """Ours, ours under the paper's box, the paper approach and girth on a real exam response matrix."""
    import polars as pl

    from hcat_pipeline.exam.taking import response_matrix
    from hcat_pipeline.irt import IRTBounds

    frame = pl.read_parquet(path)
    y, takers, questions, _ = response_matrix(frame)
    size = f"real {frame['exam_version'][0]} {len(takers)}x{len(questions)}"
    print(f"\n{size} (mean score {np.nanmean(y):.3f}, missing {int(np.isnan(y).sum())})", flush=True)
    nan = {k: np.full(n, np.nan) for k, n in (("theta", len(takers)), ("a", len(questions)), ("b", len(questions)))}
    rows = [run_ours(y, nan, size), run_ours(y, nan, size, label="ours (paper box)",
                                             bounds=IRTBounds(a=PAPER_BOX["a"], b=PAPER_BOX["b"], c=PAPER_BOX["c"]))]
    if np.isnan(y).any():
        print("  missing answers: the paper approach and girth need a complete matrix; skipped", flush=True)
        return rows
    rows.append(run_paper(y, nan, size))
    if py is not None:
        g = run_girth(py, y, nan, size, timeout)
        if g:
            rows.append(g)
    return rows


def parse_sizes(text: str) -> list[tuple[int, int]]:
    if text in ("", "none"):
        return []
    return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20x100,30x300,300x400,1000x5000")
    ap.add_argument("--paper-sizes", default="20x100,30x300", help="sizes to also run the paper approach on")
    ap.add_argument("--girth-sizes", default="20x100,30x300,300x400,1000x5000")
    ap.add_argument("--no-girth", action="store_true")
    ap.add_argument("--girth-timeout", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real", default="", help="also fit a real response matrix: an exam_responses Parquet (e.g. "
                    "data/warehouse/exam_responses.parquet); no truth, so no recovery figures")
    ap.add_argument("--out", default=str(ROOT / "out" / "irt_benchmark.json"))
    args = ap.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # one BLAS thread: a fair comparison with the single-threaded peers on a shared machine
    except ImportError:
        pass
    paper_sizes, girth_sizes = set(parse_sizes(args.paper_sizes)), set(parse_sizes(args.girth_sizes))
    py = None if args.no_girth else ensure_girth_venv()
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, nice {os.nice(0)}")
    rows = []
    for n, j in parse_sizes(args.sizes):
        size = f"{n}x{j}"
        y, truth = simulate(n, j, args.seed)
        print(f"\n{size} (mean score {y.mean():.3f})", flush=True)
        rows.append(run_ours(y, truth, size))
        if (n, j) in paper_sizes:
            rows.append(run_ours(y, truth, size, label="ours (paper box)",
                                 bounds=__import__("hcat_pipeline.irt", fromlist=["IRTBounds"]).IRTBounds(
                                     a=PAPER_BOX["a"], b=PAPER_BOX["b"], c=PAPER_BOX["c"])))
            rows.append(run_paper(y, truth, size))
        if py is not None and (n, j) in girth_sizes:
            g = run_girth(py, y, truth, size, args.girth_timeout)
            if g:
                rows.append(g)
    if args.real:
        rows.extend(run_real(Path(args.real), py, args.girth_timeout))
    print("\nratios (CPU seconds; NLL difference < 0 means ours fits better)")
    for size in dict.fromkeys(r["size"] for r in rows):
        by = {r["method"]: r for r in rows if r["size"] == size}
        ours = by["ours"]
        for other in ("paper approach", "girth 3PL MML+EAP"):
            if other in by:
                o = by[other]
                print(f"  {size:<10} {other:<18} {o['cpu_s'] / max(ours['cpu_s'], 1e-9):8.1f}× ours (wall {o['wall_s'] / max(ours['wall_s'], 1e-9):.1f}×)"
                      f"  NLL ours − {other}: {ours['nll'] - o['nll']:+.1f}")
        if "ours (paper box)" in by and "paper approach" in by:
            pb, pa = by["ours (paper box)"], by["paper approach"]
            print(f"  {size:<10} same box: paper {pa['cpu_s'] / max(pb['cpu_s'], 1e-9):.1f}× ours, NLL ours − paper: {pb['nll'] - pa['nll']:+.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"load_average": load, "rows": rows}, indent=1, default=float))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
