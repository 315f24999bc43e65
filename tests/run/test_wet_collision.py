"""run/wet_collision.py: restitution of a wet pair against the test's own integration of the
same two-body equations of motion (within 1 %), capture below the critical Stokes number."""

import csv
import math

import pytest

from ecs_dem.run import wet_collision as wc

CFG = dict(wc.DEFAULTS)


def ode_restitution(cfg, speed, dt=2e-9):
    """The relative motion along the line of centres, RK4: s the surfaces' separation (m),
    u = ds/dt. m* du/dt = kn (-s) - m* gamman u while overlapping; while the bridge exists
    (formed at first overlap, until s reaches (1 + theta/2) V^(1/3)) minus the capillary
    force 2 pi R gamma cos(theta) (1 - s+ / sqrt(s+^2 + 2 V / (pi R))) (R = 2 R*, s+ =
    max(s, 0)) and, for s >= min_separation, minus 6 pi mu R*^2 u / s. Returns e (0 when
    captured: the bridge turns the separating pair back)."""
    r = cfg["radius"]
    m = cfg["density"] * 4 / 3 * math.pi * r**3
    mstar, rstar = m / 2, r / 2
    big_r = 2 * rstar
    theta = math.radians(cfg["contact_angle"])
    volume = min(2 * cfg["film"], cfg["max_bridge_volume"])  # each gives min(film, Vmax/2)
    rupture = (1 + theta / 2) * volume ** (1 / 3)
    fcap = 2 * math.pi * big_r * cfg["surface_tension"] * math.cos(theta)
    lub = 6 * math.pi * cfg["viscosity"] * rstar**2

    def accel(s, u, bridge):
        f = 0.0
        if s < 0:
            f += cfg["kn"] * (-s) - mstar * cfg["gamman"] * u
        if bridge:
            sp = max(s, 0.0)
            f -= fcap * (1 - sp / math.sqrt(sp * sp + 2 * volume / (math.pi * big_r)))
            if s >= cfg["min_separation"]:
                f -= lub * u / s
        return f / mstar

    s, u, bridge, separating = cfg["gap"], -speed, False, False
    while True:
        if s < 0:
            bridge = True
        k1s, k1u = u, accel(s, u, bridge)
        k2s, k2u = u + 0.5 * dt * k1u, accel(s + 0.5 * dt * k1s, u + 0.5 * dt * k1u, bridge)
        k3s, k3u = u + 0.5 * dt * k2u, accel(s + 0.5 * dt * k2s, u + 0.5 * dt * k2u, bridge)
        k4s, k4u = u + dt * k3u, accel(s + dt * k3s, u + dt * k3u, bridge)
        s += dt / 6 * (k1s + 2 * k2s + 2 * k3s + k4s)
        u += dt / 6 * (k1u + 2 * k2u + 2 * k3u + k4u)
        if bridge and s >= rupture:
            return u / speed
        if bridge and u > 0:
            separating = True
        elif separating and u <= 0:
            return 0.0


@pytest.mark.parametrize("speed", [1.2, 2.0])
def test_restitution_matches_the_two_body_ode_within_one_percent(speed):
    r = wc.collide(CFG, speed)
    expected = ode_restitution(CFG, speed)
    assert 0.2 < expected < 0.95
    assert r["restitution"] == pytest.approx(expected, rel=0.01)
    assert r["stokes"] == pytest.approx(
        (CFG["density"] * 4 / 3 * math.pi * CFG["radius"] ** 3 / 2) * speed
        / (6 * math.pi * CFG["viscosity"] * (CFG["radius"] / 2) ** 2), rel=1e-12)


def test_slow_pairs_are_captured_and_the_critical_stokes_number_is_bracketed(tmp_path, capsys):
    assert ode_restitution(CFG, 0.4, dt=1e-8) == 0.0  # captured: no need for a fine step
    out = tmp_path / "wc"
    assert wc.main(["--set", "speeds=0.4,1.2", "--set", f"output={out}"]) == 0
    text = capsys.readouterr().out
    st = [wc.stokes_number(CFG, v) for v in (0.4, 1.2)]
    assert f"critical Stokes number {0.5 * sum(st):.4g}" in text
    with open(tmp_path / "wc.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["speed"]) for r in rows] == [0.4, 1.2]
    assert float(rows[0]["restitution"]) == 0.0  # captured, as the ODE says
    assert float(rows[1]["restitution"]) > 0.0


def test_bad_speeds_are_refused(tmp_path, capsys):
    assert wc.main(["--set", "speeds=fast", "--set", f"output={tmp_path / 'x'}"]) != 0
    assert "speeds" in capsys.readouterr().err
