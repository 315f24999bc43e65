"""Per-pair contact constants (systems/contact/pair_constants.py) against the closed forms.

A pair table states a pair's constants instead of the mixing rules. Each test
builds one contact in the set-up force pass (the tangential spring is zero and
not advanced), so the force is the closed form of the law with the given
constants:

* Hertz-Mindlin (docs/physics.md): F_n = k_n delta - gamma_n v_n,
  k_n = 4/3 E* sqrt(R* delta), gamma_n = beta_n sqrt(M* k_n);
  F_t = -gamma_t v_t, gamma_t = beta_t sqrt(M* k_t), k_t = 8 G* sqrt(R* delta);
* the linear law (LAMMPS gran/hooke/history): F_n = k_n delta - M* gamma_n v_n,
  F_t = -M* gamma_t v_t;

with v_n < 0 approaching. M*: m1 m2 / (m1 + m2) for two spheres; m_g against
a wall; against a patch, m_g m_p / (m_g + m_p) with m_p the patch's share of
the membrane mass (convention "patch"), m_g (convention "grain"), or
m_g m_t / (m_g + m_t) with m_t the triangle's rest mass (convention "triangle"). The given
constants are far from the mixed ones, so a test passes only if the pair
table reached the law.
"""
import math

import numpy as np
import pytest

from ecs_dem import Box, InputError, World
from ecs_dem.components.membranes import add_membrane
from ecs_dem.components.mesh.surface import Mesh
from ecs_dem.components.particles import add_particles, create_particle_table
from ecs_dem.components.species import add_species
from ecs_dem.components.walls import add_wall
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_constants import RIGID
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.walls.contacts import WallContacts

R1, R2 = 1e-3, 1.5e-3          # m
DELTA = 2e-5                   # m, overlap
V = np.array([-0.03, 0.02, 0.01])  # m/s, velocity of particle 0 (normal component -0.03)
RHO = 2500.0
HM = dict(estar=3.3e6, gstar=1.1e6, beta_n=0.4, beta_t=0.25, mu=0.7)
LINEAR = dict(kn=4e3, kt=1.5e3, gamman=30.0, gammat=12.0, mu=0.6)


def mass(r):
    return RHO * 4.0 / 3.0 * math.pi * r**3


def hertz_force(c, rstar, mstar, delta=DELTA, v=V):
    """Force on i (normal +x, v = velocity of i relative to the partner), set-up pass."""
    s = math.sqrt(rstar * delta)
    kn, kt = 4.0 / 3.0 * c["estar"] * s, 8.0 * c["gstar"] * s
    fn = kn * delta - c["beta_n"] * math.sqrt(mstar * kn) * v[0]
    gt = c["beta_t"] * math.sqrt(mstar * kt)
    return np.array([fn, -gt * v[1], -gt * v[2]])


def linear_force(c, mstar, delta=DELTA, v=V):
    return np.array([c["kn"] * delta - mstar * c["gamman"] * v[0],
                     -mstar * c["gammat"] * v[1], -mstar * c["gammat"] * v[2]])


def world_with_species(dt=1e-9):
    world = World(Box((-0.05,) * 3, (0.05,) * 3), dt=dt, skin=1e-4)
    a = add_species(world, youngs_modulus=1e8, poisson_ratio=0.3, density=RHO, restitution=0.9,
                    friction=0.2)
    b = add_species(world, youngs_modulus=5e7, poisson_ratio=0.25, density=RHO, restitution=0.5,
                    friction=0.1)
    create_particle_table(world)
    return world, a, b


def run_setup(world, *systems):
    first, second = velocity_verlet()
    for s in (first, *systems, second):
        world.add_system(s)
    world.setup()
    return world.particles.force


def law_of(kind, a, b):
    if kind == "hertz":
        return HertzMindlinLaw().set_pair(a, b, **HM)
    return LinearSpringDashpotLaw(1e5, 5.0, 0.3).set_pair(a, b, **LINEAR)


