"""Time-step estimates for the contact laws (SI units).

* Rayleigh time of a sphere, the usual Hertz DEM yardstick:
  t_R = pi r sqrt(rho / G) / (0.1631 nu + 0.8766), G = E / (2 (1 + nu)).
  Hertz collisions last several t_R; 0.1-0.2 t_R is an accurate step.
* Linear spring-dashpot collision time: t_c = pi / sqrt(k_n / M* - gamma_n^2 / 4)
  for the LAMMPS damping force M* gamma_n v_n.
"""
from __future__ import annotations

import numpy as np


def rayleigh_time(radius, density, youngs_modulus, poisson_ratio):
    """Rayleigh time [s] of spheres of the given radius [m] and material."""
    shear = np.asarray(youngs_modulus) / (2.0 * (1.0 + np.asarray(poisson_ratio)))
    return (np.pi * np.asarray(radius) * np.sqrt(np.asarray(density) / shear)
            / (0.1631 * np.asarray(poisson_ratio) + 0.8766))


def linear_collision_time(kn, effective_mass, gamman=0.0):
    """Duration [s] of a linear spring-dashpot collision (inf if overdamped)."""
    w2 = kn / effective_mass - 0.25 * gamman**2
    return np.pi / np.sqrt(w2) if w2 > 0 else np.inf
