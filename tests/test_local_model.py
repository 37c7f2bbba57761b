"""The local transformers backend on the real embedded model: usage, token ids, dynamic batching."""

import asyncio
import json
import time
import warnings

import pytest
from langchain_core.messages import HumanMessage

PROMPTS = [f"Name a color that starts with the letter {letter}." for letter in "BGRYPW"]


def test_reply_carries_usage_and_exact_token_ids(greedy_model):
    reply = greedy_model.invoke("What is the capital of France? One word.", max_tokens=12)
    meta, usage = reply.response_metadata, reply.usage_metadata
    tokenizer = greedy_model.tokenizer
    assert usage["input_tokens"] == len(meta["prompt_token_ids"])
    assert usage["output_tokens"] == len(meta["completion_token_ids"]) <= 12
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # The recorded prompt is exactly the chat template applied to the message.
    expected_prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France? One word."}], add_generation_prompt=True, tokenize=False
    )
    assert tokenizer.decode(meta["prompt_token_ids"]) == expected_prompt
    assert tokenizer.decode(meta["completion_token_ids"], skip_special_tokens=True) == reply.content
    assert "Paris" in reply.content
    if meta["finish_reason"] == "stop":
        assert meta["completion_token_ids"][-1] == tokenizer.eos_token_id


def test_max_tokens_bounds_the_completion(greedy_model):
    reply = greedy_model.invoke("Count from one to one hundred in words.", max_tokens=5)
    assert len(reply.response_metadata["completion_token_ids"]) == 5
    assert reply.response_metadata["finish_reason"] == "length"


def test_concurrent_calls_decode_as_one_batch(greedy_model):
    engine = greedy_model.engine
    sequential = [greedy_model.invoke(p, max_tokens=8).content for p in PROMPTS[:4]]
    before = engine.batches_run
    batched = greedy_model.batch(PROMPTS[:4], {"max_concurrency": 4}, max_tokens=8)
    assert engine.batches_run - before == 1
    # Greedy decoding: left padding must not change what a prompt generates.
    assert [r.content for r in batched] == sequential


async def test_async_calls_are_merged_too(greedy_model):
    engine = greedy_model.engine
    before = engine.batches_run
    replies = await asyncio.gather(*(greedy_model.ainvoke([HumanMessage(p)], max_tokens=6) for p in PROMPTS))
    assert engine.batches_run - before == 1
    assert all(r.usage_metadata["output_tokens"] <= 6 for r in replies)


def test_mixed_sampling_settings_share_a_batch(greedy_model):
    # Sampling is per row, so greedy and sampled calls decode side by side.
    engine = greedy_model.engine
    sampled = greedy_model.bind(temperature=1.0, top_p=0.9, max_tokens=3)
    before = engine.batches_run
    asyncio.run(_gather(greedy_model.ainvoke("Say yes.", max_tokens=3), sampled.ainvoke("Say no.")))
    assert engine.batches_run - before == 1


def test_sampled_calls_report_the_policys_own_log_probs(greedy_model):
    """A sampled call's log-probs are the model's own at the temperature, before the grammar's
    mask and top-p: what a trainer's forward pass computes for the old policy (``--old_logps rollout``).
    They are opt-in (``logprobs=True``, as the trainer's policy model sets), as vLLM's are."""
    import torch

    assert "completion_logprobs" not in greedy_model.invoke("Name a colour.", temperature=1.0, max_tokens=4).response_metadata
    reporting = greedy_model.model_copy(update={"logprobs": True})

    def lookup(city: str) -> str:
        """Look up a city."""
        return city

    forced = reporting.bind_tools([lookup], tool_choice="required")  # a grammar masks every step
    prompts = ["Which city is the capital of Italy?", "Name a city in Japan.", "Where is the Eiffel Tower?"]
    replies = forced.batch(prompts, {"max_concurrency": 3}, temperature=0.7, top_p=0.9, max_tokens=48)
    replies.append(reporting.invoke("Name a colour.", temperature=1.3, max_tokens=12))
    model = greedy_model.engine.model
    for reply, temperature in zip(replies, (0.7, 0.7, 0.7, 1.3)):
        meta = reply.response_metadata
        prompt, completion, reported = meta["prompt_token_ids"], meta["completion_token_ids"], meta["completion_logprobs"]
        assert len(reported) == len(completion) > 0
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
        expected = torch.log_softmax(logits.float() / temperature, dim=-1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)
        assert torch.allclose(torch.tensor(reported), expected, atol=2e-3), (reported, expected.tolist())
    assert "completion_logprobs" not in reporting.invoke("Name a colour.", max_tokens=4).response_metadata  # greedy


