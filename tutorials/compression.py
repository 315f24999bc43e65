"""Tutorial: cyclic compression of soft spheres, plain Hertz against MC-DEM
(docs/tutorials/compression.md).

Soft hydrogel spheres in a square box are compressed by a top plate and
released, cycle after cycle (Brodu et al. 2015, Sect. V). The same packing is
run twice: with independent Hertz contacts (gamma = 0) and with the
multi-contact correction of MC-DEM (gamma = 1.19), where the force on one
contact of a grain deforms the grain at its other contacts. The tutorial runs
the driver ``ecs_dem.run.compression`` with its settings, then reads the
summary it writes and compares the two models.

    python tutorials/compression.py            # the full settings: 514 spheres, 2 cycles
    python tutorials/compression.py --short    # the short settings (CI): 60 spheres, 2 cycles
    mpiexec.mpich -n 2 .venv/bin/python tutorials/compression.py --short

``ECS_DEM_TUTORIAL_SHORT=1`` in the environment selects the short settings too.
"""
from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

from ecs_dem.comm import default_comm
from ecs_dem.run import compression

# The settings, as --set key=value pairs of the driver (python -m ecs_dem.run.compression
# --show-config lists every key with its default and unit).
COMMON = {"gammas": "0,1.19", "quiet": "true"}
FULL = {**COMMON, "particles": 514, "cycles": 2, "discard": 1, "plate_speed": 0.02, "levels": 10}
SHORT = {**COMMON, "particles": 60, "box_width": 0.05, "cycles": 2, "discard": 1,
         "plate_speed": 0.02, "levels": 5, "samples_per_level": 2, "initial_z": 5}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the short settings (CI)")
    parser.add_argument("--output", default="output/tutorials/compression",
                        help="directory of the driver's CSV files and plots")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("ECS_DEM_TUTORIAL_SHORT") == "1"
    settings = {**(SHORT if short else FULL), "output": args.output}
    comm = default_comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    say(f"compression ({'short' if short else 'full'} settings): "
        + " ".join(f"{k}={v}" for k, v in settings.items() if k != "output"))

    # 1. Run the driver: it prepares one packing, then runs each gamma from it.
    driver_args = [x for key, value in settings.items() for x in ("--set", f"{key}={value}")]
    status = compression.main(driver_args)
    if status != 0:
        return status

    # 2. Read its summary: one row per gamma (the columns are named in the driver's docstring).
    if comm.rank == 0:
        with open(Path(args.output) / "summary.csv") as fh:
            rows = {float(r["gamma"]): r for r in csv.DictReader(fh)}
        plain, mc = rows[0.0], rows[1.19]
        f_plain = float(plain["top_force_at_max_strain_N"])
        f_mc = float(mc["top_force_at_max_strain_N"])
        say(f"at {compression.DEFAULTS['max_strain']:.1%} strain the top plate carries:")
        say(f"  plain Hertz (gamma 0)  {f_plain:.3g} N, {float(plain['Z_tau_at_max']):.2f} "
            "contacts per grain")
        say(f"  MC-DEM (gamma 1.19)    {f_mc:.3g} N, {float(mc['Z_tau_at_max']):.2f} "
            "contacts per grain")
        say(f"  MC-DEM is {f_mc / f_plain:.2f} times stiffer (the paper's ratio of "
            "gamma 0 to 1.19: 0.43, i.e. 2.3 times)")
        say(f"plots: {Path(args.output) / 'top_force.png'}, contacts.png, "
            "force_distribution.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
