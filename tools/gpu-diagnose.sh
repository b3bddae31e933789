#!/usr/bin/env bash
# Where the time of a device collective goes, on a lent GPU machine (after
# tools/gpu-check.sh --prepare here; there, from the repository root):
#   run(command: "tools/gpu-diagnose.sh", carry: [".gpu-carry"], timeout_s: 300)
# Prints, in about three minutes: the UCX transports there (cuda_copy,
# cuda_ipc?), the staging tests of the interposer, the latency of the CUDA
# calls a small device collective makes (one process, then two on the GPU at
# once: the time-slicing between contexts), and chorus-bench allreduce
# at np=2 on host buffers, on device buffers as chosen, through staging
# (CHORUS_STAGING=always) and with UCX's CUDA transports named, then np=4.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); CARRY=$ROOT/.gpu-carry; OUTD=${OUT:-/tmp/chorus-gpu-diagnose}; mkdir -p "$OUTD"
T0=$SECONDS
export PATH=$PATH:/usr/local/cuda/bin
B=/tmp/chorus-gpu-bundle; mkdir -p $B; [ -f $B/env.sh ] || tar xzf $CARRY/bundle.tar.gz -C $B; source $B/env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PKG_CONFIG_PATH=$CARRY/catch2/pkgconfig:${PKG_CONFIG_PATH:-}
BUILD=/tmp/chorus-gpu-diagnose-build
echo "== build"; (meson setup $BUILD $ROOT -Dcuda=enabled -Dtests=true -Dgpu_archs=90 >$OUTD/setup.log 2>&1 &&
  ninja -C $BUILD test/interposer/interposer_gpu_calls lib/mpi/libchorus_mpi.so perf/chorus-bench >$OUTD/build.log 2>&1) || { tail -30 $OUTD/build.log; }
echo "build done at $((SECONDS-T0)) s"
echo "== nvidia-smi"; nvidia-smi -q | grep -iE "compute mode|MPS|Persistence" | head
echo "== ucx"; ucx_info -v | head -3; ucx_info -d | grep -E "Transport:|Device:" | paste - - | sort -u | head -30
echo "== pass tests"
(cd $BUILD && timeout 120 meson test --no-rebuild --suite gpu interposer_gpu_pass_np4 interposer_gpu_pass_np2 interposer_gpu_chorus_np4 2>&1 | grep -E "^ *[0-9]+/[0-9]+|FAIL device" | head -20)
echo "== lat"; nvcc -O2 -arch=sm_90 -o /tmp/lat $ROOT/tools/gpu_latency.cu && { /tmp/lat one; echo "-- two at once"; /tmp/lat A & /tmp/lat B; wait; }
R="mpirun --oversubscribe --bind-to none -x UCX_MEMTYPE_CACHE=n -x CHORUS_TIMEOUT_MS=60000"
BENCH=$BUILD/perf/chorus-bench
run() { local tag=$1; shift; echo "-- $tag"; timeout 60 "$@" 2>&1 | grep -vE "^#|^$" | head -30; }
echo "== np=2 bench"
run "host np2" $R -np 2 $BENCH allreduce -c -m 1K:256M -i 20 -x 3 --no-mpi
run "cuda np2 default" $R -np 2 $BENCH allreduce -d cuda -c -m 1K:256M -i 20 -x 3 --no-mpi
run "cuda np2 CHORUS_STAGING=always" $R -np 2 -x CHORUS_STAGING=always $BENCH allreduce -d cuda -c -m 1K:256M -i 20 -x 3 --no-mpi
run "cuda np2 UCX_TLS=sm,self,cuda_copy,cuda_ipc" $R -np 2 -x UCX_TLS=sm,self,cuda_copy,cuda_ipc $BENCH allreduce -d cuda -c -m 64K:256M -i 20 -x 3 --no-mpi
run "cuda np2 bcast" $R -np 2 $BENCH bcast -d cuda -c -m 1M:256M -i 20 -x 3 --no-mpi
echo "at $((SECONDS-T0)) s"
run "cuda np4 default" $R -np 4 $BENCH allreduce -d cuda -c -m 1K:256M -i 10 -x 2 --no-mpi
echo "end at $((SECONDS-T0)) s"
