"""The comparison harness: every graph on the same samples, accuracy and cost per length.

``memagent compare`` and :func:`run_comparison` run registered graphs (MemAgent, the
full-context and RAG baselines, and whatever else is registered with
:func:`register_graph`) on the same samples -- generated RULER-style tasks at several
lengths or records from files users bring -- and write, under the output directory:

* ``results.jsonl``: one line per graph x sample, appended and flushed as each sample
  finishes (answer, reply, score, which text was scored, every LLM call's prompt and
  completion tokens, wall time, or the error). A re-run skips the keys already there,
  so an interrupted comparison resumes where it stopped.
* ``samples/``: generated samples, cached so a resumed run uses identical samples.
* ``summary.md``, ``accuracy.csv``, ``cost.csv``: accuracy per graph x length (rows:
  graphs, columns: lengths, as in the MemAgent paper's table) and mean cost per sample
  (LLM calls, prompt and completion tokens, wall time, estimated FLOPs).
* ``<task>_accuracy.png``, ``<task>_cost.png``: accuracy and cost against length;
  for LoCoMo ``<file>_scores.png``: F1 (or J) by question category and prompt tokens per question.

FLOPs are estimated per call from the recorded token counts: attention cost grows with
each call's sequence length squared, so sums of tokens would not do.

Example:
    >>> parse_lengths("4k,8K,16384,1M")
    [4096, 8192, 16384, 1048576]
    >>> config = ComparisonConfig(graphs=("memagent",), lengths=(2048,), samples=1, out="results")
    >>> result = run_comparison(config)   # doctest: +SKIP
    >>> print(result.markdown)            # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import io
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult

EMBEDDED_MODEL = "smollm2-135m"
RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "comparison.json"
SAMPLES_DIR = "samples"
# The demo's budget for the embedded model's 8K window: small chunks keep each CPU call short
# and a 128-token memory is plenty for a needle; the answer needs only a few tokens.
EMBEDDED_GRAPH_DEFAULTS = {"chunk_tokens": 1000, "memory_tokens": 128, "answer_tokens": 64, "max_turns": 6, "turn_tokens": 128}
_LENGTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


class ComparisonError(ValueError):
    """Bad comparison settings or files: the message names the bad value and what was expected."""


class BackendUnavailable(RuntimeError):
    """The model backend cannot be reached (connection refused or reset): the run stops."""


# Lengths ------------------------------------------------------------------------------------


def parse_length(text: str) -> int:
    """A length in tokens from ``"4k"`` (4096, as RULER counts), ``"4096"`` or ``"1M"``.

    >>> parse_length("4k"), parse_length("1M"), parse_length("3000")
    (4096, 1048576, 3000)
    >>> try:
    ...     parse_length("4 kb")
    ... except ComparisonError as error:
    ...     print(error)
    bad length '4 kb': expected a token count such as 4096, 4k, 128K or 1M
    """
    match = _LENGTH.match(text)
    if not match:
        raise ComparisonError(f"bad length {text!r}: expected a token count such as 4096, 4k, 128K or 1M")
    number, unit = float(match.group(1)), match.group(2).lower()
    tokens = number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit]
    if tokens != int(tokens) or tokens < 1:
        raise ComparisonError(f"bad length {text!r}: expected a whole positive number of tokens")
    return int(tokens)


def parse_lengths(text: str) -> list[int]:
    """Comma-separated lengths (see :func:`parse_length`), ascending, without repeats."""
    lengths = sorted({parse_length(part) for part in text.split(",") if part.strip()})
    if not lengths:
        raise ComparisonError(f"bad lengths {text!r}: expected a comma-separated list such as 4k,8k,16k")
    return lengths


def format_tokens(tokens: float) -> str:
    """A token count the way papers label axes: 4096 -> ``4K``, 7168 -> ``7K``, 3.5M tokens -> ``3.5M``.

    >>> format_tokens(4096), format_tokens(14336), format_tokens(3670016), format_tokens(500)
    ('4K', '14K', '3.5M', '500')
    """
    for unit, size in (("M", 1024 * 1024), ("K", 1024)):
        if tokens >= size:
            return f"{tokens / size:.3g}{unit}"
    return f"{tokens:.0f}"


# Graph registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphOptions:
    """Builder options of the compared graphs; each builder takes the ones it needs."""

    chunk_tokens: int = 5000
    """MemAgent: document tokens per memory update (paper: 5000)."""
    memory_tokens: int = 1024
    """MemAgent: memory generation limit (paper: 1024)."""
    answer_tokens: int = 1024
    """Every graph: final answer generation limit (paper: 1024)."""
    final_prompt: str = "boxed"
    """Final answer format: ``boxed`` (paper) or ``answer_is`` (reference eval variant)."""
    max_input_tokens: int | None = None
    """Full context: prompt token budget before center truncation (None: the builder's default)."""
    rag_chunk_tokens: int = 500
    """RAG: tokens per retrieved chunk (500, the RAG baseline of the SUMER paper)."""
    rag_top_k: int = 1
    """RAG: chunks retrieved per question (1, the RAG baseline of the SUMER paper)."""
    max_turns: int = 20
    """SUMER: assistant turns per episode (20, SUMER paper); AgeMem: turns per stage."""
    turn_tokens: int = 1024
    """SUMER and AgeMem: generation limit of one tool-calling turn."""


GraphBuilder = Callable[[BaseChatModel, GraphOptions, Any], Any]
"""``builder(model, options, codec)`` -> a compiled graph taking ``{"question", "document"}``."""

GRAPH_BUILDERS: dict[str, GraphBuilder] = {}


def register_graph(name: str, builder: GraphBuilder) -> None:
    """Make ``name`` a valid ``--graphs`` entry; ``builder(model, options, codec)`` builds it.

    The graph must take ``{"question", "document"}`` and return ``answer``, ``response``
    and ``usage``, like :func:`~langgraph_memagent.build_memagent_graph`.

    >>> register_graph("memagent_small", lambda model, options, codec: _memagent(model, replace(options, chunk_tokens=500), codec))
    >>> "memagent_small" in GRAPH_BUILDERS
    True
    >>> del GRAPH_BUILDERS["memagent_small"]
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"graph name {name!r} must be letters, digits, '_', '.' or '-' (it is a CSV column and a file name part)")
    GRAPH_BUILDERS[name] = builder


def _memagent(model: BaseChatModel, options: GraphOptions, codec: Any) -> Any:
    from ..graphs import build_memagent_graph

    return build_memagent_graph(
        model,
        chunk_tokens=options.chunk_tokens,
        memory_tokens=options.memory_tokens,
        answer_tokens=options.answer_tokens,
        tokenizer=codec,
        final_prompt=options.final_prompt,
    )


def _full_context(model: BaseChatModel, options: GraphOptions, codec: Any) -> Any:
    from ..baselines.full_context import build_full_context_graph

    return build_full_context_graph(
        model,
        max_input_tokens=options.max_input_tokens,
        answer_tokens=options.answer_tokens,
        tokenizer=codec,
        final_prompt=options.final_prompt,
    )


def _rag(model: BaseChatModel, options: GraphOptions, codec: Any) -> Any:
    from ..baselines.rag import build_rag_graph

    return build_rag_graph(
        model,
        chunk_tokens=options.rag_chunk_tokens,
        top_k=options.rag_top_k,
        answer_tokens=options.answer_tokens,
        tokenizer=codec,
        final_prompt=options.final_prompt,
    )


def _sumer(model: BaseChatModel, options: GraphOptions, codec: Any) -> Any:
    from ..baselines.sumer import build_sumer_graph

    window = local_model_window(model)
    return build_sumer_graph(
        model,
        max_turns=options.max_turns,
        turn_tokens=options.turn_tokens,
        answer_tokens=options.answer_tokens,
        # The episode ends on context overflow (SUMER); a local model's window bounds it.
        max_context_tokens=options.max_input_tokens or (window - options.turn_tokens if window else None),
        tokenizer=codec,
        final_prompt=options.final_prompt,
    )


def _agemem(model: BaseChatModel, options: GraphOptions, codec: Any) -> Any:
    from ..baselines.agemem import build_agemem_qa_graph

    return build_agemem_qa_graph(
        model,
        max_stage_turns=options.max_turns,
        turn_tokens=options.turn_tokens,
        max_context_tokens=options.max_input_tokens,
        tokenizer=codec,
    )


register_graph("memagent", _memagent)
register_graph("full_context", _full_context)
register_graph("rag", _rag)
register_graph("sumer", _sumer)
register_graph("agemem", _agemem)


def default_graph_options(model: str) -> GraphOptions:
    """The demo's budget for the embedded model (8K window, CPU), the paper's otherwise.

    >>> default_graph_options("smollm2-135m").chunk_tokens, default_graph_options("vllm:Qwen/Qwen2.5-14B").chunk_tokens
    (1000, 5000)
    """
    return GraphOptions(**EMBEDDED_GRAPH_DEFAULTS) if model == EMBEDDED_MODEL else GraphOptions()


# Configuration ------------------------------------------------------------------------------


@dataclass
class ComparisonConfig:
    """What to compare, on which samples, and where results go."""

    graphs: tuple[str, ...] = ("memagent", "full_context", "rag")
    """Registered graph names to run (see :data:`GRAPH_BUILDERS`)."""
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
    model: str = EMBEDDED_MODEL
    """Model spec for ``load_chat_model`` when no model object is passed; also the label in tables and plots."""
    tokenizer: Any = None
    """Tokenizer for generating samples and exact chunking (default: the model's own; required for servers)."""
    graph_options: GraphOptions | None = None
    """Graph builder options (default: :func:`default_graph_options` of ``model``)."""
    concurrency: int = 8
    """Samples in flight at once (the local backend batches concurrent calls; servers batch continuously)."""
    retry_errors: bool = False
    """Re-run samples whose earlier attempt recorded an error (otherwise they count as finished, and wrong)."""
    context_window: int | None = None
    """Model context window in tokens, drawn as a dashed line (default: read from a local model's config)."""
    flops_model: Any = None
    """FLOP-estimator model: a preset such as ``qwen2.5-14b`` or a model directory (default: the model's own if known, else no FLOPs)."""
    progress: bool = True
    """Show a progress bar on stderr."""

    def __post_init__(self) -> None:
        if isinstance(self.task, str):
            self.task = (self.task,)
        self.graphs, self.lengths, self.data = tuple(self.graphs), tuple(self.lengths), tuple(self.data)
        unknown = [name for name in self.graphs if name not in GRAPH_BUILDERS]
        if unknown or not self.graphs:
            raise ComparisonError(f"unknown graph(s) {unknown or list(self.graphs)}; known graphs: {', '.join(GRAPH_BUILDERS)}")
        if len(set(self.graphs)) != len(self.graphs):
            raise ComparisonError(f"graphs must not repeat, got {list(self.graphs)}")
        for name in ("samples", "concurrency"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ComparisonError(f"{name} must be a positive integer, got {value!r}")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ComparisonError(f"limit must be a positive integer or None, got {self.limit!r}")
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


class CallRecorder(BaseCallbackHandler):
    """Records ``[prompt_tokens, completion_tokens]`` of every LLM call of a run, in order.

    Pass it in the run config (``{"callbacks": [recorder]}``): LangGraph hands it to every
    model call inside the graph. A call whose backend reports no usage is ``[None, None]``.
    """

    def __init__(self) -> None:
        self.calls: list[list[int | None]] = []
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                with self._lock:
                    self.calls.append([usage.get("input_tokens"), usage.get("output_tokens")])


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


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a kill never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
    _write_atomic(path, json.dumps({**identity, "samples": [sample.to_dict() for sample in made]}, ensure_ascii=False))
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
            if config.limit is not None and len(records) > config.limit:
                chosen = sorted(random.Random(config.seed).sample(range(len(records)), config.limit))
                records = [records[index] for index in chosen]
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


def graph_input(sample: Any) -> dict[str, Any]:
    """What a graph is invoked with: question and document, plus a conversation's raw turns when the
    sample has them (LoCoMo), for memory banks that store messages; graphs ignore keys they lack."""
    inputs = {"question": sample.question, "document": sample.document}
    turns = (sample.meta or {}).get("turns")
    if turns:
        inputs["turns"] = turns
    return inputs


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


def _key(line: dict[str, Any]) -> tuple:
    return (line["graph"], line["task"], line["length"], line["index"], line["seed"])


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a results file; a torn last line (a kill mid-write) is dropped.

    Later lines win when a key repeats (a retried error).
    """
    path = Path(path)
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    records: dict[tuple, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            records[_key(record)] = record
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            if number == len(lines) and not text.endswith("\n"):
                break  # torn by a kill: that sample simply runs again
            raise ComparisonError(f"{path}: line {number} is not a results record ({error})") from error
    return list(records.values())


def _repair_torn_tail(path: Path) -> None:
    """Cut a partial last line so appended lines start on a fresh line."""
    if path.is_file() and path.stat().st_size:
        text = path.read_text(encoding="utf-8")
        if not text.endswith("\n"):
            kept = text[: text.rfind("\n") + 1]
            print(
                f"note: {path}: dropped a torn last line ({len(text) - len(kept)} characters, from an interrupted run); "
                "its sample runs again",
                file=sys.stderr,
            )
            _write_atomic(path, kept)


def _manifest(config: ComparisonConfig, model: BaseChatModel, codec: Any) -> dict[str, Any]:
    """What makes results comparable: the same model, sampling, tokenizer and graph options."""
    from ..graphs.calls import describe_endpoint

    options = asdict(config.graph_options)
    return {
        "model": config.model,
        "backend": type(model).__name__,
        "temperature": getattr(model, "temperature", None),
        "top_p": getattr(model, "top_p", None),
        "tokenizer": codec.name,
        "graph_options": options,
        "judge": None if config.judge is None else config.judge if isinstance(config.judge, str) else describe_endpoint(config.judge),
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
        changed = [f"{k}: {before.get(k)!r} -> {v!r}" for k, v in manifest.items() if before.get(k) != v]
        if changed:
            raise ComparisonError(
                f"{out} holds results of another configuration ({'; '.join(changed)}); "
                "use a new --out directory, or the same settings to resume"
            )
    else:
        _write_atomic(path, json.dumps(manifest, indent=2))


def _context_window(config: ComparisonConfig, model: BaseChatModel) -> int | None:
    """The given window, or a local model's ``max_position_embeddings``."""
    return config.context_window if config.context_window is not None else local_model_window(model)


def local_model_window(model: BaseChatModel) -> int | None:
    """A local model's window in tokens (None for servers, which do not report one)."""
    return getattr(model, "context_window", None)


@dataclass
class _Job:
    graph: str
    sample_set: SampleSet
    index: int
    sample: Any


class _ResultsWriter:
    """Appends one JSON line per finished sample and flushes it at once (thread-safe)."""

    def __init__(self, path: Path):
        _repair_torn_tail(path)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def locomo_scores(sample: Any, prediction: str | None, judge: Any = None) -> dict[str, Any]:
    """LoCoMo's per-question scores: category, token F1 and BLEU-1 (Mem0's code, as SUMER reports),
    and the LLM judge's verdict when a judge is given (``None`` otherwise)."""
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
    }


def _run_job(job: _Job, graph: Any, model_label: str, document_tokens: int, writer: _ResultsWriter, judge: Any = None) -> BaseException | None:
    """Run one graph on one sample and write its line; returns the error if the backend is down."""
    sample = job.sample
    recorder = CallRecorder()
    started = time.perf_counter()
    output: dict[str, Any] = {}
    error: BaseException | None = None
    try:
        output = graph.invoke(graph_input(sample), {"callbacks": [recorder]})
    except Exception as failure:  # one bad sample must not end a long comparison
        if _backend_down(failure):
            return failure
        error = failure
    seconds = time.perf_counter() - started
    metric = sample.scoring_metric
    answers = [str(answer) for answer in sample.answers]
    answer, response = output.get("answer"), output.get("response")
    value, scored = score_output(answer, response, answers, metric) if error is None else (0.0, None)
    usage = output.get("usage") or {}
    extra = {}
    if sample.task == "locomo":
        # A failed run scores 0 but keeps its category, so per-category tables count it.
        extra["locomo"] = locomo_scores(sample, answer if answer is not None else response, judge if error is None else None)
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
            # Graph-specific numbers (chunks read, turns used, tool calls by name, ...), kept for analysis.
            "details": {k: v for k, v in output.items() if _is_number(v) or (isinstance(v, dict) and all(map(_is_number, v.values())))},
            "seconds": round(seconds, 3),
            "error": None if error is None else f"{type(error).__name__}: {error}",
            **extra,
        }
    )
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