async def _gather(*calls):
    return await asyncio.gather(*calls)


def test_a_request_joins_a_batch_already_decoding(greedy_model):
    """Continuous batching: a late request enters between decode steps, at its own position."""
    long_prompt, short_prompt = "Tell me a long story about a brave knight.", "What is 2 + 2?"
    alone = [greedy_model.invoke(long_prompt, max_tokens=40).content, greedy_model.invoke(short_prompt, max_tokens=10).content]
    engine = greedy_model.engine
    before = engine.batches_run

    async def late_start():
        first = asyncio.ensure_future(greedy_model.ainvoke(long_prompt, max_tokens=40))
        while engine.active_rows == 0:  # join only once the first request is decoding
            await asyncio.sleep(0.01)
        second = await greedy_model.ainvoke(short_prompt, max_tokens=10)
        return [(await first).content, second.content]

    together = asyncio.run(late_start())
    assert engine.batches_run - before == 1
    assert together == alone  # padding and positions handled: greedy output unchanged


def test_tiny_top_p_samples_the_most_likely_token(greedy_model):
    prompt = "Name the largest planet of the solar system."
    greedy = greedy_model.invoke(prompt, max_tokens=12).content
    nucleus_of_one = greedy_model.invoke(prompt, max_tokens=12, temperature=1.0, top_p=1e-6).content
    assert nucleus_of_one == greedy


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_tokens": 0}, "max_tokens must be a positive integer, got 0"),
        ({"temperature": -1.0}, "temperature must be >= 0"),
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\], got 1.5"),
        ({"frequency_penalty": 1.0}, r"unsupported call options \['frequency_penalty'\]"),
    ],
)
def test_bad_call_options_are_named(greedy_model, options, message):
    with pytest.raises(ValueError, match=message):
        greedy_model.invoke("hi", **options)


