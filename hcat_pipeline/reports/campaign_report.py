"""The campaign report (golden-eval §9.3; HCAT §6.2): one self-contained HTML page per campaign run,
rendered with Jinja2 from ``hcat_pipeline/templates/`` (autoescaped; no string concatenation of HTML).

Every plot is a PNG inlined as a ``data:`` URI and the page has no script, stylesheet, font or image
from anywhere else, so it opens offline and sends no request. A section whose input is missing (no
gate verdicts, no calibrated scores, no rankings yet) is rendered with "not available: <why>".

``Section`` is one table of the report (title, columns, already formatted rows, or the reason it is
missing); ``frame_section`` builds one from a polars frame. ``render_report`` fills the template.
No dagster import.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from hcat_pipeline.common.images import png_data_uri
from hcat_pipeline.paths import REVIEW_URL

TEMPLATE = "campaign_report.html.j2"
MAX_CELL_CHARS = 300


@dataclass
class Section:
    """One table of the report, or why it is missing."""

    key: str
    title: str
    available: bool = True
    why: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""
    row_classes: list[str] = field(default_factory=list)  # css class per row (e.g. "fail", "small")

    @classmethod
    def missing(cls, key: str, title: str, why: str) -> Section:
        return cls(key, title, available=False, why=why)


@dataclass
class Plot:
    title: str
    png: bytes
    caption: str = ""

    @property
    def data_uri(self) -> str:
        return png_data_uri(self.png)




def fmt(v, digits: int = 3) -> str:
    """A table cell: floats rounded, None as "–", lists joined, long text shortened."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    if isinstance(v, list | tuple):
        v = "; ".join(fmt(x, digits) for x in v)
    s = str(v)
    return s if len(s) <= MAX_CELL_CHARS else s[: MAX_CELL_CHARS - 1] + "…"


def fmt_ci(mean, lo, hi, n, digits: int = 3) -> str:
    """'0.812 [0.770, 0.850] (n=32)'; no interval below two values."""
    if mean is None:
        return f"– (n={n})"
    if lo is None or hi is None:
        return f"{mean:.{digits}f} [no CI] (n={n})"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}] (n={n})"


def frame_section(key: str, title: str, frame: pl.DataFrame | None, why_missing: str = "", *, columns: list[str] | None = None,
                  note: str = "", row_class: str | None = None, max_rows: int = 200) -> Section:  # fmt: skip
    """A section from a frame (``columns`` to select and order; ``row_class`` a column whose value becomes the row's css class)."""
    if frame is None:
        return Section.missing(key, title, why_missing or "the input table does not exist")
    cols = [c for c in (columns or frame.columns) if c in frame.columns]
    shown = frame.head(max_rows)
    rows = [[fmt(r[c]) for c in cols] for r in shown.iter_rows(named=True)]
    classes = [str(r.get(row_class) or "") for r in shown.iter_rows(named=True)] if row_class else []
    more = f" Showing {max_rows} of {frame.height} rows." if frame.height > max_rows else ""
    return Section(key, title, columns=cols, rows=rows, note=(note + more).strip(), row_classes=classes)


def environment() -> Environment:
    return Environment(loader=PackageLoader("hcat_pipeline.reports", "templates"), autoescape=select_autoescape(["html", "j2"]),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)  # fmt: skip


def review_link(queue: pl.DataFrame | None, version: str, night: str, base_url: str = REVIEW_URL) -> dict | None:
    """The report's "label these items" link to ``hcat review`` for this run's review queue (None when there is none)."""
    if queue is None or queue.height == 0:
        return None
    dims = {d: int(n) for d, n in queue.group_by("dimension").len().sort("dimension").iter_rows()}
    return {"url": f"{base_url}/label?queue={version}/{night}", "n": queue.height,
            "answers": queue.select("case_id", "system_id").unique().height, "dimensions": dims}  # fmt: skip


RECORD_FILE = "report.json"  # beside report.html: its summary and sections as data (the dossier reads them)


def write_record(path: Path, *, title: str, run: dict, summary: list[str], sections: dict[str, Section], provenance: dict) -> Path:
    """The report's figures as data (``report.json``): the title, the first screen's lines, every section's rows and the
    provenance — what the release dossier (``reports.dossier``) lays out again, so both show the same numbers."""
    record = {"title": title, "run": {k: v for k, v in run.items() if isinstance(v, str | int | float | bool) or v is None},
              "summary": summary, "sections": {k: asdict(s) for k, s in sections.items()}, "provenance": provenance}  # fmt: skip
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
    tmp.replace(path)
    return path


def render_report(*, title: str, run: dict, summary: list[str], sections: dict[str, Section], plots: dict[str, list[Plot]],
                  provenance: dict, signoffs: str = "") -> str:  # fmt: skip
    """The HTML page. ``sections``: Section per key the template places (gates, headline, rankings, pareto,
    weakest, worst_cases, robustness, failures, validity, cells); ``plots``: heatmaps / violins;
    ``provenance``: key → value (or list of dict rows under "systems")."""
    return environment().get_template(TEMPLATE).render(title=title, run=run, summary=summary, sections=sections, plots=plots,
                                                       provenance=provenance, signoffs=signoffs)  # fmt: skip
