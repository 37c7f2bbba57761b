"""The llama.cpp anchor of ``benchmarks.bench_decode``: its batch of 8 decodes what each sequence decodes alone.

llama-cpp-python builds llama.cpp from source, so it is an optional benchmark dependency: this
test runs where it is installed (``pip install llama-cpp-python``) and is skipped elsewhere.
"""

import pytest

pytest.importorskip("llama_cpp")


def test_a_sequence_decoded_with_seven_others_gets_the_greedy_tokens_it_gets_alone():
    from benchmarks.bench_decode import _LlamaCppBatch, llama_cpp_model

    llm = llama_cpp_model(256)
    together = _LlamaCppBatch(llm, 8, 256)
    colours = "red blue green black white pink grey gold".split()
    prompts = [
        llm.tokenize(f"<|im_start|>user\nWrite one sentence about the colour {colour}.<|im_end|>\n<|im_start|>assistant\n".encode(),
                     add_bos=False, special=True)
        for colour in colours
    ]
    shortest = min(map(len, prompts))  # the batch decodes every row at one position
    prompts = [prompt[-shortest:] for prompt in prompts]
    seen = []
    next_tokens = together._next_tokens
    together._next_tokens = lambda: seen.append(next_tokens()) or seen[-1]
    times, prefill = together.steps(prompts, 12)
    assert len(times) == 12 and prefill > 0
    for row in (0, 5):
        llm.reset()
        llm.eval(prompts[row])
        alone = []
        for _ in range(12):
            alone.append(int(llm.scores[llm.n_tokens - 1].argmax()))
            llm.eval([alone[-1]])
        assert [tokens[row] for tokens in seen] == alone
    assert colours[5] in llm.detokenize([tokens[5] for tokens in seen]).decode()
    together.close()
    llm.close()