def test_load_chat_model_specs(embedded_model_dir, tmp_path):
    from langgraph_memagent import load_chat_model
    from langgraph_memagent.agents.local_model import LocalChatModel

    model = load_chat_model(f"hf:{embedded_model_dir}", temperature=0)
    assert isinstance(model, LocalChatModel) and model.temperature == 0
    with pytest.raises(ValueError, match="is not a directory"):
        load_chat_model(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="needs base_url="):
        load_chat_model("vllm:some-model")
    with pytest.raises(ValueError, match="unknown model spec 'gpt'"):
        load_chat_model("gpt")
    openai = load_chat_model("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert openai.max_retries == 2 and openai.request_timeout == 600


def test_vllm_engine_without_vllm_says_how_to_install():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vLLM is installed here; the missing-package path cannot be exercised")
    from langgraph_memagent import load_chat_model

    with pytest.raises(ImportError, match=r"pip install 'langgraph-memagent\[vllm\]'"):
        load_chat_model("vllm-engine:Qwen/Qwen2.5-7B-Instruct")


def _prefill_cache(length: int, seed: int):
    """A one-row, two-layer DynamicCache holding known keys/values of ``length`` tokens."""
    import torch
    from transformers.cache_utils import DynamicCache

    generator = torch.Generator().manual_seed(seed)
    cache = DynamicCache()
    for layer in range(2):
        keys, values = (torch.randn(1, 3, length, 4, generator=generator) for _ in range(2))
        cache.update(keys, values, layer)
    return cache


def test_decode_batch_keeps_rows_aligned_as_rows_join_grow_and_leave():
    """Rows joining longer than the batch (by more and by less than the slab's spare room), alone
    and two in one wave, in-place appends, rows leaving (the longest, so the cached columns shrink),
    rows joining in place (shorter, and longer than the columns left) and past the buffer's rows
    must give exactly the left-padded concatenation, in the order the batch reports."""
    import torch
    import torch.nn.functional as F

    from langgraph_memagent.agents._kv_slab import SPARE_COLUMNS
    from langgraph_memagent.agents.batched_generator import _DecodeBatch

    def step(batch, expected, value):
        batch.extend_mask()
        for index in range(len(batch.cache.layers)):
            new = torch.full((len(expected), 3, 1, 4), float(value)) + torch.arange(len(expected)).view(-1, 1, 1, 1)
            batch.cache.update(new, -new, index)
            for row, layers in enumerate(expected):
                keys, values = layers[index]
                layers[index] = (torch.cat([keys, new[row : row + 1]], 2), torch.cat([values, -new[row : row + 1]], 2))

    def check(batch, expected):
        width = batch.mask.shape[1]
        assert width == max(row[0][0].shape[2] for row in expected)  # no column is padding in every row
        for index, layer in enumerate(batch.cache.layers):
            for name, position in (("keys", 0), ("values", 1)):
                want = torch.cat([F.pad(row[index][position], (0, 0, width - row[index][position].shape[2], 0)) for row in expected])
                assert torch.equal(getattr(layer, name), want), (index, name)
        real = torch.tensor([[0] * (width - row[0][0].shape[2]) + [1] * row[0][0].shape[2] for row in expected])
        assert torch.equal(batch.mask, real)

    def join(batch, expected, lengths, seed):
        caches = [_prefill_cache(length, seed + offset) for offset, length in enumerate(lengths)]
        expected += [[(layer.keys.clone(), layer.values.clone()) for layer in cache.layers] for cache in caches]
        batch.add(list(zip(caches, lengths)))

    batch, expected = _DecodeBatch("cpu", capacity=5), []
    first = [10, 10 + SPARE_COLUMNS + 150, 10 + SPARE_COLUMNS + 150 + 40, 30]
    for wave in (first[:1], first[1:3], first[3:]):
        join(batch, expected, wave, seed=len(expected))
    for value in range(SPARE_COLUMNS + 5):  # past the spare room: the slab must grow
        step(batch, expected, value)
    check(batch, expected)
    slab = batch.cache.layers[0].windows[0].slab
    order = batch.remove([2])  # the longest row leaves: the last row takes its place
    assert order == [0, 1, 3]
    expected = [expected[i] for i in order]
    check(batch, expected)
    width = batch.mask.shape[1]
    join(batch, expected, [20, width + 20], seed=10)  # in place: shorter, then longer than the columns left
    assert batch.cache.layers[0].windows[0].slab is slab
    step(batch, expected, 1000)
    check(batch, expected)
    join(batch, expected, [15], seed=20)  # past the buffer's 5 rows: a new buffer
    assert batch.cache.layers[0].windows[0].slab is not slab
    step(batch, expected, 2000)
    check(batch, expected)
    order = batch.remove([0, 5])
    assert order == [4, 1, 2, 3]
    expected = [expected[i] for i in order]
    check(batch, expected)
    assert batch.remove([0, 1, 2, 3]) == [] and batch.cache is None


def test_longer_requests_join_a_batch_already_decoding(greedy_model):
    """Late requests whose prompts are longer than the batch's cache (by hundreds of tokens)."""
    short_prompt = "Tell me a long story about a brave knight."
    long_prompt = "Repeat the last number. " + " ".join(str(n) for n in range(300))  # ~600 tokens more
    medium_prompt = "Repeat the last number. " + " ".join(str(n) for n in range(340))
    prompts = [(short_prompt, 60), (long_prompt, 12), (medium_prompt, 12)]
    alone = [greedy_model.invoke(prompt, max_tokens=limit).content for prompt, limit in prompts]
    engine = greedy_model.engine
    before = engine.batches_run

    async def staggered():
        first = asyncio.ensure_future(greedy_model.ainvoke(short_prompt, max_tokens=60))
        while engine.active_rows == 0:  # join only once the first request is decoding
            await asyncio.sleep(0.01)
        rest = asyncio.gather(*(greedy_model.ainvoke(prompt, max_tokens=limit) for prompt, limit in prompts[1:]))
        return [(await first).content, *[reply.content for reply in await rest]]

    together = asyncio.run(staggered())
    assert engine.batches_run - before == 1
    assert together == alone


def test_an_idle_worker_hands_freed_memory_back_to_the_os(greedy_model, monkeypatch):
    from langgraph_memagent.agents import _host

    if _host._MALLOC_TRIM is None:
        pytest.skip("no glibc malloc_trim on this platform")
    engine = greedy_model.engine
    monkeypatch.setattr(engine, "idle_trim_s", 0.05)
    before = engine.trims
    greedy_model.invoke("Say yes.", max_tokens=2)
    deadline = time.monotonic() + 5
    while engine.trims == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engine.trims == before + 1  # once per idle spell, not once per idle_trim_s
    time.sleep(0.2)
    assert engine.trims == before + 1


def test_default_decoding_follows_the_generation_config(tmp_path):
    from langgraph_memagent import load_chat_model

    # The embedded model's converted directory has no sampling settings: greedy.
    embedded = load_chat_model("smollm2-135m")
    assert (embedded.temperature, embedded.top_p) == (0.0, 0.95)  # top_p is the paper's for when T is set
    assert embedded.quantization == "int4" and load_chat_model("smollm2-135m", quantization=None).quantization is None
    (tmp_path / "generation_config.json").write_text(json.dumps({"do_sample": True, "temperature": 0.6, "top_p": 0.9}))
    sampling = load_chat_model(f"hf:{tmp_path}")
    assert (sampling.temperature, sampling.top_p) == (0.6, 0.9)
    assert load_chat_model(f"hf:{tmp_path}", temperature=0).temperature == 0
    (tmp_path / "generation_config.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot read the generation config"):
        load_chat_model(f"hf:{tmp_path}")


def test_generation_uses_no_deprecated_transformers_api(greedy_model):
    # Prefill and shared decode steps run on the engine's worker thread; the warning filters
    # are process-wide, so whatever it triggers is recorded here.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        greedy_model.invoke("Name a colour.", max_tokens=3)
    deprecations = [str(w.message) for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))]
    assert not deprecations


