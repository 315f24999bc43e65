"""Stress and strain-rate fields of the triaxial sample (``cg_fields = true``; off by default).

During the test the grains are coarse-grained (``ecs_dem.cg``) every ``cg_records``
records (``sample_every`` steps each) on a cylindrical grid about the sample's axis:
``cg_cells_r`` rings out to the sample's radius plus the kernel's reach, ``cg_cells_z``
layers from below the bottom platen to above the top one, Lucy's kernel of width
``cg_width`` (support sqrt(12) cg_width). The membrane's vertices are not grains:
their contacts with grains, like the platens', are the boundary (``world_sums``'
``select``). At the end, the mean of the last ``cg_window`` evaluations is written:

* ``<run>_cg.h5`` + ``.xdmf`` (``cg.from_output.write_fields``): density, velocity,
  stress, pressure, stress ratio, volume fraction, coordination, boundary force, on
  the (r, z) grid (components r, theta, z);
* ``<run>_cg.png``: r-z sections of the axial stress sigma_zz, the stress ratio q/p
  and the deviatoric strain rate sqrt(2/3 D':D') of the coarse-grained velocity
  (D from u_r, u_z: D_rr = du_r/dr, D_tt = u_r/r, D_zz = du_z/dz,
  D_rz = (du_r/dz + du_z/dr)/2): where the sample shears;
* the check printed at the end: the mean coarse-grained axial stress of the sample,
  the volume integral of sigma_zz over the grid (every contact's share lies inside it)
  over the sample's volume V, against the platen stress sigma_p (and sigma_top,
  sigma_bottom) of the same records. For a sample in equilibrium the integral is the
  virial sum, -sum_b f_b,z c_b,z over the boundary contacts: the top platen's force
  times the gap, plus the membrane friction's share.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ecs_dem.components.particles import KIND_GRAIN

CG_DEFAULTS = {
    "cg_fields": False,   # coarse-grain the sample (module docstring)
    "cg_width": 2e-3,     # m, the kernel's width
    "cg_records": 10,     # records (sample_every steps each) between evaluations
    "cg_window": 5,       # evaluations averaged into the written fields
    "cg_cells_r": 16,
    "cg_cells_z": 48,
}

CG_RANGES = (
    ("cg_width", 0.0, math.inf, False), ("cg_records", 1, math.inf, True),
    ("cg_window", 1, math.inf, True), ("cg_cells_r", 1, math.inf, True),
    ("cg_cells_z", 1, math.inf, True),
)


def sample_fields(cfg: dict, world, bottom: float, top: float):
    """The coarse-graining system of the module docstring for a sample of radius
    ``cfg["radius"]`` between platens at z = bottom and top."""
    from ecs_dem.cg.from_world import RecordedFields
    from ecs_dem.cg.grid import CylindricalGrid
    from ecs_dem.cg.kernels import Kernel

    kernel = Kernel.lucy(math.sqrt(12.0) * cfg["cg_width"])
    reach = kernel.support
    grid = CylindricalGrid((0.0, 0.0), cfg["radius"] + cfg["vertex_radius"] + reach,
                           (bottom - reach, top + reach), (cfg["cg_cells_r"], cfg["cg_cells_z"]))
    return RecordedFields(grid, kernel, cfg["cg_records"] * cfg["sample_every"],
                          cfg["cg_window"], select=("kind", KIND_GRAIN))


def strain_rate(grid, velocity: np.ndarray) -> np.ndarray:
    """sqrt(2/3 D':D') (1/s) of the coarse-grained velocity (r, theta, z components)."""
    ur, uz = velocity[..., 0], velocity[..., 2]
    r = grid.r[:, None]
    dr, dz = grid.spacing
    d_rr = np.gradient(ur, dr, axis=0)
    d_tt = ur / r
    d_zz = np.gradient(uz, dz, axis=1)
    d_rz = 0.5 * (np.gradient(ur, dz, axis=1) + np.gradient(uz, dr, axis=0))
    mean = (d_rr + d_tt + d_zz) / 3.0
    dev2 = (d_rr - mean) ** 2 + (d_tt - mean) ** 2 + (d_zz - mean) ** 2 + 2 * d_rz**2
    return np.sqrt(2.0 / 3.0 * dev2)


def mean_axial_stress(grid, stress: np.ndarray, volume: float) -> float:
    """The volume integral of sigma_zz over the grid (the cells' rings) over `volume`."""
    dr, dz = grid.spacing
    ring = 2.0 * math.pi * grid.r[:, None] * dr * dz
    return float(np.sum(stress[..., 2, 2] * ring) / volume)


def write_sample_fields(fields_system, records: list, path_base: Path, source: Path) -> list:
    """The files and the check of the module docstring (rank 0; not collective); returns
    the lines to print."""
    from ecs_dem.cg.from_output import write_fields

    step, time, fields = fields_system.latest()
    grid, kernel = fields_system.grid, fields_system.kernel
    steps = fields_system.window_steps[step]
    chosen = [r for r in records if r["step"] in steps]
    if not chosen:
        return [f"  coarse-grained fields: no record at steps {steps} to compare with"]
    mean = {k: float(np.mean([r[k] for r in chosen]))
            for k in ("sigma_p", "sigma_top", "sigma_bottom", "volume", "strain")}
    cg_axial = mean_axial_stress(grid, fields["stress"], mean["volume"])
    keep = ("density", "velocity", "stress", "pressure", "stress_ratio", "volume_fraction",
            "coordination", "boundary_force")
    rate = strain_rate(grid, fields["velocity"])
    out = {n: fields[n] for n in keep}
    out["strain_rate"] = rate
    h5 = write_fields(path_base.with_suffix(".h5"), grid, kernel, {step: (time, out)},
                      source=str(source))
    png = _figure(grid, fields, rate, path_base.with_suffix(".png"), step, mean)
    deviation = cg_axial / mean["sigma_p"] - 1.0
    return [f"  coarse-grained fields (steps {steps[0]}-{steps[-1]}, strain "
            f"{100 * mean['strain']:.2f} %): {h5}, {h5.with_suffix('.xdmf')}, {png}",
            f"  mean coarse-grained axial stress {cg_axial / 1e3:.2f} kPa against the platen "
            f"stress {mean['sigma_p'] / 1e3:.2f} kPa ({100 * deviation:+.2f} %; top "
            f"{mean['sigma_top'] / 1e3:.2f}, bottom {mean['sigma_bottom'] / 1e3:.2f} kPa)"]


def _figure(grid, fields, rate, png: Path, step: int, mean: dict) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r, z = grid.r * 1e3, grid.z * 1e3
    rr = np.concatenate([-r[::-1], r])
    panels = ((fields["stress"][..., 2, 2] / 1e3, "axial stress sigma_zz (kPa)", "viridis"),
              (fields["stress_ratio"], "stress ratio q/p", "magma"),
              (rate, "deviatoric strain rate (1/s)", "inferno"))
    fig, axes = plt.subplots(1, 3, figsize=(12, 5.2), sharey=True)
    for ax, (value, title, cmap) in zip(axes, panels):
        both = np.concatenate([value[::-1], value], axis=0)  # mirrored: a section
        density = np.concatenate([fields["volume_fraction"][::-1],
                                  fields["volume_fraction"]], axis=0)
        shown = np.where(density > 0.2, both, np.nan)  # inside the sample
        im = ax.pcolormesh(rr, z, shown.T, cmap=cmap, shading="nearest")
        fig.colorbar(im, ax=ax, shrink=0.85)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("r (mm)")
        ax.set_aspect("equal")
    axes[0].set_ylabel("z (mm)")
    fig.suptitle(f"triaxial sample at step {step}, axial strain {100 * mean['strain']:.2f} % "
                 "(coarse-grained, theta-averaged; where the volume fraction exceeds 0.2)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


__all__ = ["CG_DEFAULTS", "CG_RANGES", "mean_axial_stress", "sample_fields", "strain_rate",
           "write_sample_fields"]
