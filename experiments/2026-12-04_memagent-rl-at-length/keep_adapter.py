"""Keep a training checkpoint's LoRA adapter small enough to travel and to keep in git.

Copies ``adapter_model.safetensors`` rounded to bfloat16 (about 10 MB for the ``cpu-smoke`` LoRA,
half the float32 file) and ``adapter_config.json``; the optimizer state stays behind, so a later
stage starts from the weights (``--init_adapter``), not from the optimizer's moments.

    python keep_adapter.py runs/length-rl/stage1bf16_seed1/checkpoint-16 results/adapter_stage1bf16_seed1
"""

import argparse
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a checkpoint directory holding adapter_model.safetensors")
    parser.add_argument("target", type=Path, help="the directory to write (created)")
    args = parser.parse_args()
    if not (args.source / "adapter_model.safetensors").is_file():
        parser.error(f"{args.source} holds no adapter_model.safetensors; expected a LoRA checkpoint directory")
    weights = load_file(args.source / "adapter_model.safetensors")
    args.target.mkdir(parents=True, exist_ok=True)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in weights.items()}, args.target / "adapter_model.safetensors")
    shutil.copy(args.source / "adapter_config.json", args.target)
    print(args.target, sum(v.numel() for v in weights.values()), "parameters")


if __name__ == "__main__":
    main()
