"""Alerts that reach a person (issue 60 item 4): each new production anomaly sent once to a webhook, never lost.

An anomaly is one alert however many days it persists: its key is (kind, signal, stratum, first day). ``Outbox`` keeps
every alert in a JSONL file beside the reports (``<reports>/monitoring/alerts.jsonl``): a new anomaly is added
``pending`` with its message (Slack- / Teams-compatible JSON: ``{"text": …}``, the evidence line and the day's report
link); ``deliver(send)`` tries each pending alert ``retries`` times and marks it ``sent``, or leaves it pending with its
attempts and the last error — the next day's run tries again, so a receiver that is down loses nothing. Pure: the
sending function is the caller's (``resources.alerts.AlertWebhook.send``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["Outbox", "alert_key", "alert_payload"]


def alert_key(a: dict) -> str:
    """One anomaly however many days it lasts: kind, signal, stratum and its first day."""
    return "|".join(str(a.get(k)) for k in ("kind", "signal", "stratum", "start_day"))


def _evidence(a: dict) -> str:
    ev = a.get("evidence")
    if isinstance(ev, str):
        try:
            ev = json.loads(ev)
        except ValueError:
            return ev
    if isinstance(ev, dict):
        return "; ".join(f"{k} {v}" for k, v in ev.items() if not isinstance(v, dict | list))
    return str(ev or "")


def alert_payload(a: dict, service: str, report_url: str) -> dict:
    """The webhook's JSON (Slack and Teams incoming webhooks both read ``text``)."""
    where = "" if a.get("stratum") in (None, "", -1) else f" in stratum {a['stratum']}"
    text = (f"[{service}] {a.get('severity', 'anomaly')} {a.get('kind')} anomaly: {a.get('signal')}{where} since {a.get('start_day')} "
            f"(as of {a.get('end_day')}). Evidence: {_evidence(a)}. Report: {report_url}")  # fmt: skip
    return {"text": text}


class Outbox:
    """Every alert of a service's monitoring, sent or pending (module doc)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def load(self) -> dict[str, dict]:
        if not self.path.is_file():
            return {}
        rows = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return {r["key"]: r for r in rows}

    def _save(self, alerts: dict[str, dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in alerts.values()), encoding="utf-8")
        tmp.replace(self.path)

    def add(self, anomalies: list[dict], service: str, report_url: str) -> list[str]:
        """Queue the anomalies never alerted before (pending); returns their keys. An anomaly already known is not
        queued again, whatever its status."""
        alerts, new = self.load(), []
        for a in anomalies:
            key = alert_key(a)
            if key not in alerts:
                alerts[key] = {"key": key, "status": "pending", "attempts": 0, "last_error": None, "sent_at": None,
                               "day": a.get("end_day"), "payload": alert_payload(a, service, report_url)}  # fmt: skip
                new.append(key)
        self._save(alerts)
        return new

    def deliver(self, send: Callable[[dict], None], retries: int = 3, wait: Callable[[int], None] | None = None) -> dict:
        """Try every pending alert up to ``retries`` times (``wait(attempt)`` between tries); {sent, pending,
        failed_attempts, errors}. A failure is counted on the alert and kept for the next run."""
        alerts, sent, failed, errors = self.load(), 0, 0, []
        for r in alerts.values():
            if r["status"] != "pending":
                continue
            for attempt in range(1, retries + 1):
                r["attempts"] += 1
                try:
                    send(r["payload"])
                except Exception as e:  # noqa: BLE001 — any failure to deliver is counted and kept, never raised past the day
                    failed += 1
                    r["last_error"] = f"{type(e).__name__}: {e}"[:300]
                    if attempt < retries and wait is not None:
                        wait(attempt)
                    continue
                r.update(status="sent", sent_at=datetime.now(UTC).isoformat(timespec="seconds"), last_error=None)
                sent += 1
                break
            if r["status"] == "pending":
                errors.append(f"{r['key']}: {r['last_error']}")
        self._save(alerts)
        return {"sent": sent, "pending": sum(r["status"] == "pending" for r in alerts.values()), "failed_attempts": failed, "errors": errors}
