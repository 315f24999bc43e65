"""The "one new system" example (a drag force): a user force added without touching the engine.

Linear drag F = -c v on a free particle gives v(t) = v0 exp(-c t / m). Velocity
Verlet evaluates a velocity-dependent force at the half-step velocity, so the
relative error after time t is about (c/m)^2 t dt / 4: below (c/m) dt here.
"""
import numpy as np

from ecs_dem.jit import kernel
from ecs_dem.system import Stage, System
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from helpers import add_particles, make_world


@kernel
def linear_drag(velocity, coefficient, force):
    for i in range(velocity.shape[0]):
        for a in range(3):
            force[i, a] -= coefficient * velocity[i, a]


class Drag(System):
    stage = Stage.FORCES
    reads = {"particles": ("velocity",)}
    accumulates_owned = {"particles": ("force",)}  # owned rows only: nothing to sum back

    def __init__(self, coefficient):
        self.coefficient = coefficient

    def run(self, world):
        p = world.particles
        linear_drag(p.velocity, self.coefficient, p.force)


def test_user_drag_system_decays_velocity_exponentially():
    world = make_world(dt=1e-4, box_lo=(-10, -10, -10), box_hi=(10, 10, 10))
    add_particles(world, [[0.0, 0.0, 0.0]], 0.01, 0, velocity=[[1.0, -2.0, 0.5]])
    m = float(world.particles.mass[0])
    c = 0.5 * m  # decay rate 0.5 / s
    first, second = velocity_verlet()
    for s in (first, Drag(c), second):
        world.add_system(s)
    world.run(10_000)  # 1 s
    expected = np.array([1.0, -2.0, 0.5]) * np.exp(-c / m * world.time)
    np.testing.assert_allclose(world.particles.velocity[0], expected, rtol=c / m * world.dt)
    assert not np.allclose(world.particles.velocity[0], [1.0, -2.0, 0.5])
    assert "zero particles.force" in world.describe_schedule()
