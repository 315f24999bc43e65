"""Tutorial: the triaxial test with both membrane models, MSS_patch and MSS_particle
(docs/tutorials/triaxial.md).

Runs the driver ``ecs_dem.run.triaxial`` (Goetz & Poeschel 2023, Sect. 3.1)
twice on the same prepared packing: once with the membrane whose triangles
the grains touch (MSS_patch), once with the membrane whose vertices are
spheres the grains touch (MSS_particle). The driver writes each run's time
series and, over every run of the case in the output directory, one plot of
both models' deviatoric stress and volumetric strain against axial strain,
and a summary table, which this script prints.

    python tutorials/triaxial.py            # the full settings: the small sample to 15 % strain
    python tutorials/triaxial.py --short    # the short settings (CI): a smaller sample to 0.5 %
    mpiexec.mpich -n 2 .venv/bin/python tutorials/triaxial.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings too.
"""
from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

from ecs_dem.comm import default_comm
from ecs_dem.run import triaxial

# The settings, as --set key=value pairs of the driver (python -m ecs_dem.run.triaxial
# --show-config lists every key with its default and unit). The full settings are the
# driver's defaults: the small sample (60 mm high, 15 mm radius, about 350 grains) at a
# confining stress of 100 kPa, loaded to 15 % axial strain.
FULL = {"case": "small", "seed": 1}
SHORT = {
    "case": "small", "seed": 1,
    "radius": 0.012, "height": 0.048,                 # m: a smaller sample, about 180 grains
    "confine_ramp": 0.008,                             # s: the confining stress ramps faster
    "max_strain": 0.005,                               # 0.5 % axial strain
    "particle_edge": 2e-3, "vertex_radius": 1e-3,      # m: coarser MSS_particle vertices
    "sample_every": 100, "snapshot_every": 100000,
}
MODELS = ("patch", "particle")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/triaxial",
                        help="directory of the driver's files")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    settings = {**(SHORT if short else FULL), "output_dir": args.output}
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    say(f"triaxial ({'short' if short else 'full'} settings): "
        + " ".join(f"{k}={v}" for k, v in settings.items() if k != "output_dir"))

    # One run per membrane model. The first prepares the packing and caches it in the output
    # directory (per case and seed); the second starts from the same grains.
    for model in MODELS:
        say(f"--- model {model}")
        driver_args = ["--model", model]
        for key, value in settings.items():
            driver_args += ["--set", f"{key}={value}"]
        status = triaxial.main(driver_args)
        if status != 0:
            return status

    # The case's summary (written by the driver after each run, over every run it finds in
    # the directory): one row per run, stresses in Pa, strains as fractions.
    if comm.rank == 0:
        summary = Path(args.output) / f"{settings['case']}_summary.csv"
        with open(summary) as fh:
            rows = list(csv.DictReader(fh))
        say(f"summary ({summary}):")
        for row in rows:
            say(f"  {row['run']:22s} peak sigma_d {float(row['peak_sigma_d (Pa)']) / 1e3:6.1f} kPa "
                f"at {100 * float(row['strain_at_peak']):5.2f} % strain, friction angle "
                f"{float(row['friction_angle (deg)']):5.1f} deg, grains escaped "
                f"{int(float(row['escaped (grains)']))}")
        say(f"plot: {Path(args.output) / (settings['case'] + '.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
