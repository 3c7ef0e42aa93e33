"""A real SMTP server (aiosmtpd) and an HTTP receiver on loopback, for the alert tests, and
the Airflow connections that point proofflow's notifiers at them."""
import json
import threading
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _SmtpHandler:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        msg = message_from_bytes(envelope.content, policy=policy.default)
        self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "subject": msg["subject"],
                              "body": "\n".join(part.get_content() for part in msg.walk()
                                                if part.get_content_type() in ("text/html", "text/plain"))})
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_server(monkeypatch):
    """aiosmtpd on 127.0.0.1 (a free port); connection smtp_default and the recipients set."""
    from aiosmtpd.controller import Controller
    handler = _SmtpHandler()
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": port,
        "extra": {"from_email": "proofflow@localhost", "disable_tls": True, "disable_ssl": True, "timeout": 10,
                  "retry_limit": 0}}))
    monkeypatch.setenv("PROOFFLOW_ALERT_EMAIL", "oncall@example.test")
    yield handler
    controller.stop()


@pytest.fixture
def webhook_receiver(monkeypatch):
    """An HTTP server on 127.0.0.1 recording POSTed JSON; connection proofflow_webhook points at it."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_WEBHOOK", json.dumps({
        "conn_type": "http", "host": "127.0.0.1", "port": server.server_address[1], "schema": "http",
        "extra": {"endpoint": "/hooks/proofflow", "headers": {"X-Proofflow": "alert"}}}))
    yield received
    server.shutdown()
    server.server_close()
