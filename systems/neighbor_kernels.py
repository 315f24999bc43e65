"""Kernels of the neighbour search: cell binning, the Verlet pair list, history carry-over."""
import numpy as np

from ecs_dem.jit import kernel


@kernel
def bin_rows(position, n, lo, inv_cell, dims):
    """Counting sort of rows into cells: returns (cell_start, cell_rows, cell_of_row).

    Rows outside the grid are clamped into the edge cells (correct, only slower).
    """
    ncell = dims[0] * dims[1] * dims[2]
    cell_of = np.empty(n, dtype=np.int64)
    counts = np.zeros(ncell + 1, dtype=np.int64)
    for i in range(n):
        c = 0
        stride = 1
        for a in range(3):
            k = int(np.floor((position[i, a] - lo[a]) * inv_cell[a]))
            if k < 0:
                k = 0
            elif k >= dims[a]:
                k = dims[a] - 1
            c += k * stride
            stride *= dims[a]
        cell_of[i] = c
        counts[c + 1] += 1
    for c in range(ncell):
        counts[c + 1] += counts[c]
    fill = counts[:ncell].copy()
    rows = np.empty(n, dtype=np.int32)
    for i in range(n):
        c = cell_of[i]
        rows[fill[c]] = i
        fill[c] += 1
    return counts, rows, cell_of


@kernel
def build_pairs(position, radius, gid, fixed, n_owned, n, skin,
                cell_start, cell_rows, cell_of, dims, pair_i, pair_j):
    """Half Verlet list: pairs closer than r_i + r_j + skin, each once globally.

    Pair rule (ecs_dem.domain): two ghost rows are never paired; an owned row
    pairs with a ghost row only if its gid is lower. Pairs of two fixed rows
    are skipped (they exert nothing that is integrated). Each stored pair has
    gid[pair_i] < gid[pair_j], so per-pair history never changes sign.

    Writes up to pair_i.size pairs and returns the number required; the caller
    grows the arrays and calls again when it is larger.
    """
    cap = pair_i.size
    count = 0
    nx = dims[0]
    ny = dims[1]
    nz = dims[2]
    for i in range(n):
        c = cell_of[i]
        cx = c % nx
        cy = (c // nx) % ny
        cz = c // (nx * ny)
        xi0 = position[i, 0]
        xi1 = position[i, 1]
        xi2 = position[i, 2]
        ri = radius[i]
        i_owned = i < n_owned
        for dz in range(-1, 2):
            z = cz + dz
            if z < 0 or z >= nz:
                continue
            for dy in range(-1, 2):
                y = cy + dy
                if y < 0 or y >= ny:
                    continue
                for dx in range(-1, 2):
                    x = cx + dx
                    if x < 0 or x >= nx:
                        continue
                    cc = (z * ny + y) * nx + x
                    for s in range(cell_start[cc], cell_start[cc + 1]):
                        j = cell_rows[s]
                        if j <= i:
                            continue
                        j_owned = j < n_owned
                        if not i_owned and not j_owned:
                            continue
                        if i_owned and not j_owned and gid[i] > gid[j]:
                            continue
                        if j_owned and not i_owned and gid[j] > gid[i]:
                            continue
                        if fixed[i] and fixed[j]:
                            continue
                        d0 = xi0 - position[j, 0]
                        d1 = xi1 - position[j, 1]
                        d2 = xi2 - position[j, 2]
                        cut = ri + radius[j] + skin
                        if d0 * d0 + d1 * d1 + d2 * d2 < cut * cut:
                            if count < cap:
                                if gid[i] < gid[j]:
                                    pair_i[count] = i
                                    pair_j[count] = j
                                else:
                                    pair_i[count] = j
                                    pair_j[count] = i
                            count += 1
    return count


@kernel
def match_old_pairs(old_gid_i, old_gid_j, old_keep, new_gid_i, new_gid_j, max_gid):
    """For each new pair, the index of the old pair with the same gids (-1 if none).

    Only old pairs with ``old_keep`` set are candidates (those with history).
    Old pairs are bucketed by their lower gid with a counting sort, so the
    look-up is O(pairs) and independent of row order.
    """
    head = np.zeros(max_gid + 2, dtype=np.int64)
    m = old_gid_i.size
    for k in range(m):
        if old_keep[k]:
            head[old_gid_i[k] + 1] += 1
    for g in range(max_gid + 1):
        head[g + 1] += head[g]
    fill = head[:-1].copy()
    bucket = np.empty(max(head[max_gid + 1], 1), dtype=np.int64)
    for k in range(m):
        if old_keep[k]:
            g = old_gid_i[k]
            bucket[fill[g]] = k
            fill[g] += 1
    src = np.full(new_gid_i.size, -1, dtype=np.int64)
    for p in range(new_gid_i.size):
        g = new_gid_i[p]
        if g > max_gid:
            continue
        for s in range(head[g], head[g + 1]):
            k = bucket[s]
            if old_gid_j[k] == new_gid_j[p]:
                src[p] = k
                break
    return src
