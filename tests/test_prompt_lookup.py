"""Prompt lookup decoding: drafts from the sequence itself, checked in one forward of the fused step."""

from __future__ import annotations

import pytest

from langgraph_memagent.agents.prompt_lookup import DRAFT_TOKENS, draft_from_history


def test_the_latest_occurrence_of_the_longest_ending_is_copied():
    # "1 2" occurs twice earlier: the later one's continuation wins.
    assert draft_from_history([1, 2, 3, 4, 1, 2, 5, 6, 1, 2], 2) == [5, 6]
    # The ending "4 1 2" beats the later "1 2": longer matches first.
    assert draft_from_history([4, 1, 2, 7, 1, 2, 9, 4, 1, 2], 1, max_ngram=3) == [7]
    assert draft_from_history([4, 1, 2, 7, 1, 2, 9, 4, 1, 2], 1, max_ngram=2) == [9]
    # Cut at num_tokens and at the end of the sequence; nothing when the last token is new.
    assert draft_from_history([8, 9, 8], 5) == [9, 8]
    assert draft_from_history([1, 2, 3], 4) == []
    assert draft_from_history([], 4) == []


@pytest.fixture(scope="module")
def int4_model(embedded_model_dir):
    from langgraph_memagent.agents.batched_generator import BatchedGenerator

    return BatchedGenerator.load(str(embedded_model_dir), quantization="int4").model


@pytest.mark.embedded
def test_a_greedy_call_with_drafts_gives_the_tokens_of_one_without(int4_model, embedded_model_dir):
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.batched_generator import BatchedGenerator
    from langgraph_memagent.agents.sampling import SamplingParams

    tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_dir))
    memory = "The special magic number for quiet-harbor is 4417093. The meeting with Dana moved to Thursday at noon."
    prompts = [
        tokenizer(tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False)).input_ids
        for text in (f"Copy this text exactly:\n{memory}", f"Memory:\n{memory}\n\nUpdated memory:")
    ]
    engine = BatchedGenerator(int4_model, tokenizer, prefix_cache_size=0)  # the draft length is each call's own
    try:
        for max_tokens in (48, 6):  # a draft never runs past the call's limit
            for prompt in prompts:
                before = engine.drafted_tokens
                expected = engine.submit(prompt, SamplingParams(max_tokens=max_tokens, temperature=0.0, top_p=1.0, prompt_lookup_num_tokens=0)).result()
                assert engine.drafted_tokens == before  # drafts off for this call
                got = engine.submit(prompt, SamplingParams(max_tokens=max_tokens, temperature=0.0, top_p=1.0, prompt_lookup_num_tokens=4)).result()
                assert got.completion_token_ids == expected.completion_token_ids
                assert (got.text, got.finish_reason) == (expected.text, expected.finish_reason)
                assert len(got.completion_token_ids) <= max_tokens
        # The copy was drafted and the model agreed with most of it.
        assert engine.drafted_tokens >= engine.accepted_tokens > 20
        # Sampled calls never draft.
        before = engine.drafted_tokens
        engine.submit(prompts[0], SamplingParams(max_tokens=16, temperature=1.0, top_p=1.0)).result()
        assert engine.drafted_tokens == before
    finally:
        engine.close()


@pytest.mark.embedded
def test_the_fused_step_checks_several_tokens_of_one_row_as_single_steps_would(int4_model):
    import copy

    import torch

    from langgraph_memagent.agents._kv_slab import SlabLayer
    from langgraph_memagent.agents.fused_decode import create_decode_step

    step = create_decode_step(int4_model)
    torch.manual_seed(0)
    tokens = torch.randint(100, 40_000, (1, 6))
    with torch.inference_mode():
        cache = int4_model(input_ids=torch.randint(100, 40_000, (1, 40)), use_cache=True).cache
        cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
        single = copy.deepcopy(cache)
        one_by_one = torch.cat([
            step(tokens[:, i : i + 1], torch.ones(1, 41 + i, dtype=torch.long), torch.tensor([[40 + i]]), single) for i in range(6)
        ])
        together = step(tokens, torch.ones(1, 46, dtype=torch.long), torch.arange(40, 46)[None], cache)[0]
        assert cache.layers[0].get_seq_length() == single.layers[0].get_seq_length() == 46
        # A product over six rows rounds differently from six of one row: close, the same greedy tokens.
        assert torch.equal(together.argmax(-1), one_by_one.argmax(-1))
        assert (together - one_by_one).abs().max() < 1.0
        with pytest.raises(ValueError, match="several tokens per step need one unpadded row, got 2 rows of 3 tokens"):
            step(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 49, dtype=torch.long), torch.arange(46, 49).repeat(2, 1), cache)


