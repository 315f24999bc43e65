"""Kernels of the neighbour search: cell binning, the Verlet pair list, history carry-over."""
import numpy as np

from ecs_dem.jit import inline, kernel, row


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
def bounds(position, n):
    """Lower and upper corner of the first n rows' positions."""
    lo = np.empty(3)
    hi = np.empty(3)
    for a in range(3):
        lo[a] = np.inf
        hi[a] = -np.inf
    for i in range(n):
        for a in range(3):
            x = position[i, a]
            if x < lo[a]:
                lo[a] = x
            if x > hi[a]:
                hi[a] = x
    return lo, hi


@kernel
def cell_grid(position, radius, n, skin):
    """The binning grid of the first n rows: (lo, inv_cell, dims).

    Cells at least as wide as the largest cut-off 2 r_max + skin over the rows'
    bounding box, halved along every axis while there are more than 8 n + 64
    (very sparse systems: a coarser grid); an axis of zero span gets one cell
    and inv_cell 0. One call instead of a dozen numpy operations on 3-vectors
    at every rebuild (tens of microseconds on a small subdomain).
    """
    lo, hi = bounds(position, n)
    r_max = 0.0
    for i in range(n):
        r_max = max(r_max, radius[i])
    cell = max(2.0 * r_max + skin, 1e-300)
    dims = np.empty(3, dtype=np.int64)
    for a in range(3):
        dims[a] = max(np.int64(np.floor((hi[a] - lo[a]) / cell)), 1)
    while float(dims[0]) * dims[1] * dims[2] > 8 * n + 64:  # a float product cannot wrap
        for a in range(3):
            dims[a] = max(dims[a] // 2, 1)
    inv_cell = np.empty(3)
    for a in range(3):
        span = hi[a] - lo[a]
        inv_cell[a] = dims[a] / max(span, 1e-300) if span > 0 else 0.0
    return lo, inv_cell, dims


@kernel
def pair_ids(key_i, key_j, out):
    """out[k] = (a + b)(a + b + 1) / 2 + b for a = key_i[k], b = key_j[k] >= 0 (Cantor's
    pairing): one id per ordered pair of keys, the same on every rank, the ``gid`` of a contact
    table's rows (``pairs``: two particle gids, gid_i < gid_j; ``patch_pairs``: a grain's gid
    and a triangle's, two separate numberings). Unique while a + b < 4.29e9 (int64: the
    even factor of s (s + 1) is halved before the product, which would overflow above 3.04e9)."""
    for k in range(key_i.size):
        s = key_i[k] + key_j[k]
        triangle = (s // 2) * (s + 1) if s % 2 == 0 else s * ((s + 1) // 2)
        out[k] = triangle + key_j[k]


@inline
def store_pair(pair_i, pair_j, gid_i, gid_j, k, i, j, gi, gj):
    """Pair k = rows i, j with gids gi, gj, stored lower gid first."""
    swap = gi >= gj  # selects, not branches: the order of a pair's gids is a coin toss
    pair_i[k] = j if swap else i
    pair_j[k] = i if swap else j
    gid_i[k] = gj if swap else gi
    gid_j[k] = gi if swap else gj


@kernel
def build_pairs_half_stencil(position, radius, gid, fixed, group, n_owned, skin, cell_start,
                             cell_rows, dims, pair_i, pair_j, gid_i, gid_j, mirrors, own_image,
                             mirror_i, mirror_j, mirror_gid_i, mirror_gid_j):
    """Half Verlet list from linked cells: pairs closer than r_i + r_j + skin, each once globally.

    Each unordered pair of rows is met once: a row pairs with the rows after
    it in its own cell and with the rows of the 13 forward neighbour cells
    (dz > 0, or dz = 0 and dy > 0, or dz = dy = 0 and dx > 0). Cells are
    numbered x fastest, so these are five contiguous runs of the binned rows
    (the rest of the own cell and the cell at x + 1; x - 1..x + 1 in the row
    y + 1; and in the three rows y - 1..y + 1 of the layer z + 1), scanned over
    copies of position and radius in binned order. Pair rule
    (ecs_dem.domain): two ghost rows are never paired; an owned row pairs with
    a ghost row only if its gid is lower; pairs of two fixed rows are skipped, and so are
    pairs by contact group (components.particles: two rows of the same group >= 0, or a row
    of group -2).
    Each stored pair has gid_i < gid_j (so per-pair history never changes
    sign), with its rows in pair_i, pair_j and its gids in gid_i, gid_j.

    `mirrors`: the pairs the rule leaves to another rank (an owned row and a
    lower-gid ghost row that is a copy of another rank's row, ``own_image`` 0)
    go to the mirror arrays (the ghost in mirror_i), for evaluation on both
    sides of the rank boundary; periodic images of own rows (``own_image`` 1)
    keep the rule as it is.

    Writes up to pair_i.size pairs and mirror_i.size mirrors and returns the
    numbers required; the caller grows the arrays and calls again when larger.
    """
    cap = pair_i.size
    mcap = mirror_i.size
    count = 0
    mcount = 0
    nx = dims[0]
    ny = dims[1]
    nz = dims[2]
    n = cell_rows.size
    xs = np.empty((n, 4))  # x, y, z, radius of the binned rows, in bin order
    for s in range(n):
        i = cell_rows[s]
        xs[s, 0] = position[i, 0]
        xs[s, 1] = position[i, 1]
        xs[s, 2] = position[i, 2]
        xs[s, 3] = radius[i]
    run_first = np.empty(5, dtype=np.int64)
    run_last = np.empty(5, dtype=np.int64)
    max_cell = 0
    for c in range(cell_start.size - 1):
        max_cell = max(max_cell, cell_start[c + 1] - cell_start[c])
    close = np.empty(15 * max_cell + 1, dtype=np.int64)  # the five runs span 14 cells at most
    for cz in range(nz):
        for cy in range(ny):
            for cx in range(nx):
                c = (cz * ny + cy) * nx + cx
                if cell_start[c] == cell_start[c + 1]:
                    continue  # most cells above a chute's flowing layer are empty
                x0 = max(cx - 1, 0)
                x1 = min(cx + 1, nx - 1)
                # runs of forward cells: [(row, layer), x0..x1] as slot ranges
                n_runs = 1
                run_last[0] = cell_start[(cz * ny + cy) * nx + x1 + 1]
                if cy + 1 < ny:
                    base = (cz * ny + cy + 1) * nx
                    run_first[n_runs] = cell_start[base + x0]
                    run_last[n_runs] = cell_start[base + x1 + 1]
                    n_runs += 1
                if cz + 1 < nz:
                    for y in range(max(cy - 1, 0), min(cy + 1, ny - 1) + 1):
                        base = ((cz + 1) * ny + y) * nx
                        run_first[n_runs] = cell_start[base + x0]
                        run_last[n_runs] = cell_start[base + x1 + 1]
                        n_runs += 1
                for s in range(cell_start[c], cell_start[c + 1]):
                    i = cell_rows[s]
                    xi0 = xs[s, 0]
                    xi1 = xs[s, 1]
                    xi2 = xs[s, 2]
                    ri = xs[s, 3]
                    gi = gid[row(i)]
                    fi = fixed[row(i)]
                    gri = group[row(i)]
                    i_owned = i < n_owned
                    run_first[0] = s + 1
                    # candidates closer than the cut-off, branch-free
                    nc = 0
                    for q in range(n_runs):
                        for s2 in range(row(run_first[q]), row(run_last[q])):
                            d0 = xi0 - xs[s2, 0]
                            d1 = xi1 - xs[s2, 1]
                            d2 = xi2 - xs[s2, 2]
                            cut = ri + xs[s2, 3] + skin
                            close[nc] = s2
                            nc += np.int64(d0 * d0 + d1 * d1 + d2 * d2 < cut * cut)
                    for t in range(nc):
                        j = cell_rows[row(close[t])]
                        gj = gid[row(j)]
                        j_owned = j < n_owned
                        mirror = False
                        if not (i_owned and j_owned):
                            if not i_owned and not j_owned:
                                continue
                            if (i_owned and gi > gj) or (j_owned and gj > gi):
                                # the ghost's owner evaluates the pair; a copy of another
                                # rank's row: evaluate it here too (mirror)
                                if not mirrors or own_image[j if i_owned else i] != 0:
                                    continue
                                mirror = True
                        if fi and fixed[row(j)]:
                            continue
                        grj = group[row(j)]
                        if (gri == grj and gri >= 0) or gri == -2 or grj == -2:
                            continue
                        if mirror:
                            if mcount < mcap:
                                store_pair(mirror_i, mirror_j, mirror_gid_i, mirror_gid_j, mcount,
                                           i, j, gi, gj)
                            mcount += 1
                            continue
                        if count < cap:
                            store_pair(pair_i, pair_j, gid_i, gid_j, count, i, j, gi, gj)
                        count += 1
    return count, mcount


@kernel
def match_history(old_gid_i, old_gid_j, new_gid_i, new_gid_j, lowest, highest, src):
    """src[p] = the old pair with the gids of new pair p, or -1.

    The old pairs are the candidates (a contact table's rows with data,
    ``contact_table.KeptRows``). They are bucketed by gid_i
    with a counting sort, gid_i and gid_j copied next to them, so the look-up
    is O(pairs) and independent of row order. One bucket per gid_i when the
    candidates' gids span at most four times their number (one rank, or a
    compact subdomain: cache-friendly, as gids follow rows), else by the low
    bits of gid_i over about twice their number: a rank of a large run holds
    gids scattered up to N, and a table indexed by gid would cost O(N) per
    rank and rebuild. `lowest`, `highest`: bounds of old_gid_i (numpy's min and
    max, faster than a pass here).

    Few pairs touch (about one in seven in the chute), so the new pairs that
    may have an old one are first listed without a branch, by one bit of a
    hashed (gid_i, gid_j) set of the candidates (32 bits per candidate: about
    3 % false positives, settled by the buckets); only those go through the
    buckets. A branch per pair on so rare an outcome mispredicted often
    enough to take most of the time: with the candidates listed the same way
    (now by the caller), 2.7 times faster on 56,000 new pairs with 7,600
    candidates (chute, 2 ranks).
    """
    n_old = old_gid_i.size
    if n_old and highest - lowest < 4 * n_old:
        offset = lowest
        n_buckets = highest - lowest + 1
        mask = -1  # no bits dropped: bucket = gid_i - offset
    else:
        offset = 0
        n_buckets = 1
        while n_buckets < 2 * n_old:
            n_buckets *= 2
        mask = n_buckets - 1
    bits_log = 6
    while (1 << bits_log) < 32 * n_old:
        bits_log += 1
    shift = np.uint64(64 - bits_log)
    seen = np.zeros((1 << bits_log) >> 6, dtype=np.uint64)
    head = np.zeros(n_buckets + 1, dtype=np.int64)
    for k in range(n_old):
        head[((old_gid_i[k] - offset) & mask) + 1] += 1
        h = _pair_hash(old_gid_i[k], old_gid_j[k], shift)
        seen[h >> np.uint64(6)] |= np.uint64(1) << (h & np.uint64(63))
    for b in range(n_buckets):
        head[b + 1] += head[b]
    hashed = mask >= 0  # else a bucket holds one gid_i: no need to compare it
    bucket_k = np.empty(max(n_old, 1), dtype=np.int64)
    bucket_i = np.empty(max(n_old, 1) if hashed else 0, dtype=np.int64)
    bucket_j = np.empty(max(n_old, 1), dtype=np.int64)
    fill = head[:-1].copy()
    for k in range(n_old):  # in row order: the first of duplicate old pairs wins
        b = (old_gid_i[k] - offset) & mask
        bucket_k[fill[b]] = k
        bucket_j[fill[b]] = old_gid_j[k]
        if hashed:
            bucket_i[fill[b]] = old_gid_i[k]
        fill[b] += 1
    n_new = new_gid_i.size
    maybe = np.empty(n_new, dtype=np.int64)
    n_maybe = 0
    for p in range(n_new):
        h = _pair_hash(new_gid_i[p], new_gid_j[p], shift)
        src[p] = -1
        maybe[n_maybe] = p
        n_maybe += (seen[h >> np.uint64(6)] >> (h & np.uint64(63))) & np.uint64(1)
    for c in range(n_maybe):
        p = maybe[c]
        g = new_gid_i[p]
        b = (g - offset) & mask
        if 0 <= b < n_buckets:
            for q in range(head[b], head[b + 1]):
                if bucket_j[q] == new_gid_j[p] and (not hashed or bucket_i[q] == g):
                    src[p] = bucket_k[q]
                    break


@inline
def _pair_hash(gid_i, gid_j, shift):
    """The top 64 - `shift` bits of a multiplicative hash of a gid pair."""
    return ((np.uint64(gid_i) * np.uint64(0x9E3779B97F4A7C15))
            ^ (np.uint64(gid_j) * np.uint64(0xC2B2AE3D27D4EB4F))) >> shift


@kernel
def take_rows(src, old, new):
    """new[p] = old[src[p]] for (rows, width) arrays; zero where src[p] < 0.

    Without a branch per row: the row read is old[max(src[p], 0)] and a select keeps it or
    0.0. Few rows match (about one in seven after a chute's rebuild), and the branch on
    src[p] >= 0 mispredicted: 111,000 rows of 3 took 210 us with it, 160 us as selects."""
    w = old.shape[1]
    if old.shape[0] == 0:
        for p in range(src.size):
            for a in range(w):
                new[p, a] = 0.0
        return
    if w == 3:  # the common history width: an unrolled body is about twice as fast
        for p in range(src.size):
            s = src[p]
            found = s >= 0
            q = s if found else 0
            x = old[q, 0]
            y = old[q, 1]
            z = old[q, 2]
            new[p, 0] = x if found else 0.0
            new[p, 1] = y if found else 0.0
            new[p, 2] = z if found else 0.0
        return
    for p in range(src.size):
        s = src[p]
        found = s >= 0
        q = s if found else 0
        for a in range(w):
            value = old[q, a]
            new[p, a] = value if found else 0.0


@kernel
def split_pairs(i, j, destination, out):
    """Pairs k that migration splits and whose row j is this rank's own or its periodic
    image: ``destination[j[k]] >= 0`` (-1 marks copies of other ranks' rows) and
    ``destination[i[k]] != destination[j[k]]``. Their indices in ``out[:count]``,
    increasing; returns count."""
    count = 0
    for k in range(i.size):
        jj = j[k]
        if jj >= 0:
            dj = destination[jj]
            if dj >= 0 and destination[i[k]] != dj:
                out[count] = k
                count += 1
    return count
