"""The local engine: one loaded model and a worker thread that decodes concurrent requests together.

Continuous batching, sized for CPU: each prompt is prefilled on its own, continuing the
longest prefix it shares with a recent prompt (:mod:`._prefix_cache`), then every active
request advances one token per shared decode step over a left-padded KV cache.
:class:`~langgraph_memagent.agents.local_model.LocalChatModel` serves LangChain calls
through it; a trainer serves its policy with :meth:`BatchedGenerator.serve_while`.

>>> from langgraph_memagent.agents.sampling import SamplingParams
>>> engine = BatchedGenerator.load(model_dir, quantization="int4")                       # doctest: +SKIP
>>> engine.submit(prompt_ids, SamplingParams(max_tokens=32, temperature=0.0, top_p=1.0)).result().text  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import itertools
import queue
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._host import on_a_passing_thread, release_freed_memory
from ._prefix_cache import PrefixCache, weights_version
from .constrained import GrammarTokenizer, TokenConstraint, mask_logits
from .extras import needs_extra
from .prompt_lookup import draft_from_history
from .sampling import SamplingParams, next_tokens, policy_logprobs

_HAND_OVER = object()  # queued for the serving thread: finish your rows and return (serve_while)
# Engines not yet closed, held weakly: an engine its owner dropped (and whose worker, if any,
# has stopped) is freed with its model and caches instead of living until the process exits.
_OPEN_ENGINES: weakref.WeakSet[BatchedGenerator] = weakref.WeakSet()


@atexit.register
def _close_open_engines() -> None:
    # A daemon worker still inside torch when the interpreter finalizes aborted the process
    # ("terminate called without an active exception", 6 of 16 processes measured): stop them first.
    for engine in list(_OPEN_ENGINES):
        engine.close()


@dataclass
class Completion:
    """One finished generation."""

    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    text: str
    finish_reason: str  # "stop" (end-of-sequence token) or "length" (max_tokens reached)
    # Sampled calls that ask for them: each token's log-prob under the model's own distribution at the temperature.
    completion_logprobs: list[float] | None = None


TokenListener = Callable[[list[int]], None]
"""Called on the engine's thread with each step's new token ids of one request (streaming)."""


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    constraint: TokenConstraint | None = None  # the grammar this generation follows, if any
    future: Future = field(default_factory=Future)  # cancelled by the caller: the request leaves at the next step
    on_tokens: TokenListener | None = None

    def finish(self, completion: Completion) -> None:
        try:
            self.future.set_result(completion)
        except InvalidStateError:  # cancelled by its caller meanwhile: no one to tell
            pass

    def fail(self, error: BaseException) -> None:
        try:
            self.future.set_exception(error)
        except InvalidStateError:
            pass


@dataclass
class _Row:
    """A request being decoded: its tokens so far and its real (unpadded) cache length."""

    request: _Request
    generated: list[int]
    length: int
    logprobs: list[float] = field(default_factory=list)  # of ``generated``, when sampled


class BatchedGenerator:
    """One loaded model plus a worker thread that decodes concurrent requests together.

    The worker starts on the first submit; :meth:`serve_while` decodes on the calling thread instead.

    Continuous batching, sized for CPU: each request's prompt is prefilled on its own
    (prefill is compute-bound, so batching it gains nothing, and a padded batch would
    force the slow masked attention path), then every active request advances one
    token per shared decode step over a left-padded KV cache. Finished requests leave
    the batch at once; new ones join between steps, up to ``max_batch_size``. The first
    request after an idle spell waits ``batch_window_s`` for company. After
    ``idle_trim_s`` without work the worker hands freed memory back to the OS
    (:func:`release_freed_memory`). A prompt that starts like one of the last
    ``prefix_cache_size`` prompts of the same busy spell and weights prefills only the
    tokens after their shared prefix (0 turns this off). A greedy request decoded alone on the
    eager fused step drafts up to its ``SamplingParams.prompt_lookup_num_tokens`` tokens from its
    own prompt and checks them in one forward (:mod:`.prompt_lookup`; 0 turns this off). Shared by every
    :class:`LocalChatModel` that names the same model directory, dtype and device.
    """

    idle_trim_s = 1.0  # idle seconds before trimming: not between the calls of a busy run

    def __init__(
        self, model: Any, tokenizer: Any, *, max_batch_size: int = 8, batch_window_s: float = 0.03, compile_decode: bool = False,
        prefix_cache_size: int = 16,
    ):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size!r}")
        if prefix_cache_size < 0:
            raise ValueError(f"prefix_cache_size must be >= 0 (0 = off), got {prefix_cache_size!r}")
        self.tokenizer = tokenizer
        # The very module given: a trainer's weight updates (and an enabled LoRA adapter) are
        # what the next generation sees.
        self.model = model
        self.device = str(next(model.parameters()).device)
        self.max_batch_size = max_batch_size
        self.batch_window_s = batch_window_s
        eos = self.model.generation_config.eos_token_id
        eos = eos if eos is not None else self.tokenizer.eos_token_id
        self.eos_token_ids = set(eos if isinstance(eos, list) else [eos])
        from .fused_decode import create_decode_step
        from .quantization import prefill_path

        # int4 Llama models decode through straight-line code with the same arithmetic (compiled if asked).
        self._fused_step = on_a_passing_thread(create_decode_step, model, compiled=compile_decode)
        self.decode_path = "transformers" if self._fused_step is None else "compiled-fused-int4-llama" if compile_decode else "fused-int4-llama"
        self.prefill_path = prefill_path(model)
        self.prefixes = PrefixCache(prefix_cache_size) if prefix_cache_size else None
        # Drafts need the eager fused step: it checks several tokens of one row in one forward.
        self.can_draft = self.decode_path == "fused-int4-llama"
        # Observable, so tests and benchmarks can see requests share decode steps.
        self.batches_run = 0  # busy spells: requests overlapping in time count as one batch
        self.drafted_tokens = self.accepted_tokens = 0  # prompt lookup: tokens drafted, and those the model agreed with
        self.peak_rows = 0  # most requests ever decoded in one step
        self.active_rows = 0  # requests being decoded right now
        self.trims = 0  # idle spells after which freed memory went back to the OS
        self._queue: queue.Queue[Any] = queue.Queue()  # requests; None: stop serving; _HAND_OVER: see serve_while
        self._grammar_tokenizer: GrammarTokenizer | None = None
        self._grammar_lock = threading.Lock()
        self._name = Path(str(getattr(model.config, "_name_or_path", "") or "model")).name
        self._closed = False
        self._serving_lock = threading.Lock()  # who serves: the worker thread, or a serve_while caller
        self._served_by_caller = False
        self._worker: threading.Thread | None = None  # started by the first submit no caller serves
        _OPEN_ENGINES.add(self)  # closed at exit (_close_open_engines)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker after the step it is in; requests not finished get an error."""
        self._closed = True
        _OPEN_ENGINES.discard(self)
        if self._worker is not None and self._worker.is_alive():
            self._queue.put(None)
            self._worker.join(timeout)

    def serve_while(self, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` on a helper thread while the calling thread decodes the requests; its result.

        For a process whose calling thread runs tensor work of its own, such as a trainer's loss
        passes: that work gives the thread an OpenMP team, and the worker thread's team beside it
        puts 2 cores' OpenMP runtime in its slow, non-spinning mode. Serving on the calling
        thread keeps one team: after a loss pass on the main thread, a greedy SUMER evaluation
        of a LoRA policy decoded 1.50x faster (BENCHMARKS.md section 11). A worker thread that
        is serving hands over once its rows finish; the next submit nobody serves starts one.

        >>> engine.serve_while(graph.batch, inputs)  # doctest: +SKIP
        """
        with self._serving_lock:
            if self._closed or self._served_by_caller:
                raise RuntimeError("serve_while needs an open engine that no other thread is serving")
            worker, self._worker, self._served_by_caller = self._worker, None, True
        if worker is not None and worker.is_alive():
            self._queue.put(_HAND_OVER)
            worker.join()
        try:
            with ThreadPoolExecutor(1, thread_name_prefix=f"served-by-caller:{self._name}") as helper:
                outcome = helper.submit(function, *args, **kwargs)
                outcome.add_done_callback(lambda _: self._queue.put(_HAND_OVER))
                self._serve()
        finally:
            with self._serving_lock:
                self._served_by_caller = False
                if not self._queue.empty():  # submitted after the hand-over: the worker takes them
                    self._start_worker()
        return outcome.result()

    def _start_worker(self) -> None:
        self._worker = threading.Thread(target=self._serve, name=f"batched-generate:{self._name}", daemon=True)
        self._worker.start()

    @classmethod
    def load(
        cls, model_path: str, *, dtype: str = "float32", device: str = "cpu", quantization: str | None = None,
        adapter: str | None = None, **options: Any,
    ) -> BatchedGenerator:
        """Load a transformers causal LM directory and serve it (``quantization="int4"``: 4-bit Linear layers, CPU;
        ``adapter``: a PEFT LoRA adapter directory merged into the weights first)."""
        with needs_extra("embedded", "the local engine (embedded and hf: models)"):
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

        if not hasattr(torch, dtype):
            raise ValueError(f"dtype must name a torch dtype such as 'bfloat16' or 'float32', got {dtype!r}")

        def build() -> Any:
            model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype)).to(device).eval()
            if adapter is not None:
                with needs_extra("train", "a LoRA adapter (adapter=)"):
                    from peft import PeftModel

                # Merged, the adapter costs nothing per token; the decode paths see a plain model.
                model = PeftModel.from_pretrained(model, adapter).merge_and_unload().eval()
            if quantization is None:
                return model
            from .quantization import quantize_for_cpu

            return quantize_for_cpu(model, quantization)

        return cls(on_a_passing_thread(build), AutoTokenizer.from_pretrained(model_path), **options)

    def submit(
        self, prompt_ids: list[int], params: SamplingParams, grammar: str | None = None, on_tokens: TokenListener | None = None
    ) -> Future:
        """Queue one generation, following ``grammar`` (llguidance Lark, see :mod:`.constrained`) if given;
        the future resolves to a :class:`Completion`.

        ``on_tokens`` hears each step's new token ids on the engine's thread, before the future
        resolves (streaming); it must not block. Cancelling the future ends the generation at the
        next step, freeing its row for others.
        """
        if not prompt_ids:
            raise ValueError("prompt_ids must hold at least one token")
        if self._closed:
            raise RuntimeError("the generation engine is closed: load the model again")
        request = _Request(list(prompt_ids), params, self._constraint(grammar) if grammar is not None else None, on_tokens=on_tokens)
        with self._serving_lock:
            if not self._served_by_caller and (self._worker is None or not self._worker.is_alive()):
                self._start_worker()
            self._queue.put(request)
        return request.future

    def _constraint(self, grammar: str) -> TokenConstraint:
        with self._grammar_lock:  # built once, on the first constrained call
            if self._grammar_tokenizer is None:
                self._grammar_tokenizer = GrammarTokenizer(self.tokenizer, self.model.config.vocab_size)
        return self._grammar_tokenizer.constraint(grammar, sorted(self.eos_token_ids))

    # The worker ---------------------------------------------------------------------
    def _arrivals(self, idle: bool, room: int) -> list[_Request]:
        if room <= 0:
            return []
        if not idle:
            arrivals = []
            while len(arrivals) < room:
                try:
                    arrivals.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            return arrivals
        try:
            arrivals = [self._queue.get(timeout=self.idle_trim_s)]
        except queue.Empty:
            self.trims += release_freed_memory()
            arrivals = [self._queue.get()]
        deadline = time.monotonic() + self.batch_window_s
        while len(arrivals) < room:
            try:
                arrivals.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return arrivals

    def _serve(self) -> None:
        import torch

        rows: list[_Row] = []
        batch = _DecodeBatch(self.device, self.max_batch_size)
        handing_over = False  # finish the rows, take no more, return
        while True:
            if handing_over and not rows:
                return
            arrivals = [] if handing_over else self._arrivals(idle=not rows, room=self.max_batch_size - len(rows))
            if None in arrivals:
                self._stop([row.request for row in rows] + [request for request in arrivals if request is not None])
                return
            if _HAND_OVER in arrivals:
                handing_over = True
                arrivals = [request for request in arrivals if request is not _HAND_OVER]
            if arrivals and not rows:
                self.batches_run += 1
                if self.prefixes is not None:  # between spells the caller may have changed the model (an adapter toggled)
                    self.prefixes.clear()
            joining = []
            for request in arrivals:
                if request.future.cancelled():
                    continue
                try:
                    row, cache = self._prefill(request)
                except BaseException as error:  # the caller must hear about it
                    request.fail(error)
                    continue
                if not self._finish_if_done(row):
                    joining.append((cache, row.length))
                    rows.append(row)
            self.active_rows = len(rows)
            self.peak_rows = max(self.peak_rows, len(rows))
            try:
                # The cache was made under inference mode: it can only be written under it.
                with torch.inference_mode():
                    batch.add(joining)
                    if rows:
                        self._decode_step(rows, batch)
                        leaving = [i for i, row in enumerate(rows) if self._finish_if_done(row)]
                        if leaving:
                            rows = [rows[i] for i in batch.remove(leaving)]
            except BaseException as error:
                for row in rows:
                    row.request.fail(error)
                rows, batch = [], _DecodeBatch(self.device, self.max_batch_size)
            # Before the next wait for arrivals: the last rows leaving must show, or an idle engine
            # reports the rows of its last step until the next request comes.
            self.active_rows = len(rows)

    def _stop(self, unfinished: list[_Request]) -> None:
        error = RuntimeError("the generation engine was closed (the process is exiting) before this request finished")
        for request in unfinished:
            request.fail(error)
        while True:  # requests queued behind the stop
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(request, _Request):
                request.fail(error)

    def _prefill(self, request: _Request) -> tuple[_Row, Any]:
        import torch
        from transformers.cache_utils import DynamicCache, DynamicLayer

        prompt, shared, cache = request.prompt_ids, 0, None
        with torch.inference_mode():
            if self.prefixes is not None:
                self.prefixes.check_weights(weights_version(self.model))
                shared, layers = self.prefixes.longest(prompt)
                if layers is not None:
                    cache = DynamicCache()
                    cache.layers[:] = [_continuing(keys[:, :, :shared], values[:, :, :shared]) for keys, values in layers]
            output = self.model(input_ids=torch.tensor([prompt[shared:]], device=self.device), cache=cache, use_cache=True, logits_to_keep=1)
            # Only plain full-attention layers can be cut at any length and continued.
            if self.prefixes is not None and all(type(layer) is DynamicLayer for layer in output.cache.layers):
                self.prefixes.put(prompt, [(layer.keys, layer.values) for layer in output.cache.layers])
        logits = output.logits[:, -1, :]
        logprobs = policy_logprobs(logits, [request.params])
        token = next_tokens(mask_logits(logits, [request.constraint]), [request.params], [request.prompt_ids])[0]
        if request.constraint is not None:
            request.constraint.advance(token)
        row = _Row(request, [token], len(request.prompt_ids))
        if logprobs is not None:
            row.logprobs.append(float(logprobs[0, token]))
        _tell(request, [token])
        return row, output.cache

    def _decode_step(self, rows: list[_Row], batch: _DecodeBatch) -> None:
        """One token for every row (more for a lone greedy row whose draft the model agrees with); under the caller's inference mode."""
        import torch

        if len(rows) == 1 and self._check_draft(rows[0], batch):
            return
        input_ids = torch.tensor([[row.generated[-1]] for row in rows], device=self.device)
        # Each row continues at its own position, whatever padding sits to its left.
        position_ids = torch.tensor([[row.length] for row in rows], device=self.device)
        if self._fused_step is not None:
            logits = self._fused_step(input_ids, batch.extend_mask(), position_ids, batch.cache)
        else:
            output = self.model(input_ids=input_ids, attention_mask=batch.extend_mask(), position_ids=position_ids, cache=batch.cache, use_cache=True)
            batch.cache, logits = output.cache, output.logits[:, -1, :]
        # Lazy: a row's tokens are read only when it has a repetition penalty, never copied per step.
        histories = [itertools.chain(row.request.prompt_ids, row.generated) for row in rows]
        constraints, params = [row.request.constraint for row in rows], [row.request.params for row in rows]
        logprobs = policy_logprobs(logits, params)
        tokens = next_tokens(mask_logits(logits, constraints), params, histories)
        if logprobs is not None:
            picked = logprobs.gather(-1, torch.tensor(tokens, device=logprobs.device)[:, None]).squeeze(-1).tolist()
        for index, (row, token, constraint) in enumerate(zip(rows, tokens, constraints)):
            row.generated.append(token)
            row.length += 1
            if logprobs is not None and row.request.params.reports_logprobs:
                row.logprobs.append(picked[index])
            if constraint is not None:
                constraint.advance(token)
            _tell(row.request, [token])

    def _check_draft(self, row: _Row, batch: _DecodeBatch) -> bool:
        """Prompt lookup decoding (:mod:`.prompt_lookup`) for a lone greedy row: False where it does not apply.

        The row's last token and its draft go through one forward; the model's greedy choice after
        each is kept while it equals the draft, plus the first that does not (or the last one).
        """
        import torch

        params = row.request.params
        room = params.max_tokens - len(row.generated) - 1  # drafts past the limit would be thrown away
        if not self.can_draft or not params.prompt_lookup_num_tokens or params.temperature != 0 or params.repetition_penalty != 1.0 or row.request.constraint is not None or room < 1:
            return False
        draft = draft_from_history(itertools.chain(row.request.prompt_ids, row.generated), min(params.prompt_lookup_num_tokens, room))
        if not draft:
            return False
        tokens = [row.generated[-1], *draft]
        positions = torch.arange(row.length, row.length + len(tokens), device=self.device)[None]
        logits = self._fused_step(torch.tensor([tokens], device=self.device), batch.extend_mask(len(tokens)), positions, batch.cache)[0]
        picked = next_tokens(logits, [params] * len(tokens), [()] * len(tokens))
        kept = 1
        while kept < len(tokens) and picked[kept - 1] == draft[kept - 1] and picked[kept - 1] not in self.eos_token_ids:
            kept += 1
        batch.drop_last(len(tokens) - kept)  # the draft from the first token the model disagreed with
        self.drafted_tokens += len(draft)
        self.accepted_tokens += kept - 1
        row.generated.extend(picked[:kept])
        row.length += kept
        _tell(row.request, picked[:kept])
        return True

    def _finish_if_done(self, row: _Row) -> bool:
        """Resolve the row's future if it hit end-of-sequence, a stop string or its token limit; True
        when the row leaves the batch (so does a row whose caller cancelled it)."""
        ids, params = row.generated, row.request.params
        if row.request.future.cancelled():
            return True
        text = self.tokenizer.decode(ids, skip_special_tokens=True) if params.stop else None
        cut = min((found for stop in params.stop if (found := text.find(stop)) >= 0), default=None) if params.stop else None
        if cut is not None:
            finish_reason, text = "stop", text[:cut]
        elif ids[-1] in self.eos_token_ids:
            finish_reason = "stop"  # the EOS token stays: a trainer must learn to emit it
        elif len(ids) >= params.max_tokens:
            finish_reason = "length"
        else:
            return False
        text = self.tokenizer.decode(ids, skip_special_tokens=True) if text is None else text
        sampled = row.logprobs if params.reports_logprobs else None
        row.request.finish(Completion(row.request.prompt_ids, list(ids), text, finish_reason, sampled))
        return True


def _tell(request: _Request, tokens: list[int]) -> None:
    """Hand a step's new tokens to the request's listener; a listener that fails (its caller went
    away) is dropped, never the row or the batch."""
    if request.on_tokens is not None:
        try:
            request.on_tokens(list(tokens))
        except Exception:
            request.on_tokens = None


def _continuing(keys: Any, values: Any) -> Any:
    """A cache layer holding a stored prefix's views: the prefill's own concatenation is the one copy made
    (``DynamicCache(ddp_cache_data=...)`` would copy the prefix once more)."""
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()
    layer.lazy_initialization(keys, values)
    layer.keys, layer.values = keys, values
    return layer


class _DecodeBatch:
    """The shared KV cache of the rows being decoded, left-padded to a common length.

    Its layers are :class:`SlabLayer` s over buffers with room for ``capacity`` rows: decode
    steps append in place; a row leaving is replaced by the last row (one row copied, the
    order of the rest kept) and a row joining is written into the next free row when its
    prompt fits the buffer's columns (the cached columns widen to the left when it is longer).
    Only a row longer than the buffer, or one past its rows, copies the whole batch.
    """

    def __init__(self, device: str, capacity: int = 1):
        self.device = device
        self.capacity = capacity
        self.cache: Any = None
        self.mask: Any = None  # (rows, cached length): 1 for real tokens, 0 for padding

    def add(self, joining: list[tuple[Any, int]]) -> None:
        """Rows joining the batch, each a prefilled cache and its length, in this order after the rows there.

        Rows that fit are written in place; the others join in one new buffer per layer, so a
        wave of arrivals copies the batch once, not once per row (with 32 SUMER prompts of
        about 1,500 tokens joining one by one, the copies took 28% of a greedy evaluation's time).
        """
        for index, (cache, length) in enumerate(joining):
            if not self._fits(length):
                self._rebuild(joining[index:])
                return
            self._put(cache, length)

    def _fits(self, length: int) -> bool:
        if self.cache is None:
            return False
        keys, values = self.cache.layers[0].windows
        return keys.rows < keys.slab.shape[0] and length <= min(keys.end, values.end)

    def _put(self, cache: Any, length: int) -> None:
        import torch

        rows, width = self.mask.shape
        for layer, joined in zip(self.cache.layers, cache.layers):
            for window, states in zip(layer.windows, (joined.keys, joined.values)):
                if window.end - length < window.start:
                    window.widen_to(window.end - length)
                window.put_row(rows, states)
                window.rows += 1
        if length > width:
            self.mask = torch.cat([self.mask.new_zeros((rows, length - width)), self.mask], dim=1)
            width = length
        row = torch.cat([self.mask.new_zeros((1, width - length)), self.mask.new_ones((1, length))], dim=1)
        self.mask = torch.cat([self.mask, row])

    def _rebuild(self, joining: list[tuple[Any, int]]) -> None:
        import torch

        from ._kv_slab import SPARE_COLUMNS, SlabLayer

        parts = ([(self.cache, self.mask.shape[1], self.mask)] if self.cache is not None else []) + [
            (cache, length, torch.ones((1, length), dtype=torch.long, device=self.device)) for cache, length in joining
        ]
        width = max(length for _, length, _ in parts)
        rows = sum(mask.shape[0] for _, _, mask in parts)
        self.mask = torch.zeros((rows, width), dtype=torch.long, device=self.device)
        layers = []
        for index in range(len(parts[0][0].layers)):
            slabs = []
            for name in ("keys", "values"):
                first = getattr(parts[0][0].layers[index], name)
                # Rows past those joining are room: untouched, they cost address space, not memory.
                slab = first.new_empty((max(rows, self.capacity), first.shape[1], width + SPARE_COLUMNS, first.shape[3]))
                row = 0
                for cache, length, mask in parts:
                    states, count = getattr(cache.layers[index], name), mask.shape[0]
                    slab[row : row + count, :, : width - length] = 0  # left padding: masked, but must not hold NaN
                    slab[row : row + count, :, width - length : width] = states
                    row += count
                slabs.append(slab)
            layers.append(SlabLayer.from_slabs(*slabs, width, rows))
        row = 0
        for _, length, mask in parts:
            self.mask[row : row + mask.shape[0], width - length :] = mask
            row += mask.shape[0]
        container = self.cache if self.cache is not None else joining[0][0]
        container.layers[:] = layers
        self.cache = container

    def extend_mask(self, columns: int = 1) -> Any:
        import torch

        self.mask = torch.cat([self.mask, torch.ones((self.mask.shape[0], columns), dtype=self.mask.dtype, device=self.device)], dim=1)
        return self.mask

    def drop_last(self, columns: int) -> None:
        """Forget the last ``columns`` cached tokens of every row (a draft's tokens the model did not keep)."""
        if columns:
            self.mask = self.mask[:, :-columns]
            for layer in self.cache.layers:
                layer.extend(-columns)

    def remove(self, leaving: list[int]) -> list[int]:
        """Drop the rows at ``leaving``: each is overwritten by the last row. Returns the rows' new order
        (old indices), which the caller's row list must follow."""
        order = list(range(self.mask.shape[0]))
        if len(leaving) == len(order):
            self.cache = self.mask = None
            return []
        windows = [window for layer in self.cache.layers for window in layer.windows]
        for row in sorted(leaving, reverse=True):
            last = len(order) - 1
            if row != last:
                for window in windows:
                    window.copy_row(last, row)
                self.mask[row] = self.mask[last]
                order[row] = order[last]
            order.pop()
        self.mask = self.mask[: len(order)]
        # Columns that are padding in every remaining row are dead weight: the window starts after them.
        dead = int((self.mask.sum(dim=0) > 0).nonzero()[0])
        self.mask = self.mask[:, dead:]
        for window in windows:
            window.rows, window.start = len(order), window.start + dead
        return order


_ENGINES: dict[tuple, BatchedGenerator] = {}
_ENGINES_LOCK = threading.Lock()


def shared_engine(
    model_path: str, *, dtype: str, device: str, quantization: str | None, max_batch_size: int, batch_window_s: float,
    compile_decode: bool = False, prefix_cache_size: int = 16, adapter: str | None = None,
) -> BatchedGenerator:
    """The process-wide :class:`BatchedGenerator` for this model, created on first use."""
    merged = adapter and str(Path(adapter).resolve())
    key = (str(Path(model_path).resolve()), merged, dtype, device, quantization, max_batch_size, batch_window_s, compile_decode, prefix_cache_size)
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = BatchedGenerator.load(
                model_path, dtype=dtype, device=device, quantization=quantization, adapter=merged, max_batch_size=max_batch_size,
                batch_window_s=batch_window_s, compile_decode=compile_decode, prefix_cache_size=prefix_cache_size,
            )
        return _ENGINES[key]


__all__ = ["BatchedGenerator", "Completion", "TokenListener", "shared_engine"]
