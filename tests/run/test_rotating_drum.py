"""run/rotating_drum.py: the generated drum is a valid closed STL surface; a turning drum lifts
its bed, and the motor's torque balances the torque of gravity on the lifted bed."""
import math
import warnings

import numpy as np
import pytest

from helpers import load_driver

from ecs_dem.components.mesh.io import read_mesh
from ecs_dem.components.mesh.validation import boundary_edges, validate_mesh


@pytest.fixture(scope="module")
def drum():
    return load_driver("rotating_drum")


@pytest.fixture(autouse=True)
def full_speed(monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # 10^4 steps


SHORT = dict(particles=250, settle_time=0.15, spin_up=0.25, sample_time=0.25, samples=8,
             speeds="3", lifters=4)


def test_box_surface_is_closed_outward_and_encloses_the_box(drum):
    lo, hi = np.array([0.1, -0.2, 0.3]), np.array([0.4, 0.05, 0.32])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no triangle rewound: the winding is outward already
        mesh = validate_mesh(drum.box_surface(lo, hi, 0.04))
    assert boundary_edges(mesh).shape[0] == 0
    assert mesh.signed_volume() == pytest.approx(float(np.prod(hi - lo)), rel=1e-12)
    assert np.linalg.norm(mesh.vertices[mesh.triangles[:, 1]] - mesh.vertices[
        mesh.triangles[:, 0]], axis=1).max() <= math.sqrt(2) * 0.04


def test_generated_drum_file_is_closed_and_each_lifter_a_component(drum, tmp_path):
    from ecs_dem.components.mesh.io import write_mesh

    r, length, edge = 0.04, 0.03, 4e-3
    mesh = drum.drum_mesh(r, length, edge, lifters=3, lifter_height=3e-3, lifter_width=3e-3)
    write_mesh(tmp_path / "d.stl", mesh, binary=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = validate_mesh(read_mesh(tmp_path / "d.stl"))
    assert boundary_edges(back).shape[0] == 0
    bar = (3e-3 + edge / 4) * 3e-3 * (length + edge / 2)
    # the drum's own volume plus three bars (their outer parts overlap the wall)
    alone = validate_mesh(drum.drum_mesh(r, length, edge)).signed_volume()
    assert alone == pytest.approx(math.pi * r * r * length, rel=2e-3)
    assert back.signed_volume() == pytest.approx(alone + 3 * bar, rel=1e-6)


def test_surface_angle_of_a_tilted_layer(drum):
    """Grains filling below a plane at 30 degrees rising towards -x: the fit gives 30."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.05, 0.05, 4000)
    top = -math.tan(math.radians(30.0)) * x
    z = top - rng.uniform(0.0, 0.02, x.size)
    r = np.full(x.size, 1e-3)
    z[:200] = top[:200] - 1e-3  # grains touching the plane in every bin
    x[:200] = np.linspace(-0.03, 0.03, 200)
    z[:200] = -math.tan(math.radians(30.0)) * x[:200] - 1e-3
    assert drum.surface_angle(x, z, r, 0.05, 2e-3, 1.0) == pytest.approx(30.0, abs=0.5)
    assert drum.surface_angle(x, z, r, 0.05, 2e-3, -1.0) == pytest.approx(-30.0, abs=0.5)


def test_a_given_law_serves_grain_and_drum_contacts(drum):
    """build_world's `law` is the one law of the grain pairs and of the drum's triangles."""
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
    from ecs_dem.systems.contact.pair_forces import ContactForces
    from ecs_dem.systems.mesh_wall.contacts import MeshWallContacts

    cfg = dict(drum.DEFAULTS, lifters=0)
    law = HertzMindlinLaw().set_pair(0, 0, estar=2e7, mu=0.1)
    world = drum.build_world(cfg, np.array([[0.0, 0.0, -0.03]]), np.array([2e-3]), law=law)
    users = [s for s in world.systems if isinstance(s, (ContactForces, MeshWallContacts))]
    assert len(users) == 2 and all(s.law is law for s in users)
    default = drum.build_world(cfg, np.array([[0.0, 0.0, -0.03]]), np.array([2e-3]))
    assert all(s.law is not law and isinstance(s.law, HertzMindlinLaw)
               for s in default.systems if isinstance(s, (ContactForces, MeshWallContacts)))


def test_turning_drum_lifts_the_bed_and_its_torque_balances_gravity(drum, tmp_path):
    cfg = dict(drum.DEFAULTS, **SHORT, output=str(tmp_path))
    bed = drum.settle(cfg)
    # at rest the bed lies level about the axis: no lift
    mass = float(np.sum(cfg["density"] * 4 / 3 * math.pi * bed[1] ** 3))
    x_rest = float(np.sum(bed[1] ** 3 * bed[0][:, 0]) / np.sum(bed[1] ** 3))
    assert abs(x_rest) < 0.1 * cfg["drum_radius"]
    for rate in (3.0, -3.0):
        r = drum.run_speed(cfg, bed, rate)
        assert r["mass"] == pytest.approx(mass, rel=1e-12)  # every grain stays in
        # the bed is carried up on the side the wall moves up: -x for +y rotation
        assert r["x_cm"] * rate < -0.05 * cfg["drum_radius"]
        # the motor works against the lifted weight: torque along the rotation, power > 0
        assert r["torque"] * rate > 0 and r["power"] > 0
        # steady bed: the grains' torque on the drum is gravity's torque on the bed
        assert r["torque"] == pytest.approx(r["gravity_torque"], rel=0.15)
        assert 10.0 < r["angle"] < 50.0


def test_driver_writes_csv_and_plot(drum, tmp_path):
    out = tmp_path / "out"
    settings = dict(SHORT, particles=120, settle_time=0.05, spin_up=0.02, sample_time=0.02,
                    samples=2, speeds="1,2")
    argv = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
    assert drum.main(argv + ["--set", f"output={out}"]) == 0
    rows = (out / "rotating_drum.csv").read_text().splitlines()
    assert rows[0].startswith("speed_rad_s,") and len(rows) == 3
    assert (out / "rotating_drum.png").stat().st_size > 0
    assert (out / "drum.stl").stat().st_size > 0


@pytest.mark.parametrize("key, value, message", [
    ("speeds", "1,fast", "give non-zero rotation speeds"),
    ("speeds", "0", "give non-zero rotation speeds"),
    ("particles", "100000", "the drum holds at most"),
    ("stl", "missing.stl", "is not a file"),
])
def test_bad_input_is_refused_with_the_fix(drum, tmp_path, capsys, monkeypatch, key, value,
                                           message):
    monkeypatch.chdir(tmp_path)
    assert drum.main(["--set", f"{key}={value}", "--set", "settle_time=0.001"]) == 2
    assert message in capsys.readouterr().err