def test_a_prompt_past_the_window_is_refused_not_answered(greedy_model):
    assert greedy_model.context_window == 8192
    with pytest.raises(ValueError, match=r"prompt of \d+ tokens \+ max_tokens 64 = \d+ exceeds the model's 8192-token window"):
        greedy_model.invoke("word " * 8200, max_tokens=64)
    with pytest.raises(ValueError, match="exceeds the model's 8192-token window"):
        greedy_model.invoke("word " * 100, max_tokens=8150)


def test_memagent_budgets_past_the_window_are_refused_at_build_time(greedy_model):
    from langgraph_memagent import build_memagent_graph

    with pytest.raises(ValueError, match=r"chunk_tokens 100000 \+ memory_tokens 1024 .* exceeds the model's 8192-token window; use chunk_tokens <= \d+"):
        build_memagent_graph(greedy_model, chunk_tokens=100000)
    with pytest.raises(ValueError, match="answer_tokens 8000 .* lower answer_tokens"):
        build_memagent_graph(greedy_model, chunk_tokens=1000, memory_tokens=128, answer_tokens=8000)
    build_memagent_graph(greedy_model)  # the MemAgent paper's 5000/1024/1024 fits an 8K window


@pytest.mark.embedded
def test_int4_weights_are_the_gguf_codes_and_decode_like_float32(embedded_model_dir):
    import torch

    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.agents.quantization import OutputProjection, Int4Linear, int4_rounding_error

    float32 = LocalChatModel(model_path=str(embedded_model_dir), temperature=0.0)
    int4 = LocalChatModel(model_path=str(embedded_model_dir), temperature=0.0, quantization="int4")
    # The float32 weights are de-quantized Q4_1 blocks, so int4 reads back every code exactly.
    layers = [module for module in float32.engine.model.modules() if isinstance(module, torch.nn.Linear)]
    assert max(int4_rounding_error(layer.weight) for layer in layers if layer.out_features != 49152) == 0.0
    kinds = {type(module) for module in int4.engine.model.modules() if isinstance(module, (torch.nn.Linear, Int4Linear, OutputProjection))}
    assert kinds == {Int4Linear, OutputProjection}  # no float32 Linear left
    assert int4.engine.model.get_input_embeddings().weight.dtype == torch.float32  # the tied table is untouched
    # Next-token agreement with float32 over a real prompt (measured 97% on 1,200 tokens).
    ids = float32.tokenizer(open(__file__).read()[:3000], return_tensors="pt").input_ids[:, :400]
    with torch.inference_mode():
        agree = (float32.engine.model(input_ids=ids).logits.argmax(-1) == int4.engine.model(input_ids=ids).logits.argmax(-1)).float().mean()
    assert agree > 0.93
    reply = int4.invoke("What is the capital of France?", max_tokens=8)
    assert "Paris" in reply.text and len(reply.response_metadata["completion_token_ids"]) <= 8


