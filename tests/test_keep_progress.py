"""keep_progress.sh refuses a stop whose diffs would be over the submission limit, and names the commit that fits.

Issue 85's training runs are cut at every session's stop and kept in git. A checkpoint committed at one cut and
unstaged at the next counts twice in a stop's diffs; one session's stop went over the workplace's 256 MiB that way and
none of its work landed. Checkpoints that already landed stay in git (removing one is a diff as large as adding it).
The script is run here in a throwaway repository, with the limit scaled down to megabytes.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "experiments/2026-12-04_memagent-rl-at-length/keep_progress.sh"
HERE = "experiments/2026-12-04_memagent-rl-at-length"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def _keep(repo: Path, limit_mib: int, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", f"{HERE}/keep_progress.sh", "9"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV, "KEEP_PROGRESS_LIMIT_MIB": str(limit_mib), **env})


def _checkpoint(runs: Path, step: int) -> None:
    folder = runs / f"stage1/checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "optimizer.pt").write_bytes(os.urandom(3 << 20))  # incompressible, as optimizer states are


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / HERE).mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / HERE)
    (tmp_path / ".gitignore").write_text("runs/\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "the landed main")
    runs = tmp_path / HERE / "runs/recipe_seed9"
    runs.mkdir(parents=True)
    (runs / "train.jsonl").write_text("{}\n")
    (runs / "hosts.log").write_text("host\n")
    (runs.parent / "recipe_seed9.log").write_text("log\n")
    return tmp_path


def test_a_second_cut_that_would_go_over_the_limit_is_refused_with_the_squash_that_fits(repo: Path) -> None:
    runs = repo / HERE / "runs/recipe_seed9"
    _checkpoint(runs, 1)
    first = _keep(repo, limit_mib=6)
    assert first.returncode == 0, first.stderr
    assert "resumes from" in first.stdout and "checkpoint-1" in first.stdout
    _git(repo, "commit", "-q", "-m", "cut 1")

    _checkpoint(runs, 2)  # the next cut: checkpoint-2 staged, checkpoint-1 unstaged (its removal is a diff too)
    second = _keep(repo, limit_mib=6)
    assert second.returncode == 3
    [line] = second.stderr.strip().splitlines()
    assert "over 6 MiB" in line and "git reset --soft" in line

    base = re.search(r"git reset --soft (\w+) && git commit$", line).group(1)
    assert _git(repo, "rev-parse", "HEAD~1").startswith(base)  # the session's base: the landed main
    _git(repo, "reset", "--soft", base)
    _git(repo, "commit", "-q", "-m", "cut 2, one commit")
    assert _git(repo, "ls-files", f"{HERE}/runs").count("checkpoint-2") == 1
    assert "checkpoint-1" not in _git(repo, "log", "-p", "--format=", "--stat", "HEAD~1..HEAD")
    third = _keep(repo, limit_mib=6)
    assert third.returncode == 0, third.stderr


def test_a_checkout_kept_from_a_landed_stop_counts_from_keep_progress_base(repo: Path) -> None:
    runs = repo / HERE / "runs/recipe_seed9"
    _checkpoint(runs, 1)
    assert _keep(repo, limit_mib=8).returncode == 0
    _git(repo, "commit", "-q", "-m", "cut 1, landed")  # its stop landed, but the reflog's base is still the older one
    landed = _git(repo, "rev-parse", "HEAD").strip()

    _checkpoint(runs, 2)
    assert _keep(repo, limit_mib=8).returncode == 3  # from the reflog's base: 3 checkpoint diffs of 3.75 MiB
    kept = _keep(repo, limit_mib=8, KEEP_PROGRESS_BASE=landed)
    assert kept.returncode == 0, kept.stderr
    assert f"since {landed[:7]}" in kept.stdout
    # The landed checkpoint stays (the refused run above had unstaged it): the stop only adds checkpoint-2.
    changed = _git(repo, "diff", "--cached", "--name-status", landed, "--", f"{HERE}/runs").splitlines()
    assert [line.split("\t")[0] for line in changed if "checkpoint-" in line] == ["A"]
    assert "checkpoint-2/" in next(line for line in changed if "checkpoint-" in line)
    assert "checkpoint-1/" in _git(repo, "ls-files", f"{HERE}/runs")
