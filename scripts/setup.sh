#!/usr/bin/env bash
# One set-up step for ecs_dem on Debian: system MPI + parallel HDF5, a project
# virtual environment with mpi4py and h5py built from source against them, and
# the package itself (editable). Re-running it is cheap: every stage is skipped
# when its result is already in place (stamp files in .venv/).
#
#   scripts/setup.sh            set up only
#   scripts/setup.sh demo       set up, then run the main demo (the triaxial test, the small
#                               sample: python -m ecs_dem.run.triaxial)
#   scripts/setup.sh test       set up, then run the whole test suite (serial, then
#                               tests/mpi under mpiexec.mpich on 2 and 4 ranks)
#   scripts/setup.sh docs       set up, then build the documentation site (HTML) into
#                               docs/_build/html, warnings treated as errors
#
# We pin Debian's MPICH by name (mpicc.mpich / mpiexec.mpich): installing Open
# MPI later (Debian's lammps pulls it in) silently switches the plain
# mpicc/mpiexec alternatives, and a mixed build runs N independent 1-rank jobs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ECS_DEM_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
say() { printf '[setup] %s\n' "$*"; }

need_apt=()
command -v mpicc.mpich >/dev/null 2>&1 || need_apt+=(mpich libmpich-dev)
pkg-config --exists hdf5-mpich 2>/dev/null || need_apt+=(libhdf5-mpich-dev)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v gcc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-dev python3-venv)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# mpi4py and h5py compile against the interpreter's headers
python3 -c 'import os, sysconfig; assert os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
  >/dev/null 2>&1 || need_apt+=(python3-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need_apt[@]}" > "$ROOT/.setup-apt.log" 2>&1 \
    || { cat "$ROOT/.setup-apt.log" >&2; echo "[setup] apt-get install failed" >&2; exit 1; }
fi

if [ ! -x "$PY" ]; then
  say "creating virtual environment $VENV"
  python3 -m venv "$VENV"
fi

# meshio reads and writes membrane meshes; matplotlib draws the drivers' plots; pytest-xdist
# spreads the serial tests over the cores. An environment set up before one of them was added
# redoes this step once
if [ ! -f "$VENV/.stamp-tools" ] || ! "$PY" -c "import meshio, matplotlib, xdist" >/dev/null 2>&1; then
  say "installing Python tools into $VENV"
  "$PY" -m pip install -q --upgrade pip setuptools wheel 2>&1 | grep -v "^WARNING: Location" || true
  "$PY" -m pip install -q cython pkgconfig "numpy>=1.26" numba meshio matplotlib pytest pytest-mpi pytest-xdist 2>&1 \
    | grep -v "^WARNING: Location" || true
  "$PY" -c "import numba, meshio, matplotlib, pytest, xdist"
  touch "$VENV/.stamp-tools"
fi

# The documentation's tools, only for `docs`: the `docs` extra of pyproject.toml (Sphinx builds
# the site, myst-parser reads its Markdown pages, furo is the theme). Redone when the extra changes
if [ "${1:-}" = docs ] && { [ ! -f "$VENV/.stamp-docs" ] || [ "$ROOT/pyproject.toml" -nt "$VENV/.stamp-docs" ] \
    || ! "$PY" -c "import sphinx, myst_parser, furo" >/dev/null 2>&1; }; then
  say "installing the documentation tools (the docs extra) into $VENV"
  mapfile -t docs_extra < <("$PY" -c 'import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["docs"]))' \
    "$ROOT/pyproject.toml")
  "$PY" -m pip install -q "${docs_extra[@]}" 2>&1 | grep -v "^WARNING: Location" || true
  "$PY" -c "import sphinx, myst_parser, furo"
  touch "$VENV/.stamp-docs"
fi
# MathJax, which typesets the pages' math in the browser, from the npm registry when npm is
# there: the site then carries its own copy and shows math offline; without it the pages load
# MathJax from its CDN when they are opened (docs/conf.py picks whichever is present)
MATHJAX="$VENV/share/ecs_dem-docs/mathjax"
if [ "${1:-}" = docs ] && [ ! -f "$MATHJAX/es5/tex-mml-chtml.js" ] && command -v npm >/dev/null 2>&1; then
  say "fetching MathJax 3 from the npm registry into $MATHJAX"
  tmp="$(mktemp -d)"
  if (cd "$tmp" && npm pack --silent mathjax@3.2.2 >/dev/null 2>&1 && tar xzf mathjax-3.2.2.tgz); then
    mkdir -p "$MATHJAX" && rm -rf "$MATHJAX/es5" && mv "$tmp/package/es5" "$MATHJAX/es5"
  else
    say "npm pack mathjax failed: the site will load MathJax from its CDN"
  fi
  rm -rf "$tmp"
