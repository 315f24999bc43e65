"""World: declarations validated, and the planned halo operations executed on real data.

The plans themselves (which operation goes where) are tested without a World in
test_planner.py; here a world runs them and the systems check what they find.
"""
import numpy as np
import pytest

from ecs_dem import Box, Field, Halo, InputError, Stage, System, World
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

GHOST_RANGE = 0.3  # interaction range of the probe systems below: gives ghost rows


def periodic_world(rng, n=40, periodic=(True, True, True), debug=None):
    """Particles scattered in a periodic 2 m box; no physics systems."""
    world = World(Box((-1, -1, -1), (1, 1, 1), periodic), dt=1e-3, skin=0.05, debug=debug)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    add_particles(world, rng.uniform(-0.99, 0.99, (n, 3)), 0.01)
    return world


class Probe(System):
    """Base of the probes: a range so that the world builds ghosts."""

    def interaction_range(self, world):
        return GHOST_RANGE


def ghost_owner_rows(world):
    p = world.particles
    ghost_gids = p.with_ghosts("gid")[p.n_owned:]
    return p.rows_of(ghost_gids)


# ---------------------------------------------------------------- validation
def _declaring(**decl):
    return type("Bad", (System,), dict(stage=Stage.FORCES, run=lambda self, w: None, **decl))()


@pytest.mark.parametrize("decl, words", [
    (dict(reads={"grains": ("position",)}), ["grains", "reads"]),
    (dict(writes={"particles": ("colour",)}), ["particles.colour", "writes"]),
    (dict(reads_ghosts={"particles": ("tag",)}), ["particles.tag", "local"]),
    (dict(reads_ghosts={"particles": ("force",)}), ["particles.force", "reverse"]),
    (dict(accumulates={"particles": ("velocity",)}), ["particles.velocity", "forward"]),
    (dict(accumulates={"particles": ("tag",)}), ["particles.tag", "local"]),
])
def test_bad_declarations_raise_input_error_naming_them(rng, decl, words):
    world = periodic_world(rng)
    world.particles.add_field(Field("tag", np.int64, (), Halo.LOCAL))
    bad = _declaring(**decl)
    world.add_system(bad)
    with pytest.raises(InputError) as err:
        world.setup()
    msg = str(err.value)
    assert "Bad" in msg
    for w in words:
        assert w in msg, msg


def test_bad_declaration_added_after_setup_is_refused(rng):
    world = periodic_world(rng)
    world.setup()
    with pytest.raises(InputError, match="nowhere"):
        world.add_system(_declaring(reads={"nowhere": ("x",)}))


class GhostImages(System):
    """Valid declarations of every kind a force system uses: checks that ghost positions are
    periodic images of their owners' and adds 1 into the force of every row it sees."""

    stage = Stage.FORCES
    reads = {"particles": ("mass",)}
    reads_ghosts = {"particles": ("position", "gid")}
    accumulates = {"particles": ("force",)}

    def __init__(self):
        self.offsets = []

    def interaction_range(self, world):
        return GHOST_RANGE

    def run(self, world):
        p = world.particles
        x = p.with_ghosts("position")
        self.offsets.append((x[p.n_owned:] - x[ghost_owner_rows(world)]) / 2.0)  # box side 2 m
        p.with_ghosts("force")[:, 0] += 1.0


def test_valid_declarations_pass_and_the_system_gets_what_they_declare(rng):
    world = periodic_world(rng)
    probe = world.add_system(GhostImages())
    world.setup()
    p = world.particles
    assert len(probe.offsets) == 1 and p.n_ghost > 0
    # every ghost row is its owner shifted by whole box lengths (a periodic image)
    offsets = probe.offsets[0]
    assert offsets.shape == (p.n_ghost, 3)
    assert set(offsets.ravel().tolist()) <= {-1.0, 0.0, 1.0}
    assert (offsets != 0).any(axis=1).all()
    # the accumulation was zeroed, then reversed at the end of the pass: one unit per row
    # the particle is seen as (itself and each image)
    images = np.bincount(p.with_ghosts("gid")[p.n_owned:], minlength=p.next_gid)
    np.testing.assert_array_equal(p.force[:, 0], 1.0 + images[p.gid])
    np.testing.assert_array_equal(p.force[:, 1:], 0.0)