@dataclass
class ComparisonResult:
    """Where a comparison wrote its outputs, and its summary."""

    out: Path
    results: Path
    cells: list["Cell"]
    markdown: str
    files: list[Path] = field(default_factory=list)


def run_comparison(config: ComparisonConfig, model: BaseChatModel | None = None) -> ComparisonResult:
    """Run every graph of ``config`` on the same samples, then write tables and plots.

    ``model`` defaults to ``load_chat_model(config.model)``. Finished graph x sample keys
    in ``<out>/results.jsonl`` are skipped, so re-running an interrupted comparison only
    runs what is missing. Raises :class:`BackendUnavailable` when the server is down and
    :class:`ComparisonError` on bad settings or files.
    """
    from tqdm import tqdm

    from ..agents.tokenizers import encode_long, resolve_tokenizer

    from ..agents import load_chat_model

    if model is None:
        model = load_chat_model(config.model)
    codec = resolve_tokenizer(config.tokenizer, model)
    if config.graph_options.max_input_tokens is None and config.context_window is not None:
        # A server does not report its window: the one given for the plots also bounds full context.
        config = replace(config, graph_options=replace(config.graph_options, max_input_tokens=config.context_window - config.graph_options.answer_tokens))
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    _check_manifest(out, _manifest(config, model, codec))
    flops_model = resolve_flops_model(config.flops_model, model, config.model)
    results_path = out / RESULTS_FILE
    done = {_key(r): r for r in read_results(results_path) if not (config.retry_errors and r.get("error"))}
    graphs: dict[str, Any] = {}
    judge = None
    if config.judge is not None:
        from .locomo_scoring import LLMJudge

        # 128 tokens: the judge prompt asks for one sentence of reasoning, then the JSON label.
        judge = LLMJudge(load_chat_model(config.judge), max_tokens=128) if isinstance(config.judge, str) else LLMJudge(config.judge)
    writer = _ResultsWriter(results_path)
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
            for sample_set in iter_sample_sets(config, codec):
                jobs = _pending_jobs(sample_set, config.graphs, done, results_path)
                bar.total = (bar.total or 0) + len(jobs)
                bar.refresh()
                for name in dict.fromkeys(job.graph for job in jobs):
                    if name not in graphs:
                        graphs[name] = GRAPH_BUILDERS[name](model, config.graph_options, codec)
                tokens = {index: len(encode_long(sample_set.samples[index].document, codec)) for index in {job.index for job in jobs}}
                for job in jobs:
                    pending.add(executor.submit(_run_job, job, graphs[job.graph], config.model, tokens[job.index], writer, judge))
                # Read the next file only when this one's runs are nearly done: at most two sets in memory.
                drain(config.concurrency)
            drain(0)
    except KeyboardInterrupt:
        running = sum(1 for future in pending if future.running())
        if running:
            # Without this the stop looks ignored: a long sample can take many minutes.
            print(
                f"\ninterrupted: waiting for {running} running sample(s) to finish so their results are kept "
                f"(the rest resume next run); press Ctrl-C again to abandon them",
                file=sys.stderr,
                flush=True,
            )
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        writer.close()
    return write_report(out, flops_model=flops_model, context_window=_context_window(config, model))


