#!/bin/bash
# Example Slurm batch script for ecs_dem (docs/tutorials/cluster.md): the triaxial test,
# case 2 (about 4,700 grains), MSS_patch, on 8 MPI ranks, in slots of at most 2 hours.
#
#   sbatch tutorials/slurm_example.sh
#
# Slurm sends SIGTERM to every rank 5 minutes before the time limit (--signal); ecs_dem
# finishes the current step, writes the checkpoint and exits cleanly (soft kill). The
# script then submits itself again, and the next job continues from the checkpoint, until
# the run is complete. Adapt the #SBATCH lines, the module names and the paths to your site.
#
#SBATCH --job-name=triaxial-case2
#SBATCH --ntasks=8
#SBATCH --cpus-per-task=1
#SBATCH --time=02:00:00
#SBATCH --signal=TERM@300
#SBATCH --output=triaxial-case2-%j.log

set -euo pipefail

# The site's MPI and parallel HDF5: the same ones mpi4py and h5py were built against.
module load openmpi hdf5-parallel   # site-specific names (module avail mpi hdf5)

# One thread per rank: numba and numpy's BLAS must not start threads of their own.
export OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
# numba compiles the kernels at the first run and caches them: a directory every node sees.
export NUMBA_CACHE_DIR="$HOME/.cache/ecs_dem-numba"

cd "$SLURM_SUBMIT_DIR"                   # sbatch from the directory the output goes under
SCRIPT=tutorials/slurm_example.sh        # this file, to submit the next slot (Slurm runs a copy)
PY="$HOME/ecs_dem/.venv/bin/python"      # the virtual environment built against the site's MPI
OUT=output/triaxial-case2
RUN=2_patch_seed1                        # <case>_<model>_seed<seed>: the driver's file names
CHECKPOINT="$OUT/$RUN.checkpoint.h5"
LOG="$OUT/$RUN-$SLURM_JOB_ID.txt"
mkdir -p "$OUT"

args=(--case 2 --model patch --set seed=1 --set output_dir="$OUT" --set checkpoint_every=200000)
if [ -f "$CHECKPOINT" ]; then
  args+=(--set restart="$CHECKPOINT")    # continue where the last job stopped
fi

# srun starts the ranks; --mpi must match how the site's MPI was built (pmix or pmi2).
status=0
srun --mpi=pmix "$PY" -m ecs_dem.run.triaxial "${args[@]}" | tee "$LOG" \
  || status=$?

# A run stopped by the signal exits with status 0 and says so: submit the next slot.
if [ "$status" -eq 0 ] && grep -q "^stopped by SIGTERM" "$LOG"; then
  sbatch --dependency=afterany:"$SLURM_JOB_ID" "$SCRIPT"
fi
exit "$status"
