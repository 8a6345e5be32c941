import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# one score cache per test run (metrics.score_cache), shared by the run's tests and the processes they start; set before
# hcat_pipeline.paths is imported
os.environ.setdefault("HCAT_SCORE_CACHE_DIR", tempfile.mkdtemp(prefix="hcat-score-cache-"))


@pytest.fixture(scope="session")
def embedding_model(tmp_path_factory):
    """The real packaged MiniLM, with a cache private to the test session."""
    from hcat_pipeline.resources.embedding import EmbeddingModel

    return EmbeddingModel(cache_dir=str(tmp_path_factory.mktemp("emb_cache")))


@pytest.fixture(scope="session")
def local_llm():
    """The real packaged Qwen2.5-0.5B-Instruct through llama.cpp."""
    from hcat_pipeline.resources.llm import LLM

    return LLM(provider="local")


@pytest.fixture
def warehouse(tmp_path) -> Path:
    d = tmp_path / "warehouse"
    d.mkdir()
    return d


def require_validation_dir(path) -> None:
    """The tests on ../shared/validation fail loudly where it is missing (CI always has it); a machine without it may
    opt out with HCAT_ALLOW_NO_VALIDATION=1 (then they skip, saying so)."""
    import os
    from pathlib import Path

    import pytest

    if Path(path).is_dir():
        return
    if os.environ.get("HCAT_ALLOW_NO_VALIDATION") == "1":
        pytest.skip(f"{path} not present (HCAT_ALLOW_NO_VALIDATION=1)")
    pytest.fail(f"{path} not present: these tests read the shared validation sets (set HCAT_ALLOW_NO_VALIDATION=1 to skip them "
                "on a machine without them)")
