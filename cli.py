"""The ``memagent`` command: ``memagent demo``, ``memagent run``, ``memagent compare`` and ``memagent train``.

Bad input gives one line on stderr and a non-zero exit (2 for bad arguments or files,
1 when the model or server fails), never a traceback.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import sys
import time
from contextlib import ExitStack
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Sequence

PROG = "memagent"


class CliError(Exception):
    """A user-facing error: printed as one line, exit code attached."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _read_document(path: str) -> tuple[str, str | None]:
    """The file's text and, if it was not UTF-8, a note on the replaced bytes."""
    file = Path(path)
    if not file.is_file():
        raise CliError(f"document file {path!r} does not exist or is not a regular file")
    try:
        raw = file.read_bytes()
    except OSError as error:
        raise CliError(f"cannot read document file {path!r}: {error.strerror or error}") from error
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as error:
        text = raw.decode("utf-8", errors="replace")
        replaced = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
        return text, (
            f"{path!r} is not valid UTF-8 (first bad byte at offset {error.start}); "
            f"decoded with {replaced} replacement character(s)"
        )


def _model(args: argparse.Namespace) -> Any:
    from .agents import load_chat_model
    from .agents.loading import EMBEDDED_MODELS

    options: dict[str, Any] = {}
    if args.temperature is not None:
        options["temperature"] = args.temperature
    if args.top_p is not None:
        options["top_p"] = args.top_p
    if args.base_url:
        options["base_url"] = args.base_url
    if args.api_key:
        options["api_key"] = args.api_key
    if args.model.split(":", 1)[0] in ("vllm", "openai"):
        options.update(timeout=args.timeout, max_retries=args.max_retries)
    lookup = args.prompt_lookup
    local_flags = (("--quantization", args.quantization), ("--compile-decode", args.compile_decode), ("--prompt-lookup", lookup is not None), ("--adapter", args.adapter))
    for flag, given in local_flags:
        if given and not (args.model in EMBEDDED_MODELS or args.model.startswith("hf:")):
            raise CliError(f"{flag} applies to local models ({', '.join(EMBEDDED_MODELS)}, hf:<dir>), not {args.model!r}")
    if args.quantization:
        options["quantization"] = None if args.quantization == "none" else args.quantization
    if args.compile_decode:
        options["compile_decode"] = True
    if args.adapter:
        options["adapter"] = args.adapter
    if lookup is not None:
        options["prompt_lookup_num_tokens"] = lookup
    try:
        return load_chat_model(args.model, **options)
    except (ValueError, ImportError, RuntimeError) as error:
        raise CliError(str(error)) from error


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def run_with_progress(graph: Any, payload: dict | None, config: dict, *, show_memory: bool = True) -> dict:
    """Stream a MemAgent run with a progress bar over chunks; return the final state values."""
    from tqdm import tqdm

    bar = None
    with ExitStack() as stack:
        for update in graph.stream(payload, config, stream_mode="updates"):
            for node, values in update.items():
                if not isinstance(values, dict):
                    continue
                if node == "chunk_document" or (bar is None and "chunks_read" in values):
                    total = values.get("num_chunks") or graph.get_state(config).values.get("num_chunks")
                    bar = stack.enter_context(tqdm(total=total, unit="chunk", desc="reading", file=sys.stderr))
                    bar.update(values.get("chunks_read", 0) - (1 if node == "update_memory" else 0))
                if node == "update_memory":
                    bar.update(1)
                    memory = values["memory"]
                    if not memory:
                        bar.write(f"warning: the model returned an empty memory after chunk {values['chunks_read']}", file=sys.stderr)
                    elif show_memory:
                        bar.write(f"[chunk {values['chunks_read']}/{bar.total}] memory: {_short(memory)}", file=sys.stderr)
    return graph.get_state(config).values


def _tokenizer_hint(args: argparse.Namespace, error: Exception) -> str:
    """The error text, plus the command-line spelling when a tokenizer is missing."""
    message = str(error)
    if args.tokenizer is None and message.startswith("no tokenizer"):
        message += "; on the command line: --tokenizer DIR|NAME|tiktoken:<encoding>"
    return message


def _build_graph(args: argparse.Namespace, model: Any, checkpointer: Any) -> Any:
    from .graphs.options import default_graph_options
    from .graphs.registry import build_graph

    budget = {name: getattr(args, name) for name in ("chunk_tokens", "memory_tokens", "answer_tokens", "final_prompt")}
    try:
        return build_graph("memagent", model, replace(default_graph_options(args.model), **budget), args.tokenizer, checkpointer=checkpointer)
    except (ValueError, TypeError) as error:
        raise CliError(_tokenizer_hint(args, error)) from error


