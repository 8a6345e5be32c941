"""The README, CONTRIBUTING and docs/ pages name only what exists: every linked page, every file path and every
``hcat_pipeline.…`` module they mention (a page that names a moved module fails here, not in a newcomer's hands)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"`([\w./-]+/[\w.-]+\.(?:py|md|yaml|j2|sh|json|txt|toml|npz|parquet)|hcat_pipeline/[\w/]+/)`")
MODULE = re.compile(r"\bhcat_pipeline(?:\.\w+)+")
SKIP = ("data/", "../", "~", "/", ".dagster_home", "$")  # outside the repo (../shared is not in every clone), or made at run time


def _exists(path: str) -> bool:
    return any((base / path).exists() for base in (ROOT, ROOT / "hcat_pipeline", ROOT / "hcat_pipeline" / "assets"))


def _module_exists(dotted: str) -> bool:
    parts = dotted.split(".")
    for n in range(len(parts), 1, -1):  # the longest prefix that is a module or package; the rest may be attributes
        base = ROOT.joinpath(*parts[:n])
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            return n >= len(parts) - 2  # module.attribute or module.Class.attribute
    return False


def test_the_readme_is_short_and_links_one_page_per_stage():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    for page in ("corpus", "golden_set", "responses", "behaviour", "metrics", "judge", "calibration", "gates", "reports", "exam"):
        assert f"(docs/{page}.md)" in readme, page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_path_and_module_a_page_names_exists(page):
    text = page.read_text(encoding="utf-8")
    missing = []
    for link in LINK.findall(text):
        target = link.split("#")[0]
        if target and not link.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists():
            missing.append(f"link {link}")
    for path in PATH.findall(text):
        if not path.startswith(SKIP) and not any(c in path for c in "<*{") and not _exists(path):
            missing.append(f"path {path}")
    for dotted in set(MODULE.findall(text)):
        if not _module_exists(dotted):
            missing.append(f"module {dotted}")
    assert not missing, f"{page.name} names what does not exist: {sorted(set(missing))}"
