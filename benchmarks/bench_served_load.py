"""Four users running the served graphs at once, with PostgreSQL stopped and restarted mid-run.

A real ``langgraph dev`` on loopback with authentication on (a token per user), the embedded
SmolLM2-135M greedy with small budgets, and a throw-away PostgreSQL cluster holding the graphs'
memories (``MEMAGENT_STORE_URL``). Each user sends ``--runs-per-user`` runs at once, round-robin
over MemAgent, SUMER, AgeMem and LangMem; every document holds a secret number of its user alone.

- **load**: the runs, nothing stopped;
- **fault**: as many new runs; PostgreSQL is stopped once ``--stop-after`` of them have completed
  (the others are mid-run, reading and writing memories) and started ``--outage`` seconds later;
  the runs that failed are then re-run once.

After each phase every row of PostgreSQL's store is read back: its namespace must start with its
user and hold no other user's secret, and no run's output may hold another user's secret; the
items stored before the stop must all be there after the restart. The servers are the tests'
own throw-away ones (``tests/servers.py``). Writes ``results/<out>.json`` and a timeline figure.

    python -m benchmarks.bench_served_load
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import RESULTS_DIR, median, write_result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the throw-away servers of the tests
from servers import langgraph_dev_server, postgres_cluster  # noqa: E402

FIGURES_DIR = RESULTS_DIR.parent / "figures"
GRAPHS = ("memagent", "sumer", "agemem", "langmem")
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. "
BUDGET = {"MEMAGENT_CHUNK_TOKENS": "120", "MEMAGENT_MEMORY_TOKENS": "32", "MEMAGENT_ANSWER_TOKENS": "16"}


def plan_runs(users: list[str], runs_per_user: int, phase: str, rng: random.Random) -> list[dict[str, Any]]:
    """Each user's runs, round-robin over the graphs, each document with a secret of its own."""
    runs = []
    for user in users:
        for number in range(runs_per_user):
            secret = str(rng.randrange(1_000_000, 10_000_000))
            document = FILLER * 4 + f"{user.capitalize()}'s secret number is {secret}. " + FILLER * 4
            runs.append({"user": user, "graph": GRAPHS[number % len(GRAPHS)], "phase": phase, "secret": secret,
                         "input": {"question": f"What is {user.capitalize()}'s secret number?", "document": document}})
    return runs


def error_line(result: dict[str, Any]) -> str | None:
    error = result.get("__error__")
    return None if error is None else f"{error.get('error')}: {error.get('message')}"


async def run_one(client: Any, run: dict[str, Any], origin: float) -> None:
    """One stateless run through the SDK; its outcome and times go into ``run``."""
    context = {"user_id": run["user"]} if run["graph"] == "agemem" else None  # AgeMem's memory: the user's own
    run["started_s"] = time.monotonic() - origin
    try:
        result = await client.runs.wait(None, run["graph"], input=run["input"], context=context, raise_error=False)
        run["error"] = error_line(result)
        run["output"] = result
    except Exception as error:  # noqa: BLE001 - an HTTP failure is an outcome to record
        run["error"], run["output"] = f"{type(error).__name__}: {error}", {}
    run["ended_s"] = time.monotonic() - origin


async def run_phase(clients: dict[str, Any], runs: list[dict[str, Any]], origin: float,
                    drill_after: tuple[int, Any] | None = None) -> None:
    """The runs at once; ``drill_after=(n, drill)`` runs ``drill`` in a thread once ``n`` runs have completed."""
    tasks = {asyncio.create_task(run_one(clients[run["user"]], run, origin)) for run in runs}
    if drill_after is not None:
        after, drill = drill_after
        pending, completed = tasks, 0
        while completed < after and pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            completed += len(done)
        await asyncio.to_thread(drill)  # the other runs go on meanwhile
    await asyncio.gather(*tasks)


def stored_rows(url: str) -> list[tuple[str, str, str]]:
    """Every item of the PostgresStore: (namespace as stored, key, value as text)."""
    import psycopg

    with psycopg.connect(url) as connection:
        return [(prefix, key, json.dumps(value)) for prefix, key, value in connection.execute("SELECT prefix, key, value FROM store")]


def isolation(runs: list[dict[str, Any]], rows: list[tuple[str, str, str]], users: list[str]) -> dict[str, int]:
    """Counts of items outside their user's namespace and of secrets seen by another user."""
    secrets = {run["secret"]: run["user"] for run in runs}
    foreign_outputs = sum(
        1 for run in runs for secret, owner in secrets.items() if owner != run["user"] and secret in json.dumps(run["output"])
    )
    outside = sum(1 for prefix, _, _ in rows if prefix.split(".")[0] not in users)
    foreign_items = sum(
        1 for prefix, _, value in rows for secret, owner in secrets.items() if owner != prefix.split(".")[0] and secret in value
    )
    return {"outputs_holding_another_users_secret": foreign_outputs, "items_outside_a_user_namespace": outside,
            "items_holding_another_users_secret": foreign_items}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [run for run in runs if run["error"] is None]
    return {
        "runs": len(runs), "completed": len(done), "failed": len(runs) - len(done),
        "errors": sorted({run["error"].splitlines()[0][:300] for run in runs if run["error"]}),
        "multi_line_errors": sum(1 for run in runs if run["error"] and "\n" in run["error"].strip()),
        "wall_s": round(max(run["ended_s"] for run in runs) - min(run["started_s"] for run in runs), 1),
        "median_s_by_graph": {graph: round(median([r["ended_s"] - r["started_s"] for r in done if r["graph"] == graph]), 1)
                              for graph in GRAPHS if any(r["graph"] == graph for r in done)},
        "answered_right": sum(1 for run in done if run["secret"] in str(run["output"].get("answer"))),
    }


