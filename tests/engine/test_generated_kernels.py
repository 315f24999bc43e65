"""Kernels specialised on a function (ecs_dem/generated_kernels.py): generated once, cached."""
import subprocess
import sys
import textwrap

from helpers import REPO

SCRIPT = textwrap.dedent("""
    import os, sys, numpy as np
    from ecs_dem.systems.contact import pair_geometry
    from ecs_dem.systems.contact.pipeline import contact_kernels
    from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
    from ecs_dem.components.species import create_species_table, add_species
    from ecs_dem import Box, World
    w = World(Box((0, 0, 0), (1, 1, 1)), dt=1e-6)
    add_species(w, youngs_modulus=1e7, poisson_ratio=0.3, density=1000.0)
    bound = HertzMindlinLaw().bind(w.species)
    m = contact_kernels(pair_geometry, bound.function)
    z = np.zeros((0, 3))
    i = np.zeros(0, dtype=np.int32)
    buf = np.zeros(m.COLUMNS * 64 + 256)
    sel = np.zeros(512, dtype=np.int64)
    G = (i, i, z, z, z, np.zeros(0), np.zeros(0), np.zeros(0, np.int32), np.zeros(0, np.bool_),
         i, z, z, 0, 0)
    n = m.contacts(G, (), (), bound.parameters, bound.constants, (z,), np.zeros(0, np.uint8),
                   True, 1e-6, buf, sel, ())
    print(m.__file__, os.path.getmtime(m.__file__), sum(m.contacts.stats.cache_hits.values()))
""")


def test_generated_kernel_file_is_reused_and_cached_across_processes(tmp_path):
    env = {"ECS_DEM_KERNEL_DIR": str(tmp_path / "kernels"), "NUMBA_CACHE_DIR": str(tmp_path / "nb"),
           "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                           cwd=REPO, check=True).stdout.split() for _ in range(2)]
    (path1, mtime1, hits1), (path2, mtime2, hits2) = runs
    assert path1 == path2 and path1.startswith(str(tmp_path / "kernels"))
    assert mtime1 == mtime2, "the generated file was rewritten although nothing changed"
    assert int(hits1) == 0 and int(hits2) == 1, "the second process compiled again"
