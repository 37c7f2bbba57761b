# Sourced by recipe.sh and test_eval.sh: `host LABEL FILE` appends the time, LABEL, the CPU and torch's CPU capability
# to FILE (README amendments: float32 kernels differ between AVX2 and AVX-512 hosts, and bfloat16 products too).
host() {
    echo "$(date -u +%FT%TZ) $1: $(lscpu | sed -n 's/^Model name: *//p'), torch $(.venv/bin/python -c \
        'import torch; print(torch.backends.cpu.get_cpu_capability())')" >> "$2"
}