def plot(phases: dict[str, list[dict[str, Any]]], outage: tuple[float, float] | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(phases), figsize=(6 * len(phases), 5), squeeze=False)
    colors = {"ok": "tab:green", "failed": "tab:red", "re-run ok": "tab:blue", "re-run failed": "black"}
    for axis, (phase, runs) in zip(axes[0], phases.items()):
        for row, run in enumerate(sorted(runs, key=lambda r: (r["user"], r["started_s"]))):
            kind = ("re-run " if run.get("rerun") else "") + ("ok" if run["error"] is None else "failed")
            axis.plot([run["started_s"], run["ended_s"]], [row, row], color=colors[kind], linewidth=3)
        if phase == "fault" and outage:
            axis.axvspan(*outage, color="tab:orange", alpha=0.25, label="PostgreSQL down")
        for kind, color in colors.items():
            axis.plot([], [], color=color, linewidth=3, label=kind)
        axis.set(title=f"{phase}: {len(runs)} runs", xlabel="seconds since the phase began", ylabel="run (by user)")
        axis.legend(loc="lower right", fontsize=8)
    fig.suptitle("Served graphs, 4 users, langgraph dev + PostgreSQL memory store (embedded SmolLM2-135M)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=4, help="users, each with a token of their own (default 4)")
    parser.add_argument("--runs-per-user", type=int, default=8, help="runs each user sends at once, per phase (default 8)")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds PostgreSQL stays down in the fault phase (default 30)")
    parser.add_argument("--stop-after", type=int, default=4, help="fault phase: runs completed before PostgreSQL stops (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the secrets (default 0)")
    parser.add_argument("--out", default="served_load", help="result name under benchmarks/results/ (default served_load)")
    args = parser.parse_args(argv)
    for option in ("users", "runs_per_user", "stop_after"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be a positive integer, got {getattr(args, option)}")
    if args.outage <= 0:
        parser.error(f"--outage must be a positive number of seconds, got {args.outage}")
    from langgraph_sdk import get_client

    users = [f"user{number}" for number in range(1, args.users + 1)]
    tokens = {user: f"{user}-token-{random.Random(number).getrandbits(96):024x}" for number, user in enumerate(users)}
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="served-load-") as workdir, postgres_cluster() as cluster:
        Path(workdir, "tokens.txt").write_text("".join(f"{user} {token}\n" for user, token in tokens.items()))
        env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "MEMAGENT_MODEL": "smollm2-135m", "MEMAGENT_TEMPERATURE": "0", **BUDGET,
               "MEMAGENT_STORE_URL": cluster.url, "MEMAGENT_AUTH_TOKENS_FILE": str(Path(workdir, "tokens.txt"))}
        with langgraph_dev_server(Path(workdir), env) as url:
            load = plan_runs(users, args.runs_per_user, "load", rng)
            fault = plan_runs(users, args.runs_per_user, "fault", rng)
            outage: list[float] = []
            before_stop: set[tuple[str, str]] = set()

            async def phases() -> list[dict[str, Any]]:
                # One event loop for every phase: the SDK's connections belong to the loop that opened them.
                clients = {user: get_client(url=url, timeout=3600, headers={"Authorization": f"Bearer {token}"})
                           for user, token in tokens.items()}
                print(f"load: {len(load)} runs", file=sys.stderr)
                await run_phase(clients, load, time.monotonic())
                print(f"fault: {len(fault)} runs, PostgreSQL down for {args.outage:.0f} s once {args.stop_after} have completed",
                      file=sys.stderr)
                origin = time.monotonic()

                def drill() -> None:
                    before_stop.update((prefix, key) for prefix, key, _ in stored_rows(cluster.url))
                    outage.append(time.monotonic() - origin)
                    cluster.stop()
                    time.sleep(args.outage)
                    cluster.start()
                    outage.append(time.monotonic() - origin)

                await run_phase(clients, fault, origin, drill_after=(args.stop_after, drill))
                reruns = [{**run, "rerun": True} for run in fault if run["error"] is not None]
                if reruns:
                    print(f"fault: re-running {len(reruns)} failed runs", file=sys.stderr)
                    await run_phase(clients, reruns, origin)
                return reruns

            reruns = asyncio.run(phases())
            rows = stored_rows(cluster.url)
    phases_run = {"load": load, "fault": fault + reruns}
    after = {(prefix, key) for prefix, key, _ in rows}
    every_run = load + fault + reruns
    result = {
        "settings": {**vars(args), "graphs": GRAPHS, "budget": BUDGET, "model": "smollm2-135m (greedy)"},
        "load": summary(load),
        "fault": {**summary(fault), "outage_s": [round(t, 1) for t in outage],
                  "reruns": summary(reruns) if reruns else None},
        "isolation": isolation(every_run, rows, users),
        "memory": {"items_before_stop": len(before_stop), "items_lost_after_restart": len(before_stop - after), "items_at_end": len(after)},
    }
    figure = FIGURES_DIR / f"{args.out}.png"
    plot(phases_run, tuple(outage) if len(outage) == 2 else None, figure)
    result["figure"] = f"benchmarks/figures/{figure.name}"
    path = write_result(args.out, result)
    print(json.dumps({key: result[key] for key in ("load", "fault", "isolation", "memory")}, indent=2))
    print(f"wrote {path} and {figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