@pytest.mark.parametrize("kind", ["hertz", "linear"])
def test_two_spheres_of_different_species_feel_the_given_constants(kind):
    world, a, b = world_with_species()
    d = R1 + R2 - DELTA
    add_particles(world, np.array([[d, 0, 0]]), R1, a, velocity=V[None, :])
    add_particles(world, np.array([[0.0, 0, 0]]), R2, b)
    force = run_setup(world, NeighborSearch(), ContactForces(law_of(kind, b, a)))
    m1, m2 = mass(R1), mass(R2)
    mstar = m1 * m2 / (m1 + m2)
    want = (hertz_force(HM, R1 * R2 / (R1 + R2), mstar) if kind == "hertz"
            else linear_force(LINEAR, mstar))
    np.testing.assert_allclose(force[0], want, rtol=1e-12)
    np.testing.assert_allclose(force[1], -want, rtol=1e-12)


@pytest.mark.parametrize("kind", ["hertz", "linear"])
def test_a_sphere_on_a_rigid_wall_feels_the_given_constants(kind):
    world, a, _ = world_with_species()
    add_wall(world, (0, 0, 0), (1, 0, 0))  # no species: the rigid material
    add_particles(world, np.array([[R1 - DELTA, 0, 0]]), R1, a, velocity=V[None, :])
    force = run_setup(world, WallContacts(law_of(kind, a, RIGID)))
    want = hertz_force(HM, R1, mass(R1)) if kind == "hertz" else linear_force(LINEAR, mass(R1))
    np.testing.assert_allclose(force[0], want, rtol=1e-12)


A = 4e-3
HEX = Mesh(np.vstack([[0, 0, 0], [[A * math.cos(k * math.pi / 3), A * math.sin(k * math.pi / 3), 0]
                                 for k in range(6)]]),
           [[0, 1 + k, 1 + (k + 1) % 6] for k in range(6)])


@pytest.mark.parametrize("convention", ["patch", "grain", "triangle"])
@pytest.mark.parametrize("kind", ["hertz", "linear"])
def test_a_grain_on_a_free_patch_feels_the_given_constants_and_the_chosen_mass(kind, convention):
    world, grain, _ = world_with_species()
    add_membrane(world, HEX, youngs_modulus=1e6, thickness=3e-4, density=1000.0)
    rubber = int(world.membranes.species[0])
    # above the centroid of triangle 0 (vertices 0, 1, 2): barycentric weights 1/3 each;
    # the membrane at rest, its vertices free
    x = np.array([[A / 2, A * math.sqrt(3) / 6, R1 - DELTA]])
    add_particles(world, x, R1, grain, velocity=V[[1, 2, 0]][None, :])
    p = world.particles
    m_patch = p.mass[p.rows_of(np.arange(3) + int(world.membranes.first_vertex[0]))].sum() / 3
    force = run_setup(world, PatchSearch(),
                      PatchContacts(law_of(kind, grain, rubber), effective_mass=convention))
    g = np.flatnonzero(p.membrane < 0)[0]
    mg = mass(R1)
    m_triangle = 0.5 * A * A * math.sqrt(3) / 2 * 3e-4 * 1000.0  # A0 d rho
    m_partner = {"patch": m_patch, "grain": math.inf, "triangle": m_triangle}[convention]
    mstar = mg if convention == "grain" else mg * m_partner / (mg + m_partner)
    # normal +z here: the closed form's (normal, t1, t2) is (z, x, y)
    want = hertz_force(HM, R1, mstar) if kind == "hertz" else linear_force(LINEAR, mstar)
    # (the contact point's round-off tilts the normal by ~1e-16: atol relative to F_n)
    np.testing.assert_allclose(force[g][[2, 0, 1]], want, rtol=1e-12, atol=1e-14 * want[0])
    assert m_patch < 0.5 * mg and m_triangle < 0.95 * m_patch  # the conventions differ here
    # the vertices take the reaction
    np.testing.assert_allclose(force.sum(axis=0), 0.0, atol=1e-14 * np.abs(want).max())


def test_pairs_not_given_keep_the_mixed_values_and_beta_t_follows_a_given_beta_n():
    world, a, b = world_with_species()
    plain = HertzMindlinLaw().bind(world.species)
    law = HertzMindlinLaw().set_pair(a, b, beta_n=0.3)
    bound = law.bind(world.species)
    names = bound.function.parameters
    n, t = names.index("beta_n"), names.index("beta_t")
    assert bound.parameters[0, 1, n] == bound.parameters[1, 0, n] == 0.3
    assert bound.parameters[0, 1, t] == pytest.approx(0.3 * math.sqrt(2.0 / 3.0), rel=1e-15)
    keep = np.ones(bound.parameters.shape[:2], bool)
    keep[0, 1] = keep[1, 0] = False
    np.testing.assert_array_equal(bound.parameters[keep], plain.parameters[keep])
    # the default beta_t is sqrt(2/3) beta_n (docs/physics.md)
    np.testing.assert_allclose(plain.parameters[..., t], plain.parameters[..., n] * math.sqrt(2 / 3),
                               rtol=1e-15)