def _thread_plan(state: Any, thread_id: str, input_digest: str, *, restart: bool) -> str:
    """``"start"``, ``"resume"`` or ``"stored"`` (a finished run of these inputs) for a checkpoint thread.

    An unfinished run resumes only with the inputs that started it: another question or
    document on its thread is refused, never answered from the old run's memory.
    """
    same_inputs = (state.metadata or {}).get("memagent_input") == input_digest
    if restart:
        if state.created_at is not None:
            print(f"restarting thread {thread_id}: its earlier run is discarded", file=sys.stderr)
        return "start"
    if state.next and not same_inputs:
        raise CliError(
            f"thread {thread_id!r} holds an unfinished run of another question, document or settings; re-run with "
            "that run's inputs to resume it, pass --restart to discard it, or choose another --thread-id"
        )
    if state.next:
        print(f"resuming thread {thread_id} at {state.next[0]}", file=sys.stderr)
        return "resume"
    if same_inputs and "response" in state.values:
        print(f"thread {thread_id} already answered this question about this document: its stored result, no model "
              "call made (--restart runs it again)", file=sys.stderr)
        return "stored"
    return "start"


def _execute(args: argparse.Namespace, question: str, document: str, stack: ExitStack) -> tuple[dict, float]:
    """Run (or resume) one question over one document; returns final values (with the decoding used) and seconds."""
    from langgraph.checkpoint.memory import InMemorySaver

    from .agents import describe_decoding

    if not args.checkpoint and (args.thread_id or args.restart):
        flag = "--thread-id" if args.thread_id else "--restart"
        raise CliError(f"{flag} needs --checkpoint DB: without a checkpoint file no thread outlives the run")
    model = _model(args)
    if args.checkpoint:
        from .agents.extras import needs_extra

        with needs_extra("serve", "--checkpoint (a SQLite checkpoint file)"):
            from langgraph.checkpoint.sqlite import SqliteSaver

        try:
            checkpointer = stack.enter_context(SqliteSaver.from_conn_string(args.checkpoint))
        except sqlite3.Error as error:
            raise CliError(f"cannot open checkpoint file {args.checkpoint!r}: {error}") from error
    else:
        checkpointer = InMemorySaver()
    graph = _build_graph(args, model, checkpointer)
    decoding = describe_decoding(getattr(model, "temperature", None), getattr(model, "top_p", None))
    # The run's inputs and settings, recorded in the metadata of every checkpoint it writes: a
    # thread resumes only with the inputs that started it, never with another question or document.
    settings = [question, args.model, args.tokenizer, args.chunk_tokens, args.memory_tokens, args.answer_tokens, args.final_prompt, decoding]
    quantization = getattr(model, "quantization", None)
    settings += [quantization] if quantization else []  # float32: the digests of earlier runs stay valid
    settings += ["compile_decode"] if getattr(model, "compile_decode", False) else []  # its logits differ in rounding
    settings += [f"prompt_lookup_{lookup}"] if (lookup := getattr(model, "prompt_lookup_in_use", 0)) else []  # so do a checked draft's
    input_digest = hashlib.sha256((json.dumps(settings) + document).encode()).hexdigest()
    thread_id = args.thread_id or input_digest[:16]  # same inputs -> same thread: re-running resumes
    config = {"configurable": {"thread_id": thread_id}, "metadata": {"memagent_input": input_digest}}
    try:
        state = graph.get_state(config)
    except sqlite3.Error as error:
        raise CliError(f"cannot use checkpoint file {args.checkpoint!r}: {error}") from error
    plan = _thread_plan(state, thread_id, input_digest, restart=args.restart)
    if plan == "stored":
        return {**state.values, "decoding": decoding}, 0.0
    payload = None if plan == "resume" else {"question": question, "document": document}
    from .graphs import ModelCallError

    started = time.perf_counter()
    try:
        values = run_with_progress(graph, payload, config, show_memory=not args.quiet)
    except ValueError as error:
        raise CliError(str(error)) from error
    except ModelCallError as error:
        hint = f" (resume with --checkpoint {args.checkpoint} --thread-id {thread_id})" if args.checkpoint else ""
        raise CliError(f"{error}{hint}", code=1) from error
    return {**values, "decoding": decoding}, time.perf_counter() - started


