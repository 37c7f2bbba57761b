"""The bar's shortcut checks on probe_reward.py files (``--draws 1``): needle depth, the first number, where wrong answers come from.

Each file's documents are generated again from its split, task settings and question count (the
same seeded generator probe_reward.py used; the golds are checked against the file's). For the
NIAH tasks it reports, per task and length:

- **recall by depth:** the share of gold needles found in the answer, by where the needle sits in
  the document (first, middle, last third); a model that keeps only early or late needles shows here;
- **first needle:** answers whose number is the document's first needle, and how many of those are
  right (copying the first number seen would score only where the gold happens to come first);
- **wrong answers' numbers:** another key's needle, a number of the haystack text, a number the
  document does not hold (made up), or no 7-digit number (RULER's needles have 7 digits);
- **credits inside a longer number:** golds RULER's string match credits only as part of a longer
  number (``19633647`` for the needle ``9633647``): the answer's-format shortcut of a lenient metric.

    ../../.venv/bin/python shortcuts.py results/dev_untrained_4k.json results/dev_stage2_seed1_4k.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from make_data import task_samples

from langgraph_memagent.agents.embedded import embedded_model_dir
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.training.held_out import SPLITS

NEEDLE = re.compile(r"special magic numbers? for [\w-]+ is: (\d+)")
NUMBER = re.compile(r"(?<!\d)\d{7}(?!\d)")  # RULER's needles are 7-digit numbers
THIRDS = ("first", "middle", "last")


def third(depth: float) -> str:
    """The third of the document a needle at ``depth`` (0..1) sits in.

    >>> third(0.1), third(0.5), third(0.97)
    ('first', 'middle', 'last')
    """
    return THIRDS[min(int(depth * 3), 2)]


def wrong_kind(numbers: list[str], needles: list[str], document: str) -> str:
    """Where a wrong answer's first number comes from: another key's needle, the haystack, nowhere, or no 7-digit number.

    >>> wrong_kind(["1234567"], ["1234567", "7777777"], "x"), wrong_kind(["5555555"], [], "a 5555555 b"), wrong_kind([], [], "")
    ('another needle', 'haystack number', 'no 7-digit number')
    """
    if not numbers:
        return "no 7-digit number"
    if numbers[0] in needles:
        return "another needle"
    return "haystack number" if numbers[0] in document else "made up"


def whole_number(gold: str, answer: str) -> bool:
    """Whether ``answer`` holds ``gold`` with no digit touching it (train_exact.py's reward counts golds this way).

    >>> whole_number("9633647", "it is 9633647."), whole_number("9633647", "boxed{19633647}")
    (True, False)
    """
    return re.search(rf"(?<!\d){re.escape(gold)}(?!\d)", answer) is not None


def inside_longer(gold: str, answer: str) -> bool:
    """Whether RULER's string match credits ``gold`` in ``answer`` only as part of a longer number.

    >>> inside_longer("9633647", "boxed{19633647}"), inside_longer("9633647", "it is 9633647."), inside_longer("9633647", "no")
    (True, False, False)
    """
    return gold in answer and not whole_number(gold, answer)


def report(path: Path, codec) -> None:
    run = json.loads(path.read_text())
    split = SPLITS[run.get("split", "dev")]
    print(f"\n{path}")
    print("| task | length | recall by depth (first / middle / last third) | first needle answered (right) | wrong: another needle / haystack number / made up / no 7-digit number | credits inside a longer number |")
    print("|---|---:|---|---|---|---:|")
    for cell in run["cells"]:
        if not cell["task"].startswith("niah"):
            continue
        samples = task_samples(cell["task"], cell["length"], codec, run["questions"], split["seed"], split["key_pool"],
                               **run.get("task_options", {}).get(cell["task"], {}))
        if [list(map(str, s.answers)) for s in samples] != cell["golds"]:
            raise SystemExit(f"{path}: the regenerated {cell['task']} golds differ from the file's; was it written with other settings?")
        found = {name: [0, 0] for name in THIRDS}
        first_answered = first_right = several_needles = longer = 0
        wrong = {"another needle": 0, "haystack number": 0, "made up": 0, "no 7-digit number": 0}
        for sample, answer, (reward,) in zip(samples, cell["answers"], cell["rewards"]):
            numbers = NUMBER.findall(answer)
            for gold, depth in zip(map(str, sample.answers), sample.meta["depths"]):
                found[third(depth)][0] += gold in answer  # RULER's string match, as the reward
                found[third(depth)][1] += 1
                longer += inside_longer(gold, answer)
            needles = NEEDLE.findall(sample.document)
            several_needles += len(needles) > 1
            if len(needles) > 1 and numbers and numbers[0] == needles[0]:
                first_answered += 1
                first_right += reward > 0
            if reward == 0:
                wrong[wrong_kind(numbers, needles, sample.document)] += 1
        recall = " / ".join(f"{hit}/{total}" for hit, total in found.values())
        first = f"{first_answered} ({first_right})" if several_needles else "- (one needle)"
        print(f"| {cell['task']} | {cell['length']} | {recall} | {first} | {' / '.join(map(str, wrong.values()))} | {longer} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="+", help="probe_reward.py outputs (--draws 1)")
    codec = resolve_tokenizer(str(embedded_model_dir()))
    for path in parser.parse_args().files:
        report(path, codec)


if __name__ == "__main__":
    main()
