"""Issue 60 item 4: each new anomaly reaches a person once, through a real webhook on loopback; a receiver that is down
loses nothing (retried, counted, sent on a later run)."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hcat_pipeline.monitoring.alerts import Outbox, alert_key
from hcat_pipeline.resources.alerts import AlertWebhook

ANOMALY = {"kind": "acute", "signal": "ungrounded", "stratum": None, "start_day": "2026-11-04", "end_day": "2026-11-04",
           "severity": "high", "evidence": json.dumps({"rate": "31% vs 8% baseline", "p": 2.3e-28})}  # fmt: skip


class Receiver:
    """A Slack-like incoming webhook on loopback: records every JSON body; ``status`` is what it answers."""

    def __init__(self):
        self.bodies, self.status = [], 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(outer.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_new_anomaly_is_sent_once_with_its_evidence_and_report_link(tmp_path, receiver, monkeypatch):
    monkeypatch.setenv("HCAT_ALERT_WEBHOOK_URL", receiver.url)
    hook, box = AlertWebhook(backoff_s=0), Outbox(tmp_path / "alerts.jsonl")
    assert box.add([ANOMALY], "rag-svc", "file:///reports/2026-11-04/report.html") == [alert_key(ANOMALY)]
    assert box.deliver(hook.send, hook.retries) == {"sent": 1, "pending": 0, "failed_attempts": 0, "errors": []}
    text = receiver.bodies[0]["text"]
    assert "acute anomaly: ungrounded since 2026-11-04" in text and "31% vs 8% baseline" in text and "2026-11-04/report.html" in text
    persisting = {**ANOMALY, "end_day": "2026-11-05"}  # the same anomaly the next day: no second alert
    assert box.add([persisting], "rag-svc", "file:///r") == [] and box.deliver(hook.send)["sent"] == 0 and len(receiver.bodies) == 1


def test_a_receiver_down_loses_nothing_the_alert_is_retried_counted_and_sent_later(tmp_path, receiver, monkeypatch):
    monkeypatch.setenv("HCAT_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{_free_port()}/hook")  # nothing listens there
    hook, box = AlertWebhook(backoff_s=0, timeout_s=2), Outbox(tmp_path / "alerts.jsonl")
    box.add([ANOMALY], "rag-svc", "file:///r")
    down = box.deliver(hook.send, hook.retries)
    assert down["sent"] == 0 and down["pending"] == 1 and down["failed_attempts"] == 3 and "ConnectError" in down["errors"][0]
    receiver.status = 500  # up but failing: still pending, the error names the status
    monkeypatch.setenv("HCAT_ALERT_WEBHOOK_URL", receiver.url)
    failing = box.deliver(hook.send, 2)
    assert failing["pending"] == 1 and "HTTP 500" in failing["errors"][0]
    receiver.status = 200
    assert box.deliver(hook.send, hook.retries)["sent"] == 1
    rec = box.load()[alert_key(ANOMALY)]
    assert rec["status"] == "sent" and rec["attempts"] == 3 + 2 + 1 and len(receiver.bodies) == 3


def test_without_a_url_the_alert_stays_in_the_outbox(tmp_path, monkeypatch):
    monkeypatch.delenv("HCAT_ALERT_WEBHOOK_URL", raising=False)
    hook = AlertWebhook()
    assert hook.url() is None
    with pytest.raises(RuntimeError, match="HCAT_ALERT_WEBHOOK_URL"):
        hook.send({"text": "x"})