# ---------------------------------------------------------------- scheduling
class Garbage(Probe):
    """Writes garbage into force (owned and ghost rows) after the step's forces, in OUTPUT."""

    stage = Stage.OUTPUT
    writes = {"particles": ("force",)}

    def run(self, world):
        world.particles.with_ghosts("force")[...] = 1234.5


class AddOne(Probe):
    """Accumulates +1 into `field` on every row it sees, recording what it found on entry."""

    def __init__(self, field="force"):
        self.field = field
        self.accumulates = {"particles": (field,)}
        self.seen = []

    def run(self, world):
        f = world.particles.with_ghosts(self.field)
        self.seen.append(f.copy())
        f += 1.0


def test_reverse_field_zeroed_before_first_accumulation_only(rng):
    world = periodic_world(rng)
    first, second = AddOne(), AddOne()
    world.add_system(first)
    world.add_system(second)
    world.add_system(Garbage())
    world.setup()
    assert world.particles.n_ghost > 0
    world.run(3)
    assert len(first.seen) == 4  # set-up force pass + 3 steps
    for a, b in zip(first.seen, second.seen):
        # the first accumulator of the step finds zeros on owned and ghost rows (not the garbage)
        assert np.all(a == 0.0)
        # the second is not zeroed again: it sees the first one's contribution
        assert np.all(b == 1.0)


class GarbageBoth(Garbage):
    writes = {"particles": ("force", "torque")}

    def run(self, world):
        super().run(world)
        world.particles.with_ghosts("torque")[...] = -99.0


def test_a_tables_later_accumulators_find_zeros_when_zeroed_with_its_first(rng):
    # the plan zeroes torque with force, before the first accumulator (test_planner.py)
    world = periodic_world(rng)
    force, torque = AddOne(), AddOne("torque")
    for s in (force, torque, GarbageBoth()):
        world.add_system(s)
    world.setup()
    world.run(3)
    assert len(torque.seen) == 4  # set-up force pass + 3 steps
    for a, b in zip(force.seen, torque.seen):  # zeros on owned and ghost rows, not the garbage
        assert a.shape[0] > world.particles.n_owned
        assert np.all(a == 0.0) and np.all(b == 0.0)


class WriteTemperature(Probe):
    """Writes a FORWARD field on owned rows: a value that changes every step."""

    writes = {"particles": ("temperature",)}

    def run(self, world):
        p = world.particles
        p.temperature[:] = 1000.0 * world.step + p.gid


class ReadTemperatureGhosts(Probe):
    reads_ghosts = {"particles": ("temperature", "gid")}

    def __init__(self):
        self.errors = []

    def run(self, world):
        p = world.particles
        t = p.with_ghosts("temperature")
        owner = ghost_owner_rows(world)
        self.errors.append(np.abs(t[p.n_owned:] - t[owner]).max())


class ReadTemperatureOwnedOnly(ReadTemperatureGhosts):
    """Same check, but the declaration only claims owned rows: the scheduler owes it nothing."""

    reads_ghosts = {}
    reads = {"particles": ("temperature",)}


def _temperature_world(rng, reader, debug=None):
    world = periodic_world(rng, debug=debug)
    world.particles.add_field(Field("temperature", np.float64, (), Halo.FORWARD, -1.0))
    world.add_system(WriteTemperature())
    world.add_system(reader)
    world.setup()
    assert world.particles.n_ghost > 0
    return world


def test_forward_field_written_earlier_is_forwarded_before_a_ghost_read(rng):
    reader = ReadTemperatureGhosts()
    world = _temperature_world(rng, reader)
    world.run(3)
    assert len(reader.errors) == 4
    assert max(reader.errors) == 0.0


def test_undeclared_ghost_read_sees_stale_values(rng):
    # control for the test above: without the declaration no forward happens, the ghosts lag
    # (outside debug mode, whose guard would poison the undeclared ghost rows it reads)
    reader = ReadTemperatureOwnedOnly()
    world = _temperature_world(rng, reader, debug=False)
    world.run(3)
    assert max(reader.errors[1:]) > 0.0


