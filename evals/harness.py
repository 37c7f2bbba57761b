"""The comparison harness: every graph on the same samples, accuracy and cost per length.

``memagent compare`` and :func:`run_comparison` run registered graphs (MemAgent, the
full-context and RAG baselines, and whatever else is registered with
:func:`~langgraph_memagent.graphs.registry.register_graph`) on the same samples -- generated RULER-style tasks at several
lengths or records from files users bring -- and write, under the output directory:

* ``results.jsonl``: one line per graph x sample, appended and flushed as each sample
  finishes (answer, reply, score, which text was scored, every LLM call's prompt and
  completion tokens, wall time and the concurrency it ran at, or the error). A re-run
  skips the keys already there, so an interrupted comparison resumes where it stopped.
* ``samples/``: generated samples, cached so a resumed run uses identical samples.
* ``in_flight/``: the checkpoints and call logs of unfinished MemAgent and InfMem samples, which
  resume at the chunk they stopped on (:mod:`.in_flight`).
* ``summary.md``, ``accuracy.csv``, ``cost.csv``: accuracy per graph x length (rows:
  graphs, columns: lengths, as in the MemAgent paper's table) and mean cost per sample
  (LLM calls, prompt and completion tokens, wall time, estimated FLOPs).
* ``<task>_accuracy.png``, ``<task>_cost.png``: accuracy and cost against length;
  for LoCoMo ``<file>_scores.png``: F1 (or J) by question category and prompt tokens per question.

FLOPs are estimated per call from the recorded token counts: attention cost grows with
each call's sequence length squared, so sums of tokens would not do.

Example:
    >>> config = ComparisonConfig(graphs=("memagent",), lengths=(2048,), samples=1, out="results")
    >>> result = run_comparison(config)   # doctest: +SKIP
    >>> print(result.markdown)            # doctest: +SKIP
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import json
import random
import re
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult

from ..agents.atomic_files import write_atomic
from ..agents.loading import EMBEDDED_MODELS, SHIPPED_ADAPTERS, context_window
from ..graphs.options import GraphOptions, default_graph_options
from ..graphs.registry import GRAPHS, build_graph
from .in_flight import InFlight
from .lengths import ComparisonError, format_tokens
from .report import ComparisonResult, resolve_flops_model, write_report
from .results import MANIFEST_FILE, RESULTS_FILE, ResultsWriter, read_results, result_key


SAMPLES_DIR = "samples"


class BackendUnavailable(RuntimeError):
    """The model backend cannot be reached (connection refused or reset): the run stops."""


# Configuration ------------------------------------------------------------------------------


@dataclass
class ComparisonConfig:
    """What to compare, on which samples, and where results go."""

    graphs: tuple[str, ...] = ("memagent", "full_context", "rag")
    """Registered graph names to run (see :data:`~langgraph_memagent.graphs.registry.GRAPHS`)."""
    task: tuple[str, ...] | str | None = "niah_single_1"
    """Generated task name(s) (see ``evals.ruler.TASKS``); unused with ``data``."""
    lengths: tuple[int, ...] = (4096, 8192, 16384, 32768)
    """Generated document lengths in tokens of the model's tokenizer (RULER: 4K = 4096)."""
    samples: int = 8
    """Generated samples per task and length."""
    seed: int = 0
    """Seed of the generated samples (same seed, same samples)."""
    data: tuple[str, ...] = ()
    """Data files or globs (any format ``evals.loaders.load_records`` reads) used instead of generated tasks; one length column per file."""
    data_options: dict[str, Any] = field(default_factory=dict)
    """Options for ``load_records`` (``pool``, ``num_docs``, ``include_adversarial``, ``task``), applied to every data file."""
    limit: int | None = None
    """Data files: run a seeded random subset of at most this many records per file, kept in file order (None: all)."""
    judge: Any = None
    """LoCoMo: chat model for the LLM judge (J, binary CORRECT/WRONG at temperature 0); None: F1 and BLEU-1 only."""
    out: str | Path = "results"
    """Output directory: results, sample cache, tables and plots."""
    model: str = EMBEDDED_MODELS[0]
    """Model spec for ``load_chat_model`` when no model object is passed; also the label in tables and plots."""
    tokenizer: Any = None
    """Tokenizer for generating samples and exact chunking (default: the model's own; required for servers)."""
    graph_options: GraphOptions | None = None
    """Graph builder options (default: :func:`default_graph_options` of ``model``)."""
    concurrency: int = 8
    """Samples in flight at once (the local backend batches concurrent calls; servers batch continuously).
    Wall times per sample depend on it; the report says which was used."""
    retry_errors: bool = False
    """Re-run samples whose earlier attempt recorded an error (otherwise they count as finished, and wrong)."""
    context_window: int | None = None
    """Model context window in tokens, drawn as a dashed line; a server's graphs fit their prompts to it (default: a local model's own)."""
    flops_model: Any = None
    """FLOP-estimator model: a preset such as ``qwen2.5-14b`` or a model directory (default: the model's own if known, else no FLOPs)."""
    progress: bool = True
    """Show a progress bar on stderr."""

    def __post_init__(self) -> None:
        if isinstance(self.task, str):
            self.task = (self.task,)
        self.graphs, self.lengths, self.data = tuple(self.graphs), tuple(self.lengths), tuple(self.data)
        unknown = [name for name in self.graphs if name not in GRAPHS]
        if unknown or not self.graphs:
            raise ComparisonError(f"unknown graph(s) {unknown or list(self.graphs)}; known graphs: {', '.join(GRAPHS)}")
        if len(set(self.graphs)) != len(self.graphs):
            raise ComparisonError(f"graphs must not repeat, got {list(self.graphs)}")
        for name in ("samples", "concurrency"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ComparisonError(f"{name} must be a positive integer, got {value!r}")
        for name in ("limit", "context_window"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ComparisonError(f"{name} must be a positive integer or None, got {value!r}")
        if self.data:
            self.data = tuple(expand_data_paths(self.data))
        else:
            from .ruler import TASKS

            unknown = [task for task in self.task or () if task not in TASKS]
            if unknown or not self.task:
                raise ComparisonError(f"unknown task(s) {unknown or self.task}; known tasks: {', '.join(TASKS)}")
            if not self.lengths:
                raise ComparisonError("give at least one length to generate")
        if self.graph_options is None:
            self.graph_options = default_graph_options(self.model)


# Per-call cost ------------------------------------------------------------------------------


class UsageRecorder(BaseCallbackHandler):
    """Records ``[prompt_tokens, completion_tokens]`` of every LLM call of a run, in order.

    Pass it in the run config (``{"callbacks": [recorder]}``): LangGraph hands it to every
    model call inside the graph. A call whose backend reports no usage is ``[None, None]``.
    ``on_call`` (if given) runs after each recorded call; ``log`` (if given) gets each call as it is
    recorded, and ``calls`` start with ``earlier`` (a resumed run's calls before it stopped).
    """

    def __init__(
        self, on_call: Callable[[], None] | None = None, log: Callable[[list[int | None]], None] | None = None,
        earlier: Sequence[list[int | None]] = (),
    ) -> None:
        self.calls: list[list[int | None]] = list(earlier)
        self._lock = threading.Lock()
        self._on_call, self._log = on_call, log

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                call = [usage.get("input_tokens"), usage.get("output_tokens")]
                with self._lock:
                    self.calls.append(call)
                    if self._log is not None:
                        self._log(call)
                if self._on_call is not None:
                    self._on_call()


# Samples ------------------------------------------------------------------------------------


@dataclass
class SampleSet:
    """Samples of one task at one length (a table column), generated or read from a file."""

    task: str
    length: str
    """Column label: ``4K`` for generated lengths, the file name stem for data files."""
    length_tokens: int | None
    """The generated length in tokens (None for data files: their documents are measured)."""
    seed: int | None
    source: str
    samples: list[Any]


def _sample_id(sample: Any) -> str:
    text = json.dumps([sample.question, sample.document, list(sample.answers)], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generated_samples(task: str, length: int, *, codec: Any, samples: int, seed: int, cache_dir: Path) -> list[Any]:
    """``samples`` seeded samples of ``task`` at ``length`` tokens, cached in ``cache_dir``.

    The cache file is named by task, length, seed, count and tokenizer, so a resumed
    comparison reads back exactly the samples it started with.
    """
    from .records import Sample
    from .ruler import generate_task

    identity = {"task": task, "target_tokens": length, "seed": seed, "num_samples": samples, "tokenizer": codec.name}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    path = cache_dir / f"{task}-{format_tokens(length)}-seed{seed}-n{samples}-{digest}.json"
    if path.is_file():
        return [Sample.from_dict(record) for record in json.loads(path.read_text(encoding="utf-8"))["samples"]]
    made = generate_task(task, length, codec=codec, num_samples=samples, seed=seed)
    write_atomic(path, json.dumps({**identity, "samples": [sample.to_dict() for sample in made]}, ensure_ascii=False))
    return made


def expand_data_paths(specs: Iterable[str]) -> list[str]:
    """Comma lists and globs to files, in the order given (each glob sorted by its number).

    ``eval_*.json`` sorts ``eval_50`` before ``eval_100``, as a length axis should.
    """
    paths: list[str] = []
    for spec in specs:
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            if glob.has_magic(part):
                matches = sorted(glob.glob(part), key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p)])
                if not matches:
                    raise ComparisonError(f"data pattern {part!r} matches no file")
                paths.extend(matches)
            elif not Path(part).is_file():
                raise ComparisonError(f"data file {part!r} does not exist or is not a regular file")
            else:
                paths.append(part)
    return list(dict.fromkeys(paths))


DATA_OPTIONS = ("task", "pool", "num_docs", "seed", "include_adversarial")


def iter_sample_sets(config: ComparisonConfig, codec: Any) -> Iterator[SampleSet]:
    """The comparison's sample sets, one at a time: per data file, or per task x length.

    Data files are read only when their turn comes, so a paper-scale run over
    ``eval_50 ... eval_25600`` holds one file's documents in memory, not all of them.
    """
    if config.data:
        from .loaders import load_records

        unknown = set(config.data_options) - set(DATA_OPTIONS)
        if unknown:
            raise ComparisonError(f"unknown data option(s) {sorted(unknown)}; known: {', '.join(DATA_OPTIONS)}")
        for path in config.data:
            try:
                records = load_records(path, **config.data_options)
            except ValueError as error:  # DataFileError and missing pool= / num_docs=
                raise ComparisonError(str(error)) from error
            if not records:
                raise ComparisonError(f"data file {path!r} holds no records")
            if config.limit is not None:
                records = seeded_subset(records, config.limit, config.seed)
            by_task: dict[str, list[Any]] = {}
            for record in records:
                by_task.setdefault(record.task, []).append(record)
            yield from (SampleSet(task, Path(path).stem, None, None, path, chosen) for task, chosen in by_task.items())
        return
    cache_dir = Path(config.out) / SAMPLES_DIR
    for task in config.task:
        for length in config.lengths:
            made = generated_samples(task, length, codec=codec, samples=config.samples, seed=config.seed, cache_dir=cache_dir)
            yield SampleSet(task, format_tokens(length), length, config.seed, "generated", made)


# Scoring ------------------------------------------------------------------------------------


def score_output(answer: str | None, response: str | None, answers: Sequence[str], metric: str) -> tuple[float, str | None]:
    r"""Score a graph's output; returns the score and which text was scored.

    The extracted ``answer`` is scored; when none was extracted (small models rarely write
    ``\boxed{}``) the lenient metrics fall back to the raw ``response``. The strict verifier
    always reads the raw reply, as in training.

    >>> score_output(None, "The number is 4815162.", ["4815162"], "string_match_all")
    (1.0, 'response')
    >>> score_output("42", r"\boxed{42}", ["42"], "sub_exact_match")
    (1.0, 'answer')
    """
    from .scoring import score

    if metric == "strict_boxed":
        return score(response or "", answers, metric), "response"
    if answer is not None:
        return score(answer, answers, metric), "answer"
    if response:
        return score(response, answers, metric), "response"
    return 0.0, None


# Running ------------------------------------------------------------------------------------


def _backend_down(error: BaseException) -> bool:
    """True when the error chain holds a refused or reset connection (not a timeout)."""
    try:
        from openai import APIConnectionError, APITimeoutError
    except ImportError:  # langchain-openai is a dependency; guard only the name lookup
        APIConnectionError = APITimeoutError = ()  # type: ignore[assignment,misc]
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError):
            return True
        if isinstance(current, APIConnectionError) and not isinstance(current, APITimeoutError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _manifest(config: ComparisonConfig, model: BaseChatModel, codec: Any) -> dict[str, Any]:
    """What makes results comparable: the same model, sampling, tokenizer and graph options."""
    from ..agents.calls import describe_endpoint

    options = asdict(config.graph_options)
    return {
        "model": config.model,
        "backend": type(model).__name__,
        "temperature": getattr(model, "temperature", None),
        "top_p": getattr(model, "top_p", None),
        "tokenizer": codec.name,
        "graph_options": options,
        "judge": None if config.judge is None else config.judge if isinstance(config.judge, str) else describe_endpoint(config.judge),
        # Only when set, so float32 runs recorded before the option existed still resume.
        **({"quantization": model.quantization} if getattr(model, "quantization", None) else {}),
        # A shipped adapter is named by the spec; its path moves with the install.
        **({"adapter": model.adapter} if getattr(model, "adapter", None) and config.model not in SHIPPED_ADAPTERS else {}),
        **({"free_answer": True} if getattr(model, "free_answer", False) else {}),
        **({"compile_decode": True} if getattr(model, "compile_decode", False) else {}),
        **({"prompt_lookup_num_tokens": lookup} if (lookup := getattr(model, "prompt_lookup_in_use", 0)) else {}),
    }


def _check_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Refuse to mix results of different settings; a directory without results takes any."""
    path = out / MANIFEST_FILE
    if path.is_file() and read_results(out / RESULTS_FILE):
        before = json.loads(path.read_text(encoding="utf-8"))
        # Graph options added since those results were written did not exist then: not compared.
        recorded = before.get("graph_options") or {}
        manifest = {**manifest, "graph_options": {k: v for k, v in manifest["graph_options"].items() if k in recorded}}
        if before.get("temperature") == manifest["temperature"] == 0:
            manifest["top_p"] = before.get("top_p")  # greedy decoding never reads top_p
        # Both sides' keys: a setting recorded only when set (an adapter, int4) may be dropped as well as changed.
        changed = [f"{k}: {before.get(k)!r} -> {manifest.get(k)!r}" for k in {**before, **manifest} if before.get(k) != manifest.get(k)]
        if changed:
            raise ComparisonError(
                f"{out} holds results of another configuration ({'; '.join(changed)}); "
                "use a new --out directory, or the same settings to resume"
            )
    else:
        write_atomic(path, json.dumps(manifest, indent=2))


def _context_window(config: ComparisonConfig, model: BaseChatModel) -> int | None:
    """The given window, or a local model's ``max_position_embeddings``."""
    return config.context_window if config.context_window is not None else context_window(model)


@dataclass
class _Job:
    graph: str
    sample_set: SampleSet
    index: int
    sample: Any


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def seeded_subset(records: Sequence[Any], limit: int, seed: int) -> list[Any]:
    """At most ``limit`` of ``records``, a seeded random choice kept in their order (``compare --limit``).

    >>> seeded_subset(list("abcdef"), 3, seed=0), seeded_subset(list("ab"), 3, seed=0)
    (['a', 'd', 'f'], ['a', 'b'])
    """
    if len(records) <= limit:
        return list(records)
    return [records[index] for index in sorted(random.Random(seed).sample(range(len(records)), limit))]


def evidence_searches(searches: Any, evidence: Any) -> dict[str, int] | None:
    """How many of a run's searches (SUMER's ``searches``) returned a LoCoMo evidence turn; None without searches or evidence.

    >>> evidence_searches([{"hits": ["D1:2", "D3:4"]}, {"hits": ["D2:1"]}], ["D3:4"])
    {'searches': 2, 'with_evidence': 1}
    """
    if not isinstance(searches, list) or not evidence:
        return None
    wanted = set(evidence)
    return {"searches": len(searches), "with_evidence": sum(bool(wanted & set(search.get("hits") or ())) for search in searches)}


def locomo_scores(sample: Any, prediction: str | None, judge: Any = None, output: dict[str, Any] | None = None) -> dict[str, Any]:
    """LoCoMo's per-question scores: category, token F1 and BLEU-1 (Mem0's code, as SUMER reports),
    the LLM judge's verdict when a judge is given (``None`` otherwise), and for graphs that
    search, how many searches returned an evidence turn (:func:`evidence_searches`)."""
    from .locomo_scoring import LLMJudge, bleu1, f1

    meta = sample.meta or {}
    verdict = None
    if judge is not None:
        found = (judge if isinstance(judge, LLMJudge) else LLMJudge(judge)).judge(sample.question, list(sample.answers), prediction)
        verdict = {"correct": found.correct, "label": found.label, "error": found.error}
    return {
        "category": meta.get("category"),
        "category_name": meta.get("category_name"),
        "f1": f1(prediction or "", sample.answers),
        "bleu1": bleu1(prediction, sample.answers),
        "judge": verdict,
        "evidence_searches": evidence_searches((output or {}).get("searches"), meta.get("evidence")),
    }


def _details(output: dict[str, Any]) -> dict[str, Any]:
    """A graph's own numbers (chunks read, turns used, tool calls by name, ...), why a tool loop stopped and where
    InfMem stopped reading (None: it read every chunk)."""
    return {
        k: v for k, v in output.items()
        if _is_number(v) or (isinstance(v, dict) and all(map(_is_number, v.values()))) or k in ("stop_reason", "early_stop_chunk")
    }


def _run_job(
    job: _Job, graph: Any, model_label: str, document_tokens: int, writer: ResultsWriter, in_flight: InFlight, judge: Any = None,
    concurrency: int | None = None, on_call: Callable[[], None] | None = None,
) -> BaseException | None:
    """Run one graph on one sample and write its line; returns the error if the backend is down.

    A graph on ``in_flight``'s checkpointer resumes the sample where an earlier process stopped it."""
    sample = job.sample
    run = in_flight.begin(graph, (job.graph, job.sample_set.task, job.sample_set.length, job.index, job.sample_set.seed, _sample_id(sample)))
    recorder = UsageRecorder(on_call, run.log, run.calls_before)
    output: dict[str, Any] = {}
    error: BaseException | None = None
    try:
        graph_input = None if run.resuming else GRAPHS[job.graph].graph_input(sample)
        output = graph.invoke(graph_input, {"callbacks": [recorder], **run.config})
    except Exception as failure:  # one bad sample must not end a long comparison
        if _backend_down(failure):
            run.close()  # its checkpoints stay: the next run resumes it
            return failure
        error = failure
    seconds = run.seconds  # the graph's time, not the scoring's (a LoCoMo judge is another model)
    metric = sample.scoring_metric
    answers = [str(answer) for answer in sample.answers]
    answer, response = output.get("answer"), output.get("response")
    value, scored = score_output(answer, response, answers, metric) if error is None else (0.0, None)
    usage = output.get("usage") or {}
    extra = {}
    if sample.task == "locomo":
        # A failed run scores 0 but keeps its category, so per-category tables count it.
        extra["locomo"] = locomo_scores(sample, answer if answer is not None else response, judge if error is None else None, output)
        if error is not None:
            extra["locomo"].update(f1=0.0, bleu1=0.0)
    writer.write(
        {
            "graph": job.graph,
            "task": job.sample_set.task,
            "length": job.sample_set.length,
            "index": job.index,
            "seed": job.sample_set.seed,
            "length_tokens": job.sample_set.length_tokens,
            "document_tokens": document_tokens,
            "source": job.sample_set.source,
            "sample_id": _sample_id(sample),
            "model": model_label,
            "metric": metric,
            "answers": answers,
            "answer": answer,
            "response": response,
            "score": value,
            "scored": scored,
            "calls": recorder.calls,
            "llm_calls": len(recorder.calls),
            "prompt_tokens": sum(p or 0 for p, _ in recorder.calls),
            "completion_tokens": sum(c or 0 for _, c in recorder.calls),
            "graph_usage": usage,
            "details": _details(output),
            "seconds": round(seconds, 3),
            "concurrency": concurrency,  # samples run at once: the wall time depends on it
            # The calls an earlier, stopped process had made on this sample (0: it ran in one go).
            "resumed_at_call": len(run.calls_before) if run.resuming else 0,
            "error": None if error is None else f"{type(error).__name__}: {error}",
            **extra,
        }
    )
    run.finish()
    return None


def _pending_jobs(sample_set: SampleSet, graph_names: Sequence[str], done: dict[tuple, dict[str, Any]], results_path: Path) -> list[_Job]:
    """The graph x sample runs of ``sample_set`` without a result yet; a result made on another sample is an error."""
    jobs = []
    for index, sample in enumerate(sample_set.samples):
        for name in graph_names:
            key = (name, sample_set.task, sample_set.length, index, sample_set.seed)
            previous = done.get(key)
            if previous is not None and previous.get("sample_id") != _sample_id(sample):
                raise ComparisonError(
                    f"{results_path} has a result for {key} made on a different sample "
                    "(changed data file or generator); use a new --out directory"
                )
            if previous is None:
                jobs.append(_Job(name, sample_set, index, sample))
    return jobs


def _judge(judge: str | BaseChatModel | None) -> Any:
    """The LoCoMo LLM judge of a model spec or chat model (None: F1 and BLEU-1 only)."""
    if judge is None:
        return None
    from ..agents import load_chat_model
    from .locomo_scoring import LLMJudge

    # 128 tokens: the judge prompt asks for one sentence of reasoning, then the JSON label.
    return LLMJudge(load_chat_model(judge), max_tokens=128) if isinstance(judge, str) else LLMJudge(judge)


def _call_counter(bar: Any, every_seconds: float = 1.0) -> Callable[[], None]:
    """A callback that counts model calls in ``bar``'s postfix, redrawn at most once per ``every_seconds``."""
    calls, shown = itertools.count(1), [0.0]  # next() on a count is atomic: samples run in several threads

    def count() -> None:
        done, now = next(calls), time.monotonic()
        if now - shown[0] >= every_seconds:
            shown[0] = now
            bar.set_postfix_str(f"model calls: {done:,}")

    return count


def run_comparison(config: ComparisonConfig, model: BaseChatModel | None = None) -> ComparisonResult:
    """Run every graph of ``config`` on the same samples, then write tables and plots.

    ``model`` defaults to ``load_chat_model(config.model)``. Finished graph x sample keys
    in ``<out>/results.jsonl`` are skipped, so re-running an interrupted comparison only
    runs what is missing. Raises :class:`BackendUnavailable` when the server is down and
    :class:`ComparisonError` on bad settings or files.
    """
    from tqdm import tqdm

    from ..agents import load_chat_model
    from ..agents.tokenizers import encode_long, resolve_tokenizer

    if model is None:
        model = load_chat_model(config.model)
    codec = resolve_tokenizer(config.tokenizer, model)
    if config.context_window is not None and context_window(model) is None:
        # A server does not report its window: the given one becomes the model's, so each graph with
        # a budget fits it less its own longest generation (SUMER's turn may exceed the answer).
        model = model.model_copy(update={"profile": {**(model.profile or {}), "max_input_tokens": config.context_window}})
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    _check_manifest(out, _manifest(config, model, codec))
    flops_model = resolve_flops_model(config.flops_model, model, config.model)
    results_path = out / RESULTS_FILE
    done = {result_key(r): r for r in read_results(results_path) if not (config.retry_errors and r.get("error"))}
    graphs: dict[str, Any] = {}
    judge = _judge(config.judge)
    in_flight = InFlight(out)
    writer = ResultsWriter(results_path)
    executor = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="compare")
    pending: set[Future] = set()

    def drain(until: int) -> None:
        nonlocal pending
        while len(pending) > until:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                down = future.result()
                if down is not None:
                    for other in pending:
                        other.cancel()
                    raise BackendUnavailable(f"the model backend is unreachable, stopping the comparison: {down}") from down
                bar.update(1)

    try:
        with tqdm(unit="sample", desc="comparing", file=sys.stderr, disable=not config.progress) as bar:
            # A 1M-token sample is one step of this bar and an hour of model calls: their count shows it is moving.
            on_call = _call_counter(bar) if config.progress else None
            for sample_set in iter_sample_sets(config, codec):
                jobs = _pending_jobs(sample_set, config.graphs, done, results_path)
                bar.total = (bar.total or 0) + len(jobs)
                bar.refresh()
                for name in dict.fromkeys(job.graph for job in jobs):
                    if name not in graphs:
                        graphs[name] = in_flight.attach(build_graph(name, model, config.graph_options, codec))
                tokens = {index: len(encode_long(sample_set.samples[index].document, codec)) for index in {job.index for job in jobs}}
                for job in jobs:
                    pending.add(executor.submit(_run_job, job, graphs[job.graph], config.model, tokens[job.index], writer, in_flight, judge, config.concurrency, on_call))
                # Read the next file only when this one's runs are nearly done: at most two sets in memory.
                drain(config.concurrency)
            drain(0)
    except KeyboardInterrupt:
        running = sum(1 for future in pending if future.running())
        if running:
            # Without this the stop looks ignored: a long sample can take many minutes.
            print(
                f"\ninterrupted: waiting for {running} running sample(s) to finish so their results are kept "
                f"(the rest resume next run); press Ctrl-C again to abandon them"
                + in_flight.resume_note,
                file=sys.stderr, flush=True)
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        writer.close()
        in_flight.close()
    return write_report(out, flops_model=flops_model, context_window=_context_window(config, model))
