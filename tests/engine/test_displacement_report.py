"""The rebuild check reported by the system that moves the rows (System.reports_displacement,
Domain.report_displacement): taken only while that system is the last to move them, and
deciding the same rebuilds as the domain's own pass (ecs_dem/world.py, ecs_dem/domain.py)."""
import numpy as np
import pytest

from ecs_dem import Box, Stage, StateError, System, World
from ecs_dem import domain as domain_module
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.systems.integration.velocity_verlet import IntegrateFirstHalf, velocity_verlet

SKIN = 0.05
DT = 1e-3


class Unreported(IntegrateFirstHalf):
    """The same first half, not reporting: the domain scans the rows itself."""

    reports_displacement = ()


class Range(System):
    """A pair range, so that the world has ghost rows and a skin to check."""

    stage = Stage.FORCES
    reads = {"particles": ("position",)}

    def interaction_range(self, world):
        return 0.1

    def run(self, world) -> None:
        pass


class Jump(System):
    """Moves every owned row by `shift` (m) along x at the steps in `at`, after the first half."""

    stage = Stage.INTEGRATE_FIRST
    writes = {"particles": ("position",)}

    def __init__(self, at, shift):
        self.at, self.shift = set(at), shift

    def run(self, world) -> None:
        if world.step in self.at:
            world.particles.position[:, 0] += self.shift


def drifting_world(first, extra=()):
    """Particles in a periodic box, each at its own constant speed: displacements grow
    linearly, so the step at which one passes skin/2 is known from the speeds alone."""
    rng = np.random.default_rng(5)
    world = World(Box((-1, -1, -1), (1, 1, 1), (True, True, True)), dt=DT, skin=SKIN)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    n = 60
    add_particles(world, rng.uniform(-0.9, 0.9, (n, 3)), 0.01,
                  velocity=rng.uniform(-1.0, 1.0, (n, 3)))
    _, second = velocity_verlet()
    for s in (first, *extra, Range(), second):
        world.add_system(s)
    return world


def rebuild_steps(world, steps):
    out = []
    for _ in range(steps):
        world.step_once()
        if world.rebuilt_this_step:
            out.append(world.step)
    return out


def count_scans(monkeypatch):
    calls = []
    scan = domain_module.hk.max_displacement_sq

    def counted(position, reference):
        calls.append(position.shape[0])
        return scan(position, reference)
    monkeypatch.setattr(domain_module.hk, "max_displacement_sq", counted)
    return calls


def test_the_report_decides_the_rebuilds_the_scan_decides_without_scanning(monkeypatch):
    world = drifting_world(Unreported())
    world.setup()
    speeds = np.linalg.norm(world.particles.velocity, axis=1)
    unreported = rebuild_steps(world, 100)
    # constant speeds: the fastest row passes skin/2 first, at step ceil(skin / 2 / (v dt))
    first_due = int(np.ceil(0.5 * SKIN / (speeds.max() * DT) - 1e-9))
    assert unreported[0] in (first_due, first_due + 1)  # the last digit of the crossing
    assert len(unreported) >= 3

    calls = count_scans(monkeypatch)
    world = drifting_world(IntegrateFirstHalf())
    world.setup()
    reported = rebuild_steps(world, 100)
    assert reported == unreported
    assert calls == []  # every step's check came from the report


def test_a_later_system_moving_the_rows_makes_the_world_scan_them_itself(monkeypatch):
    calls = count_scans(monkeypatch)
    world = drifting_world(IntegrateFirstHalf(), extra=[Jump(at=[3], shift=0.6 * SKIN)])
    world.setup()
    steps = rebuild_steps(world, 5)
    assert len(calls) == 5  # the report is stale once Jump may have moved the rows
    # no row drifts skin/2 before step 10 (speeds below 2 m/s); the jump passes it at
    # step 3, which only the domain's own pass over the rows sees
    assert np.linalg.norm(world.particles.velocity, axis=1).max() < 2.0
    assert steps == [3]


def test_a_non_finite_position_in_the_report_names_its_gid():
    world = drifting_world(IntegrateFirstHalf())
    world.setup()
    world.step_once()
    p = world.particles
    p.force[4] = np.inf
    gid = int(p.gid[4])
    with pytest.raises(StateError, match=f"gid {gid} has a non-finite position"):
        world.step_once()


def static_world():
    """Particles that no system moves (only a pair range reads them): a static table."""
    world = World(Box((-1, -1, -1), (1, 1, 1)), dt=DT, skin=SKIN)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    add_particles(world, np.random.default_rng(2).uniform(-0.8, 0.8, (40, 3)), 0.01)
    world.add_system(Range())
    return world


def test_rows_no_system_moves_are_not_scanned_during_a_run(monkeypatch):
    world = static_world()
    world.setup()
    assert world.rebuilder.static_tables() == {"particles"}
    calls = count_scans(monkeypatch)
    world.run(10)
    assert len(calls) == 1  # the first check of the run only


def test_static_rows_moved_by_hand_between_runs_are_rebuilt():
    world = static_world()
    world.run(2)
    built = world.domain.rebuild_count
    world.particles.position[0, 0] += 0.6 * SKIN  # past skin/2: the lists would be stale
    world.run(1)
    assert world.domain.rebuild_count == built + 1
    world.particles.position[0, 0] += 0.6 * SKIN
    world.step_once()
    assert world.domain.rebuild_count == built + 2
    world.step_once()
    assert world.domain.rebuild_count == built + 2  # nothing moved since


def test_a_system_that_writes_positions_makes_its_table_scanned(monkeypatch):
    world = static_world()
    world.add_system(Jump(at=[4], shift=0.6 * SKIN))
    world.setup()
    assert world.rebuilder.static_tables() == frozenset()
    calls = count_scans(monkeypatch)
    built = world.domain.rebuild_count
    world.run(6)
    assert len(calls) == 6 and world.domain.rebuild_count == built + 1
