"""The lock (requirements/*.txt, written by `make lock`) agrees with pyproject.toml's ranges.

A dependency added to pyproject.toml without re-running `make lock` would install from the
lock without it: this fails first, naming the package.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCK = REPO_ROOT / "requirements" / "lock-linux-x86_64-cpu-py311.txt"
UNLOCKED_EXTRAS = ("vllm",)  # needs a GPU; `make lock` resolves every other extra (the Makefile's LOCK_EXTRAS)


def project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]


def locked_extras() -> list[str]:
    return [extra for extra in project()["optional-dependencies"] if extra not in UNLOCKED_EXTRAS]


def locked_versions(text: str) -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of a uv/pip-compile file.

    >>> locked_versions("torch==2.13.0+cpu\\n    # via x\\nPyYAML==6.0.4\\n")
    {'torch': '2.13.0+cpu', 'pyyaml': '6.0.4'}
    """
    pins = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", text, flags=re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


def test_makefile_installs_this_lock() -> None:
    assert f"LOCK   ?= {LOCK.relative_to(REPO_ROOT)}" in (REPO_ROOT / "Makefile").read_text()


def test_makefile_locks_every_extra_but_vllm() -> None:
    line = next(line for line in (REPO_ROOT / "Makefile").read_text().splitlines() if line.startswith("LOCK_EXTRAS"))
    assert sorted(line.split(":=")[1].split()) == sorted(extra for extra in locked_extras() if extra != "all")  # [all]: a union of them


def test_lock_pins_every_declared_dependency_inside_its_range() -> None:
    declared = list(project()["dependencies"])
    for extra in locked_extras():
        declared += project()["optional-dependencies"][extra]
    locked = locked_versions(LOCK.read_text())
    problems = []
    for line in declared:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == canonicalize_name(project()["name"]):
            continue  # an extra made of other extras ([all], [train]'s [embedded,plots]): those are checked themselves
        version = locked.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} is declared but not locked")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside the declared {requirement.specifier}")
    assert not problems, "; ".join(problems) + " (run `make lock`)"
