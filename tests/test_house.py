"""The package's shape: imports run one way with no circles, modules and functions stay short,
and the README's layout names every folder.

The import rules are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``):
``cli -> training -> evals -> graphs -> baselines -> agents``, and no circle between the
modules of any package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "graphs", "baselines", "evals", "training")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60  # lines of code: no docstring, comments or blank lines


def product_modules() -> list[Path]:
    return sorted([REPO / "cli.py", REPO / "__init__.py", *(path for package in PACKAGES for path in (REPO / package).rglob("*.py"))])


def test_imports_follow_the_layers_and_make_no_circle() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", product_modules(), ids=lambda path: str(path.relative_to(REPO)))
def test_module_is_short(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines (limit {MAX_MODULE_LINES}): split it by concept"


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    body = node.body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)
    start = body[1].lineno if has_docstring and len(body) > 1 else body[0].lineno
    return sum(1 for line in source[start - 1 : node.end_lineno] if line.strip() and not line.strip().startswith("#"))


def test_functions_are_short() -> None:
    long = []
    for path in product_modules():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = _code_lines(node, source.splitlines())
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines of code: {long}"


# pylint's similarity checker, run in its own process. With --ignore-imports/--ignore-signatures
# it parses each module with astroid, whose post-build inference follows every import into
# torch, transformers and LangChain: 160 s of a 2-core CI for a check that needs only each
# module's own syntax tree. Denying astroid every module but builtins keeps the tree and the
# result (a planted copy is still found) and takes about 3 s.
SYMILAR = """
import sys
from astroid.manager import AstroidManager
from pylint.checkers.symilar import Run

class EveryModuleButBuiltins(set):
    def __contains__(self, name):
        return name != "builtins"

AstroidManager.brain["module_denylist"] = EveryModuleButBuiltins()
Run(sys.argv[1:])
"""


def symilar(paths: list[Path]) -> str:
    """symilar's report on ``paths``, ending in its ``TOTAL ... duplicates=N percent=P`` line."""
    # Signatures are ignored, since LangChain fixes those of _generate/_agenerate for every chat model.
    options = ["-d", "6", "--ignore-comments", "--ignore-docstrings", "--ignore-imports", "--ignore-signatures"]
    done = subprocess.run([sys.executable, "-c", SYMILAR, *options, *map(str, paths)], capture_output=True, text=True, timeout=300)
    assert "TOTAL lines=" in done.stdout, done.stderr[-3000:]
    return done.stdout.rstrip()


def test_no_block_of_six_lines_is_repeated() -> None:
    report = symilar(product_modules())
    assert report.endswith("duplicates=0 percent=0.00"), report[-3000:]


def test_the_similarity_check_finds_a_copied_function(tmp_path) -> None:
    # The guard for the denylist above: with astroid denied the imports, a copy is still seen.
    module = REPO / "training" / "grpo_multiconv.py"
    source = module.read_text(encoding="utf-8")
    longest = max((node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)), key=lambda node: node.end_lineno - node.lineno)
    copy = tmp_path / "copy.py"
    copy.write_text("\n".join(source.splitlines()[longest.lineno - 1 : longest.end_lineno]) + "\n", encoding="utf-8")
    report = symilar([module, copy])  # the module it was copied from is enough: the whole package was checked above
    assert "duplicates=0 " not in report and str(copy) in report, report[-3000:]


def test_no_module_imports_langgraph_internals() -> None:
    # Nodes reach the run's store and runtime through langgraph.runtime.get_runtime (public), so
    # an upgrade that moves LangGraph's private modules cannot break the graphs.
    internal = {
        str(path.relative_to(REPO))
        for path in product_modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("langgraph._internal", "langgraph.utils"))
    }
    assert not internal, internal


def test_readme_layout_names_every_folder_with_its_meaning() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") :]
    for package in PACKAGES:
        meaning = ast.get_docstring(ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8")))
        assert meaning, f"{package}/__init__.py needs a docstring saying what the folder holds"
        assert f"`{package}/`" in layout, f"README's layout section does not name {package}/"
    for folder in ("benchmarks", "tests"):
        assert f"`{folder}/`" in layout
