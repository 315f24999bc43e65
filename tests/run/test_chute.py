"""End to end: run/chute.py reproduces LAMMPS's reference log of bench/in.chute.

LAMMPS (log.6Oct16.chute.fixed.icc.1) prints, at step 100, KinEng 784292.08 and
c_1 (erotate/sphere) 1571.0968. Matching them to the printed digits checks the
linear contact law, its history, the frozen base, tilted gravity, periodic
ghosts and the integrator all at once (LAMMPS's data file: ../shared in CI).
Without a data file the driver generates the deck's initial state at rest: its
grains must start down the slope, land on the base and keep a bounded energy.
"""
import math
import subprocess

import numpy as np

from helpers import PYTHON, REPO, load_driver, shared_file


def _thermo(stdout: str) -> dict[int, tuple[float, float]]:
    rows = {}
    for line in stdout.splitlines():
        words = line.split()
        if len(words) == 4 and words[0].isdigit():
            rows[int(words[0])] = (float(words[2]), float(words[3]))
    return rows


def test_chute_matches_lammps_reference_log():
    data = shared_file("lammps-bench", "data.chute")
    out = subprocess.run([PYTHON, str(REPO / "run" / "chute.py"), "--set", f"data={data}"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    thermo = _thermo(out)
    assert f"{thermo[0][0]:.8g}" == "784139.13" and f"{thermo[0][1]:.8g}" == "1601.1263"
    assert f"{thermo[100][0]:.8g}" == "784292.08"
    assert f"{thermo[100][1]:.8g}" == "1571.0968"


def test_the_generated_chute_flows_downhill_onto_its_base(monkeypatch):
    """0.2 time units from rest (2,000 steps): every grain falls freely until the lowest
    layer, 0.01 above the base, lands (after about 0.15). So the mobile grains' mean
    velocity is at most free fall's, g t (sin 26, 0, -cos 26), and, the base holding only
    the lowest of 20 layers, more than half of it; the kinetic energy is at most free fall's
    (1/2) M (g t)^2; no grain passes through the base; the base does not move."""
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)  # 2,000 steps: at full speed
    chute = load_driver("chute")
    cfg = dict(chute.DEFAULTS, thermo_every=0)
    assert cfg["data"] == ""  # a clone without LAMMPS's file runs the generated state
    world = chute.build_world(cfg)
    p = world.particles
    base_before = np.sort(p.position[:p.n_owned][p.fixed[:p.n_owned]], axis=0)
    steps = 2000
    world.run(steps)
    n = p.n_owned
    assert n == chute.MOBILE + chute.BASE
    mobile = ~p.fixed[:n]
    assert mobile.sum() == chute.MOBILE
    v, x, m = p.velocity[:n][mobile], p.position[:n][mobile], p.mass[:n][mobile]
    assert np.all(np.isfinite(v)) and np.all(np.isfinite(x))
    t = steps * world.dt
    slope = math.radians(cfg["angle"])
    free = cfg["gravity"] * t * np.array([math.sin(slope), 0.0, -math.cos(slope)])
    mean = v.mean(axis=0)
    assert 0.5 * free[0] < mean[0] <= free[0] * (1 + 1e-9)  # downhill
    assert 0.5 * free[2] > mean[2] >= free[2] * (1 + 1e-9)  # falling, held by the base
    assert abs(mean[1]) < 1e-3 * free[0]  # no sideways drift
    kinetic = 0.5 * np.sum(m * np.sum(v**2, axis=1))
    assert 0 < kinetic <= 0.5 * m.sum() * (cfg["gravity"] * t) ** 2 * (1 + 1e-9)
    assert world.pairs.n_owned > 0 and x[:, 2].min() > 0.5  # resting on the base, not through it
    np.testing.assert_array_equal(np.sort(p.position[:n][p.fixed[:n]], axis=0), base_before)


def test_chute_rejects_unknown_config_key():
    res = subprocess.run([PYTHON, str(REPO / "run" / "chute.py"), "--set", "stepz=10"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "unknown config key 'stepz'" in res.stderr and "steps" in res.stderr


def test_a_restart_between_rebuilds_continues_bit_for_bit(tmp_path):
    """A checkpoint 10 steps after the set-up's neighbour build: by then some listed pairs
    lie farther apart than the ghost width (listed within the cut-off plus the skin, each
    end moved up to half the skin), and the restart must resolve their rows where the
    uninterrupted run did (World.mark_restarted)."""
    import h5py
    import numpy as np

    data = shared_file("lammps-bench", "data.chute")

    def chute(*settings):
        args = [PYTHON, str(REPO / "run" / "chute.py"), "--set", f"data={data}",
                "--set", "thermo_every=5"]
        for s in settings:
            args += ["--set", s]
        res = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        return res.stdout

    chute("steps=10", f"checkpoint={tmp_path / 'a.h5'}")
    resumed = chute("steps=20", f"checkpoint={tmp_path / 'b.h5'}", f"restart={tmp_path / 'a.h5'}")
    straight = chute("steps=20", f"checkpoint={tmp_path / 'c.h5'}")
    assert _thermo(resumed)[20] == _thermo(straight)[20]
    with h5py.File(tmp_path / "b.h5") as b, h5py.File(tmp_path / "c.h5") as c:
        assert b.attrs["step"] == c.attrs["step"] == 20
        for table in ("particles", "pairs"):
            for name in c[f"tables/{table}"]:
                assert np.array_equal(b[f"tables/{table}/{name}"][:], c[f"tables/{table}/{name}"][:]), name


def test_chute_refuses_a_frozen_type_no_atom_has_and_a_directory_for_data(tmp_path):
    data = shared_file("lammps-bench", "data.chute")
    for settings, message in (([f"data={data}", "frozen_type=9"], "no atom of that type"),
                              ([f"data={tmp_path}"], "is a directory"),
                              ([f"data={tmp_path / 'none'}"], "does not exist"),
                              (["steps=0"], "'steps' = 0 is outside [1, infinity]")):
        args = [PYTHON, str(REPO / "run" / "chute.py")]
        for s in settings:
            args += ["--set", s]
        res = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and message in res.stderr, res.stderr[-1000:]
