"""Tutorial: continuum fields from a granular bed, after the run (docs/tutorials/coarse_graining.md).

A bed of grains, stacked layer on layer (each grain in the hollow of four below
it), settles under gravity on a layer of fixed grains in a box periodic in x
and y. Its snapshots carry the contact network
(``SnapshotWriter(contacts=True)``); after the run the output file is
coarse-grained (``ecs_dem.cg.from_output``) into depth profiles: density,
velocity, stress, averaged over x and y and over the last snapshots. The
vertical stress is then checked against the weight of the grains above, which
the density profile gives, and the fields are written for ParaView.

    python tutorials/coarse_graining.py            # the full settings: 1,600 grains
    python tutorials/coarse_graining.py --short    # the short settings (CI): 400 grains
    mpiexec.mpich -n 2 .venv/bin/python tutorials/coarse_graining.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings too.
SI units throughout.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from ecs_dem import Box, World
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.io.hdf5_output import Hdf5Output, SnapshotWriter
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch

from ecs_dem.cg.from_output import coarse_grain_file, write_fields
from ecs_dem.cg.grid import CartesianGrid
from ecs_dem.cg.kernels import Kernel

FULL = {"side": 10, "layers": 20, "steps": 20000, "snapshots": 8}
SHORT = {"side": 5, "layers": 16, "steps": 16000, "snapshots": 8}

R = 1e-3                 # m, grain radius (0.995 to 1.005 of it)
SPACING = 2.2 * R        # m, the grains' spacing within a layer
LAYER = 0.995 * (4 * R**2 - 2 * (SPACING / 2) ** 2) ** 0.5  # m, between layers: touching
GRAVITY = 9.81           # m/s^2, along -z
DENSITY = 2500.0         # kg/m^3
EVERY = 250              # steps between snapshots


def settings(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/coarse_graining.h5")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    return (SHORT if short else FULL), short, Path(args.output)


def build_world(side: int, layers: int, output: Hdf5Output, comm) -> World:
    """Layers of grains, each in the hollows of the one below, on a layer of fixed grains,
    periodic in x and y."""
    rng = np.random.default_rng(5)  # the same on every rank
    width = side * SPACING
    world = World(Box((0, 0, -R), (width, width, (layers + 3) * LAYER), (True, True, False)),
                  dt=5e-6, skin=0.2 * R, comm=comm)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=DENSITY,
                restitution=0.1, friction=0.5)
    k = np.arange(side * side * layers)
    layer = k // side**2
    shift = 0.5 + 0.5 * (layer % 2)  # every other layer sits in the hollows of the one below
    pos = np.stack([(k % side + shift) * SPACING, ((k // side) % side + shift) * SPACING,
                    layer * LAYER], axis=1) + rng.uniform(-0.01, 0.01, (k.size, 3)) * R
    base = k < side * side  # the first layer: the base
    radius = R * rng.uniform(0.995, 1.005, k.size)
    add_particles(world, pos, radius, 0, fixed=base,
                  velocity=np.where(base[:, None], 0.0, rng.normal(0, 0.01, pos.shape)))
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), Gravity((0, 0, -GRAVITY)),
              ContactForces(HertzMindlinLaw()), second):
        world.add_system(s)
    # snapshots with the contact network: what the stress needs
    world.add_system(SnapshotWriter(output, EVERY, contacts=True,
                                    fields=("gid", "position", "velocity", "radius", "mass",
                                            "fixed")))
    return world


def depth_profiles(path: Path, world: World, steps: list[int], comm):
    """The time-averaged depth profiles of the snapshots at `steps` (collective)."""
    box = world.box
    # 1D in z, averaged over x and y; Lucy's kernel of width R (support 3.5 R)
    grid = CartesianGrid((box.lo[0], box.lo[1], -R), (box.hi[0], box.hi[1], box.hi[2]),
                         (1, 1, 80), average="xy")
    kernel = Kernel.lucy(np.sqrt(12.0) * R)
    fields = coarse_grain_file(path, grid, kernel, steps, comm, average=True)
    return grid, kernel, fields


def weight_above(grid, density) -> np.ndarray:
    """g * int_z^top rho dz' at each grid point (Pa): the trapezoid rule from the top."""
    dz = grid.spacing[2]
    rho = density[0, 0]
    cells = 0.5 * (rho[1:] + rho[:-1]) * dz
    above = np.concatenate([np.cumsum(cells[::-1])[::-1], [0.0]])
    return GRAVITY * above


