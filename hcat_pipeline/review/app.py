"""The review page: a FastAPI app on loopback, pages rendered server-side from ``templates/`` (no build step).

Screens: ``/flags`` (every answer a count gate counts as a failure, to confirm or overturn with a reason — ``/`` opens it
while any is unreviewed — detector precision, and what the human-calibrated gates still need; ``review.flags``),
``/label`` (one answer a screen, keyboard labelling), ``/progress`` (labelled / queued per
dimension and stratum, label sufficiency), ``/agreement`` (κ and α with CIs, the disagreements),
``/curate`` (a version's cases as a table: accept / reject / edit, freeze a curated version), ``/curate/case`` (one case a
screen, keyboard review, the source passage with the reference marked; ``review.case_screen``), ``/monitor`` and
``/monitor/case`` (production monitoring's review queue: a reviewed failure becomes a candidate golden case, frozen into a
new version with its base; ``review.incidents``). JSON endpoints under
``/api/`` take what the page's script sends; a bad request answers 400 with a ``message`` saying what is
wrong, a label another tab saved first answers 409 with that label, and nothing is lost either way.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, Field

from hcat_pipeline.golden.cases import TABLE_NAME, CaseImportError, GoldenSetError, list_versions, load_version
from hcat_pipeline.release.night import now
from hcat_pipeline.reports.signoffs import refresh_night_report
from hcat_pipeline.review.case_screen import case_screen_view
from hcat_pipeline.review.curation import CurationLog, freeze_curated
from hcat_pipeline.review.flags import FlagLog, flags_view, open_flags
from hcat_pipeline.review.incidents import IncidentLog, freeze_with_incidents, monitor_view
from hcat_pipeline.review.items import QueueError
from hcat_pipeline.review.labelling import RATER_RE
from hcat_pipeline.review.sampling import SampleRecord
from hcat_pipeline.review.signoff import sign, signoff_view
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
    edits: dict[str, str | list[str]] = Field(default_factory=dict)  # options: a list (or one a line)
    difficulty: str | None = None
    scoring_notes: str = ""
    proposal: dict | None = None  # the repair the case screen offered ({kind, edits}), recorded with the decision


class FlagReviewIn(BaseModel):
    rater: str
    flag_id: str
    decision: str
    reason: str = ""


class SignoffIn(BaseModel):
    rater: str
    role: str
    decision: str
    note: str = ""
    version: str
    night: str


class SampleIn(BaseModel):
    rater: str
    version: str


class LeaveOutIn(BaseModel):
    rater: str
    version: str
    kind: str
    reason: str = ""


class FreezeIn(BaseModel):
    rater: str
    version: str
    new_version: str


class IncidentIn(BaseModel):
    rater: str
    day: str
    request_id: str
    verdict: str
    expected_behavior: str = "answer"
    reference_answer: str = ""
    query: str = ""
    difficulty: str = "medium"
    scoring_notes: str = ""


class IncidentFreezeIn(BaseModel):
    rater: str
    base_version: str
    new_version: str


def _bad(message: str, status: int = 400, **extra) -> JSONResponse:
    return JSONResponse({"status": "rejected" if status == 400 else "conflict" if status == 409 else "error", "message": message, **extra},
                        status_code=status)  # fmt: skip


def _embedder(request: Request):
    """The packaged MiniLM's ``embed`` for the curate screen's learnt order, loaded once; None when the settings say
    not to learn (``learn_order``) or the model cannot load (the page then uses the validator's static order)."""
    state = request.app.state
    if not _settings(request).learn_order:
        return None
    if getattr(state, "embed", None) is None:
        from hcat_pipeline.resources.embedding import EmbeddingModel

        try:
            state.embed = EmbeddingModel().embed
        except Exception as e:  # noqa: BLE001 — shown on the page, never a failed page
            state.embed_error = f"{type(e).__name__}: {e}"
            return None
    return state.embed


def _settings(request: Request) -> ReviewSettings:
    return request.app.state.settings


def _queue(request: Request, name: str | None) -> Queue:
    """The queue ``name`` (``<version>/<night>``; None: the default one — the latest run's, so a new night shows up), loaded
    once per file version."""
    path = Queue.resolve(_settings(request), name)
    key, cache = (str(path), path.stat().st_mtime_ns), request.app.state.queues
    if key not in cache:
        cache[key] = Queue.load(_settings(request), path)
    return cache[key]


def _rater(request: Request) -> str:
    r = request.query_params.get("rater") or request.cookies.get(RATER_COOKIE) or _settings(request).rater
    return r if RATER_RE.match(r or "") else ""


def _page(request: Request, name: str, status_code: int = 200, **ctx):
    ctx = {"rater": _rater(request), "page": name.split(".")[0], **ctx}
    return request.app.state.templates.TemplateResponse(request, name, ctx, status_code=status_code)


pages = APIRouter()
api = APIRouter(prefix="/api")


@pages.get("/favicon.ico")
def favicon():
    return Response(status_code=204)


@pages.get("/")
def home(request: Request):
    """Unreviewed counted failures first (a zero-tolerance gate fails on one), then the labelling queue."""
    settings = _settings(request)
    return RedirectResponse("/flags" if open_flags(settings.warehouse, settings.labels_dir) else "/label")


@pages.get("/flags")
def flags_page(request: Request, version: str | None = None, night: str | None = None):
    settings = _settings(request)
    return _page(request, "flags.html.j2", **flags_view(settings.warehouse, settings.labels_dir, version, night))


@api.post("/flags")
def review_flag(request: Request, body: FlagReviewIn):
    settings = _settings(request)
    flag = next((f for f in flags_view(settings.warehouse, settings.labels_dir)["flags"] if f["flag_id"] == body.flag_id), None)
    if flag is None:
        return _bad(f"no flag {body.flag_id!r} on the latest night")
    try:
        rev = FlagLog(settings.labels_dir).record(flag, body.rater, body.decision, body.reason)
    except ValueError as e:
        return _bad(str(e))
    return {"status": "saved", "message": f"{rev.decision} by {rev.reviewer} at {rev.reviewed_at}", "review": rev.as_dict()}


@pages.get("/release")
def release_page(request: Request, version: str | None = None, night: str | None = None):
    settings = _settings(request)
    return _page(request, "release.html.j2", **signoff_view(settings.release_root, settings.warehouse, settings.gates, version, night,
                                                            settings.roles))  # fmt: skip


@api.post("/signoffs")
def sign_release(request: Request, body: SignoffIn):
    settings = _settings(request)
    try:
        entry = sign(settings.release_root, settings.gates, body.version, body.night, body.rater, body.role, body.decision, body.note, now())
    except ValueError as e:
        return _bad(str(e), status=409 if "does not verify" in str(e) else 400)
    refresh_night_report(settings.release_root.parent, settings.reports, body.version, body.night)  # the report shows who signed
    return {"status": "signed", "message": f"signed: {entry['who']} ({entry['role']}) {entry['decision']} on bundle {entry['bundle_root'][:16]}"}


@pages.get("/label")
def label_page(request: Request, item: int | None = None, queue_name: str | None = Query(None, alias="queue"),
               case: str | None = None, system: str | None = None):  # fmt: skip
    q = _queue(request, queue_name)
    if case is not None:
        item = find_item(q, case, system)
        if item is None:
            return _page(request, "error.html.j2", 404, message=f"answer {case} / {system or 'any system'} is not in the review queue {q.name}")
    return _page(request, "label.html.j2", **label_view(q, _settings(request).labels.store.labels(), _rater(request), item,
                                                      _settings(request).extra_dimensions))


@pages.get("/progress")
def progress_page(request: Request, queue_name: str | None = Query(None, alias="queue")):
    return _page(request, "progress.html.j2", **progress_view(_queue(request, queue_name), _settings(request).labels.store.labels(), _rater(request)))


@pages.get("/agreement")
def agreement_page(request: Request):
    return _page(request, "agreement.html.j2", **agreement_view(_settings(request).labels.store.labels()))


@pages.get("/curate")
def curate_page(request: Request, version: str | None = None, verdict: str | None = None):
    settings = _settings(request)
    if version is not None and version not in list_versions(settings.golden_dir):
        return _page(request, "error.html.j2", 404, message=f"no frozen golden-set version {version!r} in {settings.golden_dir}")
    return _page(request, "curate.html.j2", **curate_view(settings, version, verdict))


@pages.get("/curate/case")
def curate_case_page(request: Request, version: str | None = None, case: str | None = None):
    settings = _settings(request)
    if version is not None and version not in list_versions(settings.golden_dir):
        return _page(request, "error.html.j2", 404, message=f"no frozen golden-set version {version!r} in {settings.golden_dir}")
    view = case_screen_view(settings.golden_dir, settings.curation_dir, settings.chunks or settings.warehouse / "chunks.parquet", version, case,
                            settings.warehouse, embed=_embedder(request), target=(settings.needs or {}).get("happy_path"), needs=settings.needs)
    return _page(request, "curate_case.html.j2", **{**view, "page": "curate"})


@api.post("/labels")
def save_label(request: Request, body: LabelIn):
    res = _settings(request).labels.save(body.rater, body.case_id, body.system_id, body.dimension, body.label, body.scale, body.comment,
                                         body.seen)  # fmt: skip
    if res.status == "conflict":
        return _bad(res.message, 409, current=res.current)
    if res.status != "saved":
        return _bad(res.message)
    return {"status": "saved", "message": res.message, "row_hash": res.row_hash, "version": res.version}


def _unknown(settings: ReviewSettings, rater: str, version: str):
    """The 400 answer for a missing rater name or an unknown version; None when both are fine."""
    if not RATER_RE.match(rater):
        return _bad("set your rater name first (top right)")
    if version not in list_versions(settings.golden_dir):
        return _bad(f"no frozen golden-set version {version!r}")
    return None


@api.post("/curation")
def decide(request: Request, body: DecisionIn):
    settings = _settings(request)
    if bad := _unknown(settings, body.rater, body.version):
        return bad
    known = set(pl.read_parquet(Path(settings.golden_dir, body.version, TABLE_NAME), columns=["case_id"])["case_id"].to_list())
    try:
        entry = CurationLog(settings.curation_dir, body.version).record(body.case_id, body.action, body.rater, body.reason, body.edits, known,
                                                                        body.difficulty, body.scoring_notes, body.proposal)
    except ValueError as e:
        return _bad(str(e))
    return {"status": "saved", "decision": entry}


@api.post("/curation/sample")
def draw_samples(request: Request, body: SampleIn):
    """Review by sample: draw each kind's seeded sample for the version (once: a drawn plan is never redrawn)."""
    settings = _settings(request)
    if bad := _unknown(settings, body.rater, body.version):
        return bad
    frame, _ = load_version(body.version, settings.golden_dir)
    try:
        record = SampleRecord(settings.curation_dir, body.version).start(frame, body.rater, settings.review_tolerance, settings.review_confidence)
    except ValueError as e:
        return _bad(str(e))
    return {"status": "drawn", "kinds": {k: len(p["sample"]) for k, p in record["kinds"].items()}}


@api.post("/curation/leave-out")
def leave_kind_out(request: Request, body: LeaveOutIn):
    """Review by sample: leave a kind out of the signed set — each of its undecided cases rejected with the reason."""
    from hcat_pipeline.golden.sample_review import with_kinds
    from hcat_pipeline.review.sampling import actions_of

    settings = _settings(request)
    if not RATER_RE.match(body.rater):
        return _bad("set your rater name first (top right)")
    record = SampleRecord(settings.curation_dir, body.version)
    if not record.exists() or body.kind not in record.plans():
        return _bad(f"no drawn kind {body.kind!r} in the review by sample of {body.version}")
    if not body.reason.strip():
        return _bad("say why the kind is left out (it is recorded with your name)")
    frame, _ = load_version(body.version, settings.golden_dir)
    log = CurationLog(settings.curation_dir, body.version)
    done = actions_of(log.decisions())
    ids = [c for c in with_kinds(frame).filter(pl.col("review_kind") == body.kind)["case_id"].to_list() if done.get(c) != "reject"]
    for c in ids:
        log.record(c, "reject", body.rater, f"kind {body.kind} left out of the signed set: {body.reason.strip()}")
    record.leave_out(body.kind, body.rater, body.reason.strip())
    return {"status": "left out", "kind": body.kind, "rejected": len(ids)}


@api.post("/curation/freeze")
def freeze(request: Request, body: FreezeIn):
    settings = _settings(request)
    return _frozen(request, body.rater, lambda check: freeze_curated(CurationLog(settings.curation_dir, body.version), settings.golden_dir,
                                                                     body.new_version, check, body.rater))  # fmt: skip


def _frozen(request: Request, rater: str, freeze_with):
    """Freeze through ``freeze_with(check)`` (the validity check built on the first freeze, not at start-up: it loads the
    embedding model); a refusal answers 400 with every problem, nothing written."""
    settings, state = _settings(request), request.app.state
    if not RATER_RE.match(rater):
        return _bad("set your rater name first (top right)")
    if state.check is None and settings.check_factory is not None:
        state.check = settings.check_factory()
    try:
        manifest = freeze_with(state.check)
    except CaseImportError as e:
        return _bad(f"not frozen: {len(e.errors)} problem(s), nothing written", problems=[f"row {n}: {p}" for n, p in e.errors])
    except (GoldenSetError, ValueError, FileNotFoundError) as e:
        return _bad(f"not frozen: {e}")
    return {"status": "frozen", "version": manifest["version"], "n_cases": manifest["n_cases"],
            "content_sha256": manifest["content_sha256"], "source": manifest.get("source")}  # fmt: skip


@pages.get("/monitor")
@pages.get("/monitor/case")
def monitor_page(request: Request, day: str | None = None, request_id: str | None = Query(None, alias="request")):
    settings = _settings(request)
    try:
        view = monitor_view(settings.reports, settings.curation_dir, day, request_id)
    except (FileNotFoundError, KeyError) as e:
        return _page(request, "error.html.j2", 404, message=str(e).strip("'\""))
    return _page(request, "monitor.html.j2", **{**view, "versions": list_versions(settings.golden_dir)})


@api.post("/incidents")
def save_incident(request: Request, body: IncidentIn):
    settings = _settings(request)
    if not RATER_RE.match(body.rater):
        return _bad("set your rater name first (top right)")
    try:
        row = monitor_view(settings.reports, settings.curation_dir, body.day, body.request_id)["row"]
        entry = IncidentLog(settings.curation_dir).record(row, body.rater, body.verdict, body.expected_behavior, body.reference_answer,
                                                          body.query, body.difficulty, body.scoring_notes)  # fmt: skip
    except (FileNotFoundError, KeyError, ValueError) as e:
        return _bad(str(e).strip("'\""))
    return {"status": "saved", "incident": entry}


@api.post("/incidents/freeze")
def freeze_incidents(request: Request, body: IncidentFreezeIn):
    settings = _settings(request)
    return _frozen(request, body.rater, lambda check: freeze_with_incidents(IncidentLog(settings.curation_dir), settings.golden_dir,
                                                                            body.base_version, body.new_version, check, body.rater))  # fmt: skip


async def _invalid_request(request: Request, exc: RequestValidationError):
    what = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors())
    return _bad(f"bad request: {what}")


async def _no_queue(request: Request, exc: QueueError):
    return _page(request, "error.html.j2", 404, message=str(exc))


def create_app(settings: ReviewSettings) -> FastAPI:
    """The review page over ``settings`` (folders, the default queue, the validity check for freezing)."""
    app = FastAPI(title="hcat review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings, app.state.queues, app.state.check = settings, {}, None
    # autoescape every template (the names end in .j2, which Jinja's default selection would leave unescaped): answers and
    # passages are untrusted text
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True, undefined=StrictUndefined)
    app.state.templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.include_router(pages)
    app.include_router(api)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(QueueError, _no_queue)
    return app