class RewriteTemperatureLate(WriteTemperature):
    """Writes the field again after the force readers: an OUTPUT reader needs a new forward."""

    stage = Stage.INTEGRATE_SECOND

    def run(self, world):
        p = world.particles
        p.temperature[:] = 1000.0 * world.step + p.gid + 0.5


class OutputReadTemperatureGhosts(ReadTemperatureGhosts):
    stage = Stage.OUTPUT

    def __init__(self, every):
        super().__init__()
        self.every = every


def test_replayed_schedules_stay_correct_when_output_runs_only_some_steps(rng):
    # steps alternate between two compiled runs (with and without the output system); each
    # replay must still forward the field before every ghost read, and a system added later
    # must get its own operations
    world = periodic_world(rng)
    world.particles.add_field(Field("temperature", np.float64, (), Halo.FORWARD, -1.0))
    world.add_system(WriteTemperature())
    forces_reader = world.add_system(ReadTemperatureGhosts())
    world.add_system(RewriteTemperatureLate())
    output_reader = world.add_system(OutputReadTemperatureGhosts(every=3))
    world.run(7)
    late_reader = world.add_system(OutputReadTemperatureGhosts(every=2))
    world.run(4)
    assert len(forces_reader.errors) == 12 and max(forces_reader.errors) == 0.0
    assert len(output_reader.errors) == 1 + 11 // 3 and max(output_reader.errors) == 0.0
    assert len(late_reader.errors) == 2 and max(late_reader.errors) == 0.0


class GhostOnlyForce(Probe):
    """Accumulates 1 into the x force of every ghost row and nothing into owned rows."""

    def __init__(self, declaration="accumulates"):
        setattr(self, declaration, {"particles": ("force",)})

    def run(self, world):
        p = world.particles
        p.with_ghosts("force")[p.n_owned:, 0] += 1.0


class ImageShareForce(Probe):
    """Adds 1 into the x force of each ghost row's home row (an owned row; ``home_rows``)."""

    accumulates_owned = {"particles": ("force",)}

    def run(self, world):
        p = world.particles
        home = world.domain.home_rows(p)[p.n_owned:]
        np.add.at(p.with_ghosts("force")[:, 0], home[home >= 0], 1.0)


class ReadForce(Probe):
    def __init__(self, stage):
        self.stage = stage
        self.reads = {"particles": ("force", "gid")}
        self.seen = []

    def run(self, world):
        p = world.particles
        self.seen.append(dict(zip(p.gid.tolist(), p.force[:, 0].tolist())))


@pytest.mark.parametrize("stage", [Stage.FORCES, Stage.INTEGRATE_SECOND])
@pytest.mark.parametrize("adder, reverses", [
    (lambda: GhostOnlyForce("accumulates"), [("force",)] * 2),
    (ImageShareForce, []),
])
def test_reverse_reduction_before_owner_read(rng, monkeypatch, stage, adder, reverses):
    """Each owner ends with one unit per periodic image of it: through the reverse its
    declaration calls for, or (``accumulates_owned``) added at home with no reverse."""
    world = periodic_world(rng)
    world.add_system(adder())
    reader = world.add_system(ReadForce(stage))
    world.setup()
    calls = []
    original = world.domain.reverse
    monkeypatch.setattr(world.domain, "reverse",
                        lambda t, names: (calls.append(tuple(names)), original(t, names))[1])
    p = world.particles
    assert p.n_ghost > 0
    # expected: each owner receives one unit per ghost image of it
    images = np.bincount(p.with_ghosts("gid")[p.n_owned:], minlength=p.next_gid)
    world.run(2)
    for seen in reader.seen:
        got = np.array([seen[g] for g in range(p.next_gid)])
        np.testing.assert_array_equal(got, images.astype(float))
    assert images.max() >= 2  # some corner images, reduced through the staged ghosts
    assert calls == reverses  # one reverse a step, or none


class SampledForceRead(ReadForce):
    """Reads the owners' force in FORCES every `every` steps, between two accumulations."""

    def __init__(self, every):
        super().__init__(Stage.FORCES)
        self.every = every
        self.steps = []

    def run(self, world):
        super().run(world)
        self.steps.append(world.step)


