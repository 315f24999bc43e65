"""ecs_dem side by side with LIGGGHTS: the rotating drum with lifters (run/rotating_drum.py).

One command (both codes in the same run, interleaved, since a machine's speed
drifts between runs):

    python bench/vs_liggghts_drum.py                        # 3 repetitions on 1 and 2 ranks
    python bench/vs_liggghts_drum.py --quick                # a smaller, shorter drum run
    python bench/vs_liggghts_drum.py --install-liggghts     # apt-get install liggghts if missing
    python bench/vs_liggghts_drum.py --speeds 1,4 --repeats 5 --ranks 1,2

The same problem in both codes:

* geometry: the STL file ``run/rotating_drum.py`` generates (``drum_mesh``: a
  closed cylinder of axis z with end caps and lifter bars), read by both and
  turned so that its axis is y (ours ``add_mesh_wall(rotate=...)``, theirs
  ``fix mesh/surface/stress ... rotate axis 1 0 0 angle -90``), rotating about
  +y through the origin (ours ``Rotation``, theirs ``fix move/mesh rotate``
  with period 2 pi / omega);
* grains: inserted and settled once by ecs_dem (``rotating_drum.settle`` with
  the matched law below), written to a LIGGGHTS data file (id, type, diameter,
  density, position; velocities), so both codes start from the identical
  packing with zero contact history;
* contacts: Hertz-Mindlin, one material for grains and drum, no rolling
  friction in either; the same time step, skin, gravity and rotation speed.

Matching the two Hertz-Mindlin conventions (LIGGGHTS 3.8's ``model hertz
tangential history``; ours ``systems/contact/hertz_mindlin.py``): both use
k_n = 4/3 Y* sqrt(R* delta) with 1/Y* = sum (1 - nu^2)/Y, the same G* mixing,
no clamping of the normal force, and the same Coulomb rescaling of the
tangential spring. LIGGGHTS's damping gamma_n = 2 sqrt(5/6) |beta| sqrt(2 Y*
sqrt(R* delta) m*) with beta = ln e / sqrt(ln^2 e + pi^2) equals ours,
|beta_n| sqrt(m* k_n) with beta_n = sqrt(5) beta. The tangential spring
differs: LIGGGHTS's is k_t = 8 G* sqrt(R* delta) and its damping
2 sqrt(5/6) |beta| sqrt(k_t m*); ours is (2/3) 8 G* sqrt(R* delta) and
|beta_t| sqrt(m* 8 G* sqrt(R* delta)). ``liggghts_law`` therefore sets the one
pair (grain, grain: it serves the grain-drum contacts too, the drum being
made of the grain's material) to E* = Y*, G* = 3/2 G*_LIGGGHTS,
beta_n = sqrt(5) |beta|, beta_t = 2/3 beta_n. What is not matched: the
contact point (ours at mid-overlap, lever r - delta/2; LIGGGHTS's lever is
the radius), the order of the spring's rotation and increment within a step,
and the mesh contact selection (ours: the closest point with the face > edge >
vertex selection of docs/physics.md; LIGGGHTS: its own edge/corner
de-duplication).

Measures, on both codes from the same steps: after ``spin_up`` (rounded to
whole surface samples) the run is sampled for ``sample_time``: the drum's
torque about its axis every ``torque_every`` steps (ours
``mesh_walls.torque``; theirs ``f_cad[5]``, the torque of the grains on the
mesh about the origin from ``fix mesh/surface/stress``; the drive torque is
its opposite), the grains' positions ``samples`` times (ours gathered, theirs
``dump custom``), each fitted by ``rotating_drum.surface_angle``: the
dynamic angle of repose. The time per step is the sampled phase's: ours its
wall time (slowest rank) and processor time (summed over ranks); theirs the
``Loop time`` of that ``run`` and its processor time (Loop time x CPU use x
ranks, from LIGGGHTS's own report). Each (ranks, code) runs ``--repeats``
times, interleaved (ours, theirs, ours, ...), each in a fresh process; the
table gives medians and each run's figure. Also printed: the torque of
gravity on the bed, -M g x_cm, which the drive torque must equal on average.

Writes ``output/bench/vs_liggghts_drum.csv`` (one row per code, ranks and
speed: medians and spreads) and ``output/bench/vs_liggghts_drum_runs.csv``
(every run). LIGGGHTS runs under ``mpirun.openmpi``, ecs_dem under
``mpiexec.mpich`` (bench/peer_codes.py).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_result import print_result, run_for_result  # noqa: E402
from peer_codes import (add_peer_arguments, find_or_install, mpich_command,  # noqa: E402
                        openmpi_command, openmpi_env)
from ecs_dem.comm import cores_available  # noqa: E402
from ecs_dem.run import rotating_drum as drum  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LIGGGHTS_NAMES = ("liggghts", "lmp_debian", "lmp_auto", "lmp_mpi", "lmp_openmpi", "lmp")
OUTPUT = REPO / "output" / "bench"

#: the drum of run/rotating_drum.py; --quick: fewer grains, shorter phases
PROBLEM = dict(drum.DEFAULTS, particles=600, settle_time=0.4, spin_up=0.8, sample_time=1.2,
               samples=24, speeds="3")
QUICK = dict(PROBLEM, particles=300, settle_time=0.3, spin_up=0.4, sample_time=0.4, samples=8)

# ---------------------------------------------------------------- the problem


def liggghts_law(cfg: dict):
    """A ``HertzMindlinLaw`` whose one pair (species 0 with itself) gives LIGGGHTS's
    ``model hertz tangential history`` forces for the material of `cfg` (module docstring)."""
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw, beta_from_restitution

    E, nu = cfg["youngs_modulus"], cfg["poisson_ratio"]
    y_star = 1.0 / (2.0 * (1.0 - nu * nu) / E)
    g_star = 1.0 / (2.0 * 2.0 * (2.0 - nu) * (1.0 + nu) / E)
    beta_n = abs(float(beta_from_restitution(cfg["restitution"])))  # sqrt(5) |beta| of LIGGGHTS
    law = HertzMindlinLaw()
    law.set_pair(0, 0, estar=y_star, gstar=1.5 * g_star, beta_n=beta_n,
                 beta_t=2.0 / 3.0 * beta_n, mu=cfg["friction"], mu_roll=0.0)
    return law


def schedule(cfg: dict) -> dict:
    """Steps of the phases, the same in both codes: spin-up and sampling in whole surface
    samples, a sample in whole torque intervals."""
    dt = drum.time_step(cfg)
    every = int(cfg["torque_every"])
    samples = int(cfg["samples"])
    per_sample = max(int(round(cfg["sample_time"] / dt / samples / every)), 1) * every
    spin = int(math.ceil(cfg["spin_up"] / dt / per_sample)) * per_sample
    return {"dt": dt, "every": every, "samples": samples, "per_sample": per_sample,
            "spin": spin, "sampled": samples * per_sample,
            "settle": int(round(cfg["settle_time"] / dt))}


def box_of(cfg: dict):
    """The simulation box of ``rotating_drum.build_world`` (lo, hi)."""
    margin = 0.5 * cfg["edge_length"] + 2.0 * cfg["radius_max"]
    half = math.hypot(cfg["drum_radius"] + 0.25 * cfg["edge_length"],
                      0.5 * cfg["lifter_width"]) + margin
    half_y = 0.5 * cfg["drum_length"] + margin
    return (-half, -half_y, -half), (half, half_y, half)


def settle_worker(cfg: dict, bed: Path) -> None:
    """Insert and settle the grains (ecs_dem, the matched law); save them to `bed` (.npz)."""
    position, radius, velocity = drum.settle(cfg, law=liggghts_law(cfg))
    np.savez(bed, position=position, radius=radius, velocity=velocity)
    print_result({"particles": int(len(radius))})


def write_liggghts_data(path: Path, cfg: dict, bed) -> None:
    """The settled bed as a LIGGGHTS data file (atom_style granular: id type diameter density
    x y z; Velocities: id v w), in gid order, atom type 1."""
    from ecs_dem.io.lammps_data import SphereData
    from shrunk_problems import write_sphere_data

    n = len(bed["radius"])
    lo, hi = box_of(cfg)
    write_sphere_data(path, SphereData(
        np.array(lo), np.array(hi), np.arange(1, n + 1), np.ones(n, dtype=int),
        2.0 * bed["radius"], np.full(n, cfg["density"]), bed["position"],
        np.zeros((n, 3), dtype=int), bed["velocity"], np.zeros((n, 3))),
        "rotating drum: the bed settled by ecs_dem (bench/vs_liggghts_drum.py)")


# ------------------------------------------------------------------- ecs_dem

def ecs_worker(cfg: dict, bed: Path, rate: float) -> None:
    """Run inside the launched process: the drum at `rate` from the settled bed (module
    docstring); prints the torques, the angles and the timing of the sampled phase."""
    from ecs_dem import observe

    s = schedule(cfg)
    b = np.load(bed)
    world = drum.build_world(cfg, b["position"], b["radius"], b["velocity"], rate,
                             law=liggghts_law(cfg))
    world.setup()
    world.run(s["spin"])
    p = world.particles
    mass = observe.total(world, p.mass)
    torques, angles, x_cm = [], [], []
    world.comm.barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(s["samples"]):
        for _ in range(s["per_sample"] // s["every"]):
            world.run(s["every"])
            torques.append(-float(world.mesh_walls.torque[0] @ drum.AXIS))
        x = observe.concatenated(world, p.position[:, [0, 2]])
        r = observe.concatenated(world, p.radius)
        angles.append(drum.surface_angle(x[:, 0], x[:, 1], r, cfg["drum_radius"],
                                         2.0 * cfg["radius_max"], rate))
        x_cm.append(observe.total(world, p.mass * p.position[:, 0]) / mass)
    cpu = world.comm.sum(time.process_time() - c0)
    wall = world.comm.max(time.perf_counter() - t0)
    n = int(world.comm.sum(p.n_owned))
    if world.comm.rank == 0:
        print_result({"code": "ecs_dem", "ranks": world.comm.size, "speed": rate,
                      "particles": n, "steps": s["sampled"],
                      "seconds": wall, "cpu_seconds": cpu, "torques": torques,
                      "angles": angles, "x_cm": x_cm, "mass": mass})


def run_ecs(cfg_args: list[str], bed: Path, rate: float, ranks: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "ecs", "--bed", str(bed),
           "--speed", repr(rate)] + cfg_args
    result = run_for_result(mpich_command(cmd, ranks), timeout=7200)
    if result["ranks"] != ranks:
        raise RuntimeError(f"asked for {ranks} ranks, ecs_dem ran on {result['ranks']}: "
                           "is mpi4py built against MPICH?")
    return result


# ------------------------------------------------------------------ LIGGGHTS

DECK = """\
# rotating drum with lifters: bench/vs_liggghts_drum.py (the module docstring)
atom_style      granular
atom_modify     map array
boundary        f f f
newton          off
communicate     single vel yes
units           si
read_data       bed.data
neighbor        {skin!r} bin
neigh_modify    delay 0
fix m1 all property/global youngsModulus peratomtype {E!r}
fix m2 all property/global poissonsRatio peratomtype {nu!r}
fix m3 all property/global coefficientRestitution peratomtypepair 1 {e!r}
fix m4 all property/global coefficientFriction peratomtypepair 1 {mu!r}
pair_style      gran model hertz tangential history
pair_coeff      * *
timestep        {dt!r}
fix gravi all gravity {g!r} vector 0.0 0.0 -1.0
fix cad all mesh/surface/stress file drum.stl type 1 rotate axis 1. 0. 0. angle -90. \
reference_point 0. 0. 0.
fix walls all wall/gran model hertz tangential history mesh n_meshes 1 meshes cad
fix integr all nve/sphere
fix spin all move/mesh mesh cad rotate origin 0. 0. 0. axis 0. 1. 0. period {period!r}
thermo_style    custom step atoms ke
thermo          100000000
thermo_modify   lost error norm no
run             {spin}
variable ty equal f_cad[5]
variable st equal step
fix torque all print {every} "${{st}} ${{ty}}" file torque.txt screen no title none
dump pos all custom {per_sample} dump.pos id x y z radius
dump_modify pos sort id
run             {sampled}
"""


def liggghts_deck(cfg: dict, rate: float) -> str:
    s = schedule(cfg)
    if rate <= 0:
        raise SystemExit(f"speed {rate}: LIGGGHTS's move/mesh rotate takes a positive period; "
                         "give positive speeds")
    return DECK.format(skin=cfg["skin_fraction"] * cfg["radius_max"], E=cfg["youngs_modulus"],
                       nu=cfg["poisson_ratio"], e=cfg["restitution"], mu=cfg["friction"],
                       dt=s["dt"], g=cfg["gravity"], period=2.0 * math.pi / rate,
                       spin=s["spin"], every=s["every"], per_sample=s["per_sample"],
                       sampled=s["sampled"])


def read_dump(path: Path):
    """Frames of a ``dump custom id x y z radius`` file: [(step, array (n, 5))]."""
    frames, lines = [], path.read_text().splitlines()
    k = 0
    while k < len(lines):
        if lines[k].startswith("ITEM: TIMESTEP"):
            step = int(lines[k + 1])
            n = int(lines[k + 3])
            k += 9  # TIMESTEP, step, NUMBER, n, BOX (4 lines), ATOMS header
            frames.append((step, np.loadtxt(lines[k:k + n], ndmin=2)))
            k += n
        else:
            k += 1
    return frames


def process_tree_cpu(root: int, name: str) -> float:
    """Processor time (user + system, s) of the processes called `name` among `root` and its
    descendants (the ranks under mpirun), from /proc; 0 for those already gone."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm_end = text.rfind(")")
        fields = text[comm_end + 2:].split()  # from field 3 (state) on
        stats[int(entry)] = [text[text.find("(") + 1:comm_end]] + fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        st = stats.get(pid)
        if st and st[0] == name[:15]:
            total += (int(st[12]) + int(st[13])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def sampled_cpu(proc, exe: str, torque_file: Path, lines: int, every: int) -> float | None:
    """Processor time per step of the sampled phase of a running LIGGGHTS (`proc`): its ranks'
    time, polled while ``fix print`` fills `torque_file` (one line every `every` steps, flushed),
    between the first line and the last; None when the phase was too short to poll."""
    polls = []
    while proc.poll() is None:
        try:
            with open(torque_file) as f:
                n = sum(1 for _ in f)
        except OSError:
            n = 0
        if 0 < n < lines:
            polls.append((n, process_tree_cpu(proc.pid, Path(exe).name)))
        time.sleep(0.05)
    if len(polls) < 2 or polls[-1][0] == polls[0][0]:
        return None
    return (polls[-1][1] - polls[0][1]) / ((polls[-1][0] - polls[0][0]) * every)


def run_liggghts(exe: str, cfg: dict, rate: float, ranks: int, workdir: Path) -> dict:
    s = schedule(cfg)
    for old in ("torque.txt", "dump.pos"):
        (workdir / old).unlink(missing_ok=True)
    (workdir / "in.drum").write_text(liggghts_deck(cfg, rate))
    cmd = openmpi_command([exe, "-in", "in.drum", "-log", "log.drum", "-echo", "none"], ranks)
    with open(workdir / "stdout.txt", "w") as so, open(workdir / "stderr.txt", "w") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=workdir, env=openmpi_env())
        cpu_per_step = sampled_cpu(proc, exe, workdir / "torque.txt",
                                   s["sampled"] // s["every"], s["every"])
    stdout = (workdir / "stdout.txt").read_text()
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) "
                       r"atoms", stdout)
    if proc.returncode != 0 or len(loops) < 2:
        raise RuntimeError(f"LIGGGHTS failed ({' '.join(cmd)} in {workdir}):\n"
                           f"{stdout[-3000:]}\n{(workdir / 'stderr.txt').read_text()[-3000:]}")
    seconds, procs, steps, atoms = loops[-1]
    if cpu_per_step is None:  # too short to poll: the wall time of the loop on every rank
        cpu_per_step = float(seconds) * int(procs) / int(steps)
    cpu = cpu_per_step * int(steps)
    start = s["spin"]
    rows = np.loadtxt(workdir / "torque.txt", ndmin=2)
    torques = [-float(t) for step, t in rows if step > start]
    angles, x_cm, mass = [], [], None
    for step, a in read_dump(workdir / "dump.pos"):
        if step <= start:
            continue
        x, z, r = a[:, 1], a[:, 3], a[:, 4]
        m = cfg["density"] * 4.0 / 3.0 * math.pi * r ** 3
        mass = float(m.sum())
        angles.append(drum.surface_angle(x, z, r, cfg["drum_radius"], 2.0 * cfg["radius_max"],
                                         rate))
        x_cm.append(float((m * x).sum()) / mass)
    if len(angles) != s["samples"] or len(torques) != s["sampled"] // s["every"]:
        raise RuntimeError(f"LIGGGHTS wrote {len(angles)} frames and {len(torques)} torques, "
                           f"not {s['samples']} and {s['sampled'] // s['every']} (in {workdir})")
    version = re.search(r"^LIGGGHTS \((.*?)\)", stdout, re.M)
    return {"code": "LIGGGHTS", "ranks": int(procs), "speed": rate, "particles": int(atoms),
            "steps": int(steps), "seconds": float(seconds), "cpu_seconds": cpu,
            "torques": torques, "angles": angles, "x_cm": x_cm, "mass": mass,
            "version": version.group(1) if version else "?"}


