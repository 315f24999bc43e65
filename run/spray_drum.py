"""A rotating drum sprayed by a flat-fan nozzle: how the liquid spreads over the grains.

The drum of ``run/rotating_drum.py`` (a closed triangulated cylinder with
lifters, axis y, generated or read from ``stl``) holds ``particles`` dry
grains, which settle for ``settle_time`` with the drum at rest. Then the
drum turns at ``rotation`` rad/s and a flat-fan nozzle (Thornton et al.
2023, Sect. 6 and their Fig. 3) above the bed, on the axis at height
``nozzle_height`` (m, from the axis), sprays down: its fan opens along the
drum axis (``fan_angle``, half-opening in degrees) and is ``thickness_angle``
thick across it, droplets of radius ``droplet_radius`` at ``droplet_speed``,
``volume_rate`` m^3/s of liquid, for ``spray_time``
(``systems.wet.droplets``). A droplet is absorbed into the film of the
nearest grain it touches, or lost on the drum. Grains touching each other
form liquid bridges from their films and return the liquid at rupture
(``LiquidMigrationWillet`` on Hertz-Mindlin, ``systems.wet.migration``); the
drum's wall holds no liquid (a dry Hertz-Mindlin contact).

A grain's liquid content is its film plus half of each bridge it holds.
``samples`` times over the spray the driver records their mean, standard
deviation and coefficient of variation (sd / mean: the seed's measure of
how even the coating is), the liquid balance's terms, and at ``histograms``
of those times the histogram of the contents. The check: the liquid on the
grains, N times the mean content, grows at the nozzle's rate minus the
droplets lost on the drum (and those still in the air); the driver fits its
slope over the second half of the spray and prints it beside the nozzle's
volume rate times the fraction of the sprayed liquid not lost.

    python run/spray_drum.py
    python run/spray_drum.py --set particles=1200 --set spray_time=3
    mpiexec.mpich -n 2 .venv/bin/python run/spray_drum.py

Writes ``<output>/spray_drum.csv`` (one row per sample),
``<output>/spray_drum_histograms.csv`` (content bins, one column per
histogram time) and ``<output>/spray_drum.png`` (mean and spread against
time, the histograms).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ecs_dem import observe
from ecs_dem.comm import default_comm
from ecs_dem.driver import run_driver, write_csv
from ecs_dem.errors import ConfigValueError, InputError
from ecs_dem.io.paths import unwritable
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import run_or_stop
from ecs_dem.components.droplets import add_nozzle
from ecs_dem.components.wet import liquid_fields
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.wet.balance import LiquidBalance, liquid_totals
from ecs_dem.systems.wet.droplets import spray
from ecs_dem.systems.wet.laws import LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration
from ecs_dem.run import rotating_drum as drum

DEFAULTS = {
    **{k: v for k, v in drum.DEFAULTS.items()
       if k not in ("speeds", "spin_up", "sample_time", "samples", "torque_every", "output")},
    "settle_time": 0.3,             # s, the drum at rest
    "rotation": 2.0,                # rad/s about +y while spraying
    "nozzle_height": 0.02,          # m above the drum axis
    "fan_angle": 35.0,              # degrees, half the fan's opening (along the axis)
    "thickness_angle": 4.0,         # degrees, half its opening across
    "droplet_radius": 1.5e-4,       # m
    "droplet_speed": 1.5,           # m/s
    "volume_rate": 5e-8,            # m^3/s of liquid
    "spray_time": 1.0,              # s
    "samples": 10,                  # records over spray_time
    "histograms": 3,                # of the samples, evenly spread, the last included
    "bins": 20,                     # histogram bins
    "surface_tension": 0.072,       # N/m
    "contact_angle": 20.0,          # degrees
    "max_bridge_volume": 2e-11,     # m^3
    "output": "output/spray_drum",
}

RANGES = tuple(r for r in drum.RANGES if r[0] in DEFAULTS) + (
    ("rotation", -math.inf, math.inf, True),
    ("nozzle_height", 0.0, math.inf, True),
    ("fan_angle", 0.0, 90.0, "[)"),
    ("thickness_angle", 0.0, 90.0, "[)"),
    ("droplet_radius", 0.0, math.inf, False),
    ("droplet_speed", 0.0, math.inf, True),
    ("volume_rate", 0.0, math.inf, False),
    ("spray_time", 0.0, math.inf, False),
    ("samples", 2, math.inf, True),
    ("histograms", 1, math.inf, True),
    ("bins", 1, math.inf, True),
    ("surface_tension", 0.0, math.inf, True),
    ("contact_angle", 0.0, 90.0, "[)"),
    ("max_bridge_volume", 0.0, math.inf, False),
)


def wet_law(cfg):
    return LiquidMigrationWillet(HertzMindlinLaw(), surface_tension=cfg["surface_tension"],
                                 contact_angle=cfg["contact_angle"],
                                 max_bridge_volume=cfg["max_bridge_volume"])


def build_spray_world(cfg, bed, comm=None):
    """The settled `bed` in the turning drum, wet grain contacts, the nozzle and the droplet
    systems, a liquid balance every step of the samples (``balance``)."""
    position, radius, velocity = bed
    world = drum.build_world(cfg, position, radius, velocity, cfg["rotation"], comm,
                             law=wet_law(cfg), wall_law=HertzMindlinLaw())
    liquid_fields(world)
    contacts = next(s for s in world.systems if isinstance(s, ContactForces))
    for s in (*spray((0.0, 0.0, -cfg["gravity"])), *liquid_migration(contacts)):
        world.add_system(s, before=contacts)
    add_nozzle(world, [0.0, 0.0, cfg["nozzle_height"]], [0.0, 0.0, -1.0], shape="fan",
               fan_angle=cfg["fan_angle"], thickness_angle=cfg["thickness_angle"],
               fan_axis=drum.AXIS, droplet_radius=cfg["droplet_radius"],
               speed=cfg["droplet_speed"], volume_rate=cfg["volume_rate"], seed=cfg["seed"])
    return world


def contents(world):
    """Each grain's liquid (film plus half of each bridge it holds), m^3, in gid order, on
    rank 0 (None on the others). Collective."""
    gid, film = observe.gather_by_gid(world, world.particles, ("gid", "liquid_film"))
    pairs = world.pairs
    bridges = observe.gather_by_gid(world, pairs, ("gid_i", "gid_j", "bridge_volume"))
    if gid is None:
        return None
    out = film.copy()
    gi, gj, v = bridges
    v = v.reshape(len(gi), -1)[:, 0]
    for g in (gi, gj):
        np.add.at(out, np.searchsorted(gid, g), 0.5 * v)
    return out


def sample(world, c, spray_start: float) -> dict:
    totals = liquid_totals(world)
    row = {"time": world.time - spray_start, **totals}
    if c is not None:
        mean = float(np.mean(c))
        sd = float(np.std(c))
        row.update(mean=mean, sd=sd, cv=sd / mean if mean > 0 else math.nan,
                   wet_fraction=float(np.mean(c > 0)), on_grains=float(np.sum(c)))
    return row


def growth_check(rows, volume_rate: float) -> dict:
    """Slope of the liquid on the grains over the second half of the samples, against the
    nozzle's rate times the fraction of the sprayed liquid that was not lost, and the fraction
    lost (rank 0)."""
    t = np.array([r["time"] for r in rows])
    on = np.array([r["on_grains"] for r in rows])
    half = t >= 0.5 * t[-1]
    slope = float(np.polyfit(t[half], on[half], 1)[0])
    lost_fraction = rows[-1]["lost_at_walls"] / rows[-1]["inserted"] if rows[-1]["inserted"] \
        else 0.0
    lost = np.array([r["lost_at_walls"] + r["airborne"] for r in rows])
    lost_rate = float(np.polyfit(t[half], lost[half], 1)[0])
    return {"slope": slope, "expected": volume_rate - lost_rate, "lost_fraction": lost_fraction,
            "nozzle_rate": volume_rate}


def spray_run(cfg, bed, comm=None, on_sample=None):
    """Spray the settled bed; (rows, histograms, check) on rank 0 (rows on every rank)."""
    world = build_spray_world(cfg, bed, comm)
    world.setup()
    steps = int(round(cfg["spray_time"] / world.dt))
    n = int(cfg["samples"])
    marks = [int(round(steps * (k + 1) / n)) for k in range(n)]
    hist_at = {marks[int(round((n - 1) * (k + 1) / cfg["histograms"]))]
               for k in range(int(cfg["histograms"]))}
    rows, hists, done = [], [], 0
    for mark in marks:
        run_or_stop(world, mark - done, "the spray")
        done = mark
        c = contents(world)
        row = sample(world, c, 0.0)
        rows.append(row)
        if on_sample is not None:
            on_sample(row)
        if mark in hist_at and c is not None:
            hists.append((row["time"], c.copy()))
    return world, rows, hists


HEADER = ("time_s", "inserted_m3", "on_grains_m3", "films_m3", "bridges_m3", "airborne_m3",
          "lost_m3", "imbalance_m3", "mean_content_m3", "sd_content_m3", "cv", "wet_fraction")
KEYS = ("time", "inserted", "on_grains", "films", "bridges", "airborne", "lost_at_walls",
        "imbalance", "mean", "sd", "cv", "wet_fraction")


def write_outputs(rows, hists, bins: int, out: Path) -> None:
    """CSV files and the plot (rank 0)."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "spray_drum.csv", HEADER, [[r[k] for k in KEYS] for r in rows], ".6g")
    top = max(float(np.max(c)) for _, c in hists) or 1.0
    edges = np.linspace(0.0, top * (1 + 1e-9), bins + 1)
    counts = [np.histogram(c, bins=edges)[0] for _, c in hists]
    write_csv(out / "spray_drum_histograms.csv",
              ("bin_low_m3", "bin_high_m3", *[f"count_t{t:.4g}s" for t, _ in hists]),
              [[edges[k], edges[k + 1], *[int(h[k]) for h in counts]] for k in range(bins)],
              ".6g")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    t = [r["time"] for r in rows]
    mean = np.array([r["mean"] for r in rows])
    sd = np.array([r["sd"] for r in rows])
    ax1.plot(t, mean, "o-", label="mean")
    ax1.fill_between(t, mean - sd, mean + sd, alpha=0.3, label="+- sd")
    ax1.set_xlabel("spray time (s)")
    ax1.set_ylabel("liquid per grain (m$^3$)")
    ax1.legend()
    centres = 0.5 * (edges[:-1] + edges[1:])
    for (time, _), h in zip(hists, counts):
        ax2.step(centres, h, where="mid", label=f"t = {time:.3g} s")
    ax2.set_xlabel("liquid per grain (m$^3$)")
    ax2.set_ylabel("grains")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(out / "spray_drum.png", dpi=120)
    plt.close(fig)


