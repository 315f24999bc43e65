"""What keeps the top plate's force moving when the plate is held after an MC-DEM compression.

A study, not a test. run/compression.py's packing (its defaults, or ``--set key=value``
overrides) is prepared once, then for each variant compressed from H0 to ``max_strain`` at
``plate_speed`` and held there for ``--hold`` seconds. Per variant it prints, over the last
``--window`` seconds of the hold: the top force's mean and its relative spread (max - min) / mean, the
kinetic energy per grain, the contacts formed and broken per 100 steps, and the change of
the normal forces over one step relative to their mean (the lagged scheme's iteration
residual); and the force every ``--every`` steps into ``output/compression/hold_<variant>.csv``.

Variants (``--variants``, comma separated): ``g0``, ``g1``, ``g119`` (gamma 0, 1, 1.19 at
the driver's time step); ``g119_dt2``, ``g119_dt4`` (gamma 1.19 at a half and a quarter of
it); ``g119_e05`` (restitution 0.5); ``g119_mindlin`` (the Mindlin spring instead of
saturated friction); ``g119_it1``, ``g119_it3`` (1 or 3 extra iterations of the
correction per step, ``mc_iterations``).

    python bench/multicontact_hold.py
    python bench/multicontact_hold.py --variants g119,g119_dt2 --hold 3
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

VARIANTS = {
    "g0": (0.0, {}), "g1": (1.0, {}), "g119": (1.19, {}),
    "g119_dt2": (1.19, {"dt_scale": 0.5}), "g119_dt4": (1.19, {"dt_scale": 0.25}),
    "g119_e05": (1.19, {"restitution": 0.5}),
    "g119_mindlin": (1.19, {"friction_law": "mindlin"}),
    "g119_it1": (1.19, {"mc_iterations": 1}), "g119_it3": (1.19, {"mc_iterations": 3}),
}


def touching(world) -> set:
    pairs = world.pairs
    n = pairs.n_owned
    on = pairs.mc_force[:n] > 0.0
    return set(zip(pairs.gid_i[:n][on].tolist(), pairs.gid_j[:n][on].tolist()))


def study(cfg, packing, name, hold, every, window) -> dict:
    from ecs_dem.comm import SerialComm
    from ecs_dem.config import merge_config
    from ecs_dem.run import compression
    from ecs_dem.systems.diagnostics import kinetic_energy

    gamma, change = VARIANTS[name]
    change = dict(change)
    scale = change.pop("dt_scale", 1.0)
    cfg = merge_config(cfg, {**change, "dt_fraction": cfg["dt_fraction"] * scale})
    position, radius, h0, height = packing
    top = h0 * (1.0 + compression.lift_strain(cfg, h0)) + cfg["diameter"]
    world, _, _ = compression.build_world(cfg, position, radius, min(top, height), h0, gamma,
                                          compression.weight_acceleration(cfg),
                                          comm=SerialComm())
    world.setup()
    walls = world.walls
    dt = world.dt
    n = int(np.ceil(cfg["max_strain"] * h0 / (cfg["plate_speed"] * dt)))
    walls.velocity[compression.TOP] = (0.0, 0.0, -cfg["max_strain"] * h0 / (n * dt))
    t0 = time.perf_counter()
    world.run(n)
    walls.velocity[compression.TOP] = 0.0
    walls.point[compression.TOP, 2] = h0 * (1.0 - cfg["max_strain"])
    steps = int(round(hold / dt))
    window_steps = int(round(window / dt))
    rows = []
    formed = broken = 0
    residual = []
    before = touching(world)
    last_force = None
    for k in range(0, steps, every):
        world.run(every)
        now = touching(world)
        f = world.pairs.mc_force[:world.pairs.n_owned].copy()
        if k >= steps - window_steps:
            formed += len(now - before)
            broken += len(before - now)
        before = now
        world.run(1)
        g = world.pairs.mc_force[:world.pairs.n_owned]
        if g.size == f.size and f.size:
            on = f > 0.0
            residual.append(np.abs(g[on] - f[on]).mean() / f[on].mean())
        rows.append((world.time, float(walls.force[compression.TOP, 2]),
                     kinetic_energy(world) / world.particles.n_owned, len(now)))
        last_force = f
    rows = np.array(rows)
    late = rows[rows[:, 0] >= rows[-1, 0] - window]
    out = REPO / "output" / "compression" / f"hold_{name}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(out, rows, delimiter=",", header="time_s,top_force_N,kinetic_energy_per_grain_J,"
               "touching_pairs", comments="")
    steps_late = window_steps
    return {"variant": name, "dt": dt, "mean": late[:, 1].mean(),
            "spread": (late[:, 1].max() - late[:, 1].min()) / late[:, 1].mean(),
            "ke": late[:, 2].mean(), "churn": 100.0 * (formed + broken) / steps_late,
            "residual": float(np.mean(residual[-len(late):])) if residual else 0.0,
            "contacts": int(late[-1, 3]), "seconds": time.perf_counter() - t0,
            "pairs_last": 0 if last_force is None else int((last_force > 0).sum())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="g0,g1,g119,g119_dt2,g119_dt4")
    ap.add_argument("--hold", type=float, default=2.0, help="s held at maximum strain")
    ap.add_argument("--every", type=int, default=50, help="steps between records")
    ap.add_argument("--window", type=float, default=2.0, help="s at the end of the hold measured")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a run/compression.py key (repeatable)")
    args = ap.parse_args(argv)
    from ecs_dem.comm import SerialComm
    from ecs_dem.config import load_config
    from ecs_dem.run import compression
    cfg = load_config(compression.DEFAULTS, sum((["--set", s] for s in args.set), []))
    cfg = {**cfg, "quiet": True}
    packing = compression.prepare(cfg, SerialComm(), print)
    print(f"{'variant':14s} {'dt [s]':>9s} {'top [N]':>8s} {'spread':>9s} {'KE/grain [J]':>12s} "
          f"{'churn/100':>9s} {'residual':>9s} {'contacts':>8s} {'s':>5s}")
    for name in args.variants.split(","):
        r = study(cfg, packing, name, args.hold, args.every, args.window)
        print(f"{r['variant']:14s} {r['dt']:9.3g} {r['mean']:8.4f} {r['spread']:9.2e} "
              f"{r['ke']:12.3e} {r['churn']:9.2f} {r['residual']:9.2e} {r['contacts']:8d} "
              f"{r['seconds']:5.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