@pytest.mark.embedded
def test_on_an_amx_host_a_draft_check_runs_through_the_bfloat16_weights(embedded_model_dir, monkeypatch):
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    from langgraph_memagent.agents._kv_slab import SlabLayer
    from langgraph_memagent.agents.fused_decode import create_decode_step
    from langgraph_memagent.agents.quantization import AMX_DENSE_MIN_ROWS, DENSE_PREFILL_MIN_ROWS, Int4Linear, quantize_for_cpu

    float32 = AutoModelForCausalLM.from_pretrained(embedded_model_dir).eval()
    int4 = quantize_for_cpu(copy.deepcopy(float32), "int4", prefill_weights="int4")
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    amx = quantize_for_cpu(copy.deepcopy(float32), "int4", prefill_weights="bfloat16")
    layers = [module for module in amx.modules() if isinstance(module, Int4Linear)]
    assert {layer.dense_min_rows for layer in layers} == {AMX_DENSE_MIN_ROWS} and AMX_DENSE_MIN_ROWS < DENSE_PREFILL_MIN_ROWS
    torch.manual_seed(0)
    # A context shorter than AMX_DENSE_MIN_ROWS: both models prefill it through the int4 kernel.
    context, draft = torch.randint(100, 40_000, (1, 8)), torch.randint(100, 40_000, (1, DRAFT_TOKENS + 1))

    def check(model, tokens):
        """Logits of ``tokens`` checked at once by the model's fused step after ``context``."""
        with torch.inference_mode():
            cache = model(input_ids=context, use_cache=True).cache
            cache.layers[:] = [SlabLayer(layer.keys, layer.values) for layer in cache.layers]
            mask, positions = torch.ones(1, 8 + tokens.shape[1], dtype=torch.long), torch.arange(8, 8 + tokens.shape[1])[None]
            return create_decode_step(model)(tokens, mask, positions, cache)[0]

    # A check of 13 tokens runs the bfloat16 weights, as the model's own forward of them does: close to
    # it (a product over 21 rows rounds differently from one over 13), the same greedy tokens.
    with torch.inference_mode():
        own = amx(input_ids=torch.cat([context, draft], 1)).logits[0, 8:]
    through_bfloat16, through_int4 = check(amx, draft), check(int4, draft)
    assert not torch.equal(through_bfloat16, through_int4)
    assert torch.equal(through_bfloat16.argmax(-1), own.argmax(-1)) and (through_bfloat16 - own).abs().max() < 1.0
    # Fewer rows than AMX_DENSE_MIN_ROWS (a short draft, a small decode batch): the int4 kernel, bit for bit.
    short = draft[:, : AMX_DENSE_MIN_ROWS - 1]
    assert torch.equal(check(amx, short), check(int4, short))


def test_a_negative_or_fractional_draft_length_is_refused_by_name(embedded_model_dir):
    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.agents.sampling import SamplingParams

    # The model names it when built, not at its first call; a call option is checked the same way.
    with pytest.raises(ValueError, match=r"prompt_lookup_num_tokens must be an integer >= 0 \(0 = off\), got -2"):
        LocalChatModel(model_path=str(embedded_model_dir), prompt_lookup_num_tokens=-2)
    for bad in (1.5, True):
        with pytest.raises(ValueError, match=rf"prompt_lookup_num_tokens must be an integer >= 0 \(0 = off\), got {bad}"):
            SamplingParams(max_tokens=8, temperature=0.0, top_p=1.0, prompt_lookup_num_tokens=bad)


def test_only_the_eager_int4_step_drafts_and_draft_lengths_share_one_engine(embedded_model_dir):
    from langgraph_memagent.agents.local_model import LocalChatModel

    drafting = LocalChatModel(model_path=str(embedded_model_dir), quantization="int4")
    plain = LocalChatModel(model_path=str(embedded_model_dir), quantization="int4", prompt_lookup_num_tokens=0)
    assert drafting.prompt_lookup_in_use == DRAFT_TOKENS == 12
    assert plain.prompt_lookup_in_use == 0
    # One loaded model and one worker thread: a second engine would hold a second OpenMP team.
    assert plain.engine is drafting.engine
    # Each model's calls carry its own draft length to the shared engine, and a call may set its own.
    engine, prompt = drafting.engine, "Copy this text exactly: The special magic number for quiet-harbor is 4417093."
    for model, options, drafts in ((plain, {}, False), (drafting, {"prompt_lookup_num_tokens": 0}, False), (drafting, {}, True)):
        before = engine.drafted_tokens
        model.invoke(prompt, max_tokens=24, temperature=0.0, **options)
        assert (engine.drafted_tokens > before) == drafts, (options, drafts)
    assert LocalChatModel(model_path=str(embedded_model_dir)).prompt_lookup_in_use == 0  # float32: the model's forward


def test_the_benchmark_summary_counts_decode_after_the_first_token():
    """bench_prompt_lookup's totals against hand-computed ones (its doctest)."""
    import doctest

    from benchmarks import bench_prompt_lookup

    assert doctest.testmod(bench_prompt_lookup).failed == 0


def test_the_long_document_benchmark_refuses_a_negative_draft_length(capsys):
    from benchmarks import bench_long_document

    with pytest.raises(SystemExit) as exit_info:
        bench_long_document.main(["--prompt-lookup", "-3"])
    assert exit_info.value.code == 2
    assert "--prompt-lookup must be a whole number of draft tokens >= 0 (0 = off), got -3" in capsys.readouterr().err
