"""AlertWebhook: where production anomalies are sent (a Slack- or Teams-compatible incoming webhook).

The URL comes from an environment variable (``url_env_var``, default ``HCAT_ALERT_WEBHOOK_URL``), never from a file
in the repository; unset, alerts stay in the outbox (``monitoring.alerts.Outbox``) and the report says they were not
sent. ``send(payload)`` POSTs the JSON and raises on a connection error or a non-2xx reply (the outbox counts it and
retries it on the next run).
"""

from __future__ import annotations

import os
import time

import dagster as dg
import httpx
from pydantic import Field


class AlertWebhook(dg.ConfigurableResource):
    """A webhook production anomalies are posted to (module doc)."""

    url_env_var: str = Field(default="HCAT_ALERT_WEBHOOK_URL", description="the environment variable holding the webhook URL")
    timeout_s: float = Field(default=10.0, gt=0, description="seconds one POST may take")
    retries: int = Field(default=3, ge=1, description="tries per alert and run (the rest waits for the next run)")
    backoff_s: float = Field(default=1.0, ge=0, description="wait before the second try, doubled after each")

    def url(self) -> str | None:
        return os.environ.get(self.url_env_var) or None

    def send(self, payload: dict) -> None:
        url = self.url()
        if url is None:
            raise RuntimeError(f"no webhook URL in ${self.url_env_var}")
        reply = httpx.post(url, json=payload, timeout=self.timeout_s)
        if not 200 <= reply.status_code < 300:
            raise RuntimeError(f"HTTP {reply.status_code} from the webhook: {reply.text[:200]}")

    def wait(self, attempt: int) -> None:
        time.sleep(self.backoff_s * 2 ** (attempt - 1))