def check(cfg) -> None:
    if not 0 < cfg["radius_min"] <= cfg["radius_max"]:
        raise ConfigValueError(f"need 0 < radius_min <= radius_max (got {cfg['radius_min']}, "
                               f"{cfg['radius_max']}): swap them or set them equal")
    if cfg["nozzle_height"] >= cfg["drum_radius"] - cfg["lifter_height"]:
        raise ConfigValueError(f"nozzle_height {cfg['nozzle_height']} m puts the nozzle outside "
                               f"the drum (radius {cfg['drum_radius']} m, lifters "
                               f"{cfg['lifter_height']} m): lower it")
    if cfg["histograms"] > cfg["samples"]:
        raise ConfigValueError(f"histograms = {cfg['histograms']} exceeds samples = "
                               f"{cfg['samples']}: lower it")
    problem = unwritable(Path(cfg["output"]) / "spray_drum.csv")
    if problem:
        raise InputError(problem)
    check_particle_count(cfg["particles"], default_comm())
    drum.fill_positions(cfg, np.random.default_rng(0))


def run(job) -> int:
    cfg = job.cfg
    out = Path(cfg["output"])
    job.on_stop = lambda: "nothing written (the CSV files are written after the spray)"
    job.print(f"spray drum: {cfg['particles']} grains, dt = {drum.time_step(cfg):.3g} s; "
              f"settling {cfg['settle_time']} s")
    bed = drum.settle(cfg, job.comm)

    def report(r):
        if "mean" in r:
            job.print(f"t {r['time']:7.4f} s  on grains {r['on_grains']:.4g} m^3  airborne "
                      f"{r['airborne']:.3g}  lost {r['lost_at_walls']:.4g}  mean {r['mean']:.4g}"
                      f"  cv {r['cv']:.3f}  wet {r['wet_fraction']:.3f}  imbalance "
                      f"{r['imbalance']:.2g}")

    world, rows, hists = spray_run(cfg, bed, job.comm, report)
    if job.comm.rank == 0:
        g = growth_check(rows, cfg["volume_rate"])
        job.print(f"liquid on the grains grows at {g['slope']:.4g} m^3/s; nozzle rate "
                  f"{g['nozzle_rate']:.4g} minus losses on the drum: {g['expected']:.4g} m^3/s "
                  f"({100 * g['lost_fraction']:.1f} % of the sprayed liquid lost)")
    job.write(write_outputs, rows, hists, int(cfg["bins"]), out)
    job.print(f"wrote {out / 'spray_drum.csv'}, {out / 'spray_drum_histograms.csv'} and "
              f"{out / 'spray_drum.png'}")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=DEFAULTS, ranges=RANGES, check=check, run=run,
                      description=__doc__.splitlines()[0], soft_kill=True)


if __name__ == "__main__":
    sys.exit(main())