def test_a_forces_system_runs_every_few_steps_and_its_reduction_only_then(rng, monkeypatch):
    """A probe between two ghost accumulations costs an extra reverse reduction of force on
    the steps it samples, and none on the others; what it sees is complete on both."""
    world = periodic_world(rng)
    world.add_system(GhostOnlyForce())
    probe = world.add_system(SampledForceRead(every=3))
    world.add_system(GhostOnlyForce())
    world.setup()
    p = world.particles
    images = np.bincount(p.with_ghosts("gid")[p.n_owned:], minlength=p.next_gid)
    calls = []
    original = world.domain.reverse
    monkeypatch.setattr(world.domain, "reverse",
                        lambda t, names: (calls.append((world.step, tuple(names))),
                                          original(t, names))[1])
    world.run(7)
    assert probe.steps == [0, 3, 6]
    per_step = np.bincount([s for s, names in calls if "force" in names], minlength=8)
    assert per_step[1:].tolist() == [1, 1, 2, 1, 1, 2, 1]  # steps 1..7
    for seen in probe.seen[1:]:  # one accumulation reduced before the probe
        got = np.array([seen[g] for g in range(p.next_gid)])
        np.testing.assert_array_equal(got, images.astype(float))


def test_describe_schedule_lists_inserted_operations(rng):
    world = periodic_world(rng)
    world.particles.add_field(Field("temperature", np.float64, (), Halo.FORWARD))
    world.add_system(WriteTemperature())
    world.add_system(ReadTemperatureGhosts())
    world.add_system(GhostOnlyForce())
    world.add_system(ReadForce(Stage.INTEGRATE_SECOND))
    text = world.describe_schedule()
    steady = text.split("one time step (steady state):")[1]
    assert "forward particles.temperature" in steady
    assert "zero particles.force" in steady
    assert "reverse particles.force" in steady
    # the order in the plan: forward right before the reader, reverse before the owner read
    lines = [ln.strip() for ln in steady.splitlines()]
    i_fwd = lines.index("forward particles.temperature")
    assert lines[i_fwd + 1].startswith("ReadTemperatureGhosts")
    i_rev = lines.index("reverse particles.force")
    assert lines[i_rev + 1].startswith("ReadForce")


# ---------------------------------------------------------------- a user system
class ConstantForce(System):
    """A user's new physics: a constant force on every free particle (no engine change)."""

    stage = Stage.FORCES
    reads = {"particles": ("fixed",)}
    accumulates = {"particles": ("force",)}

    def __init__(self, force):
        self.force = np.asarray(force, dtype=float)

    def run(self, world):
        p = world.particles
        p.force[~p.fixed] += self.force


def test_custom_constant_force_system_gives_uniform_acceleration(rng):
    world = periodic_world(rng, n=5, periodic=(False, False, False))
    p = world.particles
    x0 = p.position.copy()
    v0 = rng.normal(size=(5, 3)) * 0.1
    v0[2] = (0.0, 1e-3, 0.0)  # a fixed particle feels no force and moves at its own velocity
    p.velocity[:] = v0
    p.fixed[2] = True
    force = np.array([0.0, 2e-6, -4e-6])
    first, second = velocity_verlet()
    world.add_system(first)
    world.add_system(ConstantForce(force))
    world.add_system(second)
    steps = 50
    world.run(steps)
    t = steps * world.dt
    order = p.rows_of(np.arange(5))
    x = p.position[order]
    m = p.mass[order][:, None]
    expected = x0 + v0 * t + 0.5 * force / m * t * t
    expected[2] = x0[2] + v0[2] * t
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-13)
    np.testing.assert_allclose(p.velocity[order][[0, 1, 3, 4]],
                               (v0 + force / m * t)[[0, 1, 3, 4]], rtol=1e-12)
    np.testing.assert_array_equal(p.velocity[order][2], v0[2])


class CountNeighbourBuilds(System):
    stage = Stage.NEIGHBORS

    def __init__(self):
        self.count = 0

    def run(self, world):
        self.count += 1


