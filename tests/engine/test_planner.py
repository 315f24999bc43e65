"""The planner (ecs_dem/planner.py): plans built from declarations and table metadata alone.

No World, no data, no schedule text: each test declares a few systems and the
tables' halo policies, and asserts on the operations of the plan.
"""
import pytest

from ecs_dem import Halo, InputError, Stage, System
from ecs_dem.planner import (HaloOp, HaloState, TableInfo, after_rebuild, batch, plan_run,
                             plan_step, rebuilt_tables, validate)

F, R, L, S = Halo.FORWARD, Halo.REVERSE, Halo.LOCAL, Halo.SUM
PARTICLES = TableInfo("particles", {"gid": F, "position": F, "velocity": F, "temperature": F,
                                    "mass": L, "force": R, "torque": R}, spatial=True)
PAIRS = TableInfo("pairs", {"gid": F, "gid_j": F, "history": L, "load": R},
                  anchor="particles")
SPRINGS = TableInfo("springs", {"gid": F, "gid_b": F, "k": F}, anchor="particles")
WALLS = TableInfo("walls", {"gid": F, "normal": L, "force": S})
TABLES = {t.name: t for t in (PARTICLES, PAIRS, SPRINGS, WALLS)}


def system(name="S", stage=Stage.FORCES, **declarations):
    """A system of class `name` with the given declarations (tables -> tuple of fields)."""
    return type(name, (System,), dict(stage=stage, **declarations))()


def ops(plan):
    """The operations before each system of the plan: [(system name, [ops])]."""
    return [(run.timer, list(run.ops)) for run in plan.runs]


def plan(systems, state=HaloState(), ranks=1, **kw):
    return plan_run(tuple(systems), state, TABLES, ranks, **kw)


# ------------------------------------------------------------- accumulations
def test_an_accumulation_is_zeroed_before_and_reversed_before_an_owner_read():
    add = system("Add", accumulates={"particles": ("force",)})
    read = system("Read", stage=Stage.INTEGRATE_SECOND, reads={"particles": ("force",)})
    got = plan([add, read])
    assert ops(got) == [("Add", [HaloOp("zero", "particles", ("force",))]),
                        ("Read", [HaloOp("reverse", "particles", ("force",))])]
    assert got.after == HaloState(zeroed=frozenset({("particles", "force")}))


def test_an_accumulation_nobody_reads_is_reversed_at_the_end_of_the_step():
    add = system("Add", accumulates={"particles": ("force", "torque")})
    step = plan_step({Stage.FORCES: (add,)}, frozenset(), lambda s, st: plan(s, st))
    assert ops(step.forces) == [("Add", [HaloOp("zero", "particles", ("force", "torque"))])]
    assert step.end_of_step == (HaloOp("reverse", "particles", ("force", "torque")),)
    assert step.after.pending == frozenset()


def test_a_field_is_reversed_once_and_zeroed_once_per_pass():
    add = system("Add", accumulates={"particles": ("force",)})
    read = system("Read", reads={"particles": ("force",)})
    got = plan([add, read, read, add, read])
    assert ops(got) == [("Add", [HaloOp("zero", "particles", ("force",))]),
                        ("Read", [HaloOp("reverse", "particles", ("force",))]),
                        ("Read", []),
                        ("Add", []),  # zeroed already in this pass: adds to what is there
                        ("Read", [HaloOp("reverse", "particles", ("force",))])]


def test_a_writer_of_a_pending_field_gets_its_reverse_first():
    add = system("Add", accumulates={"particles": ("force",)})
    scale = system("Scale", stage=Stage.INTEGRATE_SECOND, writes={"particles": ("force",)})
    assert ops(plan([add, scale]))[1] == ("Scale", [HaloOp("reverse", "particles", ("force",))])


def test_an_owned_only_accumulation_is_zeroed_but_never_reversed():
    add = system("AddOwned", accumulates_owned={"particles": ("force",)})
    read = system("Read", reads={"particles": ("force",)})
    got = plan([add, read])
    assert ops(got) == [("AddOwned", [HaloOp("zero", "particles", ("force",))]), ("Read", [])]
    assert got.after.pending == frozenset()


def test_a_new_force_pass_zeroes_again_from_a_cleared_state():
    add = system("Add", accumulates={"particles": ("force",)})
    first = plan([add])
    assert ops(plan([add], first.after)) == [("Add", [])]
    assert ops(plan([add], first.after._replace(zeroed=frozenset()))) == [
        ("Add", [HaloOp("zero", "particles", ("force",))])]