# ---------------------------------------------------------------------- main

def measures(run: dict, cfg: dict) -> dict:
    """The physics and the timing of one run."""
    angles = np.asarray(run["angles"], dtype=float)
    angles = angles[np.isfinite(angles)]
    torques = np.asarray(run["torques"], dtype=float)
    half = len(torques) // 2  # the two halves' difference: how steady the window is
    return {"angle": float(angles.mean()) if angles.size else math.nan,
            "angle_sd": float(angles.std()) if angles.size else math.nan,
            "torque": float(torques.mean()), "torque_sd": float(torques.std()),
            "torque_halves": (float(torques[:half].mean()), float(torques[half:].mean())),
            "gravity_torque": -run["mass"] * cfg["gravity"] * float(np.mean(run["x_cm"])),
            "ms_per_step": 1e3 * run["seconds"] / run["steps"],
            "cpu_ms_per_step": 1e3 * run["cpu_seconds"] / run["steps"]}


def config_args(cfg: dict) -> list[str]:
    return [a for k, v in cfg.items() for a in ("--set", f"{k}={v}")]


def parse_sets(pairs: list[str], base: dict) -> dict:
    cfg = dict(base)
    for item in pairs:
        key, _, value = item.partition("=")
        if key not in cfg:
            raise SystemExit(f"--set {item}: unknown key {key!r}; the keys are "
                             f"run/rotating_drum.py's: {', '.join(cfg)}")
        cfg[key] = type(drum.DEFAULTS[key])(value) if key in drum.DEFAULTS else value
    return cfg


