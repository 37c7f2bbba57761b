"""Every bad input and fault we have tried, in one table: what a user did and what they must get.

Two kinds of rows:
- ``run here``: cheap inputs (flags, files, API arguments) checked by this file. Each must
  give one clear line that names the bad value, never a traceback or a silent answer.
- ``covered by``: inputs that need a model run, a server or a killed process; the named test
  runs them, and :func:`test_rows_covered_elsewhere_name_existing_tests` fails when it is gone.

The eight defects of the bad-input audit are marked ``(defect N)``; the rows without a mark held
already and are kept here so none regresses. The documentation's reliability page quotes the count.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from helpers import LOCOMO_FILE

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    surface: str  # where the input goes: cli, compare, trainer, python, loader, harness, graph, server
    bad_input: str  # what the user did
    expect: tuple[str, ...] = ()  # fragments of the one error line (rows run here)
    run: Callable[[Path], str] | None = None  # does it under a temporary directory; returns the error text
    covered_by: str = ""  # "test_file.py::test_name" for rows run elsewhere
    lines: int = 1  # error lines expected (a config with several bad fields names each)


def _doc(tmp: Path, text: str = "The grass is green. The magic number for tidy-cat is: 7654321.") -> str:
    path = tmp / "doc.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _capture(call: Callable[[], int]) -> str:
    """stderr of a command-line ``main``, which must fail (exit 1 or 2, argparse's SystemExit included)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = call()
        except SystemExit as exit_info:
            code = exit_info.code
    assert code in (1, 2), f"exit {code}: {err.getvalue()}"
    return err.getvalue()


def cli(*argv: str) -> Callable[[Path], str]:
    """``memagent`` with ``{doc}`` standing for a small document file."""
    from langgraph_memagent.cli import main

    return lambda tmp: _capture(lambda: main([arg.replace("{doc}", _doc(tmp)).replace("{tmp}", str(tmp)) for arg in argv]))


def trainer(*argv: str) -> Callable[[Path], str]:
    """``python training/grpo_multiconv.py``; must stop before the policy loads."""
    from langgraph_memagent.training import grpo_multiconv

    def run(tmp: Path) -> str:
        argv_here = ["--output_dir", str(tmp / "out"), *(arg.replace("{tmp}", str(tmp)) for arg in argv)]
        original = grpo_multiconv.load_policy
        grpo_multiconv.load_policy = lambda config: pytest.fail("the policy loaded before the bad input was refused")
        try:
            return _capture(lambda: grpo_multiconv.main(argv_here))
        finally:
            grpo_multiconv.load_policy = original

    return run


def raises(call: Callable[[Path], object]) -> Callable[[Path], str]:
    """A Python API call that must raise; the text is ``Type: message``."""

    def run(tmp: Path) -> str:
        try:
            call(tmp)
        except Exception as error:  # noqa: BLE001 - the table checks the type and message
            return f"{type(error).__name__}: {error}"
        pytest.fail("no error raised")

    return run


def _file(tmp: Path, name: str, content: object) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def _load(name: str, content: object, **options):
    from langgraph_memagent.evals import load_records

    return lambda tmp: load_records(_file(tmp, name, content), **options)


def _load_bytes(tmp: Path, name: str, content: bytes):
    from langgraph_memagent.evals import load_records

    (tmp / name).write_bytes(content)
    return load_records(tmp / name)


def _absent_file(tmp: Path):
    from langgraph_memagent.evals import load_records

    return load_records(tmp / "absent.json")


def _object_as_tokenizer(tmp: Path):
    from langgraph_memagent.agents.tokenizers import resolve_tokenizer

    return resolve_tokenizer(object())


def _unknown_model_spec(tmp: Path):
    from langgraph_memagent import load_chat_model

    return load_chat_model("gpt")


def _empty_stop_string(tmp: Path):
    from langgraph_memagent import LocalChatModel

    # Refused before any model is loaded: the path is never opened.
    return LocalChatModel(model_path=str(tmp / "no-model")).invoke("Hi", stop=[""])


def _locomo_without(field: str):
    def run(tmp: Path):
        from langgraph_memagent.evals import load_records

        data = json.loads(LOCOMO_FILE.read_text())
        record = {"sample_id": "conv-30", "qa": data["qa"]} if field == "conversation" else {k: v for k, v in data.items() if k != field}
        return load_records(_file(tmp, "locomo.json", [record]))

    return run


def _compare_results(content: str):
    from langgraph_memagent.evals.results import read_results

    return lambda tmp: read_results(_file(tmp, "results.jsonl", content))


def _bytes_codec():
    import tiktoken

    from langgraph_memagent.agents.tokenizers import TiktokenCodec

    ranks = {bytes([i]): i for i in range(256)}
    return TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}))


