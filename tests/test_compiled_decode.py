"""The fused decode step compiled ahead of time: the same tokens as the eager step, one package per kind of batch, kept on disk.

A two-layer random Llama in int4 keeps the compiles short (the embedded model's are measured
by ``benchmarks.bench_decode``); its vocabulary is the embedded tokenizer's, so the engine test
runs real prompts through the real tokenizer.
"""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def tiny_int4_llama(vocab_size: int = 49_152):  # the embedded tokenizer's: every test's model has the same shapes and shares packages
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


def test_compiled_step_follows_the_eager_step_through_padding_a_moved_window_and_a_full_buffer():
    import copy

    from langgraph_memagent.agents._kv_slab import SPARE_COLUMNS
    from langgraph_memagent.agents.fused_decode import create_decode_step

    model = tiny_int4_llama()
    eager, compiled = create_decode_step(model), create_decode_step(model, compiled=True)
    assert (eager.compiled, compiled.compiled) == (False, True)
    with torch.inference_mode():
        for prompts in ([[5, 9, 11, 3], [7, 2]], [[4, 8, 15, 16, 23]]):  # padded rows, then one row
            ours, mask = slab_cache(model, prompts)
            # The cache starts one column in, as after a row leaves with padding in front: the buffers the
            # step is given are then strided views, which the compiled step must not read as contiguous.
            for layer in ours.layers:
                for window in layer.windows:
                    window.start += 1
            mask = mask[:, 1:]
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


def one_row_call(step, length: int = 6):
    """The compiled layers' logits for one row over a ``length``-token cache of zeros, and the keys it wrote."""
    keys = [torch.zeros(1, 2, length + 4, 16) for _ in range(2)]
    values = [torch.zeros(1, 2, length + 4, 16) for _ in range(2)]
    logits = step(torch.tensor([[3]]), None, torch.tensor([[length]]), length, keys, values)
    return logits, keys[1][:, :, length]


def test_a_package_is_compiled_once_and_loaded_by_a_new_process_without_compiling(tmp_path):
    import subprocess
    import sys

    from langgraph_memagent.agents.compiled_step import CompiledStep
    from langgraph_memagent.agents.fused_decode import create_decode_step

    step = CompiledStep(create_decode_step(tiny_int4_llama()).fused, package_folder=tmp_path)
    with torch.inference_mode():
        logits, written = one_row_call(step)
    assert [path.name for path in tmp_path.iterdir()] == [step.packages[("one", False)].name]  # no temporary left
    assert written.abs().sum() > 0  # the package writes the new key into the caller's buffer
    torch.save(logits, tmp_path / "expected.pt")
    # Another process, with compiling forbidden: the package's name is a digest of what is exported, not of this process.
    script = f"""
import sys, torch
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_compiled_decode import tiny_int4_llama, one_row_call
from langgraph_memagent.agents.compiled_step import CompiledStep
from langgraph_memagent.agents.fused_decode import create_decode_step
def refuse(*_):
    raise AssertionError("compiled again")
torch._inductor.aoti_compile_and_package = refuse
step = CompiledStep(create_decode_step(tiny_int4_llama()).fused, package_folder=__import__("pathlib").Path({str(tmp_path)!r}))
with torch.inference_mode():
    torch.testing.assert_close(one_row_call(step)[0], torch.load({str(tmp_path / "expected.pt")!r}), atol=0, rtol=0)
"""
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]


def test_a_compile_that_fails_leaves_no_file_and_a_draft_or_a_strided_buffer_is_refused(tmp_path, monkeypatch):
    from langgraph_memagent.agents.compiled_step import CompiledStep
    from langgraph_memagent.agents.fused_decode import create_decode_step

    def killed(exported, package_path):
        Path(package_path).write_bytes(b"half a package")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", killed)
    step = CompiledStep(create_decode_step(tiny_int4_llama()).fused, package_folder=tmp_path)
    with torch.inference_mode(), pytest.raises(KeyboardInterrupt):
        one_row_call(step)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="the compiled step decodes one token per row, got 2; drafts are checked by the eager step"):
        step(torch.tensor([[3, 4]]), None, torch.tensor([[6, 7]]), 6, [], [])
    strided = torch.zeros(1, 2, 12, 16)[:, :, 2:]  # refused before any package is loaded or compiled
    with torch.inference_mode(), pytest.raises(ValueError, match=r"the compiled step needs contiguous inputs; input 3 has strides \(384, 192, 16, 1\)"):
        step(torch.tensor([[3]]), None, torch.tensor([[6]]), 6, [strided, strided], [strided, strided])


def test_compiling_a_model_the_fused_step_cannot_serve_is_refused_by_name():
    from transformers import LlamaConfig, LlamaForCausalLM

    from langgraph_memagent.agents.fused_decode import create_decode_step

    float32 = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=16))
    assert create_decode_step(float32) is None
    with pytest.raises(ValueError, match=r"compile_decode needs an int4 Llama model \(quantization='int4'\): .* is not int4"):
        create_decode_step(float32, compiled=True)
