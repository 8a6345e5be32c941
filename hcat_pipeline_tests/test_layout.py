"""The house rules a reader relies on: the core packages import no Dagster (pure functions over numpy / polars; the
asset modules are the thin Dagster face), and each lineage stage's package says what it is."""

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hcat_pipeline"
# the core: one package per lineage stage (in lineage order) and the shared utilities; no Dagster inside
STAGES = ("corpus", "golden", "responses", "behaviour", "metrics", "judge", "calibration", "gates", "reports", "exam", "irt")
# beside the lineage: the review page's core (labelling, curation, interchange; its web app and templates) and production
# monitoring (the service's traffic logs) and release sign-off (the plan, the evidence bundle, the signed log) — the same guards
CORE_PACKAGES = ("common", *STAGES, "review", "monitoring", "release")


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


@pytest.mark.parametrize("package", [*CORE_PACKAGES, "metrics/nli", "metrics/toxicity"])
def test_a_stage_package_says_what_it_is(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 8, f"{package}/__init__.py needs a docstring saying what the stage is"


@functools.cache
def _module_imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Every project module (product, tests, benchmarks, scripts) → [(imported module, imported names)], lazy imports
    included, ``if TYPE_CHECKING:`` blocks left out (annotations only)."""
    out = {}
    for folder in ("hcat_pipeline", "hcat_pipeline_tests", "benchmarks", "scripts"):
        for f in sorted((PACKAGE.parent / folder).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"))
            typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
                           for n in ast.walk(node)}  # fmt: skip
            name = ".".join(f.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
            out[name] = [(n.module, [a.name for a in n.names]) if isinstance(n, ast.ImportFrom) else (a.name, [])
                         for n in ast.walk(tree) if id(n) not in typing_only
                         and (isinstance(n, ast.Import) or isinstance(n, ast.ImportFrom) and n.module and n.level == 0)
                         for a in (n.names if isinstance(n, ast.Import) else n.names[:1])]  # fmt: skip
    return out


def test_no_import_cycles_between_project_modules():
    import graphlib

    modules = _module_imports()
    graph = {m: set() for m in modules}
    for m, imports in modules.items():
        for module, names in imports:
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] or ([module] if module in modules else [])
            graph[m] |= {t for t in targets if t != m and not m.startswith(t + ".")}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"import cycle (lazy imports count too): {' -> '.join(e.args[1])}")


def test_no_private_name_is_imported_across_modules_and_no_test_module_imports_another():
    bad = [f"{m}: from {module} import {n}" for m, imports in _module_imports().items() for module, names in imports
           if module.startswith(("hcat_pipeline", "benchmarks")) for n in names if n.startswith("_") and not n.startswith("__")]  # fmt: skip
    bad += [f"{m}: imports the test module {module}" for m, imports in _module_imports().items() for module, _ in imports
            if module.startswith("hcat_pipeline_tests.test_")]  # fmt: skip
    assert not bad, "\n".join(bad)


def test_assets_import_no_command_line_module_and_the_core_imports_no_asset():
    bad = [f"{m} imports {module}" for m, imports in _module_imports().items() for module, _ in imports
           if (m.startswith("hcat_pipeline.assets") and module.startswith(("hcat_pipeline.commands", "hcat_pipeline.cli")))
           or (m.split(".")[1:2] and m.split(".")[1] in CORE_PACKAGES and module.startswith(("hcat_pipeline.assets", "hcat_pipeline.commands")))]  # fmt: skip
    assert not bad, bad


# the layers, lowest first: a package imports only packages before it (the scorers of metrics/ are a library the golden
# set's validity checks and the responses' abstention figures use, below the stages that read them)
LAYERS = ("common", "irt", "corpus", "metrics", "golden", "responses", "behaviour", "judge", "calibration", "monitoring", "gates", "release", "reports", "exam", "review")


def test_stage_packages_import_only_the_layers_below_them():
    assert set(LAYERS) == set(CORE_PACKAGES)
    upward = [f"{m} imports {module}" for m, imports in _module_imports().items() for module, _ in imports
              if m.split(".")[1:2] and m.split(".")[1] in LAYERS and module.split(".")[0] == "hcat_pipeline"
              and module.split(".")[1:2] and module.split(".")[1] in LAYERS
              and LAYERS.index(module.split(".")[1]) > LAYERS.index(m.split(".")[1])]  # fmt: skip
    assert not upward, upward
    common = [f"{m} imports {module}" for m, imports in _module_imports().items() for module, _ in imports
              if m.startswith("hcat_pipeline.common") and module.startswith("hcat_pipeline.") and not module.startswith("hcat_pipeline.common")]
    assert not common, common
