import json
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph_memagent import load_chat_model
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.baselines.sumer import build_sumer_graph
from langgraph_memagent.evals import generate_task
SMOL = "/root/.cache/langgraph-memagent/smollm2-135m-instruct"
model = load_chat_model("vllm:smol", base_url="http://127.0.0.1:8011/v1", temperature=0)
samples = generate_task("niah_single_1", 4096, codec=resolve_tokenizer(SMOL), num_samples=2, seed=0)
graph = build_sumer_graph(model, embeddings=DeterministicFakeEmbedding(size=64), max_turns=4, tool_choice="required",
                          turn_tokens=128, answer_tokens=64, tokenizer=SMOL, chunk_tokens=200)  # no budget: the server's window
for s in samples:
    out = graph.invoke({"question": s.question, "document": s.document})
    print(json.dumps({k: out.get(k) for k in ("stop_reason", "turns_used", "invalid_tool_calls", "rejected_tool_calls")}))