def _task(task: str, target: int | None, **options):
    from langgraph_memagent.evals import generate_task

    return lambda tmp: generate_task(task, target, codec=_bytes_codec(), **options)


def _memagent(**options):
    from langgraph_memagent import build_memagent_graph
    from scripted_model import ScriptedChatModel

    return lambda tmp: build_memagent_graph(ScriptedChatModel(responder=lambda prompt: "x"), tokenizer=_bytes_codec(), **options)


def _invoke(payload):
    from langgraph_memagent import build_memagent_graph
    from scripted_model import ScriptedChatModel

    return lambda tmp: build_memagent_graph(ScriptedChatModel(responder=lambda prompt: "x"), tokenizer=_bytes_codec()).invoke(payload)


ROWS: list[Row] = [
    # memagent run / demo: documents and questions ---------------------------------------------------
    Row("cli", "--document that does not exist", ("nope.txt", "does not exist"), cli("run", "--question", "q", "--document", "{tmp}/nope.txt")),
    Row("cli", "--document a directory", ("not a regular file",), cli("run", "--question", "q", "--document", "{tmp}")),
    Row("cli", "--document unreadable (/proc/self/mem)", covered_by="test_cli.py::test_unreadable_document"),
    Row("cli", "--document with mode 000", covered_by="test_cli.py::test_mode_000_document"),
    Row("cli", "--document empty or whitespace only", covered_by="test_cli.py::test_empty_document"),
    Row("cli", "--question empty", ("--question", "non-empty"), cli("run", "--question", "", "--document", "{doc}")),
    Row("cli", "--question whitespace only", ("--question", "non-empty"), cli("run", "--question", "  \n", "--document", "{doc}")),
    Row("cli", "--question missing", ("--question",), cli("run", "--document", "{doc}")),
    Row("cli", "an unknown flag", ("unrecognized arguments: --bogus",), cli("run", "--question", "q", "--document", "{doc}", "--bogus")),
    Row("cli", "--document not UTF-8 (answered, with a warning)", covered_by="test_cli.py::test_non_utf8_document_is_decoded_with_a_warning_and_answered"),
    # memagent run: budgets and the model's window
    Row("cli", "--chunk-tokens 0", covered_by="test_cli.py::test_bad_budget"),
    Row("cli", "--memory-tokens -3", covered_by="test_cli.py::test_bad_budget"),
    Row("cli", "--answer-tokens 0", covered_by="test_cli.py::test_bad_budget"),
    Row("cli", "--chunk-tokens abc", ("--chunk-tokens", "invalid int value: 'abc'"), cli("run", "--question", "q", "--document", "{doc}", "--chunk-tokens", "abc")),
    Row("cli", "--chunk-tokens 20000 on the 8192-token embedded model (defect 2)", covered_by="test_cli.py::test_chunk_larger_than_the_window_is_refused_with_the_arithmetic"),
    Row("cli", "demo --tokens 0", ("--tokens", "a positive number of tokens", "'0'"), cli("demo", "--tokens", "0")),
    # memagent run: model flags
    Row("cli", "--model nonsense", ("unknown model spec 'nonsense'",), cli("run", "--question", "q", "--document", "{doc}", "--model", "nonsense")),
    Row("cli", "--model vllm: (no name)", ("unknown model spec 'vllm:'",), cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:")),
    Row("cli", "--model hf:<missing dir>", ("'/no/such/dir' is not a directory",), cli("run", "--question", "q", "--document", "{doc}", "--model", "hf:/no/such/dir")),
    Row("cli", "--model vllm:x without --base-url", ("base_url",), cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x")),
    Row("cli", "--model openai:x without an API key (defect 4)", covered_by="test_cli.py::test_openai_model_without_an_api_key"),
    Row("cli", "a hosted model without --tokenizer", ("no tokenizer", "--tokenizer"),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x", "--base-url", "http://127.0.0.1:9/v1")),
    Row("cli", "--tokenizer /nonexistent (defect 8)", ("tokenizer directory '/nonexistent' does not exist",),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x", "--base-url", "http://127.0.0.1:9/v1", "--tokenizer", "/nonexistent")),
    Row("cli", "--timeout -1 (defect 8)", ("--timeout", "a positive number of seconds", "'-1'"), cli("run", "--question", "q", "--document", "{doc}", "--timeout", "-1")),
    Row("cli", "--timeout 0", ("--timeout", "a positive number of seconds"), cli("run", "--question", "q", "--document", "{doc}", "--timeout", "0")),
    Row("cli", "--temperature -1 (defect 8)", ("--temperature", "a temperature >= 0", "'-1'"), cli("run", "--question", "q", "--document", "{doc}", "--temperature", "-1")),
    Row("cli", "--temperature warm", ("--temperature", "'warm'"), cli("run", "--question", "q", "--document", "{doc}", "--temperature", "warm")),
    Row("cli", "--top-p 1.5", ("--top-p", "a top_p in (0, 1]"), cli("run", "--question", "q", "--document", "{doc}", "--top-p", "1.5")),
    Row("cli", "--top-p 0", ("--top-p", "a top_p in (0, 1]"), cli("run", "--question", "q", "--document", "{doc}", "--top-p", "0")),
    Row("cli", "--max-retries -2", ("--max-retries", "retries >= 0"), cli("run", "--question", "q", "--document", "{doc}", "--max-retries", "-2")),
    Row("cli", "--final-prompt other", ("--final-prompt", "'other'"), cli("run", "--question", "q", "--document", "{doc}", "--final-prompt", "other")),
    Row("cli", "--quantization int4 on a server model", ("--quantization applies to local models", "'vllm:x'"),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x", "--base-url", "http://127.0.0.1:9/v1", "--quantization", "int4")),
    Row("cli", "--quantization int8", ("--quantization", "invalid choice: 'int8'"), cli("run", "--question", "q", "--document", "{doc}", "--quantization", "int8")),
    Row("cli", "--compile-decode on a server model", ("--compile-decode applies to local models", "'vllm:x'"),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x", "--base-url", "http://127.0.0.1:9/v1", "--compile-decode")),
    Row("cli", "--adapter on a server model", ("--adapter applies to local models", "'vllm:x'"),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "vllm:x", "--base-url", "http://127.0.0.1:9/v1", "--adapter", "{tmp}")),
    Row("cli", "--adapter a directory that holds no adapter", ("adapter must be a PEFT LoRA adapter directory", "{tmp}"),
        cli("run", "--question", "q", "--document", "{doc}", "--adapter", "{tmp}")),
    Row("cli", "--adapter with the model that ships one", ("'smollm2-135m-memagent' carries its own trained adapter", "'smollm2-135m' with adapter="),
        cli("run", "--question", "q", "--document", "{doc}", "--model", "smollm2-135m-memagent", "--adapter", "{tmp}")),
    Row("cli", "--prompt-lookup -1", ("--prompt-lookup", "draft tokens >= 0", "'-1'"), cli("run", "--question", "q", "--document", "{doc}", "--prompt-lookup", "-1")),
    Row("python", "LocalChatModel(prompt_lookup_num_tokens=-2), SamplingParams(prompt_lookup_num_tokens=1.5 or True)",
        covered_by="test_prompt_lookup.py::test_a_negative_or_fractional_draft_length_is_refused_by_name"),
    Row("python", "compile_decode=True on a model the fused step cannot serve (float32)", covered_by="test_compiled_decode.py::test_compiling_a_model_the_fused_step_cannot_serve_is_refused_by_name"),
    Row("python", "LocalChatModel(quantization='int8'), from_model(..., quantization='int4'), a Linear of 20 inputs", covered_by="test_local_model.py::test_int4_is_refused_where_it_cannot_apply"),
    Row("cli", "the embedded model's wheel not installed", covered_by="test_cli.py::test_missing_embedded_model_wheel"),
    Row("cli", "LANGGRAPH_MEMAGENT_CACHE not writable", covered_by="test_cli.py::test_unusable_cache_dir"),
    Row("cli", "a server that is down", covered_by="test_cli.py::test_server_down_in_process_with_resume_hint"),
    Row("cli", "a server that answers HTTP 400 (defect 2, unknown window)", covered_by="test_end_to_end.py::test_a_server_400_is_one_clear_error_never_an_empty_memory"),
    Row("cli", "errors on the console, in a real process", covered_by="test_cli.py::test_console_gets_one_line_never_a_traceback"),
    # memagent run: checkpoints and threads
    Row("cli", "--checkpoint in a directory that does not exist", covered_by="test_cli.py::test_bad_checkpoint_file"),
    Row("cli", "--checkpoint a file that is not SQLite", covered_by="test_cli.py::test_bad_checkpoint_file"),
    Row("cli", "--checkpoint a directory", ("cannot open checkpoint file", "{tmp}"), cli("run", "--question", "q", "--document", "{doc}", "--checkpoint", "{tmp}")),
    Row("cli", "--thread-id without --checkpoint", ("--thread-id needs --checkpoint",), cli("run", "--question", "q", "--document", "{doc}", "--thread-id", "T1")),
    Row("cli", "--restart without --checkpoint", ("--restart needs --checkpoint",), cli("run", "--question", "q", "--document", "{doc}", "--restart")),
    Row("cli", "another question on an unfinished --thread-id (defect 1)", covered_by="test_cli.py::test_a_reused_thread_never_answers_another_question"),
    Row("cli", "re-running a finished thread (defect 7)", covered_by="test_cli.py::test_checkpointed_run_interrupted_resumed_and_rerun"),
    Row("cli", "kill -9 mid-run, then resume (hash-identical answer)", covered_by="test_checkpoint.py::test_resume_sqlite_after_a_process_kill"),
    # memagent compare ------------------------------------------------------------------------------
    Row("compare", "--graphs nosuch", ("unknown graph(s) ['nosuch']", "known graphs"), cli("compare", "--graphs", "nosuch", "--task", "niah_single_1", "--lengths", "1k", "--out", "{tmp}/o")),
    Row("compare", "--task nosuch", ("unknown task(s) ['nosuch']",), cli("compare", "--graphs", "memagent", "--task", "nosuch", "--lengths", "1k", "--out", "{tmp}/o")),
    Row("compare", "--lengths 1q", ("bad length '1q'", "4k"), cli("compare", "--graphs", "memagent", "--task", "niah_single_1", "--lengths", "1q", "--out", "{tmp}/o")),
    Row("compare", "--samples 0", ("samples must be a positive integer, got 0",), cli("compare", "--graphs", "memagent", "--task", "niah_single_1", "--lengths", "1k", "--samples", "0", "--out", "{tmp}/o")),
    Row("compare", "--concurrency 0", ("concurrency must be a positive integer, got 0",), cli("compare", "--graphs", "memagent", "--task", "niah_single_1", "--lengths", "1k", "--concurrency", "0", "--out", "{tmp}/o")),
    Row("compare", "--data that does not exist", ("'/nonexistent.json' does not exist",), cli("compare", "--graphs", "memagent", "--data", "/nonexistent.json", "--out", "{tmp}/o")),
    Row("compare", "--data together with --task", covered_by="test_harness.py::test_cli_data_with_task"),
    Row("compare", "--pool/--num-docs without --data", covered_by="test_harness.py::test_cli_data_options_need_data"),
    Row("compare", "a graph option no compared graph reads", covered_by="test_options.py::test_compare_refuses_an_option_no_compared_graph_reads"),
    Row("compare", "another configuration in the same --out", covered_by="test_harness.py::test_another_configuration_in_the_same_directory_is_refused"),
    Row("compare", "a backend that is down", covered_by="test_harness.py::test_backend_down_stops_the_run_without_recording_samples"),
    Row("compare", "one sample failing", covered_by="test_harness.py::test_failing_sample_records_its_error_and_the_run_goes_on"),
    Row("compare", "Ctrl-C mid-run", covered_by="test_harness.py::test_ctrl_c_keeps_the_running_sample_and_says_it_is_waiting"),
    Row("harness", "kill mid-write: a torn last results line (defect 8: now noted)", covered_by="test_harness.py::test_resume_runs_only_missing_samples"),
    Row("harness", "a corrupt results line in the middle", ("results.jsonl: line 1 is not a results record",), raises(_compare_results('{oops\n{"a": 1}\n'))),
    # data files --------------------------------------------------------------------------------------
    Row("loader", "a data file that does not exist", ("no such file",), raises(_absent_file)),
    Row("loader", "a JSON file that is not JSON", ("broken.json: not valid JSON",), raises(_load("broken.json", "{not json"))),
    Row("loader", "a binary file (a raw UnicodeDecodeError naming no file)", ("data.json: not UTF-8 text (byte 0x89 at offset 0)",),
        raises(lambda tmp: _load_bytes(tmp, "data.json", b"\x89\xff\x00binary"))),
    Row("loader", "a JSON object of neither SQuAD nor LoCoMo (it said 'got a JSON dict')", ("a JSON object that is neither SQuAD", "its keys: a"),
        raises(_load("object.json", {"a": 1}))),
    Row("harness", "a results line torn inside a UTF-8 character (it blocked the resume)",
        covered_by="test_harness.py::test_a_line_torn_inside_a_utf8_character_is_dropped_on_resume"),
    Row("loader", "a JSON string instead of records", ("expected a JSON list of records",), raises(_load("wrong.json", '"just a string"'))),
    Row("loader", "an empty JSON lines file", ("the file is empty",), raises(_load("empty.jsonl", "\n"))),
    Row("loader", "a JSON lines file with a broken line", ("line 2 is not valid JSON",), raises(_load("bad.jsonl", '{"input": "q", "outputs": ["a"]}\n{oops\n'))),
    Row("loader", "a JSON list of unknown records", ("record 0 has fields", "expected a MemAgent eval record"), raises(_load("odd.json", [{"foo": 1}]))),
    Row("loader", "a MemAgent eval record without 'input'", covered_by="test_loaders.py::test_bad_files_name_the_file_record_and_field"),
    Row("loader", "a RULER record without 'outputs'", covered_by="test_loaders.py::test_bad_files_name_the_file_record_and_field"),
    Row("loader", "a RULER input without its template", covered_by="test_loaders.py::test_bad_files_name_the_file_record_and_field"),
    Row("loader", "a LoCoMo question without 'answer'", covered_by="test_loaders.py::test_bad_files_name_the_file_record_and_field"),
    Row("loader", "a LoCoMo record without 'conversation' (defect 8)", ("record 0 has no field 'conversation'", "nor 'speaker_a'"), raises(_locomo_without("conversation"))),
    Row("loader", "a LoCoMo conversation without 'speaker_b'", ("record 0 has no field 'speaker_b'",), raises(_locomo_without("speaker_b"))),
    Row("loader", "HotpotQA without num_docs", ("num_docs",), raises(_load("hotpot.json", [{"question": "q", "answer": "a", "context": []}]))),
    # the Python API --------------------------------------------------------------------------------
    Row("python", "generate_task(..., codec=model.tokenizer), as the tasks page shows (defect 5)", covered_by="test_readme.py::test_readme_python_blocks_run"),
    Row("python", "generate_task of an unknown task", ("unknown task 'niah_single_9'",), raises(_task("niah_single_9", 4000))),
    Row("python", "generate_task with target_tokens 0", ("target_tokens must be a positive number of tokens, got 0",), raises(_task("niah_single_1", 0))),
    Row("python", "generate_task with num_samples 0", ("num_samples must be a positive integer, got 0",), raises(_task("niah_single_1", 4000, num_samples=0))),
    Row("python", "generate_task with an option the task lacks", ("vt takes no option(s) depth",), raises(_task("vt", 4000, depth=0.5))),
    Row("python", "generate_task with a depth of 50", ("depth must be a fraction",), raises(_task("niah_single_1", 4000, depth=50))),
    Row("python", "a tokenizer of an unsupported type", ("unsupported tokenizer",), raises(_object_as_tokenizer)),
    Row("python", "build_memagent_graph(model, chunk_tokens=0)", ("chunk_tokens must be a positive integer number of tokens, got 0",), raises(_memagent(chunk_tokens=0))),
    Row("python", "build_memagent_graph(model, answer_tokens=1.5)", ("answer_tokens must be a positive integer number of tokens, got 1.5",), raises(_memagent(answer_tokens=1.5))),
    Row("python", "build_memagent_graph(model, chunk_tokens=100000) on an 8192-token model (defect 2)", covered_by="test_local_model.py::test_memagent_budgets_past_the_window_are_refused_at_build_time"),
    Row("python", "a prompt past the local model's window", covered_by="test_local_model.py::test_a_prompt_past_the_window_is_refused_not_answered"),
    Row("python", "graph.invoke with an empty question", ("'question' must be a non-empty string",), raises(_invoke({"question": " ", "document": "text"}))),
    Row("python", "graph.invoke with document None", ("'document' must be a non-empty string, got None",), raises(_invoke({"question": "Q?", "document": None}))),
    Row("python", "graph.invoke(new input) on an interrupted thread (defect 1)", covered_by="test_checkpoint.py::test_new_input_on_an_interrupted_thread_starts_a_new_run"),
    Row("python", "load_chat_model of an unknown spec", ("unknown model spec 'gpt'",), raises(_unknown_model_spec)),
    Row("python", "local model call options it cannot honour", covered_by="test_local_model.py::test_bad_call_options_are_named"),
    Row("python", "an empty stop string on the local model", ("stop must be non-empty strings, got '' in ['']",), raises(_empty_stop_string)),
    Row("python", "an unknown scoring metric", covered_by="test_scoring.py::test_unknown_metric_error_message"),
    Row("python", "golds given as a bare string", covered_by="test_scoring.py::test_bare_string_answers_rejected"),
    Row("python", "an empty \\boxed{} (defect 8: None, not '')", covered_by="test_prompts.py::test_boxed_extraction_edge_cases"),
    # untrusted text (defect 3)
    Row("graph", "a document holding <|im_end|><|im_start|>assistant: tokenizer (defect 3)", covered_by="test_untrusted_text.py::test_message_text_is_encoded_as_plain_characters"),
    Row("graph", "the same on the embedded backend's prompt ids (defect 3)", covered_by="test_untrusted_text.py::test_local_backend_prompts_hold_no_injected_control_token"),
    Row("graph", "the same through the chunker (defect 3)", covered_by="test_untrusted_text.py::test_the_chunker_counts_and_keeps_control_strings_as_text"),
    Row("graph", "a document that tries to alter the prompt template", covered_by="test_graph.py::test_hostile_document_cannot_change_the_prompt"),
    # the trainer's command line (defect 6) --------------------------------------------------------
    Row("trainer", "--num_generations 0 (defect 6)", ("num_generations must be >= 2", "got 0"), trainer("--num_generations", "0")),
    Row("trainer", "--num_generations 1 (defect 6)", ("num_generations must be >= 2", "got 1"), trainer("--num_generations", "1")),
    Row("trainer", "--train_file /nonexistent.json (defect 6)", ("train_file '/nonexistent.json' does not exist",), trainer("--train_file", "/nonexistent.json")),
    Row("trainer", "--graph nosuch (defect 6)", ("graph must be one of", "got 'nosuch'"), trainer("--graph", "nosuch")),
    Row("trainer", "--learning_rate -1, refused before the model loads (defect 6)", ("learning_rate must be > 0, got -1.0",), trainer("--learning_rate", "-1")),
    Row("trainer", "three bad fields at once: one line each (defect 6)", ("num_generations", "learning_rate", "task must be one of"),
        trainer("--num_generations", "0", "--learning_rate", "-1", "--task", "bogus"), lines=3),
    Row("trainer", "--max_context_tokens past the policy's window, refused before the model loads",
        ("max_context_tokens=8100 leaves no room for a 128-token turn in the model's 8192-token window: at most 8064",),
        trainer("--preset", "cpu-sumer", "--max_context_tokens", "8100")),
    Row("trainer", "--model_name_or_path to a missing directory", ("model_name_or_path '/nope' does not exist",), trainer("--model_name_or_path", "/nope")),
    Row("trainer", "--num_generations not dividing the batch", ("must be divisible by num_generations (3)",), trainer("--num_generations", "3")),
    Row("trainer", "--train_file that is not JSON", ("is not valid JSON",), trainer("--train_file", "{tmp}/bad.json")),
    Row("trainer", "--train_file with a record missing its document", ("record 0", "document string"), trainer("--train_file", "{tmp}/nodoc.json")),
    Row("trainer", "--preset paper-70b", ("unknown --preset 'paper-70b'",), trainer("--preset", "paper-70b")),
    Row("trainer", "--reward_metric accuracy", ("reward_metric must be one of", "'accuracy'"), trainer("--reward_metric", "accuracy")),
    Row("trainer", "--max_turns 0", ("max_turns must be a positive integer, got 0",), trainer("--preset", "cpu-sumer", "--max_turns", "0")),
    Row("trainer", "--num_generations abc", ("--num_generations", "invalid int value: 'abc'"), trainer("--num_generations", "abc")),
    Row("trainer", "--agemem_sessions evidence on the MemAgent graph", ("agemem_sessions must be one of ['all', 'evidence', 'evidence-shuffled', 'given-memory']", "with graph 'memagent'"),
        trainer("--agemem_sessions", "evidence")),
    Row("trainer", "--forced_answer_call json", ("--forced_answer_call", "invalid choice: 'json'"), trainer("--forced_answer_call", "json")),
    Row("trainer", "--reading_memory 'question k=0'", ("reading memory must be 'evidence', 'question k=K context=C' or 'evidence+question k=K'", "got 'question k=0'"),
        trainer("--preset", "cpu-sumer", "--forced_answer_call", "submit", "--reading_memory", "question k=0")),
    Row("trainer", "--search_curriculum with a reading memory", ("search_curriculum is for graph 'sumer' with max_turns >= 1, no reading_memory and rows with evidence ids",
        "reading_memory 'evidence'"),
        trainer("--preset", "cpu-sumer", "--forced_answer_call", "submit", "--reading_memory", "evidence", "--search_curriculum", "true")),
    Row("trainer", "--search_curriculum on a train_file without evidence ids", ("search_curriculum needs evidence ids on every training row",
        "noevidence.json"), trainer("--preset", "cpu-sumer", "--max_turns", "1", "--search_curriculum", "true", "--train_file", "{tmp}/noevidence.json")),
    Row("trainer", "--write_curriculum on a train_file without evidence ids", ("write_curriculum needs evidence ids on every training row",
        "noevidence.json"), trainer("--preset", "cpu-agemem", "--write_curriculum", "true", "--train_file", "{tmp}/noevidence.json")),
    Row("trainer", "--agemem_sessions given-memory on a train_file without evidence ids", ("agemem_sessions 'given-memory' needs evidence ids on every "
        "training row", "noevidence.json"), trainer("--preset", "cpu-agemem", "--agemem_sessions", "given-memory", "--train_file", "{tmp}/noevidence.json")),
    Row("trainer", "--write_curriculum with --agemem_sessions given-memory", ("write_curriculum trains stage 1, which agemem_sessions 'given-memory' skips: drop one of them",),
        trainer("--preset", "cpu-agemem", "--agemem_sessions", "given-memory", "--write_curriculum", "true")),
    Row("trainer", "--init_adapter to a directory without an adapter", ("init_adapter must be a saved LoRA adapter directory", "got '{tmp}'"),
        trainer("--init_adapter", "{tmp}")),
    Row("trainer", "the shipped adapter's model with full fine-tuning", ("model_name_or_path 'smollm2-135m-memagent' trains its shipped LoRA "
        "adapter further", "finetuning 'full'"), trainer("--model_name_or_path", "smollm2-135m-memagent", "--finetuning", "full")),
    Row("trainer", "--search_reply none", ("--search_reply", "invalid choice: 'none'"), trainer("--search_reply", "none")),
    Row("trainer", "--answer_rule maybe", ("--answer_rule", "invalid choice: 'maybe'"), trainer("--answer_rule", "maybe")),
    Row("trainer", "--category_shares yes-no=0.5", ("category_shares must be 'category=share' pairs", "got 'yes-no=0.5'"),
        trainer("--preset", "cpu-sumer", "--category_shares", "yes-no=0.5")),
    Row("trainer", "--old_logps rollout with greedy rollouts", ("old_logps 'rollout' needs the embedded engine sampling", "got temperature 0.0"),
        trainer("--old_logps", "rollout", "--temperature", "0")),
    Row("trainer", "--query_style answer", ("--query_style", "invalid choice: 'answer'"), trainer("--query_style", "answer")),
    Row("trainer", "--agemem_write_mode copy", ("--agemem_write_mode", "invalid choice: 'copy'"), trainer("--agemem_write_mode", "copy")),
    Row("trainer", "--agemem_answer_mode guess", ("--agemem_answer_mode", "invalid choice: 'guess'"), trainer("--agemem_answer_mode", "guess")),
    Row("trainer", "--agemem_retrieve_reply top", ("--agemem_retrieve_reply", "invalid choice: 'top'"), trainer("--agemem_retrieve_reply", "top")),
    Row("trainer", "--agemem_retrieve_reply best on the SUMER graph", ("agemem_retrieve_reply is an option of graph 'agemem' and does nothing with graph 'sumer', got 'best'",),
        trainer("--preset", "cpu-sumer", "--agemem_retrieve_reply", "best")),
    Row("trainer", "--agemem_task_weight 1.5", ("agemem_task_weight must be between 0 and 1", "got 1.5"), trainer("--preset", "cpu-agemem", "--agemem_task_weight", "1.5")),
    Row("server", "a token file with a bad line, a short or shared token", covered_by="test_served_auth.py::test_a_bad_token_file_stops_the_server_with_one_line"),
    Row("server", "a context user_id naming another user than the signed-in one", covered_by="test_users.py::test_a_signed_in_user_cannot_name_another"),
    Row("python", "a conversation id already holding another document (its error quoted the stored text)",
        covered_by="test_memory_bank.py::test_messages_without_ids_get_stable_keys_and_conflicting_content_is_an_error"),
    Row("trainer", "--max_steps -3 (it started a 192-step run)", ("max_steps must be a positive number of optimizer steps", "got -3"),
        trainer("--max_steps", "-3")),
    Row("trainer", "--stop_after_steps past --max_steps", ("stop_after_steps must be 0 (off) or from 1 to max_steps (6), got 10",),
        trainer("--max_steps", "6", "--stop_after_steps", "10")),
    Row("trainer", "--search_context -1", ("search_context must be >= 0 (0 = the hits alone), got -1",), trainer("--preset", "cpu-sumer", "--search_context", "-1")),
    Row("trainer", "--top_k -1", ("top_k must be >= 0", "got -1"), trainer("--top_k", "-1")),
    Row("trainer", "--generation_kwargs the rollouts would ignore", ("generation_kwargs", "is not applied by the rollout backends"), trainer("--generation_kwargs", '{"num_beams": 2}')),
    Row("trainer", "--key_pool dev", ("key_pool must be one of ['train', 'test']", "got 'dev'"), trainer("--key_pool", "dev")),
    Row("trainer", "--gold_position balanced with a one-needle task", ("gold_position must be 'balanced' with task 'niah_multikey_1'", "niah_single_1"), trainer("--gold_position", "balanced")),
    Row("trainer", "colocated vLLM with tensor parallelism", covered_by="test_training.py::test_colocated_tensor_parallel_vllm_is_refused_with_the_reason"),
    Row("trainer", "--graph sumer without a judge or reward_metric f1", covered_by="test_training_tools.py::test_sumer_without_a_judge_is_a_clear_error"),
]
RUN_HERE = [row for row in ROWS if row.run is not None]


@pytest.mark.parametrize("row", RUN_HERE, ids=lambda row: f"{row.surface}: {row.bad_input}")
def test_bad_input_gets_clear_lines(row: Row, tmp_path: Path) -> None:
    _file(tmp_path, "bad.json", "{oops")
    _file(tmp_path, "nodoc.json", [{"prompt": "q?", "reward_model": {"ground_truth": "a"}}])
    _file(tmp_path, "noevidence.json", [{"prompt": "q?", "context": "a document", "reward_model": {"ground_truth": "a"}}])
    text = row.run(tmp_path)
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if re.search(r"(^|: )error: |^[A-Za-z]+Error: ", line)]
    assert len(lines) == row.lines, text
    for fragment in row.expect:
        fragment = fragment.replace("{tmp}", str(tmp_path))
        assert any(fragment in line for line in lines), f"{fragment!r} not in {lines}"


def test_rows_covered_elsewhere_name_existing_tests() -> None:
    for row in ROWS:
        assert (row.run is None) == bool(row.covered_by), row
        assert row.run is not None or row.expect == (), row
        if row.covered_by:
            file, name = row.covered_by.split("::")
            functions = {node.name for node in ast.walk(ast.parse((TESTS / file).read_text())) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
            assert name in functions, row.covered_by


def test_the_table_covers_every_audited_defect_and_the_readme_count_is_current() -> None:
    defects = {int(match) for row in ROWS for match in re.findall(r"defect (\d)", row.bad_input)}
    assert defects == set(range(1, 9))
    reliability = (TESTS.parent / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert f"{len(ROWS)} bad inputs and faults" in reliability
