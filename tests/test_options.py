"""Each graph's options class, the flags made from them (one naming rule) and the trainer's --help sections."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import BYTES
from scripted_model import ScriptedChatModel

from langgraph_memagent.cli import build_parser, config_from_args, main
from langgraph_memagent.graphs.options import BUILT_IN_OPTIONS, GraphOptions, MemAgentOptions, RAGOptions, SumerOptions, options_for
from langgraph_memagent.graphs.registry import GRAPHS, build_graph
from langgraph_memagent.training.config import HELP_SECTIONS, MultiConvGRPOConfig, other_graph_options


def test_every_built_in_graph_is_registered_with_its_options_class_and_every_field_says_its_default():
    assert {name: GRAPHS[name].options for name in BUILT_IN_OPTIONS} == BUILT_IN_OPTIONS
    for cls in BUILT_IN_OPTIONS.values():
        for spec in dataclasses.fields(cls):
            text = spec.metadata["help"]
            assert "\n" not in text and any(word in text for word in ("paper", "default", "ours")), (cls.__name__, spec.name)


def test_graph_options_is_the_union_and_a_shared_option_keeps_each_graphs_default():
    union = {name for cls in BUILT_IN_OPTIONS.values() for name in (spec.name for spec in dataclasses.fields(cls))}
    assert set(GraphOptions.__dataclass_fields__) == union
    # Unset (None) in the union, each graph takes its own default; a value given reaches every graph that reads it.
    assert [options_for(graph, GraphOptions()).max_turns for graph in ("sumer", "agemem")] == [20, 32]
    assert [options_for(graph, GraphOptions(max_turns=3)).max_turns for graph in ("sumer", "agemem")] == [3, 3]
    assert options_for("rag", GraphOptions(chunk_tokens=7)) == RAGOptions()  # MemAgent's chunk is not RAG's


def test_compare_flags_take_both_spellings_and_fill_the_union(tmp_path, capsys):
    def options(*argv):
        args = build_parser().parse_args(["compare", "--model", "vllm:m", "--graphs", "memagent,rag,agemem", "--out", str(tmp_path), *argv])
        return config_from_args(args).graph_options

    dashed = options("--chunk-tokens", "700", "--rag-top-k", "3", "--agemem-write-mode", "line")
    assert dashed == options("--chunk_tokens", "700", "--rag_top_k", "3", "--agemem_write_mode", "line")
    assert (dashed.chunk_tokens, dashed.rag_top_k, dashed.agemem_write_mode, dashed.max_turns) == (700, 3, "line", None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--help"])
    help_text = capsys.readouterr().out
    assert "graph options: rag:" in help_text and "--rag-top-k" in help_text.split("graph options: rag:")[1]


def test_compare_refuses_an_option_no_compared_graph_reads(tmp_path, capsys):
    """Set for graphs that do not read it, a flag would change nothing: one line naming the graphs that do."""
    code = main(["compare", "--graphs", "memagent,rag", "--prethink-tokens", "64", "--task", "niah_single_1", "--lengths", "1k",
                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "--prethink-tokens is read by infmem, none of the compared graphs (memagent,rag)" in err, err
    args = build_parser().parse_args(["compare", "--graphs", "infmem,rag", "--prethink-tokens", "64", "--out", str(tmp_path)])
    assert config_from_args(args).graph_options.prethink_tokens == 64  # read by one of them: taken


def test_build_graph_takes_the_graphs_own_class_and_refuses_another_in_one_line():
    model = ScriptedChatModel(responder=lambda messages: "x")
    graph = build_graph("memagent", model, MemAgentOptions(chunk_tokens=300), BYTES)
    assert graph.memagent_config.chunk_tokens == 300
    with pytest.raises(TypeError, match="options for graph 'memagent' must be a MemAgentOptions or a GraphOptions, got SumerOptions"):
        build_graph("memagent", model, SumerOptions(), BYTES)


def test_the_trainer_refuses_what_its_graph_does_not_read_from_the_options_classes():
    assert "memory_tokens" in other_graph_options("sumer") and "search_reply" not in other_graph_options("sumer")
    assert "chunk_tokens" not in other_graph_options("sumer")  # the trainer's chunk_tokens is every graph's piece
    with pytest.raises(ValueError, match="memory_tokens is an option of graphs 'memagent', 'infmem' and does nothing with graph 'sumer', got 64"):
        MultiConvGRPOConfig(output_dir="/tmp/x", bf16=False, graph="sumer", reward_metric="f1", memory_tokens=64)


def test_trainer_help_has_every_field_of_ours_in_one_section_and_marks_the_curricula(capsys):
    from langgraph_memagent.training.grpo_multiconv import parse_config

    ours = list(MultiConvGRPOConfig.__annotations__)
    placed = [name for names in HELP_SECTIONS.values() for name in names]
    assert sorted(placed) == sorted(ours)  # each field of ours once; TRL's own fields form the last section
    with pytest.raises(SystemExit):
        parse_config(["--help"])
    shown = capsys.readouterr().out
    curricula = shown.split("curricula and small-model aids")[1].split("TRL (GRPOConfig")[0]
    assert "--reading_memory" in curricula and "--agemem_answer_mode" in curricula and "--beta" not in curricula
    assert "--learning_rate" in shown.split("TRL (GRPOConfig")[1]
