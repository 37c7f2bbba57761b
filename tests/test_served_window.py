"""A `vllm:` model learns its window from the server, so SUMER and AgeMem fit their prompts to it.

The stand-in answers ``GET /v1/models`` with the payload vLLM 0.26 sent for
``vllm serve ... --served-model-name smol --max-model-len 8192`` (its CPU build, 2026-12-01);
without the window, SUMER ran into vLLM's HTTP 400 for a prompt past it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langgraph_memagent import load_chat_model
from langgraph_memagent.agents.loading import context_window, served_window

VLLM_MODELS = {"object": "list", "data": [{
    "id": "smol", "object": "model", "created": 1796086061, "owned_by": "vllm", "root": "/models/smollm2-135m-instruct",
    "parent": None, "max_model_len": 8192, "permission": [],
}]}


@contextlib.contextmanager
def models_server(status: int, payload: dict):
    seen_keys = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            seen_keys.append(self.headers.get("Authorization"))
            body = json.dumps(payload if self.path == "/v1/models" else {}).encode()
            self.send_response(status if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # keep pytest output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen_keys
    finally:
        server.shutdown()
        server.server_close()


def test_a_vllm_model_takes_the_window_its_server_reports():
    with models_server(200, VLLM_MODELS) as (url, keys):
        assert served_window(url, "smol") == 8192
        assert served_window(url + "/", "smol", api_key="secret") == 8192 and keys[-1] == "Bearer secret"
        assert served_window(url, "another-model") is None
        assert context_window(load_chat_model("vllm:smol", base_url=url)) == 8192
        given = load_chat_model("vllm:smol", base_url=url, profile={"max_input_tokens": 4096})  # a window given wins
        assert context_window(given) == 4096


def test_servers_that_report_no_window_leave_it_unknown():
    no_window = {"data": [{"id": "smol", "object": "model"}]}  # e.g. `transformers serve`
    with models_server(200, no_window) as (url, _):
        assert served_window(url, "smol") is None
        assert context_window(load_chat_model("vllm:smol", base_url=url)) is None
    with models_server(401, {"error": "bad key"}) as (url, _):
        assert served_window(url, "smol") is None
    with models_server(200, {"data": "not a list of models"}) as (url, _):
        assert served_window(url, "smol") is None
