"""Can the policy read an answer out of what SUMER's searches return? Its forced submit_answer call, measured alone.

A SUMER episode scores only if two steps both work: the searches find the evidence, and
the policy then reads the answer out of what they returned. This benchmark measures the
second step on its own, so a flat learning curve can be blamed on the right one. For each
held-out generated question (``--split``, as in ``bench_learning``) the memory is built in
one of these ways and rendered exactly as the search tool replies:

* ``evidence``: the evidence messages alone, with no neighbours (a perfect search);
* ``question k=K context=C``: the bank's semantic search with the question itself as the
  query, ``K`` hits each with ``C`` messages before and after it (``k=5 context=2`` is the
  tool's default call);
* ``evidence+question k=K``: the evidence messages among that search's other hits, ``K``
  bare lines in all, in conversation order (the reading curriculum's distractors).

``--search_reply plain`` drops the query from the reply's first line, as the graph option of
the same name does (the twelfth SUMER recipe trains under it). ``--answer_rule yes-no`` adds
the graph option's rule to the forced answer's prompt.

The policy (the untrained SmolLM2-135M of ``--preset cpu-sumer``, or with ``--adapter`` a
trained checkpoint) then makes the forced answer of
``build_sumer_graph(forced_answer_call="submit")`` greedily (or ``--samples`` answers at
``--temperature``): ``submit_answer`` required, ``turn_tokens`` long, the answer being the
call's argument. Reported per setting: the answer's F1 in points (mean and standard error over
questions), how many answers have F1 > 0 and how many copy the schema's description of the
answer field, the evidence recall of the memory shown, the prompt's mean length in tokens, and
for the yes/no questions how many answers say "yes" and how many "no" by gold answer
(``--yes-no-only`` keeps only those questions); with ``--before`` (an earlier result on the same
questions) each setting's F1 change and its paired standard error. Results:
``benchmarks/results/bench_sumer_reading.json`` (``--name`` changes the file name).

    python -m benchmarks.bench_sumer_reading --questions 32
    python -m benchmarks.bench_sumer_reading --questions 256 --yes-no-only --settings evidence --temperature 1 --samples 8
    python -m benchmarks.bench_sumer_reading --adapter runs/sumer-read1 --name bench_sumer_reading_read1 \\
        --before benchmarks/results/bench_sumer_reading.json
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import OtherLoad, earlier_result, write_result
from langgraph_memagent.training.held_out import SPLITS, YES_NO, held_out_conversations, is_yes_no

NAME = "bench_sumer_reading"
DEFAULT_SETTINGS = "evidence,question k=1 context=0,question k=3 context=0,question k=5 context=2"
# Prompt options a result must share with the run it is paired with; results from before an option
# existed were made with its default.
_LATER_OPTIONS = {"search_reply": "echo", "answer_rule": "none"}


def _before(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The per-setting rows of an earlier result on the same split, questions and prompt options; a bad file is one parser error."""
    path, split, questions = args.before, args.split, args.questions
    settings, memories = earlier_result(parser, path, "settings", "memories")
    if (settings.get("split"), settings.get("questions")) != (split, questions):
        parser.error(f"--before {str(path)!r} has split {settings.get('split')!r} and {settings.get('questions')} questions, "
                     f"this run {split!r} and {questions}")
    for option, default in _LATER_OPTIONS.items():
        earlier = settings.get(option, default)
        if earlier != getattr(args, option):
            parser.error(f"--before {str(path)!r} has {option} {earlier!r}, this run {getattr(args, option)!r}")
    return memories


