"""``NUMBA_DISABLE_JIT=1`` runs every kernel as plain Python (ecs_dem/jit.py) and gives the
compiled run's results: a small scenario run both ways, the plain one in a subprocess (numba
reads the variable when it is imported).

The scenario touches the kernels of a usual granular run: the neighbour search (binning, the
pair list, history carried over at rebuilds), Hertz-Mindlin pair and wall contacts with
sliding and rolling friction (the generated contact kernels), gravity and velocity Verlet.
Both runs execute the same operations in the same order on float64; numba compiles with
fastmath off, so the two agree to round-off (measured: bit for bit).
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/, for helpers when run as a script

STEPS = 300


def scenario(steps: int = STEPS):
    """Eighteen spheres on a tight lattice on a floor, thrown at each other, spinning:
    (positions, velocities, angular velocities by gid, pair contacts summed over the steps,
    neighbour rebuilds)."""
    from helpers import add_particles, add_standard_systems, make_world

    from ecs_dem.components.walls import add_wall
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
    from ecs_dem.systems.integration.gravity import Gravity
    from ecs_dem.systems.walls.contacts import WallContacts

    rng = np.random.default_rng(5)
    world = make_world(box_lo=(-0.01, -0.01, 0.0), box_hi=(0.01, 0.01, 0.02), dt=2e-6,
                       skin=1e-4, material=dict(restitution=0.6, friction=0.4,
                                                rolling_friction=0.05))
    add_wall(world, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    grid = np.stack(np.meshgrid(np.arange(3), np.arange(3), np.arange(2), indexing="ij"),
                    -1).reshape(-1, 3)
    position = (grid - [1, 1, 0]) * 2.05e-3 + [0.0, 0.0, 1.0e-3]
    add_particles(world, position, rng.uniform(0.95e-3, 1.0e-3, len(grid)),
                  velocity=rng.normal(0, 0.5, grid.shape),
                  angular_velocity=rng.normal(0, 500.0, grid.shape))
    law = HertzMindlinLaw()
    contacts = add_standard_systems(world, law, WallContacts(law), Gravity((0.0, 0.0, -9.81)))
    touching = 0
    for _ in range(steps):
        world.step_once()
        touching += contacts.touching
    p = world.particles
    order = np.argsort(p.gid[:p.n_owned])
    search = next(s for s in world.systems if type(s).__name__ == "NeighborSearch")
    return (p.position[order], p.velocity[order], p.angular_velocity[order], int(touching),
            int(search.builds_done))


def test_plain_python_kernels_give_the_compiled_results(tmp_path):
    compiled = scenario()
    out = tmp_path / "plain.npz"
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, os.path.abspath(__file__), str(out)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    plain = np.load(out)
    assert plain["jit_disabled"]  # numba did run the kernels as Python
    x, v, w, touching, builds = compiled
    assert touching >= 300 and builds >= 2  # contacts and rebuilds happened: not vacuous
    assert int(plain["touching"]) == touching and int(plain["builds"]) == builds
    scale = np.abs(x).max()
    np.testing.assert_allclose(plain["position"], x, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(plain["velocity"], v, rtol=0, atol=1e-11 * np.abs(v).max())
    np.testing.assert_allclose(plain["angular_velocity"], w, rtol=0,
                               atol=1e-11 * np.abs(w).max())


if __name__ == "__main__":
    import numba

    x, v, w, touching, builds = scenario()
    np.savez(sys.argv[1], position=x, velocity=v, angular_velocity=w, touching=touching,
             builds=builds, jit_disabled=bool(numba.config.DISABLE_JIT))