def main(argv=None) -> int:
    cfg, short, path = settings(argv)
    comm = default_comm()
    if comm.rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
    with Hdf5Output(path, None, comm) as output:
        world = build_world(cfg["side"], cfg["layers"], output, comm)
        if comm.rank == 0:
            print(f"coarse graining ({'short' if short else 'full'} settings): "
                  f"{cfg['side']**2 * (cfg['layers'] - 1)} grains on a base of "
                  f"{cfg['side']**2}, dt = {world.dt:.2g} s, {cfg['steps']} steps")
        world.run(cfg["steps"])
    steps = [cfg["steps"] - EVERY * k for k in range(cfg["snapshots"])][::-1]
    grid, kernel, fields = depth_profiles(path, world, steps, comm)
    step, (time, f) = next(iter(fields.items()))
    z = grid.axes[2]
    szz = f["stress"][0, 0, :, 2, 2]
    weight = weight_above(grid, f["density"])
    # the bulk: a kernel's reach above the base and below the free surface
    nu = f["volume_fraction"][0, 0]
    filled = z[nu > 0.5 * nu.max()]
    bulk = (z > filled.min() + 4 * R) & (z < filled.max() - 4 * R)
    worst = float(np.max(np.abs(szz[bulk] / weight[bulk] - 1.0)))
    out = write_fields(path.with_name(path.stem + "_cg.h5"), grid, kernel, fields,
                       source=str(path), comm=comm)
    if comm.rank == 0:
        print(f"snapshots {steps[0]}-{steps[-1]} averaged; kernel {kernel.name}, width "
              f"{kernel.width * 1e3:.3g} mm; {grid.shape[2]} layers")
        print("z (mm)  volume fraction  sigma_zz (Pa)  weight above (Pa)")
        for k in np.flatnonzero(bulk)[:: max(1, bulk.sum() // 5)]:
            print(f"{z[k] * 1e3:6.2f}  {nu[k]:15.3f}  {szz[k]:13.1f}  {weight[k]:17.1f}")
        print(f"sigma_zz against the weight above, in the bulk: largest deviation "
              f"{100 * worst:.2f} %")
        print(f"coordination number in the bulk: {f['coordination'][0, 0][bulk].mean():.2f}")
        print(f"fields: {out} (open {out.with_suffix('.xdmf')} in ParaView)")
        corners = " ".join(f"{v:.17g}" for v in (*grid.lower, *grid.upper))
        print(f"the same from the command line: python -m ecs_dem.cg {path} --width "
              f"{kernel.width:.17g} --kernel lucy --cells 1 1 80 --average xy --box {corners} "
              f"--steps {','.join(map(str, steps))} --time-average")
        plot(z, nu, szz, weight, bulk, path.with_name(path.stem + ".png"))
    return 0


def plot(z, nu, szz, weight, bulk, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 4), sharey=True)
    a.plot(nu, z * 1e3)
    a.set_xlabel("volume fraction")
    a.set_ylabel("z (mm)")
    b.plot(szz, z * 1e3, label="sigma_zz (coarse-grained)")
    b.plot(weight, z * 1e3, "--", label="weight above")
    b.axhspan(z[bulk].min() * 1e3, z[bulk].max() * 1e3, color="0.9", zorder=0)
    b.set_xlabel("stress (Pa)")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"plot: {png}")


if __name__ == "__main__":
    raise SystemExit(main())
