"""Energy and momentum conservation of elastic, frictionless collisions in a periodic box.

Velocity Verlet is symplectic: with undamped (restitution 1) frictionless contacts the total
energy, kinetic + rotational + elastic, must not drift, and the total linear momentum is
conserved to round-off because every pair force is applied with opposite signs (ghost rows
included, through the reverse reduction). Both contact laws are checked with their analytic
potentials:

* Hertz:  U = (8/15) E* sqrt(R*) delta^(5/2), the integral of F = (4/3) E* sqrt(R*) delta^(3/2)
* linear: U = 1/2 kn delta^2

The energy is recomputed independently with numpy (all pairs, minimum image), not taken from
the engine. The particles are dense enough (solid fraction about 0.3) that each collides many
times, and the periodic box makes many of those collisions go through ghost rows.
"""
import numpy as np
import pytest

from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from helpers import add_particles, add_standard_systems, make_world

E, NU, RHO = 1e8, 0.3, 2500.0
KN = 5000.0            # N/m: collision time pi sqrt(meff/kn) ~ 1e-4 s, like the Hertz one
N_SIDE = 5             # 125 particles
SPACING = 2.6e-3       # m, lattice spacing of the initial positions
R_MIN, R_MAX = 0.9e-3, 1.1e-3
DT = 1e-6              # s, about 1/100 of the collision times
STEPS, EVERY = 10_000, 100


def build(law_name, seed=7):
    rng = np.random.default_rng(seed)
    box = N_SIDE * SPACING
    world = make_world(box_lo=(0, 0, 0), box_hi=(box, box, box), periodic=(True, True, True),
                       dt=DT, skin=2e-4,
                       material=dict(youngs_modulus=E, poisson_ratio=NU, density=RHO,
                                     restitution=1.0, friction=0.0))
    g = (np.arange(N_SIDE) + 0.5) * SPACING
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    # jitter within the cell: non-overlapping since every sphere stays inside its own cell
    pos += rng.uniform(-1, 1, pos.shape) * 0.99 * (0.5 * SPACING - R_MAX)
    radius = rng.uniform(R_MIN, R_MAX, len(pos))
    velocity = rng.normal(scale=0.5, size=pos.shape) + np.array([0.3, -0.1, 0.2])
    omega = rng.normal(scale=200.0, size=pos.shape)
    add_particles(world, pos, radius, velocity=velocity, angular_velocity=omega)
    if law_name == "hertz":
        law = HertzMindlinLaw()
    else:
        law = LinearSpringDashpotLaw(kn=KN, gamman=0.0, friction=0.0)
    add_standard_systems(world, law)
    return world, box


def total_energy(world, box, law_name):
    """Total and elastic energy (J), and the touching pairs (gid_i, gid_j, across a periodic face)."""
    p = world.particles
    kinetic = 0.5 * np.sum(p.mass * np.sum(p.velocity**2, axis=1))
    rotational = 0.5 * np.sum(p.inertia * np.sum(p.angular_velocity**2, axis=1))
    d = p.position[:, None, :] - p.position[None, :, :]
    image = np.rint(d / box)
    d -= box * image
    iu = np.triu_indices(p.n_owned, 1)
    across = np.any(image != 0, axis=-1)[iu]
    dist = np.sqrt(np.sum(d**2, axis=-1))[iu]
    rsum = (p.radius[:, None] + p.radius[None, :])[iu]
    delta = rsum - dist
    touch = delta > 0
    if law_name == "hertz":
        estar = E / (2.0 * (1.0 - NU**2))
        rstar = (p.radius[:, None] * p.radius[None, :])[iu] / rsum
        potential = np.sum(8.0 / 15.0 * estar * np.sqrt(rstar[touch]) * delta[touch] ** 2.5)
    else:
        potential = 0.5 * KN * np.sum(delta[touch] ** 2)
    gid = p.gid
    pairs = {(min(a, b), max(a, b), bool(c))
             for a, b, c in zip(gid[iu[0][touch]], gid[iu[1][touch]], across[touch])}
    return kinetic + rotational + potential, potential, pairs


@pytest.mark.parametrize("law_name", ["hertz", "linear"])
def test_elastic_frictionless_collisions_conserve_energy_and_momentum(law_name):
    world, box = build(law_name)
    world.setup()
    p = world.particles
    e0, _, _ = total_energy(world, box, law_name)
    momentum0 = np.sum(p.mass[:, None] * p.velocity, axis=0)
    scale = np.sum(p.mass * np.linalg.norm(p.velocity, axis=1))  # sum of |m v|
    omega0 = dict(zip(p.gid.tolist(), p.angular_velocity.copy()))
    drift = []
    collided = set()
    max_potential = 0.0
    for _ in range(STEPS // EVERY):
        world.run(EVERY)
        e, potential, touching = total_energy(world, box, law_name)
        drift.append(abs(e / e0 - 1.0))
        collided |= touching
        max_potential = max(max_potential, potential)
        momentum = np.sum(p.mass[:, None] * p.velocity, axis=0)
        assert np.all(np.abs(momentum - momentum0) <= 1e-12 * scale), (momentum, momentum0)
    assert world.step == STEPS
    # the test is meaningful: many distinct collisions, some through periodic images,
    # and a potential energy that is not negligible against the round-off of the sum
    assert len(collided) > 2 * p.n_owned
    assert sum(c for _, _, c in collided) > 20  # contacts across the periodic faces
    assert world.domain.rebuild_count > 50
    assert max_potential > 1e-3 * e0
    assert max(drift) < 1e-4, f"relative energy drift {max(drift):.3g}"
    # frictionless: no torque, so every angular velocity is untouched
    for g, w in zip(p.gid.tolist(), p.angular_velocity):
        np.testing.assert_array_equal(w, omega0[g])
    assert np.linalg.norm(momentum0) > 0.1 * scale  # the momentum is not trivially zero
