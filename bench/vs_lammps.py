"""ecs_dem side by side with LAMMPS: the two peer problems on 1 and 2 ranks, start-up and memory.

One command (both codes in the same run, interleaved, since a machine's speed
drifts between runs):

    python bench/vs_lammps.py                       # both codes, 3 repetitions (~15 minutes)
    python bench/vs_lammps.py --quick               # a tenth of the steps
    python bench/vs_lammps.py --install-lammps      # apt-get install lammps first if missing
    python bench/vs_lammps.py --repeats 5 --json out.json
    python bench/vs_lammps.py --ranks 1,2,4         # 4 ranks: oversubscribed here, marked so

Problems (the peer data folder of bench/peer_data.py, whose README.md gives every setting):

* chute: LAMMPS's bench/in.chute, 32,000 spheres, gran/hooke/history, 15,000
  steps from the data file (``log.6Oct16.chute.fixed.icc.1`` has the deck);
* bed: the settled Hertz-Mindlin bed ``hm_bed.data``, 20,000 spheres, five
  walls, 500 warm-up steps then 10,000 timed steps.

LAMMPS input decks are written here from those parameters; ecs_dem starts
from the same data files (``run/chute.py``'s ``build_world``,
``bench/one_rank.py``'s ``build_bed``). Output is off in both (thermo only at
the ends, no dumps). Each (problem, ranks, code) runs ``--repeats`` times,
interleaved, each in a fresh process; the table gives particle-steps per
second per core, the median, the ratio ecs_dem / LAMMPS of the medians, and
each code's parallel efficiency (median per-core rate on N ranks over that on
one rank). Rows with more ranks than cores are marked oversubscribed.
Without a LAMMPS executable (and without ``--install-lammps``) the LAMMPS
column holds the README's figures, marked as such.

Launchers are called by name: Debian's ``lammps`` package pulls in Open MPI and
switches the plain ``mpiexec``/``mpicc`` alternatives, so LAMMPS runs under
``mpirun.openmpi`` and ecs_dem (mpi4py built against MPICH) under
``mpiexec.mpich``.

Also printed: the cold start of ``run/chute.py`` (empty numba cache in a
temporary ``NUMBA_CACHE_DIR``: compiling every kernel it uses) and its warm
start (cached), both to its first completed step; and the peak resident
memory per particle of a 10^6-sphere Hertz-Mindlin lattice on one rank.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_result import print_result, run_for_result  # noqa: E402
from peer_codes import (add_peer_arguments, apt_install, find_executable,  # noqa: E402
                        mpich_command, openmpi_command, openmpi_env)
from ecs_dem.comm import cores_available  # noqa: E402
from peer_data import BED, CHUTE, available_problems, chute_data, chute_setting, peer_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: LAMMPS on this machine, as the peer data's README.md records it: total particle-steps/s by ranks
README_FIGURES = {("chute", 1): 11.0e6, ("chute", 2): 21.1e6,
                  ("bed", 1): 4.26e6, ("bed", 2): 8.37e6}
PROBLEMS = {  # timed steps, warm-up steps, particles
    "chute": (15000, 0, 32000),
    "bed": (10000, 500, 20000),
}
LAMMPS_NAMES = ("lmp", "lmp_serial", "lmp_openmpi", "lmp_mpi", "lammps")

# --------------------------------------------------------------- LAMMPS decks

CHUTE_DECK = """\
# LAMMPS benchmark of granular flow (bench/in.chute), as in log.6Oct16.chute.fixed.icc.1
units           lj
atom_style      sphere
boundary        p p fs
newton          off
comm_modify     vel yes
read_data       {data}
pair_style      gran/hooke/history 200000.0 NULL 50.0 NULL 0.5 0
pair_coeff      * *
neighbor        0.1 bin
neigh_modify    every 1 delay 0
timestep        0.0001
group           bottom type 2
group           active subtract all bottom
neigh_modify    exclude group bottom bottom
fix             1 all gravity 1.0 chute 26.0
fix             2 bottom freeze
fix             3 active nve/sphere
compute         1 all erotate/sphere
thermo_style    custom step atoms ke c_1 vol
thermo_modify   norm no
thermo          1000000
run             {steps}
"""

HM = ("hertz/material 4.6e10 0.8621221510683383 0.245 tangential mindlin NULL 0.9275769 0.25 "
      "damping tsuji")
BED_DECK = f"""\
# settled Hertz-Mindlin bed (the peer data's README.md)
units           si
atom_style      sphere
boundary        f f fm
newton          {{newton}}
comm_modify     vel yes
read_data       {{data}}
pair_style      granular
pair_coeff      * * {HM}
neighbor        0.5e-3 bin
neigh_modify    every 1 delay 0
fix             1 all nve/sphere
fix             2 all gravity 9.81 vector 0 0 -1
fix             3 all wall/gran granular {HM} xplane 0 {{side}}
fix             4 all wall/gran granular {HM} yplane 0 {{side}}
fix             5 all wall/gran granular {HM} zplane 0 NULL
timestep        2.9e-7
thermo          1000000
run             {{warmup}}
run             {{steps}}
"""


def find_lammps() -> str | None:
    return find_executable(LAMMPS_NAMES)


def install_lammps() -> None:
    """Debian's lammps package (pulls in Open MPI; we call every launcher by name)."""
    apt_install("lammps")


