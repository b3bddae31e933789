#!/bin/sh
# The data-parallel test: the training run under mpirun (its exit status is
# the verdict), then the plot of its CSV, which never fails the test.
#   run_data_parallel.sh MPIRUN NP PROGRAM OUTDIR PYTHON PLOT_SCRIPT
set -u
mpirun=$1 np=$2 program=$3 outdir=$4 python=$5 plot=$6
mkdir -p "$outdir" || exit 1
"$mpirun" -np "$np" "$program" --csv "$outdir/data-parallel-np$np.csv" || exit $?
if [ -x "$python" ] || command -v "$python" >/dev/null 2>&1; then
    "$python" "$plot" "$outdir/data-parallel-np$np.csv" "$outdir/data-parallel-np$np.png" ||
        echo "run_data_parallel.sh: the plot failed (ignored)"
else
    echo "run_data_parallel.sh: no python3: no plot"
fi
exit 0