# Tables -------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One graph at one length: accuracy and mean cost per sample."""

    task: str
    graph: str
    length: str
    length_tokens: float
    """Position on the length axis: the generated length, or the mean document tokens of a data file."""
    samples: int
    errors: int
    accuracy: float
    """Mean score in percent; a sample that failed counts as 0."""
    llm_calls: float | None
    prompt_tokens: float | None
    completion_tokens: float | None
    seconds: float | None
    flops: float | None
    """Mean estimated FLOPs per sample (None without a FLOP model or token counts)."""


def resolve_flops_model(given: Any, model: BaseChatModel, model_spec: str) -> Any:
    """The FLOP estimator's model config: the one given, else the model's if it is known.

    Tried in turn: a local model's directory (exact parameter count from its config), the
    model spec without its provider prefix (``vllm:Qwen/Qwen2.5-14B-Instruct``), and the
    served model name. Returns None when none is known: the tables then say ``n/a``.
    """
    from .flops import flops_config

    if given is not None:
        try:
            return flops_config(given)
        except (ValueError, TypeError) as error:
            raise ComparisonError(f"bad FLOP model: {error}") from error
    for candidate in (model_spec.partition(":")[2] or model_spec, getattr(model, "model_name", None), getattr(model, "model_path", None)):
        if candidate:
            try:
                return flops_config(candidate)
            except (ValueError, TypeError, OSError, KeyError):
                continue  # not a preset nor a readable model directory: try the next name
    return None


