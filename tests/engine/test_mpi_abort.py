"""A rank raising inside a system ends the whole mpiexec job, with its traceback, never a hang."""
import shutil
import subprocess
import textwrap
import time

import pytest

from helpers import PYTHON

SCRIPT = textwrap.dedent('''
    import numpy as np
    from ecs_dem import Box, World, System, Stage
    from ecs_dem.components.particles import add_particles
    from ecs_dem.components.species import add_species
    from ecs_dem.systems.integration.velocity_verlet import velocity_verlet

    class FailOnRankOne(System):
        stage = Stage.FORCES
        def run(self, world):
            if world.comm.rank == 1 and world.step == 5:
                raise RuntimeError("deliberate failure inside a system on rank 1")

    world = World(Box((0, 0, 0), (1, 1, 1), (True, True, True)), dt=1e-6, skin=0.01)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    add_particles(world, np.random.default_rng(1).uniform(0, 1, (100, 3)), 0.01)
    first, second = velocity_verlet()
    for s in (first, FailOnRankOne(), second):
        world.add_system(s)
    world.run(1_000_000)   # the other rank would wait forever in its next collective
''')


def on_two_ranks(tmp_path, text: str):
    """Run `text` under mpiexec on 2 ranks: (result, seconds, what to show when a check fails)."""
    script = tmp_path / "script.py"
    script.write_text(text)
    t0 = time.monotonic()
    res = subprocess.run(["mpiexec.mpich", "-n", "2", PYTHON, str(script)],
                         capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    return res, elapsed, f"exit {res.returncode} after {elapsed:.1f} s, stderr:\n{res.stderr[-3000:]}"


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
def test_exception_on_one_rank_ends_all_ranks_with_traceback(tmp_path):
    res, elapsed, shown = on_two_ranks(tmp_path, SCRIPT)
    assert res.returncode != 0, shown
    assert "deliberate failure inside a system on rank 1" in res.stderr, shown
    assert "Traceback" in res.stderr and "[rank 1]" in res.stderr, shown
    assert elapsed < 60, shown


STATE_SCRIPT = SCRIPT.replace(
    'raise RuntimeError("deliberate failure inside a system on rank 1")',
    'raise StateError("deliberate breakdown on rank 1")').replace(
    "from ecs_dem import Box, World, System, Stage",
    "import sys\nfrom ecs_dem import Box, World, System, Stage, StateError").replace(
    "world.run(1_000_000)   # the other rank would wait forever in its next collective",
    "try:\n    world.run(1_000_000)\nexcept StateError as exc:  # a driver's clean exit, as run/triaxial.py's\n"
    "    print(f'error: {exc}', file=sys.stderr)\n    sys.exit(3)")


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")
def test_state_error_on_one_rank_ends_every_rank_with_code_3(tmp_path):
    """A driver that catches StateError and exits would leave the other ranks in a collective
    (they hung until killed); World.run ends them all, naming the rank and the error."""
    res, elapsed, shown = on_two_ranks(tmp_path, STATE_SCRIPT)
    assert res.returncode == 3, shown
    assert "[rank 1] error: deliberate breakdown on rank 1" in res.stderr, shown
    assert elapsed < 60, shown
