"""Real, throw-away servers on loopback for integration tests.

``postgres_server()`` runs a fresh PostgreSQL cluster and yields its libpq URL;
``openai_compatible_server(model_dir)`` runs ``transformers serve`` on a local
model directory and yields its OpenAI-compatible base URL;
``vllm_completions_server(model, tokenizer)`` answers, in this process, the part of
vLLM's HTTP API that TRL's ``VLLMClient`` uses. All pick a free
port, wait until the server really answers, and stop it and delete every
temporary file when the ``with`` block exits, also on exceptions.

When the required programs are not installed they raise ``ServerUnavailable``
with a reason meant for ``pytest.skip``; any other start-up failure raises
``RuntimeError`` carrying the tail of the server log.
"""

from __future__ import annotations

import contextlib
import glob
import http.client
import importlib.util
import json
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from pathlib import Path

LOOPBACK = "127.0.0.1"
_LOG_TAIL_LINES = 40


class ServerUnavailable(RuntimeError):
    """The programs needed to start a server are not installed here."""


def _free_port() -> int:
    """Return a loopback port that is free right now.

    The kernel picks it (port 0), so parallel test runs do not collide on a
    fixed number; the small race until the server binds it is acceptable.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """Last ``lines`` lines of a server log, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- #
# PostgreSQL
# --------------------------------------------------------------------------- #

_PG_USER = "postgres"  # both the OS user used under root and the DB superuser