def _report(values: dict, seconds: float, gold: list[str] | None = None) -> dict:
    usage = values.get("usage", {})
    print(f"answer: {values.get('answer')!r}")
    if values.get("answer") is None:
        # The reply may still hold the right text: string_match_all scores the raw reply, not the answer.
        print(f"(the reply holds no answer in the format the final prompt asks for; raw reply: {_short(values.get('response', ''), 300)!r})")
    report = {
        "answer": values.get("answer"),
        "response": values.get("response"),
        "chunks_read": values.get("chunks_read"),
        "empty_memory_updates": values.get("empty_memory_updates"),
        "usage": usage,
        "decoding": values.get("decoding"),
        "seconds": round(seconds, 2),
    }
    if gold is not None:
        from .evals.scoring import score

        report["gold"] = gold
        report["score"] = {
            "sub_exact_match": score(values.get("answer"), gold, "sub_exact_match"),
            "string_match_all": score(values.get("response"), gold, "string_match_all"),
            "strict_boxed": score(values.get("response"), gold, "strict_boxed"),
        }
        print(f"gold:   {gold!r}")
        print("score:  " + ", ".join(f"{k} {v:.2f}" for k, v in report["score"].items()))
    print(
        f"cost:   {values.get('chunks_read')} chunks, {usage.get('llm_calls')} LLM calls, "
        f"{usage.get('input_tokens')} prompt + {usage.get('output_tokens')} completion tokens, {seconds:.1f} s"
    )
    print(f"decoding: {values.get('decoding')}")
    if values.get("empty_memory_updates"):
        print(f"note:   the model returned an empty memory {values['empty_memory_updates']} time(s)")
    return report


def _fill_budget(args: argparse.Namespace) -> None:
    """Budget flags left unset take the model's defaults, as ``memagent compare`` does."""
    from .graphs.options import default_graph_options

    defaults = default_graph_options(args.model)
    for name in ("chunk_tokens", "memory_tokens", "answer_tokens", "final_prompt"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(defaults, name))


def cmd_run(args: argparse.Namespace) -> int:
    _fill_budget(args)
    question = (args.question or "").strip()
    if not question:
        raise CliError("--question must be a non-empty question")
    document, note = _read_document(args.document)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    if not document.strip():
        raise CliError(f"document file {args.document!r} is empty (nothing to read)")
    with ExitStack() as stack:
        values, seconds = _execute(args, question, document, stack)
    report = _report(values, seconds)
    if args.json:
        print(json.dumps(report))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .agents import resolve_tokenizer
    from .evals.ruler import niah_single_1

    _fill_budget(args)
    model = _model(args)
    try:
        codec = resolve_tokenizer(args.tokenizer, model)
    except (ValueError, TypeError) as error:
        raise CliError(_tokenizer_hint(args, error)) from error
    sample = niah_single_1(codec, args.tokens, seed=args.seed)
    print(
        f"demo: needle-in-a-haystack, {args.tokens} tokens (the embedded model's window is 8192), "
        f"needle at depth {sample.meta['depth']:.0%}, {args.chunk_tokens}-token chunks, {args.memory_tokens}-token memory"
    )
    print(f"question: {sample.question}")
    with ExitStack() as stack:
        values, seconds = _execute(args, sample.question, sample.document, stack)
    _report(values, seconds, gold=sample.answers)
    return 0