def yes_no_answers(records: list[dict[str, Any]], answers: list[str], samples: int) -> dict[str, dict[str, int]]:
    """By gold answer of the yes/no questions: their answers, and how many say "yes" and "no" (as words).

    >>> yes_no_answers([{"answers": ["No"]}, {"answers": ["Oslo"]}], ["No, never", "yes", "Oslo", "no"], 2)
    {'yes': {'answers': 0, 'saying_yes': 0, 'saying_no': 0}, 'no': {'answers': 2, 'saying_yes': 1, 'saying_no': 1}}
    """
    counts = {gold: {"answers": 0, "saying_yes": 0, "saying_no": 0} for gold in YES_NO}
    for index, answer in enumerate(answers):
        record = records[index // samples]
        if is_yes_no(record):
            row = counts[record["answers"][0].strip().lower()]
            row["answers"] += 1
            for word in YES_NO:
                row[f"saying_{word}"] += bool(re.search(rf"\b{word}\b", answer.lower()))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=tuple(SPLITS), default="dev", help="held-out questions, as in bench_learning (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=32, help="held-out questions per setting (default: %(default)s)")
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help="comma-separated memories to try (default: %(default)s)")
    parser.add_argument("--search_reply", choices=("echo", "plain"), default="echo",
                        help="the search reply's first line: 'echo' names the query, 'plain' does not (default: %(default)s)")
    parser.add_argument("--yes-no-only", action="store_true", help="keep only the yes/no questions among the first --questions")
    parser.add_argument("--temperature", type=float, default=0.0, help="the forced answer's sampling temperature, 0 = greedy (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=1, help="answers per question, more than 1 only when sampled (default: %(default)s)")
    parser.add_argument("--answer_rule", choices=("none", "yes-no"), default="none",
                        help="a rule the forced answer's prompt adds, as the graph option (default: %(default)s)")
    parser.add_argument("--adapter", help="a trained LoRA checkpoint directory (default: the untrained policy)")
    parser.add_argument("--name", default=NAME, help="results file name under benchmarks/results (default: %(default)s)")
    parser.add_argument("--before", type=Path,
                        help="an earlier result of this benchmark on the same questions (e.g. the untrained policy's): "
                        "adds each setting's F1 change with its paired standard error")
    args = parser.parse_args(argv)
    if not args.name.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--name must be a plain file name (letters, digits, '_' and '-'), got {args.name!r}")
    if args.questions < 2:
        parser.error(f"--questions must be at least 2 (a standard error needs two), got {args.questions}")
    if args.temperature < 0:
        parser.error(f"--temperature must be >= 0 (0 = greedy), got {args.temperature}")
    if args.samples < 1 or (args.samples > 1 and args.temperature == 0):
        parser.error(f"--samples must be 1 when greedy and >= 1 when sampled, got {args.samples} at temperature {args.temperature}")
    before = _before(parser, args) if args.before else None
    records = held_out_conversations(args.split, args.questions)
    if args.yes_no_only:
        records = [record for record in records if is_yes_no(record)]
        if len(records) < 2:
            parser.error(f"--yes-no-only kept {len(records)} of the first {args.questions} questions: ask for more")
    samples = args.samples
    from langgraph_memagent.training.reading import parse_reading_memory, reading_memory

    try:
        settings = {text.strip(): parse_reading_memory(text.strip()) for text in args.settings.split(",")}
    except ValueError as error:
        parser.error(str(error))

    from langchain_core.messages import HumanMessage
    from tqdm import tqdm

    from langgraph_memagent.agents.local_model import LocalChatModel
    from langgraph_memagent.baselines import load_embeddings
    from langgraph_memagent.baselines.sumer_prompts import SUMER_TOOLS, SubmitAnswerArgs, forced_answer_template
    from langgraph_memagent.evals.locomo_scoring import f1
    from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain
    from langgraph_memagent.training.grpo_multiconv import load_policy, parse_config

    load = OtherLoad()
    config = parse_config(["--preset", "cpu-sumer", "--output_dir", tempfile.mkdtemp(prefix="sumer-reading-")])
    model, tokenizer = load_policy(config)
    if args.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.adapter)
    # The forced answer's own binding in build_sumer_graph(forced_answer_call="submit"), greedy unless asked.
    chat = LocalChatModel.from_model(model, tokenizer, temperature=args.temperature, top_p=1.0)
    answer_model = chat.bind_tools([SUMER_TOOLS[1]], tool_choice="required").bind(max_tokens=config.turn_tokens)
    embeddings = load_embeddings(config.embeddings_model)
    # The schema's own description of the answer field, which the untrained policy often copies.
    description = SubmitAnswerArgs.model_fields["answer"].description.split("(")[0].strip().lower()
    rows: dict[str, Any] = {}
    banks: dict[int, Any] = {}
    echo_query = args.search_reply == "echo"
    template = forced_answer_template("submit", args.answer_rule)
    for name, setting in tqdm(settings.items(), desc="memories", unit="setting"):
        memories = [reading_memory(banks, embeddings, record, setting, echo_query=echo_query) for record in records]
        prompts = [
            template.format(source="the conversation", prompt=record["question"], memory=memory)
            for record, (memory, _) in zip(records, memories)
        ]
        started = time.perf_counter()
        replies = answer_model.batch([[HumanMessage(prompt)] for prompt in prompts for _ in range(samples)])
        answers = [str(reply.tool_calls[0]["args"].get("answer", "")) if reply.tool_calls else "" for reply in replies]
        # The learning benchmark's evaluation record (question-major answers), F1 as the reward.
        rewards = [f1(answer, records[index // samples]["answers"]) for index, answer in enumerate(answers)]
        evaluation = PolicyEvaluation(args.temperature, samples, rewards, time.perf_counter() - started)
        scores = [100.0 * reward for reward in evaluation.rewards]
        per_question = [
            {"question": record["question"], "gold": record["answers"], "answer": answers[i * samples],
             "f1": sum(scores[i * samples : (i + 1) * samples]) / samples, **({"answers": answers[i * samples : (i + 1) * samples]} if samples > 1 else {})}
            for i, record in enumerate(records)
        ]
        recall = [len(set(record["evidence"]) & set(shown)) / len(record["evidence"]) for record, (_, shown) in zip(records, memories)]
        rows[name] = {
            "f1": evaluation.accuracy,
            "f1_standard_error": evaluation.standard_error,
            "answers_with_f1": sum(score > 0 for score in scores),
            "answers_copying_description": sum(answer.strip().lower().startswith(description) for answer in answers),
            "evidence_recall": 100.0 * sum(recall) / len(recall),
            "prompt_tokens": sum(len(tokenizer(prompt)["input_ids"]) for prompt in prompts) / len(prompts),
            "yes_no": yes_no_answers(records, answers, samples),
            "per_question": per_question,
        }
        if before and name in before:
            earlier = before[name]["per_question"]
            if [q["question"] for q in earlier] != [r["question"] for r in records]:
                raise SystemExit(f"--before {args.before}: its questions for {name!r} are not this run's")
            change, error = paired_gain(PolicyEvaluation(0.0, 1, [q["f1"] / 100.0 for q in earlier], 0.0), evaluation)
            rows[name].update(f1_before=before[name]["f1"], f1_change=change, f1_change_standard_error=error)
    settings_record = {"split": args.split, "questions": args.questions, "adapter": args.adapter, "turn_tokens": config.turn_tokens,
                       "search_reply": args.search_reply, "answer_rule": args.answer_rule, "yes_no_only": args.yes_no_only,
                       "temperature": args.temperature, "samples": samples, "before": str(args.before) if args.before else None}
    write_result(args.name, {"settings": settings_record, "memories": rows, "other_cpu_cores": load.cores()})
    print(f"{args.name} ({args.split}, {args.questions} questions, {args.adapter or 'untrained'}): " + "; ".join(
        f"{name}: F1 {row['f1']:.1f} +- {row['f1_standard_error']:.1f}, {row['answers_with_f1']} with F1 > 0, recall {row['evidence_recall']:.0f}%, "
        f"{row['prompt_tokens']:.0f} tokens, saying yes/no to yes questions {row['yes_no']['yes']['saying_yes']}/{row['yes_no']['yes']['saying_no']} "
        f"and to no questions {row['yes_no']['no']['saying_yes']}/{row['yes_no']['no']['saying_no']} (of {row['yes_no']['yes']['answers']} and "
        f"{row['yes_no']['no']['answers']})"
        + (f", change {row['f1_change']:+.1f} +- {row['f1_change_standard_error']:.1f}" if "f1_change" in row else "")
        for name, row in rows.items()
    ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
