# shellcheck shell=bash
# Sourced by the GPU stages that run their own MPS daemon (partition_proof.sh, disjoint_proof.sh):
# start it in a directory of their own, and quit it on the way out, on error too.
#   mps_start DIR WHO        pipe and log under DIR; exports CUDA_MPS_PIPE_DIRECTORY; 1 on failure
#   mps_quit DIR WHO [LOGS]  quits it, waits for its pid (SIGTERM after 10 s), copies its log to LOGS
# WHO prefixes the messages. Starting needs root and a GPU.
MPS_PID=

# The daemon leaves its sockets behind when it quits: wait for its pid (a zombie counts as gone).
mps_alive() { [ -n "$MPS_PID" ] && [ -e "/proc/$MPS_PID" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$MPS_PID/stat" 2> /dev/null; }

mps_start() {
    local dir=$1 who=$2
    mkdir -p "$dir/pipe" "$dir/log"
    if ! CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log nvidia-cuda-mps-control -d; then
        echo "$who: nvidia-cuda-mps-control -d failed (it needs root and a GPU): nothing more measured"
        return 1
    fi
    for _ in $(seq 50); do [ -s "$dir/pipe/nvidia-cuda-mps-control.pid" ] && break; sleep 0.1; done
    MPS_PID=$(cat "$dir/pipe/nvidia-cuda-mps-control.pid" 2> /dev/null)
    echo "$who: MPS control daemon ${MPS_PID:-(no pid file)} serving $dir/pipe"
    export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe
}

mps_quit() {
    local dir=$1 who=$2 logs=${3:-}
    if [ -e "$dir/pipe/control" ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$dir/pipe nvidia-cuda-mps-control > /dev/null 2>&1
        for _ in $(seq 50); do mps_alive || break; sleep 0.2; done
        if mps_alive; then
            echo "$who: the MPS daemon (pid $MPS_PID) did not quit in 10 s: SIGTERM"
            kill "$MPS_PID"
        fi
    fi
    if [ -n "$logs" ] && [ -d "$dir/log" ]; then
        mkdir -p "$logs" && cp -r "$dir/log/." "$logs/" 2> /dev/null
    fi
    return 0
}