fi

if [ ! -f "$VENV/.stamp-mpi4py" ]; then
  say "building mpi4py from source against Debian's MPICH (a few minutes, once)"
  MPICC=mpicc.mpich "$PY" -m pip install -q --no-binary=mpi4py mpi4py
  touch "$VENV/.stamp-mpi4py"
fi

if [ ! -f "$VENV/.stamp-h5py" ]; then
  say "building h5py with MPI against Debian's hdf5-mpich (a few minutes, once)"
  HDF5_MPI=ON CC=mpicc.mpich HDF5_PKGCONFIG_NAME=hdf5-mpich \
    "$PY" -m pip install -q --no-binary=h5py --no-build-isolation h5py
  "$PY" -c 'import h5py, sys; sys.exit(0 if h5py.get_config().mpi else "h5py was built without MPI")'
  touch "$VENV/.stamp-h5py"
fi

# Editable install: cheap, and re-run when pyproject.toml changes.
if [ ! -f "$VENV/.stamp-pkg" ] || [ "$ROOT/pyproject.toml" -nt "$VENV/.stamp-pkg" ]; then
  "$PY" -m pip install -q --no-build-isolation --no-deps -e "$ROOT"
  touch "$VENV/.stamp-pkg"
fi

cd "$ROOT"
case "${1:-}" in
  "") say "ready: $VENV" ;;
  demo) shift; exec "$PY" -m ecs_dem.run.triaxial "$@" ;;
  test)
    # 1. the whole suite without MPI (MPI tests skip themselves there), its test files
    #    spread over up to 4 processes by pytest-xdist, one per core (a file's tests stay
    #    together: they share module fixtures such as a driver's finished run);
    #    ECS_DEM_TEST_WORKERS=1 runs them in one process;
    # 2. the decomposition tests under mpiexec on 2 ranks, then 4 (2 x 2 grids,
    #    oversubscribed on small machines). Extra arguments go to step 1 only,
    #    and then the MPI steps are left out.
    shift
    status=0
    run_pytest() {  # pytest's 5 (no test collected) counts as a failure
      set +e; "$@"; local rc=$?; set -e
      [ "$rc" -eq 5 ] && { echo "[setup] no tests ran: $*" >&2; rc=1; }
      [ "$rc" -ne 0 ] && status=$rc
      return 0
    }
    workers="${ECS_DEM_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
    if [ "$workers" -gt 1 ]; then
      run_pytest "$PY" -m pytest -q -n "$workers" --dist loadfile "$@"
    else
      run_pytest "$PY" -m pytest -q "$@"
    fi
    if [ "$#" -eq 0 ]; then
      say "tests/mpi on 2 ranks"
      run_pytest timeout -k 60 1800 mpiexec.mpich -n 2 "$PY" -m pytest --with-mpi -q -p no:cacheprovider tests/mpi
      # 4 ranks (a 2 x 2 grid): the tests whose property depends on the rank count; those
      # marked two_ranks (restarts on the same ranks, drivers' checks) ran above
      say "tests/mpi on 4 ranks"
      run_pytest timeout -k 60 1800 mpiexec.mpich -n 4 "$PY" -m pytest --with-mpi -q -p no:cacheprovider -m "not two_ranks" tests/mpi
    fi
    exit "$status" ;;
  docs)
    # A fresh build every time (-E): an incremental one would not repeat the warnings of
    # pages it does not reread, and the API pages are generated anew (a removed module's
    # page must not linger). Extra arguments go to sphinx-build.
    shift
    rm -rf docs/_build/html docs/_build/doctrees docs/api/_autosummary
    start=$SECONDS
    "$PY" -m sphinx -E -W --keep-going -q -j auto -b html -d docs/_build/doctrees "$@" docs docs/_build/html
    say "documentation built in $((SECONDS - start)) s: $ROOT/docs/_build/html/index.html" ;;
  *) echo "usage: scripts/setup.sh [demo|test|docs] [args...]" >&2; exit 2 ;;
esac
