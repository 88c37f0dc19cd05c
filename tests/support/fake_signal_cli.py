#!/usr/bin/env python3
"""A fake signal-cli at the wire boundary: `signal-cli [--config DIR] -a ACCOUNT
daemon --http HOST:PORT`, serving signal-cli's three HTTP endpoints as it does
(man signal-cli-jsonrpc(5), HttpServerHandler/SseEventBuffer):

- POST /api/v1/rpc: one JSON-RPC 2.0 request (415 without a JSON content
  type; a notification gets 201; errors are JSON-RPC error objects with
  signal-cli's codes: -1 user error, -3 IO error, -5 rate limit, -32601
  unknown method, -32700 parse error).
- GET /api/v1/events: Server-Sent Events `id:<start>-<seq>` / `event:receive`
  / `data:{"envelope":...,"account":...}`, a `:` keep-alive every
  FAKE_SIGNAL_KEEPALIVE seconds (15 as signal-cli), the last 1000 events kept:
  a client sending `Last-Event-ID` first gets the events after it, an id from
  an earlier run (or unknown) gets all kept events, no header gets none.
  `?account=` naming another account is a 400.
- GET /api/v1/check: 200.

A test drives it through /fake/* (never part of signal-cli): inject an
envelope, write raw bytes (garbage) to the open streams, drop the streams,
script faults of the next RPC calls, read the calls made. Attachments are
files under `<config>/attachments/<id>`, as signal-cli keeps them, also served
by the `getAttachment` method (base64).
"""

