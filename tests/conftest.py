"""Shared fixtures (the real embedded model, converted once per session, its tokenizer, and the tiny
random Llama the training tests train) and the markers a test gets from the fixtures it uses.

Markers: a test using the embedded model gets ``embedded``, one using a real server gets ``server``
(both also by hand, for tests that start them in their body), and a test measured over ~20 s on
the 2-core CI machine is ``slow`` (SLOW below). ``pytest -m "not embedded and not server"`` is the
fast lane; ``-m "not slow"`` leaves out the longest tests only.

Plain helpers and the shared data paths (``LOCOMO_FILE``) are in helpers.py: test modules import
them from there, never from one another or from this file.
"""

from __future__ import annotations

import os

import pytest

# Nothing may be fetched from a model hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def embedded_model_dir():
    """The converted SmolLM2-135M-Instruct directory (converts on first use, ~30 s)."""
    from langgraph_memagent.agents.embedded import embedded_model_dir as converted_dir

    return converted_dir()


@pytest.fixture(scope="session")
def smollm2_codec(embedded_model_dir):
    """The embedded model's tokenizer as the package's codec (the weights are not loaded)."""
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    return resolve_tokenizer(str(embedded_model_dir))


@pytest.fixture(scope="session")
def greedy_model(embedded_model_dir):
    """The embedded model with greedy decoding, shared by every test of the session."""
    from langgraph_memagent.agents.local_model import LocalChatModel

    return LocalChatModel(model_path=str(embedded_model_dir), temperature=0.0)


@pytest.fixture(scope="session")
def tiny_model_dir(embedded_model_dir, tmp_path_factory):
    """A tiny randomly initialised Llama (2 layers, hidden 64) with the embedded SmolLM2 tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(path)
    torch.random.set_rng_state(state)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_dataset(tiny_model_dir):
    """Four 100-token needle-in-a-haystack rows, tokenized by the tiny Llama's tokenizer."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    from langgraph_memagent.agents.tokenizers import resolve_tokenizer
    from langgraph_memagent.training.data import generate_samples

    codec = resolve_tokenizer(AutoTokenizer.from_pretrained(tiny_model_dir))
    return Dataset.from_list(generate_samples("niah_single_1", codec, num_samples=4, target_tokens=100, seed=0))


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    """The tiny Llama's (the embedded model's) Hugging Face tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


# --------------------------------------------------------------------------------------- #
# Engines released after each module
# --------------------------------------------------------------------------------------- #


@pytest.fixture(scope="module", autouse=True)
def release_engines():
    """Close the engines a test module made for itself once it is done, and empty the shared ones' prefix caches.

    An engine's serving thread keeps it, with its model and up to 16 prompts' key/value caches,
    until it is closed: engines that tests made and never closed took the suite's one process past
    15 GB. The process-wide engines of ``shared_engine`` (``greedy_model``'s among them) stay.
    The peak left (11.3 GB in a fresh clone's run, 2026-12-04) is the trainer tests' log-prob passes
    over SmolLM2's 49,152-token vocabulary: test_answer_curriculum raises it from 4.1 to 8.2 GB for
    the length of one test, the tool-learning and AgeMem trainer tests to 11.3 GB.
    """
    import sys

    yield
    module = sys.modules.get("langgraph_memagent.agents.batched_generator")
    if module is None:
        return
    shared = {id(engine) for engine in module._ENGINES.values()}
    for engine in list(module._OPEN_ENGINES):
        if id(engine) in shared:
            if engine.prefixes is not None and engine.active_rows == 0 and engine._queue.empty():
                engine.prefixes.clear()  # the next busy spell would empty it anyway
        else:
            engine.close()


# --------------------------------------------------------------------------------------- #
# Markers from fixtures
# --------------------------------------------------------------------------------------- #

# Fixtures that run the embedded model's weights (a test asking for ``embedded_model_dir``
# itself builds a model from it). Fixtures that use the converted directory for its tokenizer
# alone are not here: they only need the one-time conversion.
EMBEDDED_FIXTURES = {"embedded_model_dir", "greedy_model"}
TOKENIZER_ONLY_FIXTURES = {"smollm2_codec", "tiny_model_dir", "tiny_dataset", "tiny_tokenizer", "tokenizer"}
# Fixtures that start a real server process (tests starting one in their body carry the mark by hand).
SERVER_FIXTURES = {"server_url", "tiny_server_url", "served_model"}

# Tests measured over ~20 s of pytest on the 2-core CI machine (make test --durations), by node id
# prefix. The run's --durations list is where to look when adding one.
SLOW = (
    "tests/test_langgraph_server.py::test_served_memories_survive_a_restart_in_postgres",
    "tests/test_in_agents.py::test_the_embedded_model_as_agent_answers_through_the_tool",
    "tests/test_agemem.py::test_embedded_model_with_a_required_first_turn_calls_a_tool_after_every_message",
    "tests/test_end_to_end.py::test_embedded_model_batch_answers_every_document",
    "tests/test_end_to_end.py::test_embedded_model_finds_the_needle",
    "tests/test_langmem.py::test_langmem_extracts_each_session_once_with_valid_calls_and_answers_from_its_search",
    "tests/test_langmem.py::test_langmem_ainvoke_extracts_only_the_sessions_not_yet_done",
    "tests/test_langmem.py::test_compare_runs_langmem_end_to_end_on_locomo",
    "tests/test_readme.py::test_readme_python_blocks_run",
    "tests/test_local_model.py::test_a_process_that_used_the_engine_exits_cleanly",
    "tests/test_training_distributed.py::",
    "tests/test_agemem_episodes.py::test_agemem_episode_benchmark_pairs_each_decodings_measures_by_question_and_resumes",
    "tests/test_tool_learning.py::test_learning_benchmark_on_conversations_end_to_end_reports_groups_and_constant_answers",
    "tests/test_training_tools.py::test_agemem_trainer_rollouts_use_the_configured_limits",
)


def _fixture_uses(item: pytest.Item) -> tuple[set[str], set[str]]:
    """The fixtures ``item`` asks for itself, and every fixture that asks for another (name -> its argnames)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # a doctest
        return set(), set()
    own = set(info.argnames)
    runs_model = set()
    for name, definitions in info.name2fixturedefs.items():
        if name in TOKENIZER_ONLY_FIXTURES:
            continue
        if any(set(definition.argnames) & EMBEDDED_FIXTURES for definition in definitions):
            runs_model.add(name)
    return own, runs_model


# The modules whose trainer steps take a log-prob pass over the 49,152-token vocabulary (up to
# 11.3 GB, release_engines' docstring): under `make test`'s two processes (pytest-xdist, --dist
# loadgroup) they all run in one, so two such peaks never meet on a 24 GB machine.
TRAINER_MODULES = ("tests/test_training.py", "tests/test_training_tools.py", "tests/test_training_distributed.py",
                   "tests/test_tool_learning.py", "tests/test_answer_curriculum.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(TRAINER_MODULES):
            item.add_marker(pytest.mark.xdist_group("trainer"))
        own, runs_model = _fixture_uses(item)
        closure = set(getattr(item, "fixturenames", ()))
        if own & EMBEDDED_FIXTURES or "greedy_model" in closure or runs_model:
            item.add_marker(pytest.mark.embedded)
        if closure & SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
