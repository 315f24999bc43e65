"""Debug mode on several ranks: an undeclared read of ghost rows, copies of the other rank's
particles, fails on every rank; the declared read gets the owners' values.

Scenario: 300 spheres scattered in a closed unit box, built alike on every rank; a toy
FORCES system adds to each owned row's force the sum of the radii of the rank's ghost rows.
"""
import numpy as np
import pytest

from ecs_dem import Box, Stage, System, World
from ecs_dem.comm import default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.declaration_guard import DeclarationError

pytestmark = pytest.mark.mpi(min_size=2)


class GhostRadiusSum(System):
    stage = Stage.FORCES
    accumulates_owned = {"particles": ("force",)}

    def __init__(self, declare: bool):
        self.reads_ghosts = {"particles": ("position", "radius") if declare else ("position",)}

    def interaction_range(self, world):
        return 0.15

    def run(self, world):
        p = world.particles
        p.owned("force")[:, 0] += p.with_ghosts("radius")[p.n_owned:].sum()


def scattered(system):
    world = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-3, comm=default_comm(), debug=True)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    rng = np.random.default_rng(5)
    radius = rng.uniform(0.005, 0.015, 300)
    add_particles(world, rng.uniform(0.05, 0.95, (300, 3)), radius)
    world.add_system(system)
    return world, radius  # radius by gid


def test_declared_ghost_read_sums_the_owners_radii():
    world, radius = scattered(GhostRadiusSum(declare=True))
    world.setup()
    p = world.particles
    assert world.comm.min(p.n_ghost) > 0  # every rank has copies of the other's rows
    expected = radius[p.with_ghosts("gid")[p.n_owned:]].sum()
    np.testing.assert_allclose(p.owned("force")[:, 0], expected, rtol=1e-12)


def test_undeclared_ghost_read_fails_on_every_rank():
    # the same world as above, where every rank has ghost rows: each fails in the same system,
    # before the next collective
    world, _ = scattered(GhostRadiusSum(declare=False))
    with pytest.raises(DeclarationError, match=r"GhostRadiusSum reads ghost rows of "
                                               r"'particles.radius'.*reads_ghosts"):
        world.setup()
