"""run/screen_wear.py on several ranks: the screen and the grains are split between the ranks
(the wear updates gather the worn region), and the driver's records must be those of a
1-rank run of the same settings to round-off over a short flow (the flow is chaotic: over a
long one the ranks' sums in another order would part the two runs), with worn volume =
acceleration k W at every update and the worn volume between the STL files."""
import csv
from pathlib import Path

import numpy as np
import pytest

from ecs_dem.comm import SerialComm, default_comm
from ecs_dem.components.mesh.io import read_mesh
from helpers import load_driver

pytestmark = pytest.mark.mpi(min_size=2)

K, ACCELERATION, EVERY = 1e-13, 3e9, 320
#: the tests/run settings, shortened to three wear updates
SHORT = dict(particles=120, screen_length=0.1, screen_width=0.024, solid_length=0.04,
             bin_length=0.02, bin_height=0.04, settle_time=0.01, duration=0.03,
             wear_coefficient=K, acceleration=ACCELERATION, wear_every=EVERY,
             snapshot_every=EVERY)


def run(screen, out) -> list[dict]:
    """Run the driver into `out`; its CSV rows (read on rank 0, None on the others)."""
    argv = [a for k, v in dict(SHORT, output=out).items() for a in ("--set", f"{k}={v}")]
    assert screen.main(argv) == 0
    if screen.default_comm().rank != 0:
        return None
    with open(out / "screen_wear.csv") as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def test_screen_wear_on_ranks_matches_one_rank(tmp_path, monkeypatch):
    from ecs_dem import declaration_guard

    monkeypatch.setattr(declaration_guard, "DEFAULT", False)
    screen = load_driver("screen_wear")
    comm = default_comm()
    out = Path(comm.broadcast_object(str(tmp_path))) / "ranks"  # rank 0's folder
    parallel = run(screen, out)
    comm.barrier()
    if comm.rank != 0:
        return
    monkeypatch.setattr("ecs_dem.driver.default_comm", SerialComm)
    monkeypatch.setattr(screen, "default_comm", SerialComm)
    serial = run(screen, tmp_path / "serial")
    assert len(parallel) == len(serial) == 3
    for a, b in zip(parallel, serial):
        assert a["worn_volume_m3"] > 0
        assert a["worn_volume_m3"] == pytest.approx(ACCELERATION * K * a["worn_work_J"],
                                                    rel=1e-12)
        for key in ("friction_work_J", "worn_volume_m3", "deepest_wear_m"):
            assert a[key] == pytest.approx(b[key], rel=1e-8), key
    before, after = read_mesh(out / "screen_before.stl"), read_mesh(out / "screen_after.stl")
    assert len(before.triangles) == len(after.triangles)
    assert np.min(after.vertices[:, 2]) < 0 <= np.min(before.vertices[:, 2])
