"""Time-step estimates for the contact laws (SI units).

* Rayleigh time of a sphere, the usual Hertz DEM yardstick:
  t_R = pi r sqrt(rho / G) / (0.1631 nu + 0.8766), G = E / (2 (1 + nu)).
  Hertz collisions last several t_R; 0.1-0.2 t_R is an accurate step.
* Hertz contact duration of an elastic head-on impact at relative speed v:
  delta_max = (15 M* v^2 / (16 E* sqrt(R*)))^(2/5), t_c = 2.9432 delta_max / v
  (2.9432 = 2 int_0^1 dx / sqrt(1 - x^(5/2))).
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


HERTZ_DURATION_FACTOR = 2.9432


def hertz_max_overlap(speed, effective_mass, effective_modulus, effective_radius):
    """Largest overlap [m] of an elastic Hertz impact at relative speed [m/s]."""
    return (15.0 * effective_mass * speed**2
            / (16.0 * effective_modulus * np.sqrt(effective_radius))) ** 0.4


def hertz_contact_time(speed, effective_mass, effective_modulus, effective_radius):
    """Duration [s] of an elastic Hertz impact at relative speed [m/s]."""
    delta = hertz_max_overlap(speed, effective_mass, effective_modulus, effective_radius)
    return HERTZ_DURATION_FACTOR * delta / speed


def linear_collision_time(kn, effective_mass, gamman=0.0):
    """Duration [s] of a linear spring-dashpot collision (inf if overdamped)."""
    w2 = kn / effective_mass - 0.25 * gamman**2
    return np.pi / np.sqrt(w2) if w2 > 0 else np.inf
