"""Closed forms of a liquid bridge: rupture distance, capillary forces, lubrication.

Scalar numba functions (``@inline``) that the wet contact laws
(``systems.wet.laws``) compose with a dry law. Units SI; `s` is the
separation of the two surfaces (m, >= 0; 0 while they overlap), `radius`
the bridge radius R = 2 R* (the harmonic mean 2 r_i r_j / (r_i + r_j) of
two spheres, 2 r for a sphere against a plane), `volume` the bridge's
liquid volume (m^3), `gamma` the surface tension (N/m), `theta` the contact
angle (rad).

* Rupture distance, Lian et al. (1993): s_c = (1 + theta/2) V^(1/3); the
  contact loops test s^3 < (1 + theta/2)^3 V instead (``bridge_holds``).
* Willett et al. (2000), their simple closed form for a bridge between two
  spheres: F = 2 pi R gamma cos(theta) / (1 + 1.05 s^ + 2.5 s^2),
  s^ = s sqrt(R / V) (their 1 + 2.1 S + 10 S^2 with S = (s/2) sqrt(R/V)).
* Half-filling angle beta (the angle at a sphere's centre between the
  line of centres and the bridge's contact line), from the bridge's volume
  in the small-angle geometry of a cylindrical neck between two caps:
  V = pi R^2 beta^2 s + pi R^3 beta^4 / 2, so
  R beta^2 = sqrt(s^2 + 2V / (pi R)) - s.
* Capillary force from the half-filling angle (the form of Lian & Seville
  2016's model: the force follows from beta at the bridge's contact line):
  F = 2 pi R gamma cos(theta) R beta^2 / (s + R beta^2), which is
  2 pi R gamma cos(theta) at contact and falls with s as
  1 - s / sqrt(s^2 + 2V / (pi R)) (Pitois et al. 2000).
* Lubrication of the liquid squeezed out of and drawn into the gap
  (Reynolds; Goldman, Cox & Brenner 1967 for the tangential part), with the
  effective radius R* = R / 2: normal F = 6 pi mu R*^2 v_n / s, tangential
  F = 6 pi mu R* (8/15 ln(R*/s) + 0.9588) v_t (the bracket not below 0), both
  opposing the relative motion, mu the viscosity (Pa s).
"""
from __future__ import annotations

import math

from ecs_dem.jit import inline


@inline
def rupture_distance(volume, theta):
    """Separation at which a bridge of `volume` (m^3) breaks (m), Lian et al. (1993)."""
    return (1.0 + 0.5 * theta) * volume ** (1.0 / 3.0)


@inline
def bridge_holds(s, volume, factor_cubed):
    """Whether a bridge of `volume` holds at separation s: s < (1 + theta/2) V^(1/3), as
    s^3 < (1 + theta/2)^3 V for s > 0 (`factor_cubed` = (1 + theta/2)^3), which needs no
    cube root (a contact loop with one is not vectorised without a vector math library)."""
    return s <= 0.0 or s * s * s < factor_cubed * volume


@inline
def willett_force(s, radius, volume, gamma, theta):
    """Attractive capillary force (N) of Willett et al. (2000) at separation s >= 0."""
    sh = s * math.sqrt(radius / volume)
    return 2.0 * math.pi * radius * gamma * math.cos(theta) / (1.0 + (1.05 + 2.5 * sh) * sh)


@inline
def willett_scaled(s, radius, volume, tension):
    """``willett_force`` with ``tension`` = gamma cos(theta) given (N/m)."""
    sh = s * math.sqrt(radius / volume)
    return 2.0 * math.pi * radius * tension / (1.0 + (1.05 + 2.5 * sh) * sh)


@inline
def half_filling_angle(s, radius, volume):
    """Half-filling angle beta (rad) of a bridge of `volume` at separation s >= 0."""
    a = 2.0 * volume / (math.pi * radius)
    return math.sqrt(a / (radius * (s + math.sqrt(s * s + a))))


@inline
def filling_capillary_force(s, radius, volume, gamma, theta):
    """Attractive capillary force (N) from the half-filling angle at separation s >= 0."""
    beta = half_filling_angle(s, radius, volume)
    rb2 = radius * beta * beta
    return 2.0 * math.pi * radius * gamma * math.cos(theta) * rb2 / (s + rb2)


@inline
def filling_scaled(s, radius, volume, tension):
    """``filling_capillary_force`` with ``tension`` = gamma cos(theta) given (N/m)."""
    beta = half_filling_angle(s, radius, volume)
    rb2 = radius * beta * beta
    return 2.0 * math.pi * radius * tension * rb2 / (s + rb2)


@inline
def normal_lubrication(s, rstar, viscosity):
    """Normal lubrication coefficient 6 pi mu R*^2 / s (N s/m): the force is it times the
    approach speed."""
    return 6.0 * math.pi * viscosity * rstar * rstar / s


@inline
def tangential_lubrication(s, rstar, viscosity):
    """Tangential lubrication coefficient 6 pi mu R* (8/15 ln(R*/s) + 0.9588), not below 0
    (N s/m)."""
    return 6.0 * math.pi * viscosity * rstar * max(8.0 / 15.0 * math.log(rstar / s) + 0.9588, 0.0)
