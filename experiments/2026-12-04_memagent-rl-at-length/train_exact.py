r"""Stage 4b's trainer: ``training/grpo_multiconv.py`` with RULER's match made exact on whole numbers, in the reward only.

RULER's string match credits a gold anywhere in the answer, so ``19633647`` earns the needle
``9633647`` (stage 3's checkpoint 29 learned to prepend a 1). Here a gold counts only as a whole
number: not preceded or followed by a digit. All-of records keep MemAgent's Eq. 7 (the fraction of
golds found). The dev metric is unchanged (probe_reward.py scores with RULER's match), so this is a
training-reward probe of this experiment, not an option of the package. The command line is
grpo_multiconv.py's, unchanged (its ``--reward_metric`` is ignored: the reward is this one).

    .venv/bin/python experiments/2026-12-04_memagent-rl-at-length/train_exact.py --preset cpu-smoke --train_file ... --output_dir ...
"""

from __future__ import annotations

import sys
from typing import Any

from shortcuts import whole_number

from langgraph_memagent.evals.records import answer_mode
from langgraph_memagent.training.grpo_multiconv import main
from langgraph_memagent.training.rewards import gold_answers


def exact_number_reward(output: dict[str, Any], sample: dict[str, Any]) -> float:
    r"""RULER's match with each gold counted only as a whole number; all-of records earn the fraction found.

    >>> exact_number_reward({"response": r"\boxed{19633647}"}, {"answers": ["9633647"]})
    0.0
    >>> exact_number_reward({"response": "It is 9633647."}, {"answers": ["9633647"]})
    1.0
    >>> exact_number_reward({"response": "1234567 and 17654321"}, {"answers": ["1234567", "7654321"], "metric": "all"})
    0.5
    """
    prediction = (output.get("answer") or output.get("response") or "").lower()
    found = [whole_number(gold.lower(), prediction) for gold in gold_answers(sample)]
    all_of = answer_mode(sample.get("metric") or "any", "sample metric") == "all"  # the package's check of the field
    return sum(found) / len(found) if all_of else float(any(found))


exact_number_reward.__name__ = "answer_reward_exact_number"  # TRL logs rewards under the function's name


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:], prog="train_exact.py", reward_fn=exact_number_reward))
