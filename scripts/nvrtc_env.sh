# Sourced: makes libnvrtc (CUDA 13.0, from PyPI) loadable so that tests can compile every
# kernel without a GPU or CUDA toolkit. Idempotent: the venv is kept in .cache/nvrtc.
_gmp_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_gmp_venv="$_gmp_root/.cache/nvrtc"
_gmp_lib="$_gmp_venv/lib/python3.11/site-packages/nvidia/cu13/lib"
if [ ! -e "$_gmp_lib/libnvrtc.so.13" ]; then
  python3 -m venv "$_gmp_venv" >/dev/null &&
    "$_gmp_venv/bin/pip" install -q --disable-pip-version-check nvidia-cuda-nvrtc==13.0.88
fi
_gmp_lib="$(dirname "$(find "$_gmp_venv" -name 'libnvrtc.so.13' 2>/dev/null | head -1)")"
if [ -e "$_gmp_lib/libnvrtc.so.13" ]; then
  export LD_LIBRARY_PATH="$_gmp_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export GMP_NVRTC_LIB="$_gmp_lib/libnvrtc.so.13"
  echo "NVRTC: $GMP_NVRTC_LIB"
else
  return 1 2>/dev/null || exit 1
fi