import base64
import collections
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def parse_args(argv):
    opts = {"config": os.path.expanduser("~/.local/share/signal-cli"), "account": None, "http": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--config", "-c"):
            opts["config"] = argv[i + 1]
            i += 1
        elif a in ("-a", "--account"):
            opts["account"] = argv[i + 1]
            i += 1
        elif a.startswith("--http"):
            if "=" in a:
                opts["http"] = a.split("=", 1)[1]
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                opts["http"] = argv[i + 1]
                i += 1
            else:
                opts["http"] = "127.0.0.1:8080"
        elif a == "--version":
            print("signal-cli 0.13.99-fake")
            sys.exit(0)
        i += 1
    return opts


OPTS = parse_args(sys.argv[1:])
START = str(int(time.time() * 1000)) + "-"
KEEPALIVE = float(os.environ.get("FAKE_SIGNAL_KEEPALIVE", "15"))
LOCK = threading.Condition()
EVENTS = collections.deque(maxlen=1000)  # (seq, text): text is the whole SSE block
STATE = {"seq": 0, "generation": 0, "ts": int(time.time() * 1000), "streams": 0, "connects": []}
CALLS = []
FAULTS = collections.deque()


def next_ts():
    with LOCK:
        STATE["ts"] = max(STATE["ts"] + 1, int(time.time() * 1000))
        return STATE["ts"]


def push(block):
    """Adds an event; `block(seq)` is its text. Returns its seq."""
    with LOCK:
        STATE["seq"] += 1
        EVENTS.append((STATE["seq"], block(STATE["seq"])))
        LOCK.notify_all()
        return STATE["seq"]


def rpc_result(method, params):
    target = {"number": (params.get("recipient") or [None])[0]} if params.get("recipient") else {"groupId": params.get("groupId")}
    if method == "send":
        return {"timestamp": next_ts(), "results": [{"recipientAddress": target, "type": "SUCCESS"}]}
    if method in ("sendTyping", "sendReceipt"):
        return {}
    if method in ("sendReaction", "remoteDelete"):
        return {"timestamp": next_ts(), "results": [{"recipientAddress": target, "type": "SUCCESS"}]}
    if method == "getAttachment":
        path = os.path.join(OPTS["config"], "attachments", os.path.basename(str(params.get("id", ""))))
        if not os.path.isfile(path):
            raise RpcError(-1, "Attachment not found")
        with open(path, "rb") as f:
            return {"data": base64.b64encode(f.read()).decode()}
    if method == "version":
        return {"version": "0.13.99-fake"}
    raise RpcError(-32601, "Method not implemented")


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, ctype="application/json"):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/api/v1/check":
            return self.reply(200)
        if url.path == "/api/v1/events":
            account = parse_qs(url.query).get("account", [""])[0]
            if account and account != OPTS["account"]:
                return self.reply(400)
            return self.events(self.headers.get("Last-Event-ID"))
        if url.path == "/fake/calls":
            with LOCK:
                return self.reply(200, CALLS)
        if url.path == "/fake/stats":
            with LOCK:
                return self.reply(200, {"streams": STATE["streams"], "connects": STATE["connects"], "pid": os.getpid(), "start": START})
        self.reply(404)

    def events(self, last):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        with LOCK:
            gen = STATE["generation"]
            STATE["streams"] += 1
            STATE["connects"].append(last)
            if last is None:
                sent = STATE["seq"]
            elif last.startswith(START) and last[len(START):].isdigit():
                sent = int(last[len(START):])
            else:
                sent = 0
        try:
            while True:
                with LOCK:
                    ready = [b for (s, b) in EVENTS if s > sent]
                    if not ready:
                        LOCK.wait(KEEPALIVE)
                        ready = [b for (s, b) in EVENTS if s > sent]
                    if STATE["generation"] != gen:
                        return
                    sent = STATE["seq"]
                out = "".join(ready) if ready else ":\n"
                self.wfile.write(out.encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with LOCK:
                STATE["streams"] -= 1
            self.close_connection = True

    def do_POST(self):
        url = urlparse(self.path)
        raw = self.body()
        if url.path == "/api/v1/rpc":
            return self.rpc(raw)
        if url.path == "/fake/inject":
            env = json.loads(raw)
            data = json.dumps({"envelope": env, "account": OPTS["account"]}, separators=(",", ":"))
            at = time.monotonic()
            seq = push(lambda n: "id:%s%d\nevent:receive\ndata:%s\n\n" % (START, n, data))
            return self.reply(200, {"id": "%s%d" % (START, seq), "at": at})
        if url.path == "/fake/raw":
            text = raw.decode("utf-8", "replace")
            push(lambda n: text)
            return self.reply(200, {})
        if url.path == "/fake/drop":
            with LOCK:
                STATE["generation"] += 1
                LOCK.notify_all()
            return self.reply(200, {})
        if url.path == "/fake/fault":
            FAULTS.append(json.loads(raw))
            return self.reply(200, {})
        self.reply(404)

    def rpc(self, raw):
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self.reply(415)
        try:
            req = json.loads(raw)
        except ValueError:
            return self.reply(200, {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": None})
        method, params, rid = req.get("method"), req.get("params") or {}, req.get("id")
        fault = None
        with LOCK:
            if FAULTS and FAULTS[0].get("method", method) == method:
                fault = FAULTS.popleft()
        if fault and fault.get("status"):
            return self.reply(fault["status"], b"ERROR", "text/plain")
        if fault and fault.get("hang"):
            time.sleep(fault["hang"])
        try:
            if fault and fault.get("error"):
                raise RpcError(fault["error"]["code"], fault["error"]["message"])
            result = rpc_result(method, params)
            with LOCK:
                CALLS.append({"method": method, "params": params, "result": result, "at": time.monotonic()})
        except RpcError as e:
            with LOCK:
                CALLS.append({"method": method, "params": params, "error": e.code})
            return self.reply(200, {"jsonrpc": "2.0", "error": {"code": e.code, "message": e.message, "data": None}, "id": rid})
        if fault and fault.get("noAnswer"):
            self.close_connection = True
            self.connection.close()
            return
        if rid is None:
            return self.reply(201)
        self.reply(200, {"jsonrpc": "2.0", "result": result, "id": rid})


def keepalive_ticker():
    while True:
        time.sleep(KEEPALIVE)
        with LOCK:
            LOCK.notify_all()


if __name__ == "__main__":
    if "daemon" not in sys.argv[1:] or not OPTS["http"]:
        print("fake signal-cli runs only as: [--config DIR] -a ACCOUNT daemon --http HOST:PORT", file=sys.stderr)
        sys.exit(2)
    host, port = OPTS["http"].rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), Handler)
    server.daemon_threads = True
    threading.Thread(target=keepalive_ticker, daemon=True).start()
    print("INFO  HttpServerHandler - Started HTTP server on /%s:%s" % (host, port), flush=True)
    server.serve_forever()
