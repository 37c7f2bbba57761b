"""``bench_agemem_episodes``: whole AgeMem episodes, untrained against adapters, greedy and sampled."""

from __future__ import annotations

import json

import pytest

from langgraph_memagent.training.evaluation import PolicyEvaluation, paired_gain, paired_measure


def test_agemem_episode_benchmark_refuses_what_is_not_an_adapter_or_not_a_whole_episode(capsys, tmp_path):
    import doctest

    from benchmarks import bench_agemem_episodes
    from benchmarks.bench_agemem_episodes import main

    assert doctest.testmod(bench_agemem_episodes).failed == 0  # the evidence-free scoring answers, hand-counted

    with pytest.raises(SystemExit):
        main(["--adapters", str(tmp_path)])
    assert f"--adapters must be saved LoRA adapter directories (with adapter_config.json), got ['{tmp_path}']" in capsys.readouterr().err
    (tmp_path / "adapter_config.json").write_text("{}")
    for trainer_args, message in (
        (["--write_curriculum", "true"], "episodes are whole or start from a given memory: drop --agemem_sessions 'all' and --write_curriculum"),
        (["--agemem_sessions", "evidence"], "episodes are whole or start from a given memory: drop --agemem_sessions 'evidence' and --write_curriculum"),
        (["--graph", "sumer"], "this benchmark runs AgeMem episodes: drop --graph 'sumer'"),
    ):
        with pytest.raises(SystemExit):
            main(["--adapters", str(tmp_path), "--", *trainer_args])
        assert message in capsys.readouterr().err.splitlines()[-1]
    with pytest.raises(SystemExit):
        main(["--adapters", str(tmp_path), "--samples", "-1"])
    assert "--samples must be >= 0 (0 = greedy only), got -1" in capsys.readouterr().err


def test_agemem_episode_benchmark_pairs_each_decodings_measures_by_question_and_resumes(tiny_model_dir, tmp_path, monkeypatch, capsys):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from benchmarks import _common, bench_agemem_episodes
    from langgraph_memagent.training.held_out import held_out_conversations

    torch.manual_seed(1)  # non-zero LoRA weights, so the adapter decodes differently from the base
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False)
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir), lora).save_pretrained(tmp_path / "adapter")
    adapter = str(tmp_path / "adapter")
    monkeypatch.setattr(_common, "RESULTS_DIR", tmp_path / "results")
    trainer = ["--model_name_or_path", str(tiny_model_dir), "--max_context_tokens", "512", "--agemem_write_mode", "line"]
    argv = ["--questions", "2", "--samples", "2", "--adapters", adapter, "--name", "episodes", "--", *trainer]
    # The untrained policy alone first (a baseline measured before any training), then kept when the adapter comes.
    assert bench_agemem_episodes.main([arg for arg in argv if arg not in ("--adapters", adapter)]) == 0
    assert list(json.loads((tmp_path / "results" / "episodes.json").read_text())["policies"]) == ["untrained"]
    assert bench_agemem_episodes.main(argv) == 0
    printed = capsys.readouterr().out
    assert "untrained: kept from an earlier run with these settings" in printed
    result = json.loads((tmp_path / "results" / "episodes.json").read_text())
    assert result["questions"] == [record["question"] for record in held_out_conversations("dev", 2)]
    untrained, trained = result["policies"]["untrained"], result["policies"][adapter]
    for decoding, rollouts in (("greedy", 2), ("sampled", 4)):
        before, after = (PolicyEvaluation.from_dict(policy[decoding]) for policy in (untrained, trained))
        assert len(after.measures) == rollouts
        # Line mode stores one line a session, so every conversation holds items and has a recall.
        assert all(measures["memory_items"] > 0 and measures["memory_recall"] is not None for measures in after.measures)
        changes = trained["changes"][decoding]
        assert changes["memory_recall"] == paired_measure(before, after, "memory_recall")
        assert changes["memory_items"] == paired_measure(before, after, "memory_items")
        change, error = paired_gain(before, after)
        assert changes["reward_points"] == {"change": change, "standard_error": error}
        assert untrained["shortcuts"][decoding]["scoring_answers_without_evidence_in_memory"] == sum(
            m["f1"] > 0 and not m["memory_recall"] for m in before.measures)
    assert f"{adapter}, sampled: reward {PolicyEvaluation.from_dict(trained['sampled']).accuracy:.1f} (" in printed

    # A rerun with the same settings keeps every measured policy instead of decoding again.
    def refuse(*args, **kwargs):
        raise AssertionError("a kept policy was measured again")

    monkeypatch.setattr("langgraph_memagent.training.evaluation.evaluate_policy", refuse)
    assert bench_agemem_episodes.main(argv) == 0
    assert "untrained: kept from an earlier run with these settings" in capsys.readouterr().out
    assert json.loads((tmp_path / "results" / "episodes.json").read_text())["policies"] == result["policies"]

    # A later seed's file takes the untrained policy from this one instead of measuring it again; other settings are refused.
    later = ["--questions", "2", "--samples", "2", "--name", "later", "--untrained-from", str(tmp_path / "results" / "episodes.json")]
    assert bench_agemem_episodes.main([*later, "--", *trainer]) == 0
    assert json.loads((tmp_path / "results" / "later.json").read_text())["policies"] == {"untrained": result["policies"]["untrained"]}
    with pytest.raises(SystemExit):
        bench_agemem_episodes.main([*later[:3], "1", *later[4:], "--", *trainer])
    assert f"--untrained-from: {tmp_path / 'results' / 'episodes.json'} was measured with settings {{'split': 'dev', 'questions': 2, 'samples': 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_agemem_episodes.main(["--questions", "2", "--name", "other", "--untrained-from", str(tmp_path / "missing.json"), "--", *trainer])
    assert f"--untrained-from must be a result file of this benchmark, got '{tmp_path / 'missing.json'}' (FileNotFoundError" in capsys.readouterr().err
