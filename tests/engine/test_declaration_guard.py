"""Debug mode (ecs_dem/declaration_guard.py): undeclared writes and structural changes fail."""
import numpy as np
import pytest

from ecs_dem import Box, Field, Halo, Stage, System, World
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.declaration_guard import DeclarationError
from ecs_dem.system import DeclarationFrozen


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


# ---------------------------------------------------------------- undeclared ghost reads
class GhostRadiusSum(System):
    """Adds to every owned row's force the sum of the ghost rows' radii (a toy pair term
    between owned rows and ghosts), declaring the ghost read or not."""

    stage = Stage.FORCES
    accumulates_owned = {"particles": ("force",)}

    def __init__(self, declare: bool, field: str = "radius"):
        self.field = field
        self.reads_ghosts = {"particles": ("position", field) if declare else ("position",)}

    def interaction_range(self, world):
        return 0.2

    def run(self, world):
        p = world.particles
        ghosts = p.with_ghosts(self.field)[p.n_owned:]
        p.owned("force")[:, 0] += ghosts.sum()


class GhostSpeciesCopy(System):
    """Writes the largest species of the ghost rows into every owned row's tag."""

    stage = Stage.FORCES
    reads_ghosts = {"particles": ("position",)}
    writes = {"particles": ("tag",)}

    def interaction_range(self, world):
        return 0.2

    def run(self, world):
        p = world.particles
        p.owned("tag")[...] = p.with_ghosts("species")[p.n_owned:].max()


class GhostVelocityWrite(System):
    """Sets the velocity of the ghost rows, which it does not declare."""

    stage = Stage.FORCES
    reads_ghosts = {"particles": ("position",)}

    def interaction_range(self, world):
        return 0.2

    def run(self, world):
        p = world.particles
        p.with_ghosts("velocity")[p.n_owned:] = 0.0


def periodic_world(debug=True):
    """Particles in a periodic unit box on one rank: their periodic images are ghost rows."""
    world = World(Box((0, 0, 0), (1, 1, 1), (True, True, True)), dt=1e-3, debug=debug)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    rng = np.random.default_rng(3)
    add_particles(world, rng.uniform(0.05, 0.95, (40, 3)), rng.uniform(0.005, 0.015, 40),
                  velocity=rng.normal(0, 0.1, (40, 3)))
    world.particles.add_field(Field("tag", np.int32, (), Halo.LOCAL, 0))
    return world


def test_undeclared_ghost_read_fails_naming_system_field_and_fix():
    world = periodic_world()
    world.add_system(GhostRadiusSum(declare=False))
    with pytest.raises(DeclarationError, match=r"GhostRadiusSum reads ghost rows of "
                                               r"'particles.radius'.*GhostRadiusSum.reads_ghosts"):
        world.setup()
    p = world.particles
    assert p.n_ghost > 0
    # the poison is gone from the ghost rows, even though the system failed
    ghost_radii = p.with_ghosts("radius")[p.n_owned:]
    assert np.all(np.isfinite(ghost_radii)) and ghost_radii.min() >= 0.005


def test_declared_ghost_read_passes_with_the_ghost_values():
    world = periodic_world()
    world.add_system(GhostRadiusSum(declare=True))
    before = {f: world.particles.owned(f).copy() for f in ("radius", "velocity")}  # by gid
    world.setup()
    p = world.particles
    images = p.with_ghosts("gid")[p.n_owned:]
    expected = before["radius"][images].sum()  # a ghost is an image of the owned row of its gid
    assert p.n_ghost > 0
    np.testing.assert_allclose(p.owned("force")[:, 0], expected, rtol=1e-12)
    # the undeclared fields' ghost rows are back, bit for bit
    np.testing.assert_array_equal(p.with_ghosts("velocity")[p.n_owned:], before["velocity"][images])


def test_undeclared_integer_ghost_read_fails():
    world = periodic_world()
    world.add_system(GhostSpeciesCopy())
    with pytest.raises(DeclarationError, match=r"GhostSpeciesCopy reads ghost rows of "
                                               r"'particles.species'.*reads_ghosts"):
        world.setup()


def test_ghost_read_of_a_local_field_says_to_make_it_forward():
    world = periodic_world()
    world.particles.add_field(Field("charge", np.float64, (), Halo.LOCAL, 1.0))
    world.add_system(GhostRadiusSum(declare=False, field="charge"))
    with pytest.raises(DeclarationError, match=r"'particles.charge'.*local.*make the field "
                                               r"forward.*or read owned rows only"):
        world.setup()


def test_undeclared_write_into_poisoned_ghost_rows_still_fails():
    world = periodic_world()
    world.add_system(GhostVelocityWrite())
    with pytest.raises(DeclarationError, match=r"GhostVelocityWrite changed 'particles.velocity'"):
        world.setup()


def test_without_debug_the_ghost_rows_are_left_alone():
    world = periodic_world(debug=False)
    radius = world.particles.radius.copy()  # by gid: rows are still in gid order
    system = world.add_system(GhostRadiusSum(declare=False))
    world.setup()
    p = world.particles
    images = p.with_ghosts("gid")[p.n_owned:]
    np.testing.assert_allclose(p.owned("force")[:, 0], radius[images].sum(), rtol=1e-12)
    assert system.reads_ghosts == {"particles": ("position",)}