class AskRebuildEvery(System):
    stage = Stage.INTEGRATE_FIRST

    def __init__(self, every):
        self.every = every

    def run(self, world):
        if world.step % self.every == 0:
            world.request_rebuild()


def test_request_rebuild_rebuilds_at_that_step_only(rng):
    # particles at rest never move half a skin: only the requests (steps 3, 6, 9) and set-up
    # rebuild the domain and run the neighbour systems
    world = World(Box((-1,) * 3, (1,) * 3), dt=1e-3, skin=0.1)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    create_particle_table(world)
    add_particles(world, rng.uniform(-0.5, 0.5, (20, 3)), 0.01)
    counter = CountNeighbourBuilds()
    first, second = velocity_verlet()
    for s in (AskRebuildEvery(3), first, counter, second):
        world.add_system(s)
    world.setup()
    rebuilt = []
    for _ in range(10):
        world.step_once()
        rebuilt.append(world.rebuilt_this_step)
    assert rebuilt == [s % 3 == 0 for s in range(1, 11)]
    assert counter.count == 1 + 3


# ---------------------------------------------------------------- SUM fields
def test_sum_fields_are_accumulated_only_through_accumulates_on_a_whole_table(rng):
    """A SUM field (Halo.SUM) sums shares of a table every rank holds whole: accumulating
    into it with accumulates_owned, or declaring one on a spatial table, is refused."""
    from ecs_dem.components.walls import add_wall

    for decl, words in ((dict(accumulates_owned={"walls": ("force",)}),
                         ["walls.force", "accumulates_owned", "SUM"]),
                        (dict(accumulates={"particles": ("share",)}),
                         ["particles.share", "no position column"])):
        world = periodic_world(rng, periodic=(True, True, False))
        world.particles.add_field(Field("share", np.float64, (), Halo.SUM))
        add_wall(world, (0, 0, -1), (0, 0, 1))
        world.add_system(_declaring(**decl))
        with pytest.raises(InputError) as err:
            world.setup()
        for w in words:
            assert w in str(err.value), str(err.value)


def test_a_sum_field_is_zeroed_before_each_force_pass_accumulates_into_it(rng):
    """An accumulator adds 1.5 N to a wall's force per pass: after set-up and after each
    step it holds 1.5 (zeroed before each pass, never summed twice); on one rank a share is
    the sum, so no sum is planned (test_planner.py)."""
    from ecs_dem.components.walls import add_wall

    world = periodic_world(rng, periodic=(True, True, False))
    add_wall(world, (0, 0, -1), (0, 0, 1))

    class Push(System):
        stage = Stage.FORCES
        accumulates = {"walls": ("force",)}

        def run(self, w):
            w.walls.force[0, 2] += 1.5

    world.add_system(Push())
    world.setup()
    assert world.walls.force[0, 2] == 1.5
    for _ in range(3):
        world.step_once()
        assert world.walls.force[0, 2] == 1.5


# ------------------------------------------ a first contribution that sets the field
# System.assigns_owned. Oracle: the same world with the setting system turned into a plain
# accumulator (its assigns_owned emptied), which zeroes the field and adds. Every system
# must see the same values on owned rows in both, on every step: skipping the zero is
# allowed only where no system can tell. Garbage, written into the field after each step,
# shows a zero skipped where it was needed.
class SetForce(Probe):
    """Body force 5 per row: sets the owned rows when the world says so, else adds."""

    accumulates_owned = {"particles": ("force",)}
    assigns_owned = {"particles": ("force",)}

    def __init__(self, assigns=True, every=1):
        if not assigns:
            self.assigns_owned = {}
        self.every = every
        self.choices = []

    def run(self, world):
        p = world.particles
        self.choices.append(self.assigning)
        if self.assigning:
            p.force[:p.n_owned] = 5.0
        else:
            p.force[:p.n_owned] += 5.0


class AddOwned(Probe):
    """Adds gid + 1 to owned rows, recording what it found there."""

    accumulates_owned = {"particles": ("force",)}

    def __init__(self, every=1):
        self.every = every
        self.seen = []

    def run(self, world):
        p = world.particles
        self.seen.append(p.force[:p.n_owned].copy())
        p.force[:p.n_owned] += p.gid[:p.n_owned, None] + 1.0


