"""Kernels that pay reference counting inside their loops: a check for kernel authors.

numba increments and decrements an array's reference count (an atomic
operation, some 10-20 ns) when an array is bound to a new name; LLVM's
pruning removes the pairs only within simple control flow. An inline helper
that takes arrays and contains loops, called inside a kernel's loop, keeps
one pair per array per call: the grain-patch contact kernel spent more time
on them than on its selection (83 -> 37 us per step in case 1 of the
triaxial test once the per-grain helpers became one call over all grains).

This script runs small versions of the shipped drivers (the chute, the bed,
the triaxial test with both membrane models) for a few steps with numba's
cache in a temporary folder, so every kernel compiles here and its LLVM IR
is available, then lists each compiled kernel whose body calls NRT_incref
more often than it has array arguments (one per argument at entry is
normal). A listed kernel is worth a look, not necessarily slow: an extra
increment outside the loops costs nothing.

    python bench/kernel_refcounts.py            # about 2 minutes (compiles everything)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def array_arguments(signature) -> int:
    """Array arguments of a compiled signature, tuples of arrays counted per element."""
    from numba.core import types

    def arrays(t) -> int:
        if isinstance(t, types.Array):
            return 1
        if isinstance(t, types.BaseTuple):
            return sum(arrays(u) for u in t.types)
        return 0
    return sum(arrays(t) for t in signature)


def kernel_body(ir: str) -> str:
    """The LLVM IR of the kernel itself (the first function defined), without its wrappers."""
    parts = ir.split("\ndefine ")
    return parts[1].split("\n}\n")[0] if len(parts) > 1 else ""


def blocks(body: str) -> dict[str, tuple[str, list[str]]]:
    """Basic blocks of a function's IR: label -> (its text, the labels it branches to)."""
    out, label, lines = {}, "entry", []
    for line in body.splitlines()[1:]:
        if line and not line.startswith((" ", "\t")) and line.split(";")[0].rstrip().endswith(":"):
            out[label] = ("\n".join(lines), [])
            label, lines = line.split(":")[0].strip().strip('"'), []
        else:
            lines.append(line)
    out[label] = ("\n".join(lines), [])
    for name, (text, targets) in out.items():
        for part in text.split("label %")[1:]:
            targets.append(part.split(",")[0].split(" ")[0].split("]")[0].strip().strip('"'))
    return out


def in_loops(graph: dict[str, tuple[str, list[str]]]) -> set[str]:
    """Blocks on a cycle of the control-flow graph (Tarjan's strongly connected components)."""
    index, low, stack, on, result, counter = {}, {}, [], set(), set(), [0]

    def visit(v):  # iterative enough for kernels: recursion depth = longest path
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ("", []))[1]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v][1]:
                result.update(component)

    sys.setrecursionlimit(max(10_000, 4 * len(graph)))
    for v in graph:
        if v not in index:
            visit(v)
    return result


def scan() -> list[tuple[str, int, int, int]]:
    """(kernel, increments, of them inside loops, array arguments) of every loaded kernel
    with more increments than array arguments or any inside a loop."""
    from numba.core.registry import CPUDispatcher
    found, seen = [], set()
    for name, module in list(sys.modules.items()):
        if not (name.startswith("ecs_dem") or name.startswith("ecs_dem_generated")):
            continue
        for attr, obj in list(vars(module).items()):
            if not isinstance(obj, CPUDispatcher) or id(obj) in seen:
                continue
            seen.add(id(obj))
            for sig in obj.signatures:
                body = kernel_body(obj.inspect_llvm(sig))
                increments = body.count("@NRT_incref(")
                graph = blocks(body)
                looped = sum(graph[b][0].count("@NRT_incref(") for b in in_loops(graph))
                arrays = array_arguments(sig)
                if increments > arrays or looped:
                    found.append((f"{name}.{attr}", increments, looped, arrays))
    return found


def exercise(work: Path) -> None:
    """A few steps of each shipped driver's world, so their kernels compile."""
    sys.path.append(str(REPO / "bench"))
    from ecs_dem.comm import default_comm
    from ecs_dem.config import merge_config
    from ecs_dem.run import chute
    from ecs_dem.run.triaxial import driver as triaxial
    from one_rank import build_bed
    from shrunk_problems import write_problem

    for model in ("patch", "particle"):
        defaults, _ = triaxial.choose_case_and_model(["--case", "small", "--model", model])
        cfg = merge_config(defaults, {"snapshot_every": 0, "progress": False})
        pack = triaxial.packing(cfg, work / "packing.npz", default_comm(), log=lambda *a: None)
        world, _ = triaxial.build_world(cfg, pack, None, None, log=lambda *a: None)
        world.run(20)
    chute_data = write_problem("chute", 2000, work)[0]
    chute.build_world(dict(chute.DEFAULTS, data=str(chute_data), thermo_every=0)).run(50)
    build_bed(write_problem("bed", 2000, work)[0]).run(20)


def main() -> int:
    if os.environ.get("_KERNEL_REFCOUNTS_CHILD") != "1":
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, _KERNEL_REFCOUNTS_CHILD="1", NUMBA_CACHE_DIR=f"{tmp}/numba",
                       ECS_DEM_KERNEL_DIR=f"{tmp}/kernels", _KERNEL_REFCOUNTS_WORK=tmp)
            return subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    exercise(Path(os.environ["_KERNEL_REFCOUNTS_WORK"]))
    found = scan()
    print("kernel  NRT_incref calls (in loops)  array arguments")
    for name, increments, looped, arrays in sorted(found):
        print(f"{name}  {increments} ({looped})  {arrays}")
    hot = sum(1 for f in found if f[2])
    print(f"{len(found)} kernel(s) with more reference increments than array arguments, "
          f"{hot} with increments inside a loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