# ------------------------------------------------------- declarations freeze after set-up
class LateDeclarer(System):
    """Declares in ``declare`` what depends on the world: the tag field, if there is one."""

    stage = Stage.FORCES

    def declare(self, world):
        if world.particles.has_field("tag"):
            self.writes = {"particles": ("tag",)}

    def run(self, world):
        if self.writes:
            world.particles.tag[:] += 1


class SetupDeclarer(LateDeclarer):
    """Changes its declarations in ``setup``, which the world refuses."""

    def setup(self, world):
        self.writes = {"particles": ("tag",)}


def test_declarations_from_declare_are_used_then_frozen():
    world = small_world()
    system = world.add_system(LateDeclarer())
    world.run(2)
    assert system.writes == {"particles": ("tag",)}
    assert np.all(world.particles.tag == 3)  # set-up pass + 2 steps
    with pytest.raises(DeclarationFrozen, match=r"LateDeclarer.writes.*frozen.*declare\(world\)"):
        system.writes["particles"] = ("tag", "position")
    with pytest.raises(DeclarationFrozen, match=r"LateDeclarer.reads_ghosts"):
        system.reads_ghosts.setdefault("particles", ("radius",))
    with pytest.raises(DeclarationFrozen, match=r"LateDeclarer.accumulates = \.\.\..*frozen"):
        system.accumulates = {"particles": ("force",)}
    with pytest.raises(DeclarationFrozen, match=r"LateDeclarer.builds"):
        system.builds = ("particles",)
    assert system.writes == {"particles": ("tag",)} and not system.accumulates
    system.every = 1  # other attributes stay free


def test_a_system_added_after_set_up_is_frozen_too():
    world = small_world()
    world.setup()
    system = world.add_system(LateDeclarer())
    with pytest.raises(DeclarationFrozen, match="LateDeclarer.reads"):
        system.reads["particles"] = ("radius",)


def test_declarations_changed_in_setup_are_refused():
    world = small_world()
    world.add_system(SetupDeclarer())
    with pytest.raises(DeclarationFrozen, match=r"SetupDeclarer.setup changed writes.*declare"):
        world.setup()


class LateTagger(System):
    """Writes `tag` without declaring it, only on the calls `when(call)` picks."""

    stage = Stage.FORCES

    def __init__(self, when):
        self.when, self.calls = when, 0

    def run(self, world):
        if self.when(self.calls):
            world.particles.tag[3] += 1
        self.calls += 1


def test_a_system_that_misbehaves_every_tenth_call_after_the_first_ones_is_caught():
    """Calls past FIRST_CALLS are sampled every STRIDE-th (a prime): a system acting every
    10 steps is checked on an acting call within 10 STRIDE calls."""
    from ecs_dem import declaration_guard as dg

    world = small_world()
    tagger = world.add_system(LateTagger(lambda c: c >= 2 * dg.FIRST_CALLS and c % 10 == 0))
    with pytest.raises(DeclarationError, match="LateTagger changed 'particles.tag'"):
        world.run(2 * dg.FIRST_CALLS + 10 * dg.STRIDE)
    assert tagger.calls % 10 == 1 and tagger.calls % dg.STRIDE == 1  # caught on a stride call


def test_the_call_after_a_structural_change_is_checked():
    """A system that misbehaves only on its first call after the particles' rows changed
    (a cache rebuilt per epoch) is caught, though that call is not a stride call."""
    from ecs_dem import declaration_guard as dg

    world = small_world()
    seen = {"epoch": None}

    def after_change(call):
        epoch = world.particles.epoch
        changed = seen["epoch"] is not None and epoch != seen["epoch"]
        seen["epoch"] = epoch
        return changed

    tagger = world.add_system(LateTagger(after_change))
    world.setup()
    world.run(2 * dg.FIRST_CALLS)
    call = tagger.calls
    while call % dg.STRIDE == 0 or (call + 1) % dg.STRIDE == 0:
        world.run(1)
        call = tagger.calls
    world.particles.append(1, position=np.full(3, 0.5), radius=0.01, mass=1.0)
    with pytest.raises(DeclarationError, match="LateTagger changed 'particles.tag'"):
        world.run(1)


def test_calls_past_the_first_are_sampled_and_all_checks_every_one(monkeypatch):
    from ecs_dem import declaration_guard as dg

    world = small_world()
    world.add_system(Tagger(declare=True))
    world.run(300)
    calls = world.guard.checked + world.guard.skipped
    expected = dg.FIRST_CALLS + sum(1 for c in range(dg.FIRST_CALLS, calls) if c % dg.STRIDE == 0)
    assert world.guard.checked == expected < calls / 4
    monkeypatch.setenv("ECS_DEM_DEBUG", "all")
    every = small_world()
    every.add_system(Tagger(declare=True))
    every.run(300)
    assert every.guard.skipped == 0 and every.guard.checked == calls
