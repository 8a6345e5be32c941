"""Where the project keeps its data. Everything is relative to the project root unless overridden."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(os.environ.get("HCAT_PROJECT_ROOT", Path(__file__).resolve().parents[1]))
DATA_DIR = Path(os.environ.get("HCAT_DATA_DIR", PROJECT_ROOT / "data"))
WAREHOUSE_DIR = Path(os.environ.get("HCAT_WAREHOUSE_DIR", DATA_DIR / "warehouse"))
CORPUS_DIR = DATA_DIR / "corpus"
GOLDEN_SETS_DIR = Path(os.environ.get("HCAT_GOLDEN_SETS_DIR", DATA_DIR / "golden_sets"))
LABELS_DIR = Path(os.environ.get("HCAT_LABELS_DIR", DATA_DIR / "labels"))  # human label files; the store in _store/
CURATION_DIR = Path(os.environ.get("HCAT_CURATION_DIR", DATA_DIR / "curation"))  # review page: curation decisions per version
REVIEW_URL = os.environ.get("HCAT_REVIEW_URL", "http://127.0.0.1:8765")  # where `hcat review` serves (the report links to it)
REPORTS_DIR = Path(os.environ.get("HCAT_REPORTS_DIR", DATA_DIR / "reports"))  # campaign reports: <version>/<night>/report.html
# caches outside the repo survive fresh clones on the same machine and are rebuilt when missing
CACHE_DIR = Path(os.environ.get("HCAT_CACHE_DIR", Path.home() / ".cache" / "hcat_pipeline"))
EMBEDDING_CACHE_DIR = Path(os.environ.get("HCAT_EMBEDDING_CACHE_DIR", CACHE_DIR / "embeddings"))
MODELS_DIR = CACHE_DIR / "models"
# scored frames by content (metrics.score_cache); HCAT_SCORE_CACHE_DIR="" turns the cache off
SCORE_CACHE_DIR = os.environ.get("HCAT_SCORE_CACHE_DIR", str(CACHE_DIR / "scores"))
# the headless browser the project installs (setup.sh: Debian chromium): the dossier's PDF, the browser tests
CHROMIUM = os.environ.get("HCAT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