def _record_flops(record: dict[str, Any], flops_model: Any) -> float | None:
    calls = record.get("calls") or []
    if flops_model is None or not calls or any(p is None or c is None for p, c in calls):
        return None
    from .flops import estimate_call_flops

    return float(sum(estimate_call_flops(flops_model, p, c) for p, c in calls))


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def summarize(records: Sequence[dict[str, Any]], *, flops_model: Any = None) -> list[Cell]:
    """Accuracy and mean cost per task x graph x length from results lines.

    Accuracy averages every sample (errors score 0); costs average the samples that
    finished without error. FLOPs need ``flops_model`` (anything
    :func:`~langgraph_memagent.evals.flops.flops_config` takes: a preset name such as
    ``qwen2.5-14b``, a model directory, a ``FlopsModelConfig``). Ordered by task, graph
    (first seen) and length.
    """
    from .flops import flops_config

    flops_model = flops_config(flops_model) if flops_model is not None else None
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["task"], record["graph"], record["length"]), []).append(record)
    cells = []
    for (task, graph, length), group in groups.items():
        ok = [r for r in group if not r.get("error")]
        given = group[0].get("length_tokens")
        position = given if given is not None else sum(r["document_tokens"] for r in group) / len(group)
        cells.append(
            Cell(
                task=task,
                graph=graph,
                length=length,
                length_tokens=position,
                samples=len(group),
                errors=len(group) - len(ok),
                accuracy=100 * sum(float(r["score"]) for r in group) / len(group),
                llm_calls=_mean([r["llm_calls"] for r in ok]),
                prompt_tokens=_mean([r["prompt_tokens"] for r in ok]),
                completion_tokens=_mean([r["completion_tokens"] for r in ok]),
                seconds=_mean([r["seconds"] for r in ok]),
                flops=_mean([_record_flops(r, flops_model) for r in ok]),
            )
        )
    graph_order = list(dict.fromkeys(c.graph for c in cells))
    return sorted(cells, key=lambda c: (c.task, graph_order.index(c.graph), c.length_tokens, c.length))