def _find_pg_bindir() -> Path:
    """Directory holding initdb and pg_ctl: PATH first, then Debian's layout."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        # The resolved directory first, so a symlinked initdb on PATH is paired
        # with the pg_ctl (and postgres) of the same installation.
        candidates += [Path(on_path).resolve().parent, Path(on_path).parent]
    # Debian/Ubuntu keep the server binaries off PATH; prefer the newest major.
    candidates += sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else -1,
        reverse=True,
    )
    for bindir in candidates:
        if (bindir / "initdb").exists() and (bindir / "pg_ctl").exists():
            return bindir
    raise ServerUnavailable(
        "PostgreSQL server binaries not found (no initdb/pg_ctl on PATH or under "
        "/usr/lib/postgresql/*/bin)"
    )


def _pg_runner() -> tuple[list[str], pwd.struct_passwd | None]:
    """Command prefix that runs PostgreSQL tools, and the account to chown to.

    PostgreSQL refuses to run as root, so under root every tool is run as the
    unprivileged ``postgres`` account through ``runuser``.
    """
    if os.geteuid() != 0:
        return [], None
    try:
        account = pwd.getpwnam(_PG_USER)
    except KeyError:
        raise ServerUnavailable(
            f"running as root and there is no {_PG_USER!r} OS user to run PostgreSQL as"
        ) from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServerUnavailable("running as root and `runuser` is not available to drop privileges")
    return [runuser, "-u", _PG_USER, "--"], account


@dataclass
class PostgresCluster:
    """A running throw-away cluster: its URL, and ``stop``/``start`` for fault drills."""

    url: str
    stop: Callable[[], None]  # pg_ctl stop -m fast: clients see their connections closed
    start: Callable[[], None]  # pg_ctl start on the same port and data


@contextlib.contextmanager
def postgres_server(*, startup_timeout: float = 30.0) -> Iterator[str]:
    """Run a fresh PostgreSQL cluster on a free loopback port.

    Yields a URL such as ``postgresql://postgres@127.0.0.1:PORT/postgres?sslmode=disable``
    (trust authentication, no password). The cluster is stopped with
    ``pg_ctl stop -m immediate`` and its directory removed at exit.
    """
    with postgres_cluster(startup_timeout=startup_timeout) as cluster:
        yield cluster.url


@contextlib.contextmanager
def postgres_cluster(*, startup_timeout: float = 30.0) -> Iterator[PostgresCluster]:
    """:func:`postgres_server`, yielding the cluster with its ``stop`` and ``start``."""
    bindir = _find_pg_bindir()
    prefix, account = _pg_runner()

    # Under root the directory must be reachable by the postgres account, so it
    # goes under world-traversable /tmp (TMPDIR might point into /root); mkdtemp
    # creates it 0o700 and it is then handed over to that account.
    tmp = Path(tempfile.mkdtemp(prefix="pytest-postgres-", dir="/tmp" if account else None))
    data_dir = tmp / "data"
    log_path = tmp / "postgres.log"
    port = _free_port()

    def run(*args: str | Path, timeout: float) -> subprocess.CompletedProcess[str]:
        # cwd=tmp: the postgres account may not be allowed to enter the caller's cwd.
        return subprocess.run(
            [*prefix, *map(str, args)],
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    try:
        if account is not None:
            os.chown(tmp, account.pw_uid, account.pw_gid)
        init = run(
            bindir / "initdb",
            "-D", data_dir,
            "-U", _PG_USER,
            "-A", "trust",
            "-E", "UTF8",
            "--locale=C",  # no dependency on locales installed on the machine
            "--no-sync",  # the cluster is thrown away, durability is pointless
            timeout=120,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")

        server_options = " ".join(
            [
                f"-p {port}",
                f"-c listen_addresses={LOOPBACK}",
                # Unix socket inside the temp dir, not the shared /var/run/postgresql;
                # quoted because pg_ctl hands these options to a shell.
                f"-k {shlex.quote(str(tmp))}",
                # Speed over safety: nothing here must survive a crash.
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c shared_buffers=16MB",
                "-c max_connections=50",
            ]
        )
        def start() -> None:
            # -w makes pg_ctl wait until the server accepts connections (bounded by -t).
            started = run(
                bindir / "pg_ctl",
                "-D", data_dir,
                "-l", log_path,
                "-o", server_options,
                "-w", "-t", str(int(startup_timeout)),
                "start",
                timeout=startup_timeout + 30,
            )
            if started.returncode != 0:
                raise RuntimeError(
                    f"pg_ctl start failed ({started.returncode}):\n{started.stdout}\n{started.stderr}\n"
                    f"--- server log ---\n{_log_tail(log_path)}"
                )

        def stop() -> None:
            stopped = run(bindir / "pg_ctl", "-D", data_dir, "-m", "fast", "-w", "stop", timeout=60)
            if stopped.returncode != 0:
                raise RuntimeError(f"pg_ctl stop failed ({stopped.returncode}):\n{stopped.stdout}\n{stopped.stderr}")

        start()
        yield PostgresCluster(f"postgresql://{_PG_USER}@{LOOPBACK}:{port}/postgres?sslmode=disable", stop, start)
    finally:
        try:
            if (data_dir / "postmaster.pid").exists():
                # Immediate mode: no checkpoint, the data is deleted right after.
                run(bindir / "pg_ctl", "-D", data_dir, "-m", "immediate", "-w", "stop", timeout=60)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- #
# langgraph dev (the served graphs)
# --------------------------------------------------------------------------- #

LANGGRAPH_CONFIG = Path(__file__).resolve().parent.parent / "langgraph.json"


def _langgraph_cli() -> Path:
    """The ``langgraph`` CLI of this interpreter's environment, with the in-memory runtime."""
    cli = Path(sys.executable).with_name("langgraph")
    if not cli.exists():
        raise ServerUnavailable(f"`langgraph` CLI not found next to {sys.executable}: pip install 'langgraph-cli[inmem]'")
    missing = [m for m in ("langgraph_api", "langgraph_runtime_inmem") if importlib.util.find_spec(m) is None]
    if missing:
        raise ServerUnavailable(f"`langgraph dev` needs {', '.join(missing)}: pip install 'langgraph-cli[inmem]'")
    return cli