def test_a_pair_changed_between_runs_binds_the_law_again():
    world, a, _ = world_with_species(dt=1e-8)
    add_wall(world, (0, 0, 0), (1, 0, 0))
    add_particles(world, np.array([[R1 - DELTA, 0, 0]]), R1, a)
    law = HertzMindlinLaw()
    f_mixed = run_setup(world, WallContacts(law))[0, 0]
    law.set_pair(a, RIGID, estar=4.0 * 1e8 / (1 - 0.3**2))
    world.run(1)
    assert world.particles.force[0, 0] == pytest.approx(4.0 * f_mixed, rel=1e-3)


def test_an_explicit_table_missing_a_pair_is_an_error_naming_it():
    world, a, b = world_with_species()
    law = HertzMindlinLaw().set_pair(a, a, explicit=True, **HM)
    law.set_pair(a, b, estar=1e6, gstar=1e6, beta_n=0.1)
    with pytest.raises(InputError) as e:
        law.bind(world.species)
    text = str(e.value)
    assert "(1, 1) are missing" in text and "(0, 1) lacks mu" in text and "set_pair" in text
    law.set_pair(a, b, mu=0.3)
    law.set_pair(b, b, **HM)
    law.bind(world.species)  # complete: the rigid pairs may be left to the mixing rules


@pytest.mark.parametrize("constants, words", [
    (dict(estar=-1.0), "estar must be finite and >= 0"),
    (dict(beta_n=float("nan")), "beta_n must be finite"),
    (dict(mu="a lot"), "mu must be a number"),
    (dict(youngs_modulus=1e7), "unknown constant 'youngs_modulus'"),
    (dict(), "give at least one constant"),
])
def test_bad_hertz_constants_are_refused_naming_the_pair(constants, words):
    with pytest.raises(InputError, match=words) as e:
        HertzMindlinLaw().set_pair(1, 0, **constants)
    assert "(0, 1)" in str(e.value) or not constants


def test_bad_pairs_are_refused():
    world, a, b = world_with_species()
    with pytest.raises(InputError, match="kn must be finite and > 0"):
        LinearSpringDashpotLaw(1e5, 5.0, 0.3).set_pair(a, b, kn=0.0)
    with pytest.raises(InputError, match="two rigid bodies"):
        HertzMindlinLaw().set_pair(RIGID, RIGID, mu=0.1)
    with pytest.raises(InputError, match="species ids"):
        HertzMindlinLaw().set_pair("rubber", 0, mu=0.1)
    law = HertzMindlinLaw().set_pair(a, 5, mu=0.1)
    with pytest.raises(InputError, match=r"pair \(0, 5\) names species 5, but there are 2"):
        law.bind(world.species)


def test_an_explicit_table_needs_the_pairs_the_contacts_meet_and_no_other():
    """Grains of species 0 on a patch membrane of species 2 (species 1 unused): the pairs
    (0, 0) and (0, 2) are needed; (1, *) and the membrane with itself are not."""
    def world_and_patches(*pairs):
        world, grain, _ = world_with_species()
        add_membrane(world, HEX, youngs_modulus=1e6, thickness=3e-4, density=1000.0)
        rubber = int(world.membranes.species[0])
        add_particles(world, np.array([[A / 2, A * math.sqrt(3) / 6, R1 - DELTA]]), R1, grain)
        law = HertzMindlinLaw()
        law.pair_table(explicit=True)
        for a, b in pairs:
            law.set_pair({"g": grain, "m": rubber}[a], {"g": grain, "m": rubber}[b], **HM)
        first, second = velocity_verlet()
        for s in (first, NeighborSearch(), ContactForces(law), PatchSearch(), PatchContacts(law),
                  second):
            world.add_system(s)
        return world

    world_and_patches(("g", "g"), ("g", "m")).setup()
    with pytest.raises(InputError, match=r"pairs \(0, 2\) are missing"):
        world_and_patches(("g", "g")).setup()