def _lengths(cells: Sequence[Cell]) -> list[str]:
    positions: dict[str, float] = {}
    for cell in cells:
        positions.setdefault(cell.length, cell.length_tokens)
    return sorted(positions, key=lambda length: (positions[length], length))


def accuracy_rows(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """One row per task x graph: accuracy (%) per length, errors and samples over all lengths."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for cell in cells:
        row = rows.setdefault((cell.task, cell.graph), {"task": cell.task, "graph": cell.graph, "errors": 0, "samples": 0})
        row[cell.length] = round(cell.accuracy, 2)
        row["errors"] += cell.errors
        row["samples"] += cell.samples
    return list(rows.values())


def _number(value: float | None, style: str) -> str:
    if value is None:
        return "n/a"
    return {"pct": f"{value:.2f}", "count": f"{value:,.1f}", "seconds": f"{value:.2f}", "flops": f"{value:.3g}"}[style]


def markdown_tables(cells: Sequence[Cell], *, model: str = "") -> str:
    """The accuracy table (graphs x lengths) and the cost table, per task, in markdown."""
    parts = []
    for task in dict.fromkeys(c.task for c in cells):
        task_cells = [c for c in cells if c.task == task]
        lengths = _lengths(task_cells)
        title = f"### {task}" + (f" ({model})" if model else "")
        header = "| graph | " + " | ".join(lengths) + " | errors |"
        rule = "|---|" + "---:|" * (len(lengths) + 1)
        body = []
        for row in accuracy_rows(task_cells):
            values = [_number(row.get(length), "pct") if length in row else "-" for length in lengths]
            body.append(f"| {row['graph']} | " + " | ".join(values) + f" | {row['errors']} |")
        parts.append("\n".join([title, "", "Accuracy (%):", "", header, rule, *body]))
        cost = [
            "Mean cost per sample (samples that finished):",
            "",
            "| graph | length | samples | LLM calls | prompt tokens | completion tokens | wall s | est. FLOPs |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for c in task_cells:
            cost.append(
                f"| {c.graph} | {c.length} | {c.samples} | {_number(c.llm_calls, 'count')} | {_number(c.prompt_tokens, 'count')} | "
                f"{_number(c.completion_tokens, 'count')} | {_number(c.seconds, 'seconds')} | {_number(c.flops, 'flops')} |"
            )
        parts.append("\n".join(cost))
    return "\n\n".join(parts) + "\n"


def accuracy_csv(cells: Sequence[Cell]) -> str:
    """``task, graph, <length>..., errors, samples`` with accuracy in percent."""
    lengths = _lengths(cells)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["task", "graph", *lengths, "errors", "samples"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(accuracy_rows(cells))
    return buffer.getvalue()


def cost_csv(cells: Sequence[Cell]) -> str:
    """One row per task x graph x length with every :class:`Cell` field."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, [f.name for f in fields(Cell)], lineterminator="\n")
    writer.writeheader()
    for cell in cells:
        writer.writerow({k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(cell).items()})
    return buffer.getvalue()


def _tool_calls(details: dict[str, Any]) -> float | None:
    calls = details.get("tool_calls")
    return float(sum(calls.values())) if isinstance(calls, dict) else calls


def _locomo_groups(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """LoCoMo records by (graph, data file)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        if record.get("task") == "locomo":
            groups.setdefault((record["graph"], record["length"]), []).append(record)
    return groups


def _locomo_summary(group: Sequence[dict[str, Any]]) -> Any:
    from .locomo_scoring import summarize_locomo

    judged = any(r["locomo"]["judge"] is not None for r in group)
    return summarize_locomo([_locomo_row(r, judged) for r in group])


def locomo_tables(records: Sequence[dict[str, Any]]) -> str:
    """Per-category LoCoMo scores (F1, BLEU-1, J) per graph and data file, with mean turns and tool calls."""
    from .locomo_scoring import locomo_markdown_table

    parts = []
    for (graph, length), group in _locomo_groups(records).items():
        summary = _locomo_summary(group)
        turns = _mean([r["details"].get("turns_used", r["llm_calls"]) for r in group if not r.get("error")])
        tools = _mean([_tool_calls(r["details"]) for r in group if not r.get("error")])
        parts.append(
            f"### LoCoMo by category: {graph} on {length}\n\n{locomo_markdown_table(summary)}\n\n"
            f"Mean per question: {_number(turns, 'count')} turns (LLM calls where the graph has no turns), "
            f"{_number(tools, 'count')} tool calls; errors {sum(1 for r in group if r.get('error'))} (scored 0)."
        )
    return "".join(f"\n{part}\n" for part in parts)


def _locomo_row(record: dict[str, Any], judged: bool) -> dict[str, Any]:
    """A results line as :func:`summarize_locomo` reads it; a failed run counts WRONG when others were judged."""
    scores = record["locomo"]
    verdict = scores["judge"]
    correct = verdict.get("correct") if verdict is not None else (False if judged and record.get("error") else None)
    return {"f1": scores["f1"], "bleu1": scores["bleu1"], "judge": correct, "meta": {"category": scores["category"], "category_name": scores["category_name"]}}


def _decoding_line(out: Path) -> str:
    """The decoding the comparison ran with, from its manifest, as the report's first line."""
    from ..agents.loading import describe_decoding

    path = out / MANIFEST_FILE
    if not path.is_file():
        return ""
    manifest = json.loads(path.read_text(encoding="utf-8"))
    decoding = describe_decoding(manifest.get("temperature"), manifest.get("top_p"))
    return f"Decoding: {decoding} (recorded in {MANIFEST_FILE}).\n\n"


def write_report(out: str | Path, *, flops_model: Any = None, context_window: int | None = None) -> ComparisonResult:
    """Tables and plots from ``<out>/results.jsonl`` (also usable on its own, e.g. after copying results)."""
    from .plots import plot_accuracy, plot_cost, plot_locomo

    out = Path(out)
    results_path = out / RESULTS_FILE
    records = read_results(results_path)
    if not records:
        raise ComparisonError(f"{results_path} holds no results yet")
    cells = summarize(records, flops_model=flops_model)
    model = records[0].get("model", "")
    markdown = _decoding_line(out) + markdown_tables(cells, model=model) + locomo_tables(records)
    files = [out / "summary.md", out / "accuracy.csv", out / "cost.csv"]
    for path, text in zip(files, (markdown, accuracy_csv(cells), cost_csv(cells))):
        _write_atomic(path, text)
    for task in dict.fromkeys(c.task for c in cells if c.task != "locomo"):
        task_cells = [c for c in cells if c.task == task]
        title = f"{task} · {model}"
        files.append(plot_accuracy(task_cells, out / f"{task}_accuracy.png", title=title, context_window=context_window))
        files.append(plot_cost(task_cells, out / f"{task}_cost.png", title=title, context_window=context_window))
    # One length per LoCoMo conversation: per-category bars instead of lines against length.
    locomo_groups = _locomo_groups(records)
    for length in dict.fromkeys(length for _, length in locomo_groups):
        groups = {graph: group for (graph, other), group in locomo_groups.items() if other == length}
        summaries = {graph: _locomo_summary(group) for graph, group in groups.items()}
        prompt_tokens = {graph: _mean([r["prompt_tokens"] for r in group if not r.get("error")]) or 0.0 for graph, group in groups.items()}
        files.append(plot_locomo(summaries, prompt_tokens, out / f"{length}_scores.png", title=f"LoCoMo {length} · {model}"))
    return ComparisonResult(out=out, results=results_path, cells=cells, markdown=markdown, files=files)


# Command line -------------------------------------------------------------------------------


def add_compare_parser(commands: Any) -> argparse.ArgumentParser:
    """Register ``memagent compare`` on the CLI's sub-parsers."""
    from ..cli import add_backend_options  # the CLI imports this module lazily: no cycle at import time

    parser = commands.add_parser(
        "compare",
        help="compare graphs (MemAgent, full context, RAG, ...) on the same samples across lengths",
        description="Run every graph on the same samples (generated tasks at several lengths, or --data files), "
        "resumably, and write accuracy and cost tables (markdown, CSV) and plots to --out.",
    )
    what = parser.add_argument_group("what to compare")
    what.add_argument("--graphs", default="memagent,full_context,rag", help=f"comma-separated graphs, from: {', '.join(GRAPH_BUILDERS)} (default: %(default)s)")
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
    run.add_argument("--concurrency", type=int, default=8, help="samples in flight at once (default: %(default)s)")
    run.add_argument("--retry-errors", action="store_true", help="re-run samples that recorded an error")
    run.add_argument("--context-window", type=int, help="model window in tokens for the plots (default: a local model's own)")
    run.add_argument("--flops-model", help="model for FLOP estimates: a preset (qwen2.5-7b, qwen2.5-14b, smollm2-135m) or a model dir (default: the model's own, if known)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_options(parser)
    graphs = parser.add_argument_group("graphs (defaults: the demo's budget for smollm2-135m, the MemAgent paper's otherwise)")
    graphs.add_argument("--chunk-tokens", type=int, help="MemAgent: document tokens per memory update (1000 | 5000)")
    graphs.add_argument("--memory-tokens", type=int, help="MemAgent: memory size limit in tokens (128 | 1024)")
    graphs.add_argument("--answer-tokens", type=int, help="answer length limit in tokens (64 | 1024)")
    graphs.add_argument("--final-prompt", choices=("boxed", "answer_is"), help="final answer format (default: boxed)")
    graphs.add_argument("--max-input-tokens", type=int, help="full context: prompt budget before center truncation (default: the model's window)")
    graphs.add_argument("--rag-chunk-tokens", type=int, help="RAG: tokens per chunk (default: 500)")
    graphs.add_argument("--rag-top-k", type=int, help="RAG: chunks retrieved (default: 1)")
    graphs.add_argument("--max-turns", type=int, help="SUMER: turns per episode; AgeMem: turns per stage (6 | 20)")
    graphs.add_argument("--turn-tokens", type=int, help="SUMER and AgeMem: generation limit of one tool-calling turn (128 | 1024)")
    parser.set_defaults(handler=cmd_compare)
    return parser


def config_from_args(args: argparse.Namespace) -> ComparisonConfig:
    """A :class:`ComparisonConfig` from parsed ``memagent compare`` arguments."""
    if args.data and (args.task or args.lengths):
        raise ComparisonError("--data replaces --task and --lengths: give either --data or --task/--lengths, not both")
    given = [
        flag
        for flag, value in (("--pool", args.pool), ("--num-docs", args.num_docs), ("--include-adversarial", args.include_adversarial), ("--limit", args.limit))
        if value
    ]
    if given and not args.data:
        raise ComparisonError(f"{', '.join(given)} only apply to --data files")
    options = default_graph_options(args.model)
    overrides = {
        "chunk_tokens": args.chunk_tokens,
        "memory_tokens": args.memory_tokens,
        "answer_tokens": args.answer_tokens,
        "final_prompt": args.final_prompt,
        "max_input_tokens": args.max_input_tokens,
        "rag_chunk_tokens": args.rag_chunk_tokens,
        "rag_top_k": args.rag_top_k,
        "max_turns": args.max_turns,
        "turn_tokens": args.turn_tokens,
    }
    options = replace(options, **{k: v for k, v in overrides.items() if v is not None})
    return ComparisonConfig(
        graphs=tuple(name.strip() for name in args.graphs.split(",") if name.strip()),
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


def cmd_compare(args: argparse.Namespace) -> int:
    """``memagent compare``: run, then print the summary tables and where files went."""
    from ..cli import CliError, _model, _tokenizer_hint

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