class AddAll(Probe):
    """Adds 1 into every row, ghost rows too (a reverse reduction brings those home)."""

    accumulates = {"particles": ("force",)}

    def run(self, world):
        world.particles.with_ghosts("force")[...] += 1.0


class ReadOwnedForce(Probe):
    reads = {"particles": ("force", "gid")}

    def __init__(self):
        self.seen = []

    def run(self, world):
        p = world.particles
        order = np.argsort(p.gid[:p.n_owned])
        self.seen.append(p.force[:p.n_owned][order].copy())


def _run(rng_seed, build, steps=5):
    world = periodic_world(np.random.default_rng(rng_seed))
    systems = build()
    for s in systems:
        world.add_system(s)
    reader = world.add_system(ReadOwnedForce())
    world.add_system(Garbage())
    world.run(steps)
    return world, systems, reader


def _same_as_plain(build_with, build_plain):
    world, systems, reader = _run(7, build_with)
    _, _, plain = _run(7, build_plain)
    assert len(reader.seen) == len(plain.seen) == 6  # set-up force pass + 5 steps
    for a, b in zip(reader.seen, plain.seen):
        assert np.array_equal(a, b)
    return world, systems, reader


def test_the_first_contribution_sets_the_field_and_its_zero_is_skipped():
    world, (setter, adder), reader = _same_as_plain(
        lambda: (SetForce(), AddOwned()), lambda: (SetForce(assigns=False), AddOwned()))
    assert setter.choices == [frozenset({("particles", "force")})] * 6
    for seen in adder.seen:  # the setter's value, not the garbage written after each step
        assert np.all(seen == 5.0)
    gid = np.sort(world.particles.gid[:world.particles.n_owned])
    assert np.array_equal(reader.seen[-1], np.broadcast_to(5.0 + gid[:, None] + 1.0, (gid.size, 3)))


def test_a_setter_after_another_contribution_adds():
    world, (adder, setter), reader = _same_as_plain(
        lambda: (AddOwned(), SetForce()), lambda: (AddOwned(), SetForce(assigns=False)))
    assert setter.choices == [frozenset()] * 6
    for seen in adder.seen:
        assert np.all(seen == 0.0)


def test_a_contribution_into_ghost_rows_keeps_the_zero():
    world, (setter, _, _), _ = _same_as_plain(
        lambda: (SetForce(), AddAll(), AddOwned()),
        lambda: (SetForce(assigns=False), AddAll(), AddOwned()))
    assert setter.choices == [frozenset()] * 6


def test_a_choice_that_differs_between_schedules_adds_in_all_of_them():
    # on odd steps the sampled adder does not run and the setter would come first
    world, (adder, setter), _ = _same_as_plain(
        lambda: (AddOwned(every=2), SetForce()),
        lambda: (AddOwned(every=2), SetForce(assigns=False)))
    assert setter.choices[-1] == frozenset()
    assert len(adder.seen) == 3  # steps 0, 2, 4


def test_a_sampled_setter_leaves_the_zero_to_the_steps_it_skips():
    world, (setter, adder), _ = _same_as_plain(
        lambda: (SetForce(every=2), AddOwned()),
        lambda: (SetForce(assigns=False, every=2), AddOwned()))
    assert setter.choices == [frozenset({("particles", "force")})] * 3
    assert [float(s.max()) for s in adder.seen] == [5.0, 0.0, 5.0, 0.0, 5.0, 0.0]


@pytest.mark.parametrize("decl", [
    dict(stage=Stage.FORCES, assigns_owned={"particles": ("force",)}),
    dict(stage=Stage.FORCES, assigns_owned={"particles": ("force",)},
         accumulates={"particles": ("force",)}),
    dict(stage=Stage.INTEGRATE_SECOND, assigns_owned={"particles": ("force",)},
         accumulates_owned={"particles": ("force",)}),
])
def test_a_setter_must_be_a_forces_system_that_accumulates_owned_rows(rng, decl):
    world = periodic_world(rng)
    world.add_system(type("Bad", (System,), dict(run=lambda self, w: None, **decl))())
    with pytest.raises(InputError, match="Bad declares assigns_owned on particles"):
        world.setup()