def spread(values: list[float]) -> str:
    return " ".join(f"{v:.3g}" for v in values)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_peer_arguments(ap, "liggghts", "300 grains, short phases (minutes)",
                       "speed and rank count")
    ap.add_argument("--speeds", help="rotation speeds, rad/s, positive (default 3)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a run/rotating_drum.py key (particles, sample_time, ...)")
    ap.add_argument("--output", type=Path, default=OUTPUT, help="folder of the CSV files")
    ap.add_argument("--keep", type=Path, help="keep the decks, data, dumps and logs here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--bed", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--speed", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = parse_sets(args.set, QUICK if args.quick else PROBLEM)
    if args.speeds:
        cfg["speeds"] = args.speeds
    if args.worker == "settle":
        settle_worker(cfg, args.bed)
        return 0
    if args.worker == "ecs":
        ecs_worker(cfg, args.bed, args.speed)
        return 0

    speeds = drum.number_list(cfg, "speeds", lambda v: v > 0,
                              "positive rotation speeds in rad/s, such as 1,3")
    exe = find_or_install(LIGGGHTS_NAMES, "liggghts", args.install_liggghts)
    if exe is None:
        raise SystemExit(f"no LIGGGHTS executable ({', '.join(LIGGGHTS_NAMES)}) on PATH: "
                         "run with --install-liggghts (apt-get install liggghts) or put one "
                         "on PATH")
    ranks_list = [int(r) for r in args.ranks.split(",")]
    s = schedule(cfg)
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; LIGGGHTS: {exe}")
    print(f"drum: {cfg['particles']} grains, dt = {s['dt']:.4g} s, settle {s['settle']} steps, "
          f"spin-up {s['spin']} steps, sampled {s['sampled']} steps ({s['samples']} surface "
          f"fits, torque every {s['every']})", flush=True)
    cfg_args = config_args({k: cfg[k] for k in drum.DEFAULTS})
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="vs_liggghts_drum_") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        bed_file = work / "bed.npz"
        t0 = time.perf_counter()
        run_for_result([sys.executable, str(Path(__file__).resolve()), "--worker", "settle",
                        "--bed", str(bed_file)] + cfg_args, timeout=7200)
        print(f"settled by ecs_dem in {time.perf_counter() - t0:.0f} s", flush=True)
        from ecs_dem.components.mesh.io import write_mesh
        write_mesh(work / "drum.stl", drum.drum_source(cfg)[0], binary=False)
        bed = dict(np.load(bed_file))
        write_liggghts_data(work / "bed.data", cfg, bed)
        for rep in range(args.repeats):
            for rate in speeds:
                for ranks in ranks_list:
                    ours = run_ecs(cfg_args, bed_file, rate, ranks)
                    theirs = run_liggghts(exe, cfg, rate, ranks, work)
                    for r in (ours, theirs):
                        r.update(measures(r, cfg), repeat=rep + 1)
                        runs.append(r)
                    print(f"  [{rep + 1}/{args.repeats}] {rate:g} rad/s, {ranks} rank(s): "
                          + "; ".join(f"{r['code']} {r['ms_per_step']:.3f} ms/step, angle "
                                      f"{r['angle']:.2f} deg, torque {r['torque']:.4g} N m"
                                      for r in (ours, theirs)), flush=True)
    report(runs, cfg, speeds, ranks_list, args.output)
    return 0