def lammps_sections(stdout: str) -> dict:
    """Average seconds per section (Pair, Neigh, Comm, Modify, Output, Other) of the last run,
    from LAMMPS's "MPI task timing breakdown" table."""
    tail = stdout[stdout.rfind("Loop time of"):]
    sections = {}
    for m in re.finditer(r"^(Pair|Bond|Kspace|Neigh|Comm|Output|Modify|Other)\s*\|(.*)$", tail, re.M):
        cells = m.group(2).split("|")
        try:
            sections[m.group(1)] = float(cells[1])
        except (IndexError, ValueError):
            pass
    return sections


def run_lammps(lmp: str, problem: str, ranks: int, steps: int, warmup: int, workdir: Path,
               newton: str = "off", data: Path | None = None, side: float = 0.14) -> dict:
    """Run LAMMPS on `problem` (from `data`, by default the peer data file; `side`: the bed's
    wall positions in x and y) and return its rate and the timing breakdown of the timed run."""
    if problem == "chute":
        if data is None and peer_file(CHUTE) is None:  # LAMMPS starts from the generated state
            from shrunk_problems import write_sphere_data
            data = workdir / "chute_generated.data"
            write_sphere_data(data, chute_data(), "chute state generated by run/chute.py")
        deck = CHUTE_DECK.format(data=data or peer_file(CHUTE), steps=steps)
    else:
        deck = BED_DECK.format(data=data or peer_file(BED), steps=steps,
                               warmup=warmup, newton=newton, side=side)
    path = workdir / f"in.{problem}"
    path.write_text(deck)
    cmd = openmpi_command([lmp, "-in", str(path), "-log", "none", "-echo", "none"], ranks)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=openmpi_env(),
                         timeout=7200)
    loops = re.findall(
        r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", out.stdout)
    if out.returncode != 0 or not loops:
        raise RuntimeError(f"LAMMPS failed ({' '.join(cmd)}):\n{out.stdout[-3000:]}\n"
                           f"{out.stderr[-3000:]}")
    seconds, procs, nsteps, atoms = loops[-1]
    seconds, procs, nsteps, atoms = float(seconds), int(procs), int(nsteps), int(atoms)
    version = re.search(r"^LAMMPS \((.*?)\)", out.stdout, re.M)
    return {"code": "LAMMPS", "problem": problem, "ranks": procs, "particles": atoms,
            "steps": nsteps, "seconds": seconds, "rate": atoms * nsteps / seconds,
            "sections": lammps_sections(out.stdout),
            "version": version.group(1) if version else "?"}


# ------------------------------------------------------------------- ecs_dem

def ecs_worker(problem: str, steps: int, warmup: int) -> None:
    """Run inside the launched process: build, set up, warm up, time `steps` steps."""
    sys.path.insert(0, str(REPO / "bench"))
    if problem == "chute":
        from ecs_dem.run import chute
        world = chute.build_world(dict(chute.DEFAULTS, data=chute_setting(), thermo_every=0))
    else:
        from one_rank import build_bed
        world = build_bed(peer_file(BED))
    world.setup()
    world.run(warmup)
    world.comm.barrier()
    t0 = time.perf_counter()
    world.run(steps)
    world.comm.barrier()
    elapsed = world.comm.max(time.perf_counter() - t0)
    n = int(world.comm.sum(world.particles.n_owned))
    if world.comm.rank == 0:
        print_result({
            "code": "ecs_dem", "problem": problem, "ranks": world.comm.size, "particles": n,
            "steps": steps, "seconds": elapsed, "rate": n * steps / elapsed,
            "rebuilds": world.domain.rebuild_count})


def run_ecs(problem: str, ranks: int, steps: int, warmup: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", problem,
           "--steps", str(steps), "--warmup", str(warmup)]
    result = run_for_result(mpich_command(cmd, ranks), timeout=7200)
    if result["ranks"] != ranks:
        raise RuntimeError(f"asked for {ranks} ranks, ecs_dem ran on {result['ranks']}: "
                           "is mpi4py built against MPICH?")
    return result


# ----------------------------------------------------------- start-up, memory

def time_to_first_step(env: dict) -> float:
    """Seconds from launching run/chute.py until it printed the thermo line of step 1."""
    cmd = [sys.executable, str(REPO / "run" / "chute.py"), "--set", "steps=1",
           "--set", "thermo_every=1", "--set", f"data={chute_setting()}"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    first = None
    for line in proc.stdout:
        words = line.split()
        if first is None and len(words) == 4 and words[0] == "1":
            first = time.perf_counter() - t0
    err = proc.stderr.read()
    if proc.wait() != 0 or first is None:
        raise RuntimeError(f"run/chute.py failed:\n{err[-3000:]}")
    return first


def startup(repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ecs_dem_numba_cache_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = time_to_first_step(env)
        warm = [time_to_first_step(env) for _ in range(max(repeats, 1))]
    return {"cold_s": cold, "warm_s": statistics.median(warm), "warm_all_s": warm,
            "compile_s": cold - statistics.median(warm)}


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def lattice_world(side: int):
    """side^3 Hertz-Mindlin spheres (r 2.5 mm) on a cubic lattice, touching by 0.1 %, on a floor."""
    import numpy as np

    from ecs_dem import Box, World
    from ecs_dem.components.particles import add_particles
    from ecs_dem.components.species import add_species
    from ecs_dem.components.walls import add_wall
    from one_rank import add_hertz_systems

    r = 2.5e-3
    a = 2 * r * (1 - 1e-3)
    g = (np.arange(side) + 0.5) * a
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel() + r], axis=1)
    L = side * a
    world = World(Box((0, 0, 0), (L, L, L + 2 * r)), dt=2.9e-7, skin=0.5e-3)
    add_species(world, youngs_modulus=4.6e10, poisson_ratio=0.245, density=2500.0,
                restitution=0.9, friction=0.25)
    add_particles(world, pos, r, 0)
    add_wall(world, (0, 0, 0), (0, 0, 1))
    add_hertz_systems(world)
    return world


def memory_worker(side: int, steps: int) -> None:
    small = lattice_world(3)  # load every kernel first: their code is not per-particle memory
    small.run(2)
    del small
    base = rss_kb()
    world = lattice_world(side)
    world.run(steps)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    n = world.particles.n_owned
    print_result({
        "particles": n, "steps": steps, "pairs": world.pairs.n_owned,
        "peak_rss_kib": peak, "rss_before_kib": base,
        "peak_kib_per_particle": peak / n, "added_kib_per_particle": (peak - base) / n})


def memory(side: int, steps: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-worker", str(side),
           "--steps", str(steps)]
    return run_for_result(cmd, timeout=7200)


# ---------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_peer_arguments(ap, "lammps", "a tenth of the steps", "problem and rank count")
    ap.add_argument("--problems", default="chute,bed")
    ap.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")
    ap.add_argument("--no-memory", action="store_true", help="skip the 10^6-particle memory run")
    ap.add_argument("--memory-side", type=int, default=100, help="lattice side (side^3 particles)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--memory-worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        ecs_worker(args.worker, args.steps, args.warmup)
        return 0
    if args.memory_worker:
        memory_worker(args.memory_worker, args.steps)
        return 0

    lmp = find_lammps()
    if lmp is None and args.install_lammps:
        install_lammps()
        lmp = find_lammps()
        if lmp is None:
            raise SystemExit("apt-get installed lammps but no executable "
                             f"({', '.join(LAMMPS_NAMES)}) is on PATH")
    scale = 0.1 if args.quick else 1.0
    ranks_list = [int(r) for r in args.ranks.split(",")]
    problems = available_problems([p for p in args.problems.split(",") if p])
    if not chute_setting() and "chute" in problems:
        print(f"chute: {CHUTE} not found: both codes start from run/chute.py's generated state "
              "(at rest), whose rates differ from the flowing state's")
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, "
          f"{platform.processor() or platform.machine()}")
    print(f"LAMMPS: {lmp or 'not installed: README figures (--install-lammps to measure)'}")
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="vs_lammps_") as tmp:
        for rep in range(args.repeats):
            for problem in problems:
                steps, warmup, _ = PROBLEMS[problem]
                steps = max(int(steps * scale), 10)
                warmup = int(warmup * scale)
                for ranks in ranks_list:
                    r = run_ecs(problem, ranks, steps, warmup)
                    runs.append(r)
                    msg = f"  [{rep + 1}/{args.repeats}] {problem:5s} {ranks} rank(s): ecs_dem " \
                          f"{r['rate'] / ranks / 1e6:6.2f}"
                    if lmp:
                        q = run_lammps(lmp, problem, ranks, steps, warmup, Path(tmp))
                        runs.append(q)
                        msg += f"  LAMMPS {q['rate'] / ranks / 1e6:6.2f}"
                    print(msg + "  M particle-steps/s per core", flush=True)

    rows = []
    for problem in problems:
        for ranks in ranks_list:
            row = {"problem": problem, "ranks": ranks}
            for code in ("ecs_dem", "LAMMPS"):
                per_core = [r["rate"] / ranks for r in runs if r["code"] == code
                            and r["problem"] == problem and r["ranks"] == ranks]
                if per_core:
                    row[code] = {"per_core": per_core, "median": statistics.median(per_core),
                                 "source": "measured"}
                elif code == "LAMMPS" and (problem, ranks) in README_FIGURES:
                    row[code] = {"per_core": [], "source": "README",
                                 "median": README_FIGURES[(problem, ranks)] / ranks}
            if "ecs_dem" in row and "LAMMPS" in row:
                row["ratio"] = row["ecs_dem"]["median"] / row["LAMMPS"]["median"]
            row["oversubscribed"] = ranks > cores_available()  # as ecs_dem.comm decides it
            rows.append(row)
    for row in rows:  # parallel efficiency: per-core rate on N ranks / rate on 1 rank
        one = next((r for r in rows if r["problem"] == row["problem"] and r["ranks"] == 1), None)
        for code in ("ecs_dem", "LAMMPS"):
            if one and code in row and code in one and row["ranks"] > 1:
                row[code]["efficiency"] = row[code]["median"] / one[code]["median"]

    def cell(entry):
        if entry is None:
            return f"{'-':>30s}"
        runs_txt = " ".join(f"{v / 1e6:.2f}" for v in entry["per_core"])
        if entry["source"] == "README":
            runs_txt = "README figure"
        return f"{entry['median'] / 1e6:7.2f} ({runs_txt})".rjust(30)

    def efficiency(entry):
        if entry is None or "efficiency" not in entry:
            return f"{'-':>6s}"
        return f"{entry['efficiency']:6.2f}"

    print("\nparticle-steps per second per core, millions: median (each run); parallel "
          "efficiency = per-core rate on N ranks / rate on 1 rank")
    print(f"{'problem':8s} {'ranks':>5s} {'ecs_dem':>30s} {'LAMMPS':>30s} {'ours/LAMMPS':>12s} "
          f"{'eff ecs':>7s} {'eff LMP':>7s}")
    for row in rows:
        ratio = f"{row['ratio']:12.2f}" if "ratio" in row else f"{'-':>12s}"
        print(f"{row['problem']:8s} {row['ranks']:5d} {cell(row.get('ecs_dem'))} "
              f"{cell(row.get('LAMMPS'))} {ratio} {efficiency(row.get('ecs_dem')):>7s} "
              f"{efficiency(row.get('LAMMPS')):>7s}"
              + ("  oversubscribed (more ranks than cores)" if row["oversubscribed"] else ""))
    if not lmp:
        print("LAMMPS column: the peer data's README.md figures for this machine, not "
              "measured in this run")

    report = {"lammps": lmp, "lammps_version": next((r["version"] for r in runs
                                                       if r["code"] == "LAMMPS"), None),
              "quick": args.quick, "repeats": args.repeats, "table": rows, "runs": runs}
    if not args.no_startup:
        s = startup(3)
        report["startup"] = s
        print(f"\nrun/chute.py to its first step: cold (empty numba cache) {s['cold_s']:.1f} s, "
              f"warm {s['warm_s']:.2f} s (target < 5 s); compiling takes {s['compile_s']:.1f} s")
    if not args.no_memory:
        m = memory(args.memory_side, 5)
        report["memory"] = m
        print(f"\nmemory, {m['particles']:,} Hertz-Mindlin spheres ({m['pairs']:,} pairs) on one "
              f"rank, {m['steps']} steps: peak RSS {m['peak_rss_kib'] / 1024:.0f} MiB = "
              f"{m['peak_kib_per_particle'] * 1.024:.2f} kB per particle "
              f"({m['added_kib_per_particle'] * 1.024:.2f} kB above the interpreter and kernels; "
              "target <= 1 kB)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
