"""The drivers: scripts that build a World from components and systems, run it and report.

Installed as the package ``ecs_dem.run`` (the folder ``run/``), so that tests,
benchmarks and users import a driver's functions (``from ecs_dem.run import
chute``; ``chute.build_world(cfg)``) without editing ``sys.path``. A driver in
one file runs as a script or as a module::

    python run/pour.py --set particles=20000
    python -m ecs_dem.run.pour --set particles=20000

and a driver in several files (the triaxial test) as a package:
``python -m ecs_dem.run.triaxial``. Each driver is its ``DEFAULTS``,
``RANGES``, ``build_world`` and what it measures; its ``main`` is one call into
the frame every driver shares (``ecs_dem.driver.run_driver``).

The drivers::

    chute            LAMMPS's granular chute benchmark, LAMMPS-style thermo lines
    pour             a polydisperse bed poured into a box
    drum             a clamped membrane under pressure against Hencky's solution
    membrane_drop    grains dropped onto a clamped membrane
    friction         a grain dragged over a membrane (Goetz & Poeschel Sect. 3.2)
    compression      cyclic compression with MC-DEM (Brodu et al. 2015)
    rotating_drum    an STL drum with lifters: angle of repose and torque against speed
    hopper           discharge through conical STL hoppers, Beverloo's law
    wet_collision    two wet spheres: restitution against the Stokes number
    wet_pile         a heap of wet grains: angle of repose against liquid content
    spray_drum       a turning drum sprayed by a flat fan: liquid over the grains in time
    triaxial         the triaxial test (Goetz & Poeschel Sect. 3.1): driver, control,
                     preparation, report
    export_surface   a membrane surface from an output or checkpoint file to STL, OBJ, ...
"""
