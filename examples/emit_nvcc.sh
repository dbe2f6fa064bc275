#!/usr/bin/env bash
# Offline emission: spmvc writes the kernel specialised to a matrix, its templates, the encoded
# matrix and a harness; plain nvcc builds them with no spmvc library involved. The harness, run
# on a GPU, checks the kernel's y against the host reference.
#
#   examples/emit_nvcc.sh MATRIX OUT_DIR [spmvc emit options...]
#
# `spmvc` is taken from $SPMVC (default: the one on PATH). Exit codes: 0 built (and, with a GPU,
# checked), 1 a step failed, 77 built but no GPU to run it.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: emit_nvcc.sh MATRIX OUT_DIR [spmvc emit options...]" >&2
  exit 1
fi
matrix=$1 out=$2
shift 2
spmvc=${SPMVC:-spmvc}
nvcc=${NVCC:-nvcc}
"$spmvc" emit "$matrix" -o "$out" -q "$@"
( cd "$out" && "$nvcc" -O3 -std=c++17 -arch=sm_90 -I. harness.cu -o harness )
echo "built $out/harness"
gpu=0
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L >/dev/null 2>&1 && gpu=1
elif compgen -G "/dev/nvidia[0-9]*" >/dev/null; then
  gpu=1
fi
if [ $gpu = 0 ]; then
  echo "no GPU: the harness was built, not run"
  exit 77
fi
( cd "$out" && ./harness )
