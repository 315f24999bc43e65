"""The project's numba decorator: one place for compile options.

``cache=True`` so a warm start does not recompile; ``fastmath`` stays off
(results must be reproducible and comparable with LAMMPS to the last printed
digit); ``error_model='numpy'`` so divisions do not carry a Python
ZeroDivisionError check, which blocks vectorisation.

Environment: ``NUMBA_DISABLE_JIT=1`` runs every kernel as plain Python (the
small tests pass that way); ``NUMBA_CACHE_DIR`` moves the cache (node-local
disk on clusters).
"""
import numba
import numpy as np

njit = numba.njit


def kernel(fn=None, **options):
    """Decorate a numba kernel with the project's defaults."""
    opts = dict(cache=True, error_model="numpy", fastmath=False)
    opts.update(options)
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)


def inline(fn):
    """A small scalar helper inlined into the kernels that call it."""
    return numba.njit(cache=True, error_model="numpy", inline="always")(fn)


@inline
def row(index):
    """A row index read from an array (a pair's particle, a selected contact), as an unsigned
    integer. Indexed with a signed integer, numba wraps negative indices around: a shift, a
    mask and an add per access, which LLVM cannot drop for an index it loaded rather than
    computed. In a pair kernel's overlap test and gather that was about a fifth of the
    kernel's time (chute, AVX2). Only for indices known to be >= 0, and only to index with:
    numba turns arithmetic that mixes it with signed integers into floats."""
    return np.uint64(index)
