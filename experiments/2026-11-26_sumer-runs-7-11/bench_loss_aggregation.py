"""Loss weighting across rollouts of different lengths, measured on one SUMER rollout batch.

Every LLM call of a rollout is a training row. With ``--loss_aggregation token`` (the
paper's default) all completion tokens of a batch count in one token mean, so a rollout
weighs as much as its completion tokens; with ``rollout`` each rollout's tokens sum to one
rollout's share; with ``rollout_sum`` (SUMER's paper) each token weighs one over the group size,
so a rollout weighs its token sum. This takes the ``cpu-sumer`` rollout batch that ``bench_prefix_packing``
(``experiments/2026-11-26_sumer-prefix-tree-reading-step/``) saved (one training question, G = 8 rollouts; written anew when missing) and reports, for
both ways:

- each rollout's share of the loss weight, and its share of the advantage-weighted loss
  (|advantage| x weight: how much of the update each rollout drives);
- the policy gradient of the batch (both optimizer steps' slices, summed as one rollout
  batch's update): its norm, and its cosine with the token mean's gradient; beside the norm,
  the factor by which TRL's gradient clipping (``max_grad_norm``, 1.0 by default) scales it.

``.venv/bin/python experiments/2026-11-26_sumer-runs-7-11/bench_loss_aggregation.py`` (about 13 minutes on 2 cores with a saved
batch; ``--rollouts FILE`` names the batch to reuse or write).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from langgraph_memagent.benchmarks._common import RESULTS_DIR, OtherLoad, peak_rss, write_result


def _load_prefix_packing():
    """``bench_prefix_packing``, from the folder of the experiment that used it (not a package)."""
    path = Path(__file__).resolve().parents[1] / "2026-11-26_sumer-prefix-tree-reading-step" / "bench_prefix_packing.py"
    spec = importlib.util.spec_from_file_location("bench_prefix_packing", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_prefix_packing = _load_prefix_packing()
_rollouts, _trainer, optimizer_step_losses = _prefix_packing._rollouts, _prefix_packing._trainer, _prefix_packing.optimizer_step_losses

NAME = "bench_loss_aggregation"
WAYS = ("token", "rollout", "rollout_sum")


def rollout_shares(rollouts: list, advantages: list[float], aggregation: str) -> dict[str, list[float]]:
    """Each rollout's share of the loss weight, and of |advantage| x weight, in ``aggregation``.

    >>> from langgraph_memagent.training.rollouts import LLMCall, Rollout
    >>> long = Rollout(0, 0, [LLMCall([1], [2, 3, 4], "m")] * 3, {})
    >>> short = Rollout(1, 0, [LLMCall([1], [2], "m")], {})
    >>> rollout_shares([long, short], [1.0, -1.0], "token")["weight"]
    [0.9, 0.1]
    >>> rollout_shares([long, short], [1.0, -1.0], "rollout")["weight"]
    [0.5, 0.5]
    """
    from langgraph_memagent.training.rows import rollout_rows

    rows = rollout_rows(rollouts, advantages, loss_aggregation=aggregation)
    weight = [0.0] * len(rollouts)
    for index, tokens, token_weight in zip(rows.rollout_index, rows.completion_ids, rows.token_weights):
        weight[index] += len(tokens) * token_weight
    driven = [abs(a) * w for a, w in zip(advantages, weight)]
    return {
        "weight": [round(w / sum(weight), 4) for w in weight],
        "advantage_weighted": [round(d / sum(driven), 4) if sum(driven) else 0.0 for d in driven],
    }


def batch_gradient(trainer, rollouts: list, aggregation: str, seed: int):
    """The summed gradient of one rollout batch's optimizer-step slices, flattened, and their losses."""
    import torch

    trainer.args.loss_aggregation = aggregation
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    batch = trainer._batch_from_rollouts(rollouts, "train")
    losses = optimizer_step_losses(trainer, batch, seed)  # the same seed both ways: the same row shuffle
    parameters = [p for p in trainer.model.parameters() if p.requires_grad]
    gradient = torch.cat([p.grad.flatten().clone() for p in parameters])
    trainer.model.zero_grad()
    return gradient, losses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python experiments/2026-11-26_sumer-runs-7-11/{NAME}.py", description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=Path, default=RESULTS_DIR / "bench_prefix_packing_rollouts.json",
                        help="rollout batch to reuse, written when missing (default: %(default)s)")
    args = parser.parse_args(argv)
    import torch

    from langgraph_memagent.training.rows import group_advantages

    load = OtherLoad()
    trainer, dataset = _trainer(4096)
    trainer.args.pack_prefixes = True
    rollouts = _rollouts(trainer, dataset, args.rollouts)
    rewards = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
    groups = torch.tensor([r.group_id for r in rollouts])
    advantages = group_advantages(rewards, groups, scale=trainer.scale_rewards).tolist()
    result = {
        "rollouts": [{"reward": r.reward, "calls": len(r.calls), "completion_tokens": r.completion_tokens,
                      "advantage": round(a, 4)} for r, a in zip(rollouts, advantages)],
    }
    gradients = {}
    for way in WAYS:
        gradients[way], losses = batch_gradient(trainer, rollouts, way, seed=0)
        norm = float(gradients[way].norm())
        result[way] = {**rollout_shares(rollouts, advantages, way), "losses": losses, "gradient_norm": round(norm, 6),
                       "clip_factor": round(min(1.0, trainer.args.max_grad_norm / norm), 6),
                       "gradient_cosine_with_token": round(float(torch.nn.functional.cosine_similarity(gradients["token"], gradients[way], dim=0)), 4)}
        print(f"{way}: loss weight per rollout {result[way]['weight']}, gradient norm {result[way]['gradient_norm']}", flush=True)
    result["gradient_cosine"] = result["rollout"]["gradient_cosine_with_token"]
    result["peak_rss_gb"] = round(peak_rss() / 2**30, 2)
    result["other_cpu_cores"] = load.cores()
    write_result(NAME, result)
    longest = max(range(len(rollouts)), key=lambda i: rollouts[i].completion_tokens)
    print(f"{NAME}: the longest rollout ({rollouts[longest].completion_tokens} tokens) drives "
          f"{result['token']['advantage_weighted'][longest]:.0%} of the token-mean update and "
          f"{result['rollout']['advantage_weighted'][longest]:.0%} of the rollout-mean one; gradient cosine {result['gradient_cosine']}; "
          f"the rollout_sum gradient is {result['rollout_sum']['gradient_norm'] / result['token']['gradient_norm']:.1f}x the token mean's "
          f"(cosine {result['rollout_sum']['gradient_cosine_with_token']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