@pytest.mark.embedded
def test_int4_prefill_through_dense_weights(embedded_model_dir):
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents.quantization import DENSE_PREFILL_MIN_ROWS, Int4Linear, prefill_path, quantize_for_cpu

    float32 = AutoModelForCausalLM.from_pretrained(embedded_model_dir).eval()
    models = {weights: quantize_for_cpu(copy.deepcopy(float32), "int4", prefill_weights=weights) for weights in ("float32", "bfloat16", "int4")}
    assert [prefill_path(model) for model in (float32, *models.values())] == [
        "float32", "float32 weights of int4 layers", "bfloat16 weights of int4 layers", "int4"
    ]
    torch.manual_seed(0)
    prompt = torch.randint(100, 40_000, (1, DENSE_PREFILL_MIN_ROWS + 16))

    def last_hidden(model, ids):
        with torch.inference_mode():
            return model(input_ids=ids, output_hidden_states=True).hidden_states[-1]

    # A prompt through float32 weights: every layer runs float32 arithmetic, as in the unquantized model.
    assert torch.equal(last_hidden(models["float32"], prompt), last_hidden(float32, prompt))
    assert not torch.equal(last_hidden(models["int4"], prompt), last_hidden(float32, prompt))
    # Through bfloat16 weights: neither float32's nor the int4 kernel's numbers, but near both
    # (the same bfloat16 inputs and outputs as the int4 kernel, weights rounded to bfloat16).
    bfloat16, int4 = last_hidden(models["bfloat16"], prompt), last_hidden(models["int4"], prompt)
    assert not torch.equal(bfloat16, int4)
    assert (bfloat16 - int4).norm() / int4.norm() < 0.05
    # Fewer rows (decode steps, short prompts): the int4 kernel, whatever the prefill weights. On a
    # CPU with AMX tiles bfloat16 weights take products from AMX_DENSE_MIN_ROWS rows on.
    for model in (models["float32"], models["bfloat16"]):
        (min_rows,) = {module.dense_min_rows for module in model.modules() if isinstance(module, Int4Linear)}
        short = prompt[:, : min_rows - 1]
        assert torch.equal(last_hidden(model, short), last_hidden(models["int4"], short))


def test_prefill_weights_follow_the_cpus_instructions(monkeypatch):
    import torch

    from langgraph_memagent.agents.quantization import quantize_for_cpu

    cases = (("AVX2", False, "float32"), ("DEFAULT", False, "float32"), ("AVX512", False, "int4"), ("AVX512", True, "bfloat16"))
    for capability, bfloat16_instructions, chosen in cases:
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bfloat16_instructions)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        layer = quantize_for_cpu(torch.nn.ModuleDict({"proj": torch.nn.Linear(64, 16)}), "int4")["proj"]
        assert layer.prefill_weights == chosen, capability
    with pytest.raises(ValueError, match="prefill_weights must be one of .* got 'int8'"):
        quantize_for_cpu(torch.nn.ModuleDict({"proj": torch.nn.Linear(64, 16)}), "int4", prefill_weights="int8")