@contextlib.contextmanager
def langgraph_dev_server(workdir: Path, env: dict[str, str], *, startup_timeout: float = 180.0) -> Iterator[str]:
    """Run ``langgraph dev`` on a free loopback port with this repository's langgraph.json; yields its URL.

    Never with ``--allow-blocking``: the server's blocking-call detector stays on, so a graph
    that blocks its event loop fails its run.

    ``workdir`` is the server's working directory: the in-memory runtime writes its
    ``.langgraph_api`` persistence files there, not into the repository.
    """
    cli = _langgraph_cli()
    port = _free_port()
    url = f"http://{LOOPBACK}:{port}"
    command = [str(cli), "dev", "--host", LOOPBACK, "--port", str(port), "--config", str(LANGGRAPH_CONFIG), "--no-browser", "--no-reload"]
    log_path = workdir / "langgraph-dev.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"langgraph dev exited with {proc.returncode} during start-up:\n{_log_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=5) as response:
                    if response.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass  # not listening yet (graphs import before the port opens)
            if time.monotonic() > deadline:
                raise RuntimeError(f"langgraph dev not healthy at {url}/ok after {startup_timeout:.0f}s:\n{_log_tail(log_path)}")
            time.sleep(0.5)
        yield url
    finally:
        _stop_process_group(proc)


# --------------------------------------------------------------------------- #
# transformers serve (OpenAI-compatible)
# --------------------------------------------------------------------------- #


def _transformers_cli() -> Path:
    """The ``transformers`` CLI of the running interpreter's environment."""
    # Not resolved: in a venv sys.executable is a symlink into the base Python,
    # and the CLI lives next to the link, not next to its target.
    cli = Path(sys.executable).with_name("transformers")
    if not cli.exists():
        raise ServerUnavailable(f"`transformers` CLI not found next to {sys.executable}")
    missing = [mod for mod in ("fastapi", "uvicorn") if importlib.util.find_spec(mod) is None]
    if missing:
        raise ServerUnavailable(
            f"`transformers serve` needs {', '.join(missing)}: install transformers[serving]"
        )
    return cli


def _probe_chat_completion(url: str, model: str, timeout: float) -> None:
    """Send one tiny chat completion; return if it succeeds, raise otherwise.

    Chat completions are probed rather than ``/v1/models``, which answers 500
    for a local directory (it scans the Hub cache), and rather than ``/health``,
    which says nothing about whether the model can actually generate.
    """
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    ).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    # urlopen raises HTTPError for any 4xx/5xx, so returning means success.
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()


def _wait_until_serving(
    proc: subprocess.Popen[bytes], url: str, model: str, log_path: Path, timeout: float
) -> None:
    """Poll ``url`` with a tiny chat completion until it succeeds.

    Raises RuntimeError with the log tail if the process exits, the request is
    rejected outright (4xx) or ``timeout`` seconds pass.
    """
    deadline = time.monotonic() + timeout
    last_error = "no attempt yet"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"transformers serve exited with {proc.returncode} during start-up:\n"
                f"{_log_tail(log_path)}"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeError(
                f"transformers serve not ready after {timeout:.0f}s (last probe: {last_error}):\n"
                f"{_log_tail(log_path)}"
            )
        try:
            _probe_chat_completion(url, model, timeout=min(remaining, 60.0))
            return
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            if 400 <= exc.code < 500:
                # The request itself is refused (e.g. a model name other than the
                # pinned one): waiting longer cannot help.
                raise RuntimeError(
                    f"transformers serve rejected the probe with HTTP {exc.code}: {detail}\n"
                    f"{_log_tail(log_path)}"
                ) from exc
            last_error = f"HTTP {exc.code}: {detail[:200]}"
        except (OSError, http.client.HTTPException) as exc:  # e.g. refused while loading
            last_error = repr(exc)
        time.sleep(0.5)


def _stop_process_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group (workers included), SIGKILL after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break  # the whole group is already gone
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.wait()  # reap the leader if it died on its own