# ------------------------------------------------------------- forward
def test_a_ghost_read_after_a_write_gets_a_forward_and_only_then():
    write = system("Write", stage=Stage.INTEGRATE_FIRST, writes={"particles": ("temperature",)})
    read = system("ReadGhosts", reads_ghosts={"particles": ("temperature", "gid")})
    owned = system("ReadOwned", reads={"particles": ("temperature",)})
    got = plan([read, write, owned, read, read])
    assert ops(got) == [("ReadGhosts", []),  # nothing written yet: ghosts are current
                        ("Write", []),
                        ("ReadOwned", []),  # owned rows only: no forward owed
                        ("ReadGhosts", [HaloOp("forward", "particles", ("temperature",))]),
                        ("ReadGhosts", [])]
    assert got.after.stale == frozenset()
    assert plan([write]).after.stale == {("particles", "temperature")}


def test_two_forwards_of_one_table_batch_into_one_operation():
    write = system("Write", writes={"particles": ("velocity", "position", "mass")})
    read = system("Read", reads_ghosts={"particles": ("position", "velocity"),
                                        "springs": ("k",)},
                  writes={"springs": ("k",)})
    got = plan([write, read, read])
    # mass is LOCAL: never stale; k is written by the reader itself, after its run
    assert ops(got)[1] == ("Read", [HaloOp("forward", "particles", ("position", "velocity"))])
    assert ops(got)[2] == ("Read", [HaloOp("forward", "springs", ("k",))])


def test_batch_groups_by_verb_and_table_in_order_of_first_appearance():
    raw = [("zero", "particles", "force"), ("forward", "particles", "position"),
           ("zero", "pairs", "load"), ("zero", "particles", "torque")]
    assert batch(raw) == (HaloOp("zero", "particles", ("force", "torque")),
                          HaloOp("forward", "particles", ("position",)),
                          HaloOp("zero", "pairs", ("load",)))


# ------------------------------------------------------------- hoisted zeros
def test_a_tables_later_accumulators_are_zeroed_with_its_first():
    force = system("AddForce", accumulates={"particles": ("force",)})
    torque = system("AddTorque", accumulates={"particles": ("torque",)})
    assert ops(plan([force, torque])) == [
        ("AddForce", [HaloOp("zero", "particles", ("force", "torque"))]), ("AddTorque", [])]


def test_a_field_declared_between_accumulators_is_zeroed_where_it_was():
    force = system("AddForce", accumulates={"particles": ("force",)})
    read = system("ReadTorque", reads={"particles": ("torque",)})  # sees last pass's torque
    torque = system("AddTorque", accumulates={"particles": ("torque",)})
    assert ops(plan([force, read, torque])) == [
        ("AddForce", [HaloOp("zero", "particles", ("force",))]),
        ("ReadTorque", []),
        ("AddTorque", [HaloOp("zero", "particles", ("torque",))])]


def test_a_builder_of_the_table_between_accumulators_keeps_the_zero_in_place():
    load = system("AddLoad", accumulates={"pairs": ("load",)})
    build = system("Rebuild", builds=("pairs",))
    got = plan([system("AddHistory", accumulates={"pairs": ("load",)}), build, load])
    assert ops(got)[0] == ("AddHistory", [HaloOp("zero", "pairs", ("load",))])
    # one field: zeroed before its first accumulation, not again after the builder
    assert ops(got)[2] == ("AddLoad", [])
    other = plan([system("AddForce", accumulates={"particles": ("force",)}),
                  system("Rebuild", builds=("particles",)),
                  system("AddTorque", accumulates={"particles": ("torque",)})])
    assert ops(other)[2] == ("AddTorque", [HaloOp("zero", "particles", ("torque",))])


# ------------------------------------------------------------- assignments
def setter():
    return system("Set", accumulates_owned={"particles": ("force",)},
                  assigns_owned={"particles": ("force",)})


def test_a_first_setter_skips_the_zero_and_is_told_so():
    s = setter()
    add = system("AddOwned", accumulates_owned={"particles": ("force",)})
    got = plan([s, add])
    assert got.assigning == (frozenset({("particles", "force")}), frozenset())
    assert ops(got) == [("Set", []), ("AddOwned", [])]


@pytest.mark.parametrize("before, after", [
    ([system("AddOwned", accumulates_owned={"particles": ("force",)})], []),
    ([system("Read", reads={"particles": ("force",)})], []),
    ([], [system("AddAll", accumulates={"particles": ("force",)})]),  # adds into ghost rows
])
def test_a_setter_adds_after_another_declaration_or_beside_a_ghost_accumulation(before, after):
    s = setter()
    got = plan(before + [s] + after)
    assert got.assigning[len(before)] == frozenset()
    zeros = [op for _, run_ops in ops(got) for op in run_ops if op.verb == "zero"]
    assert zeros == [HaloOp("zero", "particles", ("force",))]


