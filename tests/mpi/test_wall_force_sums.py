"""Wall forces as a SUM field (components.walls, ecs_dem.world): summed over ranks only when read.

Scenario: a granular gas in a box cut along x between the ranks, with walls at
both ends of x and at the bottom and top in z (the z walls are hit from every
rank). Each rank accumulates its particles' share of the force on each wall;
the engine sums the shares at the end of ``run``, before a declared reader
and for a servo wall (``WallMotion`` through ``World.complete_sums``), and
not otherwise.

Checks, against the 1-rank run of the same gas in the same process (where a
share is the whole force): after a run every rank holds the total force on
every wall; a servo wall that reads the summed force every step moves as on
one rank; and with fixed walls only no sum is formed between the end of one
run and the next (one allreduce per run instead of one per step).
"""
import numpy as np
import pytest

from ecs_dem import Box, World
from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts

pytestmark = pytest.mark.mpi(min_size=2)

R = 1e-3  # m
LENGTH, WIDTH = 0.04, 0.01  # m: box x, and y = z
N_X, N_YZ = 16, 4
STEPS = 150
TOP = 3


def gas(comm, servo: bool):
    """Spheres with random velocities (1 m/s per axis) between four walls; the top wall a
    servo holding 2 kPa over the box's cross-section when `servo`."""
    rng = np.random.default_rng(5)
    world = World(Box((0, 0, 0), (LENGTH, WIDTH, WIDTH), (False, True, False)), dt=5e-6,
                  skin=0.2 * R, comm=comm, balance_every=0)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0, restitution=0.7,
                friction=0.5)
    k = np.arange(N_X * N_YZ * N_YZ)
    pos = np.stack([(k % N_X + 0.5) * (LENGTH / N_X),
                    ((k // N_X) % N_YZ + 0.5) * (WIDTH / N_YZ),
                    (k // (N_X * N_YZ) + 0.5) * (WIDTH / N_YZ)], axis=1)
    add_particles(world, pos, R * rng.uniform(0.9, 1.0, k.size), 0,
                  velocity=rng.normal(0, 1.0, pos.shape))
    add_wall(world, (0, 0, 0), (1, 0, 0))
    add_wall(world, (LENGTH, 0, 0), (-1, 0, 0))
    add_wall(world, (0, 0, 0), (0, 0, 1))
    if servo:
        add_wall(world, (0, 0, WIDTH), (0, 0, -1), mode="servo", target_stress=2e3,
                 area=LENGTH * WIDTH, servo_gain=1e-3, max_speed=0.5)
    else:
        add_wall(world, (0, 0, WIDTH), (0, 0, -1))
    law = HertzMindlinLaw()
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), ContactForces(law), WallContacts(law), second):
        world.add_system(s)
    return world


class CountingSums:
    """Wraps a communicator and counts its ``sum`` calls."""

    def __init__(self, comm):
        self.comm = comm
        self.sums = 0

    def __getattr__(self, name):
        return getattr(self.comm, name)

    def sum(self, value):
        self.sums += 1
        return self.comm.sum(value)


@pytest.mark.parametrize("servo", [False, True], ids=["fixed walls", "servo top wall"])
def test_every_rank_holds_the_total_wall_forces_after_a_run(servo):
    """The forces on all four walls equal the 1-rank run's to round-off (the shares are
    added in another order), on every rank; with the servo its wall's path is the same too.
    Both z walls take force from every rank (each rank's share is a real part of it)."""
    comm = default_comm()
    serial, parallel = gas(SerialComm(), servo), gas(comm, servo)
    for world in (serial, parallel):
        world.run(STEPS)
    expected = serial.walls.force
    scale = np.abs(expected).max()
    assert (np.abs(expected).max(axis=1) > 0).all()  # every wall is hit
    got = parallel.walls.force
    assert np.abs(got - expected).max() < 1e-9 * scale, (got, expected)
    for other in comm.world.allgather(got.copy()):
        np.testing.assert_array_equal(other, got)  # the same on every rank
    if servo:
        z_serial, z_parallel = serial.walls.point[TOP, 2], parallel.walls.point[TOP, 2]
        assert z_serial != WIDTH  # the servo moved
        assert abs(z_parallel - z_serial) < 1e-9 * WIDTH


@pytest.mark.parametrize("servo", [False, True], ids=["fixed walls", "servo top wall"])
def test_wall_forces_are_summed_per_step_only_for_a_servo(servo):
    """Fixed walls: one sum per run (at its end), whatever its length. A servo: one per step
    (it reads the previous step's total force before it moves). Each rank's share is only
    part of a z wall's force (checked before the run ends), so a missing sum would show."""
    counting = CountingSums(default_comm())
    world = gas(counting, servo)
    world.setup()
    counting.sums = 0
    world.run(STEPS)
    # servo: steps 2..STEPS sum the previous step's shares (set-up left them summed for
    # step 1), and the end of the run sums the last step's
    assert counting.sums == (STEPS if servo else 1), counting.sums
    # one more step inside run's loop (no sum at its end): each rank holds its share, and the
    # bottom wall's shares of at least two ranks are real parts of its force
    world._advance()
    shares = np.array(world.comm.world.allgather(world.walls.force.copy()))
    world.complete_sums()
    np.testing.assert_allclose(shares.sum(axis=0), world.walls.force, rtol=1e-12, atol=0)
    assert (np.abs(shares[:, 2, 2]) > 0).sum() >= 2, shares[:, 2]