def test_int4_is_refused_where_it_cannot_apply(embedded_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.agents.quantization import quantize_for_cpu

    with pytest.raises(ValueError, match=r"quantization must be one of \['int4'\] or None, got 'int8'"):
        LocalChatModel(model_path=str(embedded_model_dir), quantization="int8")
    policy = AutoModelForCausalLM.from_pretrained(embedded_model_dir)
    with pytest.raises(ValueError, match="from_model serves the given module as it is"):
        LocalChatModel.from_model(policy, AutoTokenizer.from_pretrained(embedded_model_dir), quantization="int4")
    with pytest.raises(ValueError, match=r"divisible by 32; 'proj' has 20"):
        quantize_for_cpu(torch.nn.ModuleDict({"proj": torch.nn.Linear(20, 8)}), "int4")


@pytest.mark.embedded
def test_fused_decode_step_gives_the_models_own_logits_bit_for_bit(embedded_model_dir):
    import copy

    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents._kv_slab import SlabLayer
    from langgraph_memagent.agents.fused_decode import create_decode_step
    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.agents.quantization import quantize_for_cpu

    model = quantize_for_cpu(AutoModelForCausalLM.from_pretrained(embedded_model_dir).eval(), "int4")
    step = create_decode_step(model)
    torch.manual_seed(0)
    with torch.inference_mode():
        long, short = (model(input_ids=torch.randint(100, 40_000, (1, n)), use_cache=True).cache for n in (50, 30))
        for layer, other in zip(long.layers, short.layers):  # two rows, the shorter left-padded
            layer.keys = torch.cat([layer.keys, F.pad(other.keys, (0, 0, 20, 0))])
            layer.values = torch.cat([layer.values, F.pad(other.values, (0, 0, 20, 0))])
        long.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in long.layers]
        ours = copy.deepcopy(long)
        mask = torch.cat([torch.ones(1, 50, dtype=torch.long), F.pad(torch.ones(1, 30, dtype=torch.long), (20, 0))])
        for rows in (2, 1):  # with padding, then one row without (its own attention path)
            tokens, positions = torch.tensor([[5], [7]])[:rows], torch.tensor([[50], [30]])[:rows]
            for _ in range(3):
                mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], dim=1)
                reference = model(input_ids=tokens, attention_mask=mask, position_ids=positions, cache=long).logits[:, -1]
                assert torch.equal(step(tokens, mask, positions, ours), reference)
                tokens, positions = reference.argmax(-1, keepdim=True), positions + 1
            mask = mask[:1]
            for cache in (long, ours):
                for layer in cache.layers:
                    layer.keys, layer.values = layer.keys[:1], layer.values[:1]
    assert LocalChatModel(model_path=str(embedded_model_dir), quantization="int4").engine.decode_path == "fused-int4-llama"
    assert LocalChatModel(model_path=str(embedded_model_dir)).engine.decode_path == "transformers"


@pytest.mark.embedded
def test_closing_the_engine_fails_unfinished_requests_and_refuses_new_ones(embedded_model_dir):
    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.sampling import SamplingParams

    engine = BatchedGenerator.load(str(embedded_model_dir))
    long = engine.submit([1, 2, 3], SamplingParams(max_tokens=2000, temperature=1.0, top_p=1.0))
    while engine.active_rows == 0:  # decoding has started
        time.sleep(0.01)
    engine.close()
    with pytest.raises(RuntimeError, match="closed .* before this request finished"):
        long.result(timeout=30)
    with pytest.raises(RuntimeError, match="the generation engine is closed"):
        engine.submit([1, 2, 3], SamplingParams(max_tokens=4, temperature=0.0, top_p=1.0))


@pytest.mark.embedded
def test_a_process_that_used_the_engine_exits_cleanly(tmp_path):
    """Before the engine stopped its worker at exit, 6 of 16 such processes aborted in C++
    ("terminate called without an active exception", exit status 134)."""
    import subprocess
    import sys

    script = tmp_path / "use_engine.py"
    script.write_text(
        "from langgraph_memagent.agents.loading import load_chat_model\n"
        "print(load_chat_model('smollm2-135m', temperature=0).invoke('Hi', max_tokens=8).content)\n"
    )
    for _ in range(5):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "terminate called" not in done.stderr, done.stderr[-2000:]