def test_a_setter_that_must_add_in_every_plan_adds():
    s = setter()
    got = plan([s], adds_always=frozenset({id(s)}))
    assert got.assigning == (frozenset(),)
    assert ops(got) == [("Set", [HaloOp("zero", "particles", ("force",))])]


# ------------------------------------------------------------- SUM fields
def test_sum_fields_are_zeroed_as_shares_and_summed_on_several_ranks_only():
    push = system("Push", accumulates={"walls": ("force",)})
    servo = system("Servo", stage=Stage.INTEGRATE_SECOND, reads={"walls": ("force",)})
    for ranks in (1, 3):
        got = plan([push, servo], ranks=ranks)
        assert ops(got) == [("Push", [HaloOp("zero_shares", "walls", ("force",))]), ("Servo", [])]
        assert got.after.pending == frozenset()  # a SUM field is never reversed
        several = ranks > 1
        assert got.runs[0].shares == ((("walls", "force"),) if several else ())
        assert got.runs[1].sums_read == ((("walls", "force"),) if several else ())


# ------------------------------------------------------------- rebuilds
def test_a_rebuild_refreshes_the_ghosts_of_spatial_tables_and_used_anchored_ones():
    uses_pairs = system("Contacts", accumulates={"pairs": ("load",)})
    assert rebuilt_tables([uses_pairs], TABLES) == {"particles", "pairs"}
    assert rebuilt_tables([], TABLES) == {"particles"}
    state = HaloState(stale=frozenset({("particles", "velocity"), ("springs", "k")}),
                      pending=frozenset({("particles", "force")}),
                      zeroed=frozenset({("particles", "force")}))
    after = after_rebuild(state, rebuilt_tables([uses_pairs], TABLES))
    assert after == HaloState(frozenset({("springs", "k")}), frozenset(), state.zeroed)


def test_a_step_plan_runs_neighbors_from_the_state_after_a_rebuild():
    move = system("Move", stage=Stage.INTEGRATE_FIRST, writes={"particles": ("position",)})
    search = system("Search", stage=Stage.NEIGHBORS, reads_ghosts={"particles": ("position",)},
                    builds=("pairs",))
    contacts = system("Contacts", reads_ghosts={"particles": ("position",)},
                      accumulates={"particles": ("force",)})
    stages = {Stage.INTEGRATE_FIRST: (move,), Stage.NEIGHBORS: (search,),
              Stage.FORCES: (contacts,)}
    step = plan_step(stages, rebuilt_tables(stages[Stage.NEIGHBORS], TABLES),
                     lambda s, st: plan(s, st))
    assert ops(step.neighbors) == [("Search", [])]  # the rebuild forwarded every ghost row
    assert ops(step.forces) == [("Contacts", [HaloOp("forward", "particles", ("position",)),
                                              HaloOp("zero", "particles", ("force",))])]
    assert step.end_of_step == (HaloOp("reverse", "particles", ("force",)),)


# ------------------------------------------------------------- validation
@pytest.mark.parametrize("declarations, words", [
    (dict(reads={"grains": ("position",)}), ["Bad", "grains", "reads", "tables: ['pairs'"]),
    (dict(writes={"particles": ("colour",)}), ["particles.colour", "not a field"]),
    (dict(reads_ghosts={"particles": ("mass",)}), ["particles.mass", "local", "FORWARD"]),
    (dict(reads_ghosts={"particles": ("force",)}), ["particles.force", "reverse"]),
    (dict(accumulates={"particles": ("velocity",)}), ["particles.velocity", "forward",
                                                      "REVERSE and SUM"]),
    (dict(accumulates_owned={"walls": ("force",)}), ["walls.force", "accumulates_owned", "SUM"]),
    (dict(assigns_owned={"particles": ("force",)}), ["assigns_owned", "accumulates_owned"]),
    (dict(builds=("grains",)), ["builds table 'grains'"]),
])
def test_an_invalid_declaration_raises_naming_it(declarations, words):
    with pytest.raises(InputError) as err:
        validate(system("Bad", **declarations), TABLES)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_a_sum_field_on_a_spatial_table_is_refused():
    tables = dict(TABLES, particles=PARTICLES._replace(halos={**PARTICLES.halos, "share": S}))
    with pytest.raises(InputError, match="particles.share.*no position column"):
        validate(system("Bad", accumulates={"particles": ("share",)}), tables)


def test_valid_declarations_pass_validation():
    validate(system("Good", reads={"particles": ("mass",)},
                    reads_ghosts={"particles": ("position", "gid")},
                    accumulates={"particles": ("force",), "walls": ("force",)},
                    accumulates_owned={"particles": ("torque",)},
                    assigns_owned={"particles": ("torque",)}), TABLES)
