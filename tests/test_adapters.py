"""A LoRA adapter trained with `memagent train` served by the local backend (``adapter=``): merged into the
weights at load, from Python, the command line and the served graphs' environment."""

import pytest
from langchain_core.messages import HumanMessage

PROMPT = [HumanMessage("Where is the magic number hidden? Answer in one line.")]


@pytest.fixture(scope="module")
def lora_dir(tiny_model_dir, tmp_path_factory):
    """A PEFT LoRA adapter of the tiny Llama with random (not zero) B matrices, so it changes the model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    state = torch.random.get_rng_state()
    torch.manual_seed(1)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"),
    )
    torch.random.set_rng_state(state)
    path = tmp_path_factory.mktemp("tiny-lora")
    model.save_pretrained(path)
    return path


def _completion(model) -> list[int]:
    return model.invoke(PROMPT).response_metadata["completion_token_ids"]


def test_an_adapter_is_served_merged_into_the_weights(tiny_model_dir, lora_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_memagent import build_memagent_graph, load_chat_model
    from langgraph_memagent.agents.local_model import LocalChatModel

    adapted = load_chat_model(f"hf:{tiny_model_dir}", adapter=str(lora_dir), temperature=0, max_tokens=12)
    base = load_chat_model(f"hf:{tiny_model_dir}", temperature=0, max_tokens=12)
    merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), str(lora_dir)).merge_and_unload()
    reference = LocalChatModel.from_model(merged.eval(), AutoTokenizer.from_pretrained(tiny_model_dir), temperature=0, max_tokens=12)
    assert _completion(adapted) == _completion(reference)
    assert _completion(adapted) != _completion(base)
    assert adapted.engine is not base.engine  # the engines of one directory are told apart by their adapter
    # Usable from a graph like any chat model.
    result = build_memagent_graph(adapted, chunk_tokens=64, memory_tokens=16, answer_tokens=8).invoke(
        {"question": "What is the magic number?", "document": "The grass is green. " * 40}
    )
    assert isinstance(result["answer"], str) and result["chunks_read"] == result["num_chunks"] >= 2


def test_the_embedded_model_with_an_adapter_defaults_to_float32(embedded_model_dir, lora_dir):
    from langgraph_memagent import load_chat_model

    # int4 would round the merged weights; asked for explicitly, it is kept.
    assert load_chat_model("smollm2-135m", adapter=str(lora_dir)).quantization is None
    assert load_chat_model("smollm2-135m", adapter=str(lora_dir), quantization="int4").quantization == "int4"
    assert load_chat_model("smollm2-135m").quantization == "int4"


def test_a_path_that_holds_no_adapter_is_named(tiny_model_dir, tmp_path):
    from langgraph_memagent.agents.local_model import LocalChatModel

    for bad in (tmp_path, tmp_path / "missing"):
        with pytest.raises(ValueError, match=f"adapter must be a PEFT LoRA adapter directory.*{bad}"):
            LocalChatModel(model_path=str(tiny_model_dir), adapter=str(bad))


def test_the_served_graphs_read_the_adapter_from_the_environment(tiny_model_dir, lora_dir):
    from langgraph_memagent.graphs.served import served_model

    model = served_model({"MEMAGENT_MODEL": f"hf:{tiny_model_dir}", "MEMAGENT_ADAPTER": str(lora_dir)})
    assert model.adapter == str(lora_dir) and model.quantization is None


def test_the_served_graphs_serve_the_shipped_adapter_by_name(embedded_model_dir):
    from langgraph_memagent.agents.loading import model_directory, shipped_adapter
    from langgraph_memagent.graphs.served import served_model, served_tokenizer

    environ = {"MEMAGENT_MODEL": "smollm2-135m-memagent"}
    assert served_model(environ).adapter == shipped_adapter("smollm2-135m-memagent")
    assert served_tokenizer(environ) == model_directory("smollm2-135m")  # its base model's tokenizer, read without the weights


def test_the_shipped_adapter_loads_by_name_and_answers_freely(embedded_model_dir, lora_dir):
    from langgraph_memagent import build_memagent_graph, load_chat_model
    from langgraph_memagent.agents.loading import model_directory, shipped_adapter

    trained = load_chat_model("smollm2-135m-memagent")
    assert trained.adapter == shipped_adapter("smollm2-135m-memagent") and trained.model_path == model_directory("smollm2-135m")
    assert trained.quantization is None and trained.free_answer
    budget = {"chunk_tokens": 1000, "memory_tokens": 128, "answer_tokens": 64}
    # MemAgent decodes its answer without the grammar, unless told; the base model keeps the grammar.
    assert build_memagent_graph(trained, **budget).memagent_config.constrained_answer is False
    assert build_memagent_graph(trained, constrained_answer=True, **budget).memagent_config.constrained_answer is True
    assert build_memagent_graph(load_chat_model("smollm2-135m"), **budget).memagent_config.constrained_answer is True
    with pytest.raises(ValueError, match="'smollm2-135m-memagent' carries its own trained adapter"):
        load_chat_model("smollm2-135m-memagent", adapter=str(lora_dir))


def test_the_shipped_adapter_holds_the_trained_weights(embedded_model_dir):
    """On the first development question of multi-key NIAH at 1K tokens (training keys, never a test question), the trained
    model finds the needle of the asked key and the untrained one does not (experiments/2026-12-04_memagent-rl-at-length,
    dev_stage5_seed1_free_1k.json and dev_untrained_300_1k.json)."""
    from langgraph_memagent import build_memagent_graph, load_chat_model
    from langgraph_memagent.evals.ruler import generate_task
    from langgraph_memagent.training.held_out import SPLITS

    base = load_chat_model("smollm2-135m")
    dev = SPLITS["dev"]
    sample = generate_task("niah_multikey_2", 1000, codec=base.tokenizer, num_samples=16, seed=dev["seed"], key_pool=dev["key_pool"])[0]
    results = {}
    for name in ("smollm2-135m-memagent", "smollm2-135m"):
        graph = build_memagent_graph(load_chat_model(name), chunk_tokens=1000, memory_tokens=128, answer_tokens=64)
        results[name] = graph.invoke({"question": sample.question, "document": sample.document})
    (gold,) = map(str, sample.answers)
    trained, untrained = results["smollm2-135m-memagent"], results["smollm2-135m"]
    assert gold in trained["response"] and gold not in untrained["response"], results
    # It writes no box: its whole reply is its answer.
    assert "\\boxed" not in trained["response"] and trained["answer"] == trained["response"].strip()


def test_a_comparison_records_the_adapter_and_refuses_to_mix_another(tiny_model_dir, lora_dir, tmp_path):
    from types import SimpleNamespace

    from langgraph_memagent import load_chat_model
    from langgraph_memagent.evals import harness
    from langgraph_memagent.evals.harness import ComparisonConfig, ComparisonError
    from langgraph_memagent.evals.results import RESULTS_FILE

    config, codec = ComparisonConfig(graphs=("memagent",), model=f"hf:{tiny_model_dir}", out=tmp_path), SimpleNamespace(name="t")
    adapted = harness._manifest(config, load_chat_model(f"hf:{tiny_model_dir}", adapter=str(lora_dir)), codec)
    base = harness._manifest(config, load_chat_model(f"hf:{tiny_model_dir}"), codec)
    assert (adapted["adapter"], adapted["free_answer"]) == (str(lora_dir), True) and not {"adapter", "free_answer"} & set(base)
    harness._check_manifest(tmp_path, adapted)
    (tmp_path / RESULTS_FILE).write_text('{"graph": "memagent", "task": "t", "length": "4K", "index": 0, "seed": 0}\n')
    with pytest.raises(ComparisonError, match=f"adapter: '{lora_dir}' -> None"):
        harness._check_manifest(tmp_path, base)
