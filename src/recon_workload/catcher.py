"""A local mail and webhook catcher for the demo: an SMTP server and an HTTP receiver on
loopback that store what they receive as files in an inbox folder (``.eml`` and ``.json``).

    python -m recon_workload.catcher --smtp-port 23025 --http-port 23090 --inbox .state/inbox
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


class _MailHandler:
    def __init__(self, inbox: Path) -> None:
        self.inbox = inbox

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        path = self.inbox / f"mail-{_stamp()}.eml"
        path.write_bytes(envelope.original_content or envelope.content)
        return "250 stored"


def _http_handler(inbox: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            try:
                payload: Any = json.loads(body)
            except ValueError:
                payload = body.decode("utf-8", "replace")
            record = {"path": self.path.split("?")[0], "received_at": _stamp(), "body": payload}
            (inbox / f"webhook-{_stamp()}.json").write_text(json.dumps(record, indent=2))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recon-catcher", description=__doc__.split("\n")[0])
    parser.add_argument("--smtp-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--inbox", required=True)
    args = parser.parse_args(argv)
    from aiosmtpd.controller import Controller

    inbox = Path(args.inbox)
    inbox.mkdir(parents=True, exist_ok=True)
    smtp = Controller(_MailHandler(inbox), hostname="127.0.0.1", port=args.smtp_port)
    smtp.start()
    http = ThreadingHTTPServer(("127.0.0.1", args.http_port), _http_handler(inbox))
    threading.Thread(target=http.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"catching mail on 127.0.0.1:{args.smtp_port} and webhooks on "
          f"127.0.0.1:{args.http_port} into {inbox}", flush=True)  # fmt: skip
    while not stop.is_set():
        time.sleep(0.5)
    http.shutdown()
    smtp.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
