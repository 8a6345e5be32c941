"""The review page: a FastAPI app on loopback, pages rendered server-side from ``templates/`` (no build step).

Screens: ``/label`` (one answer a screen, keyboard labelling), ``/progress`` (labelled / queued per
dimension and stratum, label sufficiency), ``/agreement`` (κ and α with CIs, the disagreements),
``/curate`` (a version's cases: accept / reject / edit, freeze a curated version). JSON endpoints under
``/api/`` take what the page's script sends; a bad request answers 400 with a ``message`` saying what is
wrong, a label another tab saved first answers 409 with that label, and nothing is lost either way.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field

from hcat_pipeline.golden.cases import CaseImportError, GoldenSetError, list_versions
from hcat_pipeline.review.curation import CurationLog, freeze_curated
from hcat_pipeline.review.items import QueueError
from hcat_pipeline.review.labelling import RATER_RE
from hcat_pipeline.review.views import Queue, ReviewSettings, agreement_view, curate_view, find_item, label_view, progress_view

__all__ = ["create_app", "ReviewSettings"]

HERE = Path(__file__).parent
RATER_COOKIE = "hcat_rater"


class LabelIn(BaseModel):
    rater: str
    case_id: str
    system_id: str
    dimension: str
    label: int
    scale: str = "binary"
    comment: str | None = None
    seen: str = ""  # row_hash of the label this page showed ("" = none)


class DecisionIn(BaseModel):
    rater: str
    version: str
    case_id: str
    action: str
    reason: str = ""
    edits: dict[str, str] = Field(default_factory=dict)


class FreezeIn(BaseModel):
    rater: str
    version: str
    new_version: str


def _bad(message: str, status: int = 400, **extra) -> JSONResponse:
    return JSONResponse({"status": "rejected" if status == 400 else "conflict" if status == 409 else "error", "message": message, **extra},
                        status_code=status)  # fmt: skip


def create_app(settings: ReviewSettings) -> FastAPI:
    app = FastAPI(title="hcat review", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    state: dict = {}

    def queue(name: str | None = None) -> Queue:
        key = ("queue", name or "")
        if key not in state:
            state[key] = Queue.load(settings, name)
        return state[key]

    def rater_of(request: Request) -> str:
        r = request.query_params.get("rater") or request.cookies.get(RATER_COOKIE) or settings.rater
        return r if RATER_RE.match(r or "") else ""

    def page(request: Request, name: str, **ctx):
        return templates.TemplateResponse(request, name, {"rater": rater_of(request), "page": name.split(".")[0], **ctx})

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        what = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors())
        return _bad(f"bad request: {what}")

    @app.exception_handler(QueueError)
    async def _no_queue(request: Request, exc: QueueError):
        return templates.TemplateResponse(request, "error.html.j2", {"rater": rater_of(request), "page": "error", "message": str(exc)},
                                          status_code=404)  # fmt: skip

    @app.get("/favicon.ico")
    def favicon():
        return Response(status_code=204)

    @app.get("/")
    def home():
        return RedirectResponse("/label")

    @app.get("/label")
    def label_page(request: Request, item: int | None = None, queue_name: str | None = Query(None, alias="queue"),
                   case: str | None = None, system: str | None = None):  # fmt: skip
        q = queue(queue_name)
        if case is not None:
            item = find_item(q, case, system)
            if item is None:
                return page(request, "error.html.j2", message=f"answer {case} / {system or 'any system'} is not in the review queue {q.name}")
        view = label_view(q, settings.labels.store.labels(), rater_of(request), item)
        return page(request, "label.html.j2", **view)

    @app.get("/progress")
    def progress_page(request: Request, queue_name: str | None = Query(None, alias="queue")):
        return page(request, "progress.html.j2", **progress_view(queue(queue_name), settings.labels.store.labels(), rater_of(request)))

    @app.get("/agreement")
    def agreement_page(request: Request):
        return page(request, "agreement.html.j2", **agreement_view(settings.labels.store.labels()))

    @app.get("/curate")
    def curate_page(request: Request, version: str | None = None, verdict: str | None = None):
        if version is not None and version not in list_versions(settings.golden_dir):
            return page(request, "error.html.j2", message=f"no frozen golden-set version {version!r} in {settings.golden_dir}")
        return page(request, "curate.html.j2", **curate_view(settings, version, verdict))

    @app.post("/api/labels")
    def save_label(body: LabelIn):
        res = settings.labels.save(body.rater, body.case_id, body.system_id, body.dimension, body.label, body.scale, body.comment, body.seen)
        if res.status == "conflict":
            return _bad(res.message, 409, current=res.current)
        if res.status != "saved":
            return _bad(res.message)
        return {"status": "saved", "message": res.message, "row_hash": res.row_hash, "version": res.version}

    @app.post("/api/curation")
    def decide(body: DecisionIn):
        if not RATER_RE.match(body.rater):
            return _bad("set your rater name first (top right)")
        if body.version not in list_versions(settings.golden_dir):
            return _bad(f"no frozen golden-set version {body.version!r}")
        log = CurationLog(settings.curation_dir, body.version)
        known = set(pl.read_parquet(Path(settings.golden_dir, body.version, "golden_set.parquet"), columns=["case_id"])["case_id"].to_list())
        try:
            entry = log.record(body.case_id, body.action, body.rater, body.reason, body.edits, known)
        except ValueError as e:
            return _bad(str(e))
        return {"status": "saved", "decision": entry}

    @app.post("/api/curation/freeze")
    def freeze(body: FreezeIn):
        if not RATER_RE.match(body.rater):
            return _bad("set your rater name first (top right)")
        if "check" not in state and settings.check_factory is not None:
            state["check"] = settings.check_factory()
        log = CurationLog(settings.curation_dir, body.version)
        try:
            manifest = freeze_curated(log, settings.golden_dir, body.new_version, state.get("check"), body.rater)
        except CaseImportError as e:
            return _bad(f"not frozen: {len(e.errors)} problem(s), nothing written", problems=[f"row {n}: {p}" for n, p in e.errors])
        except (GoldenSetError, ValueError, FileNotFoundError) as e:
            return _bad(f"not frozen: {e}")
        return {"status": "frozen", "version": manifest["version"], "n_cases": manifest["n_cases"],
                "content_sha256": manifest["content_sha256"], "source": manifest.get("source")}  # fmt: skip

    return app
