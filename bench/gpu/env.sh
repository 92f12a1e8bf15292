# Sourced by the GPU scripts: where nsys is, its carried libraries, the python with torch.
export LD_LIBRARY_PATH=$PWD/.nsys-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NSYS=${NSYS:-$(command -v nsys || ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -n 1 || true)}
export NSYS
export PATH=$(dirname "${NSYS:-/nonexistent}"):$PATH
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
export PY
