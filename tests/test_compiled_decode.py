"""The fused decode step through torch.compile: the same tokens as the eager step, one compile per batch shape.

A two-layer random Llama in int4 keeps the compiles short (the embedded model's are measured
by ``benchmarks.bench_decode``); its vocabulary is the embedded tokenizer's, so the engine test
runs real prompts through the real tokenizer.
"""

import pytest

torch = pytest.importorskip("torch")


def tiny_int4_llama(vocab_size: int = 512):
    from transformers import LlamaConfig, LlamaForCausalLM

    from langgraph_memagent.agents.quantization import quantize_for_cpu

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, tie_word_embeddings=True,
    )
    return quantize_for_cpu(LlamaForCausalLM(config).eval(), "int4")


def slab_cache(model, prompts):
    """The left-padded two-row slab cache of ``prompts`` (token lists), and its mask."""
    import torch.nn.functional as F

    from langgraph_memagent.agents._kv_slab import SlabLayer

    width = max(map(len, prompts))
    caches = [model(input_ids=torch.tensor([ids]), use_cache=True).cache for ids in prompts]
    cache = caches[0]
    for index, layer in enumerate(cache.layers):
        for name in ("keys", "values"):
            parts = [F.pad(getattr(c.layers[index], name), (0, 0, width - len(ids), 0)) for c, ids in zip(caches, prompts)]
            setattr(layer, name, torch.cat(parts))
    cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
    mask = torch.stack([F.pad(torch.ones(len(ids), dtype=torch.long), (width - len(ids), 0)) for ids in prompts])
    return cache, mask


def test_compiled_step_follows_the_eager_step_through_padding_and_a_full_buffer():
    import copy

    from langgraph_memagent.agents._kv_slab import SPARE_COLUMNS
    from langgraph_memagent.agents.fused_decode import create_decode_step

    model = tiny_int4_llama()
    eager, compiled = create_decode_step(model), create_decode_step(model, compiled=True)
    assert (eager.compiled, compiled.compiled) == (False, True)
    with torch.inference_mode():
        for prompts in ([[5, 9, 11, 3], [7, 2]], [[4, 8, 15, 16, 23]]):  # padded rows, then one row
            ours, mask = slab_cache(model, prompts)
            reference = copy.deepcopy(ours)
            tokens = torch.tensor([[1]] * len(prompts))
            positions = torch.tensor([[len(ids)] for ids in prompts])
            # Past the buffer's spare columns, so it is reallocated (twice as long) under the compiled step.
            for _ in range(SPARE_COLUMNS + 8):
                mask = torch.cat([mask, torch.ones(len(prompts), 1, dtype=torch.long)], dim=1)
                expected = eager(tokens, mask, positions, reference)
                got = compiled(tokens, mask, positions, ours)
                # Inductor fuses the norms and casts into loops of its own rounding: close, not bit for bit.
                torch.testing.assert_close(got, expected, atol=0.05, rtol=0.02)
                tokens, positions = expected.argmax(-1, keepdim=True), positions + 1
            for mine, theirs in zip(ours.layers, reference.layers):
                assert mine.get_seq_length() == theirs.get_seq_length() == mask.shape[1]
                torch.testing.assert_close(mine.keys, theirs.keys, atol=0.05, rtol=0.02)


def test_the_engine_decodes_concurrent_calls_through_the_compiled_step(embedded_model_dir):
    from concurrent.futures import wait

    from transformers import AutoTokenizer

    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.sampling import SamplingParams

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir)
    model = tiny_int4_llama(len(tokenizer))
    prompts = [tokenizer.encode(text) for text in ("The capital of France is", "One, two, three,")]
    params = SamplingParams(max_tokens=12, temperature=0.0, top_p=1.0)
    completions = {}
    for compiled in (False, True):
        engine = BatchedGenerator(model, tokenizer, compile_decode=compiled)
        try:
            futures = [engine.submit(ids, params) for ids in prompts]  # within the batch window: decoded together
            wait(futures)
            completions[compiled] = [future.result().completion_token_ids for future in futures]
            assert engine.peak_rows == 2
        finally:
            engine.close()
    assert engine.decode_path == "compiled-fused-int4-llama"
    # Random weights have near-ties, so greedy paths may part late; the first tokens agree.
    assert [ids[:4] for ids in completions[True]] == [ids[:4] for ids in completions[False]]


def test_compiling_a_model_the_fused_step_cannot_serve_is_refused_by_name():
    from transformers import LlamaConfig, LlamaForCausalLM

    from langgraph_memagent.agents.fused_decode import create_decode_step

    float32 = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=16))
    assert create_decode_step(float32) is None
    with pytest.raises(ValueError, match=r"compile_decode needs an int4 Llama model \(quantization='int4'\): .* is not int4"):
        create_decode_step(float32, compiled=True)
