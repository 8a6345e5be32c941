"""Worker for benchmarks/irt_benchmark.py, run by the girth venv's python (girth 0.8 needs numpy < 2).

    python irt_girth_worker.py IN.npy OUT.npz   # IN: takers × items 0/1 matrix

Fits girth's threepl_mml (marginal ML) then ability_3pl_eap, and writes a, b, c, θ with its own wall / CPU time.
"""

import json
import sys
import time

import numpy as np
from girth import ability_3pl_eap, threepl_mml


def main() -> None:
    y = np.load(sys.argv[1])
    data = y.T.astype(int)  # girth wants items × participants
    t0, c0 = time.perf_counter(), time.process_time()
    est = threepl_mml(data)
    theta = ability_3pl_eap(data, est["Difficulty"], est["Discrimination"], est["Guessing"])
    info = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    np.savez(sys.argv[2], a=np.asarray(est["Discrimination"], dtype=float), b=np.asarray(est["Difficulty"], dtype=float),
             c=np.asarray(est["Guessing"], dtype=float), theta=np.asarray(theta, dtype=float), info=json.dumps(info))


if __name__ == "__main__":
    main()