def _number(kind: type, *, low: float, low_open: bool = False, high: float | None = None, what: str) -> Any:
    """An argparse type: ``kind`` within bounds, else a message naming the value and what was expected."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low or (low_open and value == low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """The model flags every command shares (read back by :func:`_model`)."""
    from .agents.prompt_lookup import DRAFT_TOKENS

    group = parser.add_argument_group("model")
    group.add_argument("--model", default="smollm2-135m", help="smollm2-135m | smollm2-135m-memagent (with the trained MemAgent adapter) | hf:<dir> | vllm:<model> | openai:<model> | vllm-engine:<model> (default: %(default)s)")
    group.add_argument("--base-url", help="OpenAI-compatible endpoint for vllm:/openai: models, e.g. http://127.0.0.1:8000/v1")
    group.add_argument("--api-key", help="API key for openai: models (vllm: defaults to EMPTY)")
    group.add_argument("--tokenizer", help="tokenizer for exact token counts (chunking, sample lengths): a local dir/name or tiktoken:<encoding> (default: the model's own)")
    group.add_argument(
        "--temperature",
        type=_number(float, low=0.0, what="a temperature >= 0 (0 = greedy)"),
        help="sampling temperature, 0 = greedy (default: the model's own: greedy for smollm2-135m, the generation config "
        "for hf:, the server's for vllm:/openai:). --temperature 0.7 alone is the MemAgent paper's evaluation sampling",
    )
    group.add_argument(
        "--top-p", type=_number(float, low=0.0, low_open=True, high=1.0, what="a top_p in (0, 1]"), help="nucleus sampling mass (default: the generation config's, else the MemAgent paper's 0.95; servers: their own)"
    )
    group.add_argument("--timeout", type=_number(float, low=0.0, low_open=True, what="a positive number of seconds"), default=600.0, help="seconds per server request before it counts as failed (default: %(default)s)")
    group.add_argument("--max-retries", type=_number(int, low=0, what="a whole number of retries >= 0"), default=2, help="retries per server request (default: %(default)s)")
    group.add_argument(
        "--adapter", metavar="DIR",
        help="local models: a LoRA adapter directory (memagent train --finetuning lora's --output_dir) merged into the "
        "weights at load; float32 unless --quantization int4 (which rounds the merged weights to 4 bits); MemAgent then "
        "decodes its answer freely, as the trainer's rollouts do",
    )
    group.add_argument(
        "--quantization", choices=("int4", "none"),
        help="local models, CPU: int4 runs the Linear layers from 4-bit codes (for smollm2-135m its GGUF's own Q4_1 codes, "
        "so the weights are unchanged; kernel inputs in bfloat16), about 3x faster decoding at the same accuracy "
        "(BENCHMARKS.md section 10); none keeps float32 (default: int4 for smollm2-135m, none for hf: and with --adapter)",
    )
    group.add_argument(
        "--compile-decode", action="store_true",
        help="local int4 models, CPU: run the decode step compiled ahead of time (AOTInductor), 1.3-1.5x the eager "
        "step at batch 1 on 2 cores, after a one-off compile of 1-2 min per kind of batch (one row or several, padded "
        "or not; kept in the cache folder); logits close to the eager step's, not bit for bit (greedy accuracy: "
        "BENCHMARKS.md section 10)",
    )
    group.add_argument(
        "--prompt-lookup", type=_number(int, low=0, what="a whole number of draft tokens >= 0"), metavar="TOKENS",
        help="local int4 models: a greedy call decoded alone drafts up to TOKENS tokens from its own prompt and checks "
        "them in one forward (prompt lookup decoding; MemAgent's memory updates mostly copy their memory); 0 turns it "
        f"off (default: {DRAFT_TOKENS})",
    )


def add_graph_options(target: Any, names: Sequence[str] | None = None, note: str | None = None) -> None:
    """Flags for the graphs' options (graphs.options), made from their help and paper defaults: ``names`` added to
    ``target`` (a parser or a group), or every option in one group per graph of the parser ``target`` (a graph's own
    options; one several graphs share under the first), ``note`` describing the first group."""
    from .graphs.options import graph_sections, option_flags

    if names is not None:
        for spellings, keywords in option_flags(tuple(names)):
            target.add_argument(*spellings, **keywords)
        return
    for index, (graph, own) in enumerate(graph_sections().items()):
        group = target.add_argument_group(f"graph options: {graph}", note if index == 0 else None)
        for spellings, keywords in option_flags(own):
            group.add_argument(*spellings, **keywords)


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    add_backend_options(parser)
    group = parser.add_argument_group(
        "MemAgent",
        "Token budgets default to 1000/128/64 (chunk/memory/answer) for smollm2-135m, which ran every 1024-token memory update to its limit, "
        "and to the MemAgent paper's 5000/1024/1024 for other models.",
    )
    add_graph_options(group, ("chunk_tokens", "memory_tokens", "answer_tokens", "final_prompt"))
    group.add_argument("--checkpoint", metavar="DB", help="SQLite checkpoint file; an interrupted run resumes when re-run with the same inputs")
    group.add_argument(
        "--thread-id", help="checkpoint thread id (default: derived from the inputs); a thread resumes only with the inputs that started it"
    )
    group.add_argument("--restart", action="store_true", help="discard the thread's earlier run (unfinished or finished) and run afresh")
    group.add_argument("--quiet", action="store_true", help="do not print each memory update")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="MemAgent memory agents for very long inputs, on LangGraph.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="needle-in-a-haystack demo on the embedded SmolLM2-135M (no network)",
        description="Generate a ~16K-token needle-in-a-haystack document (twice the embedded model's "
        "8K window) and answer it with MemAgent, showing every memory update. Greedy decoding by default.",
    )
    demo.add_argument("--tokens", type=_number(int, low=1, what="a positive number of tokens"), default=16_000, help="document length in tokens (default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the generated document (default: %(default)s)")
    _add_model_options(demo)
    demo.set_defaults(handler=cmd_demo, temperature=0.0)
    run = commands.add_parser(
        "run",
        help="answer a question about a document file",
        description="Answer --question about --document with MemAgent.",
    )
    run.add_argument("--question", required=True, help="the question to answer")
    run.add_argument("--document", required=True, metavar="FILE", help="text file to read (UTF-8; other bytes are replaced, with a warning)")
    run.add_argument("--json", action="store_true", help="also print the result as one JSON line")
    _add_model_options(run)
    run.set_defaults(handler=cmd_run)
    add_compare_parser(commands)
    # Listed here for `memagent --help`; main() hands everything after `train` to the trainer.
    commands.add_parser("train", help=TRAIN_HELP, add_help=False)
    return parser


# memagent compare -------------------------------------------------------------------------------


def add_compare_parser(commands: Any) -> argparse.ArgumentParser:
    """Register ``memagent compare`` on the CLI's sub-parsers."""
    from .graphs.registry import GRAPHS

    parser = commands.add_parser(
        "compare",
        help="compare graphs (MemAgent, full context, RAG, ...) on the same samples across lengths",
        description="Run every graph on the same samples (generated tasks at several lengths, or --data files), "
        "resumably, and write accuracy and cost tables (markdown, CSV) and plots to --out.",
    )
    what = parser.add_argument_group("what to compare")
    what.add_argument("--graphs", default="memagent,full_context,rag", help=f"comma-separated graphs, from: {', '.join(GRAPHS)} (default: %(default)s)")
    what.add_argument("--task", help="generated task(s), comma-separated (default: niah_single_1)")
    what.add_argument("--lengths", help="generated lengths in tokens, e.g. 4k,8k,16k,32k (4k = 4096; default: 4k,8k,16k,32k)")
    what.add_argument("--samples", type=int, default=8, help="generated samples per task and length (default: %(default)s)")
    what.add_argument("--seed", type=int, default=0, help="seed of the generated samples (default: %(default)s)")
    what.add_argument("--data", metavar="FILES", help="data files instead of --task/--lengths: comma list and/or globs, e.g. 'eval_*.json'")
    what.add_argument("--pool", metavar="FILE", help="with --data: document pool for MemAgent eval files whose 'context' holds document indices")
    what.add_argument("--num-docs", type=int, help="with --data: documents per question when building RULER-HotpotQA / RULER-SQuAD from HotpotQA or SQuAD files")
    what.add_argument("--include-adversarial", action="store_true", help="with --data: keep LoCoMo's category-5 (adversarial) questions")
    what.add_argument("--limit", type=int, help="with --data: a seeded random subset of at most N records per file (default: all)")
    what.add_argument("--judge", metavar="MODEL", help="LoCoMo: model spec of the LLM judge (J); default: F1 and BLEU-1 only")
    run = parser.add_argument_group("run")
    run.add_argument("--out", default="results", metavar="DIR", help="output directory; re-running resumes (default: %(default)s)")
    run.add_argument(
        "--concurrency", type=int, default=8,
        help="samples in flight at once; wall times in the report depend on it, as those samples share the model, "
        "and the report says which was used (default: %(default)s)",
    )
    run.add_argument("--retry-errors", action="store_true", help="re-run samples that recorded an error")
    run.add_argument("--context-window", type=int, help="model window in tokens: drawn in the plots, and a server's graphs fit their prompts to it (default: a local model's own)")
    run.add_argument("--flops-model", help="model for FLOP estimates: a preset (qwen2.5-7b, qwen2.5-14b, smollm2-135m) or a model dir (default: the model's own, if known)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_options(parser)
    add_graph_options(parser, note="Defaults: the demo's budget for smollm2-135m, the papers' otherwise. A flag sets the option in "
                      "every graph that reads it (one that no compared graph reads is refused); the underscore spelling (--chunk_tokens) is the trainer's and works too.")
    parser.set_defaults(handler=cmd_compare)
    return parser


def config_from_args(args: argparse.Namespace) -> Any:
    """A :class:`~langgraph_memagent.evals.harness.ComparisonConfig` from parsed ``memagent compare`` arguments."""
    from .evals.harness import ComparisonConfig
    from .evals.lengths import ComparisonError, parse_lengths
    from .graphs.options import default_graph_options

    if args.data and (args.task or args.lengths):
        raise ComparisonError("--data replaces --task and --lengths: give either --data or --task/--lengths, not both")
    given = [
        flag
        for flag, value in (("--pool", args.pool), ("--num-docs", args.num_docs), ("--include-adversarial", args.include_adversarial), ("--limit", args.limit))
        if value
    ]
    if given and not args.data:
        raise ComparisonError(f"{', '.join(given)} only apply to --data files")
    graphs = tuple(name.strip() for name in args.graphs.split(",") if name.strip())
    options = default_graph_options(args.model)
    given = {f.name: getattr(args, f.name) for f in fields(options) if getattr(args, f.name) is not None}
    _refuse_unread_options(given, graphs)
    options = replace(options, **given)
    return ComparisonConfig(
        graphs=graphs,
        task=tuple(t.strip() for t in (args.task or "niah_single_1").split(",") if t.strip()),
        lengths=tuple(parse_lengths(args.lengths or "4k,8k,16k,32k")),
        samples=args.samples,
        seed=args.seed,
        data=(args.data,) if args.data else (),
        data_options={
            name: value
            for name, value in (("pool", args.pool), ("num_docs", args.num_docs), ("include_adversarial", args.include_adversarial or None))
            if value is not None
        },
        out=args.out,
        model=args.model,
        tokenizer=args.tokenizer,
        graph_options=options,
        limit=args.limit,
        judge=args.judge,
        concurrency=args.concurrency,
        retry_errors=args.retry_errors,
        context_window=args.context_window,
        flops_model=args.flops_model,
        progress=not args.quiet,
    )


def _refuse_unread_options(given: dict[str, Any], graphs: Sequence[str]) -> None:
    """A graph option set on the command line that none of ``graphs`` reads would change nothing: refused in one line."""
    from .evals.lengths import ComparisonError
    from .graphs.registry import GRAPHS, graphs_reading

    if not set(graphs) <= set(GRAPHS):
        return  # an unknown name is reported by the harness
    for option in sorted(given):
        readers = graphs_reading(option)
        if not set(graphs) & set(readers):
            flag = "--" + option.replace("_", "-")
            raise ComparisonError(f"{flag} is read by {', '.join(readers)}, none of the compared graphs ({','.join(graphs)}): "
                                  f"add one of them to --graphs or drop {flag}")


def cmd_compare(args: argparse.Namespace) -> int:
    """``memagent compare``: run, then print the summary tables and where files went."""
    from .agents.extras import require
    from .evals.harness import BackendUnavailable, ComparisonError, run_comparison

    require("matplotlib", "plots", "memagent compare (its figures)")  # missing: say so before the runs, not after
    try:
        config = config_from_args(args)
        model = _model(args)
        result = run_comparison(config, model)
    except ComparisonError as error:
        raise CliError(str(error)) from error
    except BackendUnavailable as error:
        raise CliError(str(error), code=1) from error
    except (ValueError, TypeError) as error:  # tokenizer resolution and graph builders
        raise CliError(_tokenizer_hint(args, error)) from error
    print(result.markdown)
    print("wrote: " + ", ".join(str(path) for path in [result.results, *result.files]))
    return 0


# memagent train -------------------------------------------------------------------------------


TRAIN_HELP = "multi-conversation GRPO training (training/grpo_multiconv.py; needs the train extra)"


def cmd_train(argv: Sequence[str]) -> int:
    """``memagent train ARGS``: the trainer's own command line (``memagent train --help`` lists it)."""
    import os

    # Before huggingface_hub is imported (it reads these once): a training run loads local
    # weights only and must not start the hub's telemetry thread.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from .training.grpo_multiconv import main as train_main

    return train_main(list(argv), prog=f"{PROG} train")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memagent`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["train"]:  # every later argument is the trainer's, --help included
            return cmd_train(argv[1:])
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except CliError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.code
    except ImportError as error:
        from .agents.extras import MissingExtraError

        if not isinstance(error, MissingExtraError):
            raise
        print(f"{PROG}: error: {error}", file=sys.stderr)  # one line that names the extra to install
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The ``memagent`` console script: :func:`main`, then an exit that does not wait for abandoned work.

    A second Ctrl-C abandons ``compare``'s running samples, but a normal exit would join their
    threads and keep computing them, silently, for as long as a long sample takes. Every finished
    sample is already flushed to its results file, so an interrupted run ends at once.
    """
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