@contextlib.contextmanager
def openai_compatible_server(
    model_dir: str | Path, *, startup_timeout: float = 240.0
) -> Iterator[str]:
    """Serve ``model_dir`` with ``transformers serve`` on a free loopback port, on CPU.

    Yields the base URL ``http://127.0.0.1:PORT/v1``. The server is pinned to the
    model: clients must send ``model=str(model_dir)`` (the same string passed
    here); any other name is rejected with HTTP 400.
    """
    cli = _transformers_cli()
    model = str(model_dir)
    port = _free_port()
    base_url = f"http://{LOOPBACK}:{port}/v1"
    # No network here: fail fast instead of trying to reach the Hub.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # The model is positional (FORCE_MODEL): it is loaded before the port opens,
    # so the first successful request also means the weights are in memory.
    command = [str(cli), "serve", model, "--host", LOOPBACK, "--port", str(port), "--device", "cpu"]

    with tempfile.TemporaryDirectory(prefix="pytest-transformers-serve-") as tmp:
        log_path = Path(tmp) / "serve.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # own process group, so cleanup reaches every child
            )
        try:
            _wait_until_serving(proc, f"{base_url}/chat/completions", model, log_path, startup_timeout)
            yield base_url
        finally:
            _stop_process_group(proc)


@contextlib.contextmanager
def vllm_completions_server(model: Any, tokenizer: Any) -> Iterator[tuple[str, list[dict]]]:
    """Serve a loaded transformers model with the part of vLLM's HTTP API TRL's ``VLLMClient`` uses.

    vLLM needs a GPU, so this in-process server on a free loopback port stands in for
    ``trl vllm-serve``: ``GET /health``, ``/v1/models``, ``/server_info`` and ``POST /v1/completions``
    with token-id prompts, ``n``, temperature, top_p, ``max_tokens`` and ``logprobs``
    (the sampled token's log-prob after temperature, vLLM's ``processed_logprobs``),
    answering with ``prompt_token_ids`` / ``token_ids`` as vLLM's ``return_token_ids``
    does. Yields the base URL and the list of completion requests it has answered.
    """
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import torch

    requests: list[dict] = []
    lock = threading.Lock()  # one generation at a time

    def complete(prompt_ids: list[int], body: dict) -> dict:
        temperature = float(body.get("temperature", 1.0))
        sampling = {"do_sample": True, "temperature": temperature, "top_p": float(body.get("top_p", 1.0)), "top_k": 0}
        with lock, torch.no_grad():
            output = model.generate(
                torch.tensor([prompt_ids]),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=int(body.get("max_tokens", 16)),
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                output_scores=True,
                return_dict_in_generate=True,
                **(sampling if temperature > 0 else {"do_sample": False}),
            )
            logps = model.compute_transition_scores(output.sequences, output.scores, normalize_logits=True)[0]
        token_ids = output.sequences[0, len(prompt_ids):].tolist()
        logprobs = None
        if body.get("logprobs") is not None:
            logprobs = {
                "tokens": [f"token_id:{token}" for token in token_ids],
                "token_logprobs": logps[: len(token_ids)].tolist(),
                "top_logprobs": [None] * len(token_ids),
            }
        return {"prompt_token_ids": prompt_ids, "token_ids": token_ids, "logprobs": logprobs}

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/") == "/health":
                self._reply(200, {})
            elif self.path.startswith("/server_info"):  # vLLM's dev endpoint; TRL checks the logprobs mode
                self._reply(200, {"vllm_config": {"model_config": {"logprobs_mode": "processed_logprobs"}}})
            elif self.path == "/v1/models":
                self._reply(200, {"data": [{"id": "served-policy"}]})
            else:
                self._reply(404, {"error": self.path})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/completions" or not all(isinstance(p, list) for p in body.get("prompt", [None])):
                self._reply(400, {"error": f"expected token-id prompts on /v1/completions, got {self.path}"})
                return
            choices = [complete(prompt, body) for prompt in body["prompt"] for _ in range(int(body.get("n", 1)))]
            requests.append({**body, "choices": choices})
            self._reply(200, {"choices": choices})

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
