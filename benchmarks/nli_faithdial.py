"""NLI groundedness (HCAT §3.2.2) on the FaithDial audit's held-out part — superseded by
``benchmarks/nli_sets.py``, which reports every public set; this runs it on FaithDial only.

Labels (../shared/validation/README.md): BEGIN ``entailment`` alone = supported (1); any
``hallucination`` (incl. partial) = not supported (0); ``generic`` / ``uncooperative`` left out.

    python benchmarks/nli_faithdial.py [--weights PATH] [--limit N]
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nli_sets import main as sets_main

    return sets_main(["--sets", "faithdial", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
