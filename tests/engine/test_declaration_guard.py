"""Debug mode (ecs_dem/declaration_guard.py): undeclared writes and structural changes fail."""
import numpy as np
import pytest

from ecs_dem import Box, Field, Halo, Stage, System, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.declaration_guard import DeclarationError


def small_world(debug=True):
    world = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-3, debug=debug)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, np.random.default_rng(1).uniform(0.1, 0.9, (20, 3)), 0.01)
    world.particles.add_field(Field("tag", np.int32, (), Halo.LOCAL, 0))
    return world


class Tagger(System):
    stage = Stage.FORCES

    def __init__(self, declare: bool):
        if declare:
            self.writes = {"particles": ("tag",)}

    def run(self, world):
        world.particles.tag[3] += 1


class Appender(System):
    stage = Stage.OUTPUT

    def run(self, world):
        world.particles.append(1, position=np.full(3, 0.5), radius=0.01, mass=1.0)


def test_undeclared_write_fails_naming_system_field_and_fix():
    world = small_world()
    world.add_system(Tagger(declare=False))
    with pytest.raises(DeclarationError, match=r"Tagger changed 'particles.tag'.*Tagger.writes"):
        world.run(1)


def test_declared_write_passes_and_takes_effect():
    world = small_world()
    world.add_system(Tagger(declare=True))
    world.run(3)
    assert world.particles.tag.sum() == 4  # set-up pass + 3 steps


def test_undeclared_structural_change_fails_and_debug_off_lets_it_pass():
    world = small_world()
    world.add_system(Appender())
    with pytest.raises(DeclarationError, match="rows of table 'particles'.*builds"):
        world.run(1)
    quiet = small_world(debug=False)
    quiet.add_system(Appender())
    quiet.run(1)
    assert quiet.particles.n_owned == 22


def test_the_suite_runs_in_debug_mode():
    assert World(Box((0, 0, 0), (1, 1, 1)), dt=1e-3).debug


class ImageForce(System):
    """Adds into the force of every ghost row (a periodic image), declaring `declaration`."""

    stage = Stage.FORCES

    def __init__(self, declaration):
        setattr(self, declaration, {"particles": ("force",)})

    def interaction_range(self, world):
        return 0.2

    def run(self, world):
        p = world.particles
        p.with_ghosts("force")[p.n_owned:] += 1.0


def test_accumulating_into_ghost_rows_declared_owned_only_fails():
    world = World(Box((0, 0, 0), (1, 1, 1), (True, True, True)), dt=1e-3, debug=True)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, np.random.default_rng(1).uniform(0.05, 0.95, (40, 3)), 0.01)
    world.add_system(ImageForce("accumulates_owned"))
    with pytest.raises(DeclarationError, match=r"ImageForce added into ghost rows of "
                                               r"'particles.force'.*accumulates_owned"):
        world.run(1)


def test_accumulating_into_ghost_rows_declared_accumulates_passes():
    world = World(Box((0, 0, 0), (1, 1, 1), (True, True, True)), dt=1e-3, debug=True)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    add_particles(world, np.random.default_rng(1).uniform(0.05, 0.95, (40, 3)), 0.01)
    world.add_system(ImageForce("accumulates"))
    world.run(1)
    assert world.particles.n_ghost > 0
