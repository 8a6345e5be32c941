"""The house rules a reader relies on: the core packages import no Dagster (pure functions over numpy / polars; the
asset modules are the thin Dagster face), and each lineage stage's package says what it is."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hcat_pipeline"
CORE_PACKAGES = ("core", "responses", "golden", "calibration", "gates", "irt", "metrics")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", CORE_PACKAGES)
def test_core_packages_import_no_dagster(package):
    files = sorted((PACKAGE / package).rglob("*.py"))
    assert files, f"{package}/ has no modules"
    offenders = [str(f.relative_to(PACKAGE)) for f in files if "dagster" in _imports(f)]
    assert not offenders, f"Dagster imported in the core: {offenders} (put it in an asset module)"


@pytest.mark.parametrize("package", ["responses", "calibration", "gates", "irt", "golden"])
def test_a_stage_package_says_what_it_is(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 8, f"{package}/__init__.py needs a docstring saying what the stage is"