def report(runs: list[dict], cfg: dict, speeds, ranks_list, output: Path) -> None:
    rows = []
    for rate in speeds:
        for ranks in ranks_list:
            for code in ("ecs_dem", "LIGGGHTS"):
                rs = [r for r in runs if r["code"] == code and r["speed"] == rate
                      and r["ranks"] == ranks]
                row = {"code": code, "speed": rate, "ranks": ranks, "runs": len(rs),
                       "oversubscribed": ranks > cores_available()}
                for key in ("ms_per_step", "cpu_ms_per_step", "angle", "angle_sd", "torque",
                            "torque_sd", "gravity_torque"):
                    row[key] = statistics.median(r[key] for r in rs)
                    row[key + "_all"] = [r[key] for r in rs]
                row["particles"] = rs[0]["particles"]
                rows.append(row)

    def pair(rate, ranks):
        return [next(r for r in rows if r["code"] == c and r["speed"] == rate
                     and r["ranks"] == ranks) for c in ("ecs_dem", "LIGGGHTS")]

    print("\nrotating drum, ecs_dem against LIGGGHTS: medians over the runs (each run in "
          "parentheses)")
    print(f"{'speed':>5s} {'ranks':>5s} {'code':9s} {'ms/step':>8s} {'cpu ms/step/core':>16s} "
          f"{'angle deg':>10s} {'+-':>5s} {'torque N m':>11s} {'+-':>8s} {'-Mg x_cm':>9s}  runs "
          "(ms/step)")
    for row in rows:
        print(f"{row['speed']:5g} {row['ranks']:5d} {row['code']:9s} {row['ms_per_step']:8.3f} "
              f"{row['cpu_ms_per_step'] / row['ranks']:16.3f} {row['angle']:10.2f} "
              f"{row['angle_sd']:5.2f} {row['torque']:11.4g} {row['torque_sd']:8.2g} "
              f"{row['gravity_torque']:9.4g}  ({spread(row['ms_per_step_all'])})"
              + ("  oversubscribed" if row["oversubscribed"] else ""))
    print("\ncomparison (targets: angle within 2 deg, torque within 5 %, ours 1.5 times faster "
          "per core: judged by processor time, which a shared machine disturbs less than wall "
          "time)")
    summary = []
    for rate in speeds:
        for ranks in ranks_list:
            ours, theirs = pair(rate, ranks)
            d_angle = ours["angle"] - theirs["angle"]
            d_torque = ours["torque"] / theirs["torque"] - 1.0
            speedup = theirs["ms_per_step"] / ours["ms_per_step"]
            cpu_speedup = theirs["cpu_ms_per_step"] / ours["cpu_ms_per_step"]
            summary.append((rate, ranks, d_angle, d_torque, speedup, cpu_speedup))
            print(f"{rate:g} rad/s, {ranks} rank(s): angle ours - theirs {d_angle:+.2f} deg "
                  f"({'hit' if abs(d_angle) <= 2 else 'miss'}), torque ours / theirs - 1 "
                  f"{100 * d_torque:+.1f} % ({'hit' if abs(d_torque) <= 0.05 else 'miss'}), "
                  f"speed ours / theirs {cpu_speedup:.2f} by processor time "
                  f"({'hit' if cpu_speedup >= 1.5 else 'miss'}), {speedup:.2f} by wall time")
    output.mkdir(parents=True, exist_ok=True)
    with open(output / "vs_liggghts_drum.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["code", "speed_rad_s", "ranks", "particles", "runs", "ms_per_step",
                    "ms_per_step_min", "ms_per_step_max", "cpu_ms_per_step_per_core",
                    "angle_deg", "angle_sd_deg", "drive_torque_Nm", "drive_torque_sd_Nm",
                    "gravity_torque_Nm", "oversubscribed"])
        for row in rows:
            w.writerow([row["code"], row["speed"], row["ranks"], row["particles"], row["runs"],
                        f"{row['ms_per_step']:.6g}", f"{min(row['ms_per_step_all']):.6g}",
                        f"{max(row['ms_per_step_all']):.6g}",
                        f"{row['cpu_ms_per_step'] / row['ranks']:.6g}", f"{row['angle']:.6g}",
                        f"{row['angle_sd']:.6g}", f"{row['torque']:.6g}",
                        f"{row['torque_sd']:.6g}", f"{row['gravity_torque']:.6g}",
                        int(row["oversubscribed"])])
    with open(output / "vs_liggghts_drum_runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["code", "speed_rad_s", "ranks", "repeat", "ms_per_step", "cpu_ms_per_step",
                    "angle_deg", "drive_torque_Nm", "torque_first_half_Nm",
                    "torque_second_half_Nm", "gravity_torque_Nm"])
        for r in runs:
            w.writerow([r["code"], r["speed"], r["ranks"], r["repeat"],
                        f"{r['ms_per_step']:.6g}", f"{r['cpu_ms_per_step']:.6g}",
                        f"{r['angle']:.6g}", f"{r['torque']:.6g}",
                        f"{r['torque_halves'][0]:.6g}", f"{r['torque_halves'][1]:.6g}",
                        f"{r['gravity_torque']:.6g}"])
    print(f"\nwrote {output / 'vs_liggghts_drum.csv'} and {output / 'vs_liggghts_drum_runs.csv'}")


if __name__ == "__main__":
    sys.exit(main())
