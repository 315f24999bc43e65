"""The triaxial driver's coarse-grained fields (run/triaxial/fields.py): the derived
quantities against fields whose values the test knows."""
import math

import numpy as np

from ecs_dem.cg.grid import CylindricalGrid
from ecs_dem.run.triaxial.fields import mean_axial_stress, strain_rate


def test_strain_rate_of_an_isochoric_axisymmetric_flow():
    grid = CylindricalGrid((0.0, 0.0), 0.02, (0.0, 0.06), (8, 12))
    a = 3.0  # 1/s: u_r = a r, u_z = -2 a z, so D = diag(a, a, -2a)
    velocity = np.zeros(grid.shape + (3,))
    velocity[..., 0] = a * grid.r[:, None]
    velocity[..., 2] = -2 * a * grid.z[None, :]
    # sqrt(2/3 D':D') = sqrt(2/3 (a^2 + a^2 + 4 a^2)) = 2 a
    np.testing.assert_allclose(strain_rate(grid, velocity), 2 * a, rtol=1e-12)
    velocity[..., 0] = 0.0
    velocity[..., 2] = 0.5 * a * grid.r[:, None] ** 2 / 0.02  # shear: D_rz = a r / (2 * 0.02)
    expected = math.sqrt(2.0 / 3.0 * 2.0) * a * grid.r / 0.04
    np.testing.assert_allclose(strain_rate(grid, velocity)[1:-1, 3], expected[1:-1], rtol=1e-9)


def test_mean_axial_stress_integrates_over_the_rings():
    grid = CylindricalGrid((0.0, 0.0), 0.02, (-0.01, 0.05), (10, 30))
    stress = np.zeros(grid.shape + (3, 3))
    stress[..., 2, 2] = 1.5e5
    volume = math.pi * 0.015**2 * 0.04
    # a uniform stress over the whole grid: its integral is sigma pi R^2 L
    expected = 1.5e5 * math.pi * 0.02**2 * 0.06 / volume
    assert math.isclose(mean_axial_stress(grid, stress, volume), expected, rel_tol=1e-12)
