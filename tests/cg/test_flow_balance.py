"""Mass and momentum conservation of the fields on a flowing chute (Goldhirsch's balance
equations) between two steps: the residual is the discretisation error, and it falls with
the grid."""
import numpy as np

from ecs_dem.cg.kernels import Kernel
from cg_flow import R, balance_residuals, profile_grid, small_chute


def test_continuity_and_momentum_balance_hold_to_the_grid_error_which_falls():
    world = small_chute()
    world.run(3000)
    v = world.particles.owned("velocity")[~world.particles.owned("fixed")]
    assert v[:, 0].mean() > 0.02  # it flows down the slope
    grids = [profile_grid(world, cells) for cells in (24, 48, 96)]
    residuals = np.array(balance_residuals(world, grids, Kernel.lucy(3.0 * R)))
    # rows: grids; columns: continuity, momentum x (downslope), momentum z
    assert np.all(residuals[-1] < 0.05), residuals
    assert np.all(residuals[1:] < residuals[:-1] / 2.5), residuals  # about second order
