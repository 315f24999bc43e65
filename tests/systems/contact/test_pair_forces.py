"""ContactForces sets the owned rows of force and torque where the scheduler lets it
(``System.assigns_owned``): its kernel zeroes them before adding the pairs' shares, in
place of the scheduler's zeroing pass. The oracle is the same pile with the contacts made
a plain accumulator (the field zeroed by the scheduler, the kernel adding): the bits of
every position, force and torque must agree. A kernel that skipped its zero would carry
last step's forces into this one, and the piles would part at once."""
import numpy as np
import pytest

from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from helpers import colliding_pile


class AddingContactForces(ContactForces):
    """The contacts as a plain contribution: the scheduler zeroes, the kernel adds."""

    def __init__(self, law):
        super().__init__(law)
        self.assigns_owned = {}


def _spinning_pile(contacts, gravity_first: bool):
    """The shared colliding pile, spinning, with gravity before or after the contacts.
    Returns the contacts' choice, the schedule and the bits of the owned rows' positions,
    forces and torques, in gid order."""
    gravity = Gravity((0.0, 0.0, -9.81))
    forces = [gravity, contacts] if gravity_first else [contacts, gravity]
    world, order = colliding_pile(forces, contacts, seed=7, spin=50.0)
    p = world.particles
    torque = p.torque[order]
    assert np.abs(torque).max() > 0.0  # the pile spins: a torque zero would show
    return (contacts.assigning, world.describe_schedule(),
            [p.position[order].tobytes(), p.force[order].tobytes(), torque.tobytes()])


@pytest.mark.parametrize("gravity_first", [False, True])
def test_contacts_that_set_force_and_torque_give_the_bits_of_a_zero_then_an_addition(
        gravity_first):
    setting, schedule, bits = _spinning_pile(ContactForces(HertzMindlinLaw()), gravity_first)
    adding, plain_schedule, plain_bits = _spinning_pile(
        AddingContactForces(HertzMindlinLaw()), gravity_first)
    if gravity_first:  # gravity sets the force; the contacts, first for torque, set it
        assert setting == {("particles", "torque")}
        assert "zero particles." not in schedule
    else:  # the contacts come first for both; gravity adds
        assert setting == {("particles", "force"), ("particles", "torque")}
        assert "sets particles.force (its zero skipped) | sets particles.torque" in schedule
    zeros = [ln.strip() for ln in plain_schedule.splitlines() if ln.strip().startswith("zero ")]
    assert adding == frozenset() and zeros and all("torque" in ln for ln in zeros)
    assert bits == plain_bits


def test_contacts_that_add_into_ghost_rows_do_not_set():
    newton = ContactForces(HertzMindlinLaw(), newton=True)
    assert newton.assigns_owned == {}  # its shares for ghost rows go home in a reverse
    assert ContactForces(HertzMindlinLaw()).assigns_owned == {"particles": ("force", "torque")}