@pytest.mark.embedded
def test_serve_while_decodes_on_the_calling_thread(embedded_model_dir):
    """A trainer serves its rollouts on its own thread (one OpenMP team, not two): the same
    greedy replies as the worker thread's, a worker mid-request hands over only once it finishes,
    and the worker comes back for the next submit."""
    import threading

    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.sampling import SamplingParams

    engine = BatchedGenerator.load(str(embedded_model_dir))
    greedy = SamplingParams(max_tokens=12, temperature=0.0, top_p=1.0)
    prompts = [engine.tokenizer(text)["input_ids"] for text in ("The capital of France is", "One, two, three,", "Hello")]
    decoding_threads = []
    decode_step = engine._decode_step
    engine._decode_step = lambda rows, batch: (decoding_threads.append(threading.get_ident()), decode_step(rows, batch))

    by_worker = [engine.submit(ids, greedy).result(timeout=60).text for ids in prompts]
    worker_threads = set(decoding_threads)
    assert threading.get_ident() not in worker_threads
    running = engine.submit(prompts[0], SamplingParams(max_tokens=40, temperature=0.0, top_p=1.0))
    while engine.active_rows == 0:
        time.sleep(0.01)
    decoding_threads.clear()
    served = engine.serve_while(lambda: [engine.submit(ids, greedy).result(timeout=60).text for ids in prompts])
    assert served == by_worker
    assert running.result(timeout=0).finish_reason in ("stop", "length")  # finished, not failed, by the worker
    assert decoding_threads[0] in worker_threads and decoding_threads[-1] == threading.get_ident()
    decoding_threads.clear()
    assert engine.submit(prompts[2], greedy).result(timeout=60).text == by_worker[2]
    assert threading.get_ident() not in set(decoding_threads)
    with pytest.raises(ZeroDivisionError):
        engine.serve_while(lambda: 1 / 0)
    engine.close()
    with pytest.raises(RuntimeError, match="serve_while needs an open engine"):
        engine.serve_while(print)


@pytest.mark.embedded
def test_prompts_sharing_a_prefix_prefill_only_the_rest_and_answer_alike(embedded_model_dir):
    """A GRPO group's identical prompts and prompts sharing a long system prompt: with the prefix
    cache the greedy replies are those of whole prefills and the shared tokens are not prefilled
    again; a new busy spell, or weights changed in place, start from an empty store."""
    import torch
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents._prefix_cache import PrefixCache, weights_version
    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.sampling import SamplingParams

    model = AutoModelForCausalLM.from_pretrained(str(embedded_model_dir), dtype=torch.float32).eval()
    whole = BatchedGenerator.load(str(embedded_model_dir), prefix_cache_size=0)
    cached = BatchedGenerator(model, whole.tokenizer, prefix_cache_size=4)
    system = "You answer questions about a long conversation. " * 12
    questions = ["Where did Nora travel?", "What pet does Raj have?", "Where did Nora travel?"]
    texts = [
        whole.tokenizer.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": q}], tokenize=False, add_generation_prompt=True)
        for q in questions
    ]
    prompts = [whole.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    shared = next(i for i, (a, b) in enumerate(zip(prompts[0], prompts[1])) if a != b)
    greedy = SamplingParams(max_tokens=16, temperature=0.0, top_p=1.0)

    expected = [future.result(timeout=120).text for future in [whole.submit(ids, greedy) for ids in prompts]]
    assert [future.result(timeout=120).text for future in [cached.submit(ids, greedy) for ids in prompts]] == expected
    # One spell: the second prompt continues the first's system prompt, the third repeats the first.
    assert cached.prefixes.reused_tokens == shared + len(prompts[2]) - 1
    assert cached.prefixes.prefilled_tokens == sum(map(len, prompts)) - cached.prefixes.reused_tokens

    reused = cached.prefixes.reused_tokens
    assert cached.submit(prompts[0], greedy).result(timeout=120).text == expected[0]
    assert cached.prefixes.reused_tokens == reused  # a new spell: the caller may have changed the model meanwhile

    store, version = PrefixCache(capacity=2), weights_version(model)
    store.check_weights(version)
    store.put(prompts[0], [(torch.zeros(1, 1, len(prompts[0]), 1),) * 2])
    assert store.longest(prompts[2])[0] == len(prompts[2]) - 1
    with torch.no_grad():
        model.model.norm.weight.mul_(1.0)  # an in-place update, as an optimizer step makes
    store.check_weights(weights_version(model))
    assert weights_version(model) != version and store.longest(prompts[2]) == (0, None)
    whole.close()
    cached.close()
