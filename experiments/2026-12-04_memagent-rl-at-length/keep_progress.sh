#!/usr/bin/env bash
# Stage a cut run of this experiment for commit, so that a fresh checkout resumes it where it stopped:
#
#     bash experiments/2026-12-04_memagent-rl-at-length/keep_progress.sh SEED    # a recipe.sh SEED run
#     bash experiments/2026-12-04_memagent-rl-at-length/keep_progress.sh test    # the test_eval.sh runs
#
# Sessions here start from a fresh clone, and runs/ is ignored by git, so a stopped run loses everything not committed.
# For a seed this stages (git add -f) its training files, its log, every finished stage's adapter and the newest
# checkpoint of the stage in progress (adapter, optimizer, scheduler, random states: about 30 MB), and unstages the
# checkpoints staged since the base (below); the base's own checkpoints stay, since removing one costs as much diff as
# adding it (sessions 20 and 21 re-added them by hand). For the test it stages compare's output folders (the README's
# amendment on the order of the runs), their in-flight samples' checkpoints included, so those resume at the chunk they
# stopped on; the test files themselves are rewritten by make_test.py and checked against test_files.sha256.
# Stop the run first, then commit.
#
# A stop whose commits' diffs add up to over 256 MiB is refused whole, and a checkpoint committed at one cut and
# unstaged at the next counts twice (added, then removed): seed 2's session of 2026-12-06/07 lost its stages 1 and 2
# and 7 steps of stage 3 that way. So after staging, this adds up what the stop would submit (every commit since the
# session's base, the oldest entry of main's reflog, plus the staged change, as binary diffs) and refuses over
# KEEP_PROGRESS_LIMIT_MIB (200), printing the one commit that submits only the net change instead.
# A checkout kept from an earlier session whose stop landed still has that session's base in its reflog, so the count
# includes the landed commits too: it errs high, never low. KEEP_PROGRESS_BASE=COMMIT (the last landed commit) sets the
# base for both the count and the checkpoints kept.
set -euo pipefail
SEED=${1:?usage: keep_progress.sh SEED|test}
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-04_memagent-rl-at-length
LIMIT_MIB=${KEEP_PROGRESS_LIMIT_MIB:-200}
BASE=${KEEP_PROGRESS_BASE:-$(git reflog show --format=%H main | tail -1)}

check_submission() {  # the stop's diffs, in MiB, against the limit; exit 3 with the squash that fits when over
    local mib net
    mib=$(( ($(git log -p --binary --format= "$BASE..HEAD" | wc -c) + $(git diff --cached --binary | wc -c)) >> 20 ))
    echo "keep_progress.sh: this stop submits about $mib MiB of diffs since ${BASE:0:7} (limit here $LIMIT_MIB, the workplace's 256)"
    if [ "$mib" -gt "$LIMIT_MIB" ]; then
        net=$(( $(git diff --cached --binary "$BASE" | wc -c) >> 20 ))
        echo "keep_progress.sh: error: $mib MiB of diffs is over $LIMIT_MIB MiB; unless ${BASE:0:7}..HEAD holds commits that already landed (then rerun with KEEP_PROGRESS_BASE set to the last landed commit), submit one commit of the net change ($net MiB): git reset --soft ${BASE:0:7} && git commit" >&2
        exit 3
    fi
}
if [ "$SEED" = test ]; then
    pgrep -f "test_eval.sh" > /dev/null && { echo "keep_progress.sh: error: test_eval.sh is still running; stop it first" >&2; exit 2; }
    for db in "$HERE"/runs/test_out/*/in_flight/checkpoints.sqlite; do  # a killed run's checkpoints, out of SQLite's WAL
        [ -f "$db" ] && python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("pragma wal_checkpoint(TRUNCATE)"); c.close()' "$db"
    done
    git add -f "$HERE/runs/test_out" "$HERE/runs/test_eval.log"
    git status --short -- "$HERE/runs/test_out" | wc -l | sed 's/$/ files of the test runs staged/'
    check_submission
    exit 0
fi
[[ $SEED =~ ^[0-9]+$ ]] || { echo "keep_progress.sh: error: expected a whole-number SEED or 'test', got '$SEED'" >&2; exit 2; }
RUNS=$HERE/runs/recipe_seed$SEED
[ -d "$RUNS" ] || { echo "keep_progress.sh: error: $RUNS does not exist (recipe.sh $SEED has not run)" >&2; exit 2; }
if pgrep -f "recipe.sh $SEED\$" > /dev/null; then
    echo "keep_progress.sh: error: recipe.sh $SEED is still running; stop it first" >&2; exit 2
fi

# Every staged checkpoint out of the index, then the base's back in (their removal would be a diff too).
git rm -r -q --cached --ignore-unmatch "$RUNS"/stage*/checkpoint-* > /dev/null
git ls-tree -r "$BASE" -- "$RUNS" | { grep '/stage[0-9]*/checkpoint-' || true; } | git update-index --index-info
git add -f "$RUNS"/*.jsonl "$RUNS/hosts.log" "$HERE/runs/recipe_seed$SEED.log"
for adapter in "$RUNS"/adapter_stage*; do [ -d "$adapter" ] && git add -f "$adapter"; done
for stage in "$RUNS"/stage[0-9]; do
    [ -d "$RUNS/adapter_$(basename "$stage")" ] && continue          # finished: its adapter is kept
    last=$(ls -d "$stage"/checkpoint-* 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$last" ] && git add -f "$last" && echo "keep_progress.sh: seed $SEED resumes from $last"
done
git status --short -- "$RUNS" | awk '{print $2}' | xargs -r du -ch | tail -1 | sed "s/total/staged for seed $SEED/"
check_submission
