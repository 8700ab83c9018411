#!/usr/bin/env bash
# Installs nvcc 13.0 from NVIDIA's pinned PyPI wheels into a venv (no CUDA toolkit, no
# root, no GPU needed) and prints the CUDA root on the last line of stdout.
#
#   bash scripts/install-nvcc.sh [DIR]      # DIR defaults to $NVCC_INSTALL_DIR or .cache/nvcc
#   export CUDA_HOME=$(bash scripts/install-nvcc.sh | tail -n1)
#
# The toolkit stays at 13.0 on purpose: the GPU machine's driver (580) is CUDA 13.0, and
# PTX from nvcc 13.1+ does not JIT there. Idempotent: a second run only
# checks `nvcc --version` (well under a second).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${NVCC_INSTALL_DIR:-.cache/nvcc}}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
wheels=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-nvvm==13.0.88
    nvidia-cuda-crt==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-cccl==13.0.85
)
stamp="$dir/installed.txt"
want="$(printf '%s\n' "${wheels[@]}")"
find_root() {
    local r
    for r in "$dir"/venv/lib/python3*/site-packages/nvidia/cu13; do
        [ -x "$r/bin/nvcc" ] && { echo "$r"; return 0; }
    done
    return 1
}
if root="$(find_root)" && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && "$root/bin/nvcc" --version >/dev/null 2>&1; then
    echo "$root"
    exit 0
fi
echo "install-nvcc: installing ${wheels[*]} into $dir/venv" >&2
[ -x "$dir/venv/bin/python" ] || python3 -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheels[@]}" >&2
root="$(find_root)" || { echo "install-nvcc: no bin/nvcc under $dir/venv after install" >&2; exit 1; }
# nvcc.profile looks for libraries in lib64.
[ -e "$root/lib64" ] || ln -s lib "$root/lib64"
"$root/bin/nvcc" --version | tail -n2 >&2
printf '%s\n' "$want" >"$stamp"
echo "$root"
