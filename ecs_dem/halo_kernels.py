"""Numba kernels behind the halo verbs: gather rows into ghosts, scatter-add back.

Pure functions over arrays; the domain decides which rows go where.
"""
import numpy as np

from .jit import inline, kernel, row


@kernel
def rows_near_faces(position, n, axis, lo_edge, hi_edge):
    """Rows with x[axis] < lo_edge (first array) and rows with x[axis] >= hi_edge."""
    low = np.empty(n, dtype=np.int64)
    high = np.empty(n, dtype=np.int64)
    nl = 0
    nh = 0
    for i in range(n):
        x = position[i, axis]
        if x < lo_edge:
            low[nl] = i
            nl += 1
        if x >= hi_edge:
            high[nh] = i
            nh += 1
    return low[:nl].copy(), high[:nh].copy()


@kernel
def wrap_periodic(position, lo, length, periodic):
    """Map positions on periodic axes back into [lo, lo + length)."""
    for i in range(position.shape[0]):
        for a in range(3):
            if periodic[a]:
                x = position[i, a]
                if x < lo[a] or x >= lo[a] + length[a]:
                    x = x - length[a] * np.floor((x - lo[a]) / length[a])
                    if x >= lo[a] + length[a]:  # round-off at the upper face
                        x -= length[a]
                    position[i, a] = x


@inline
def fold_displacement(position, reference, i, worst, bad):
    """(worst, bad) with row i folded in: the largest squared displacement since `reference`
    and the first non-finite row (-1 if none). One row of ``max_displacement_sq``, for a
    kernel that moves rows and reports the rebuild check on the way
    (``System.reports_displacement``)."""
    d2 = 0.0
    for a in range(3):
        d = position[i, a] - reference[i, a]
        d2 += d * d
    if not np.isfinite(d2):
        if bad < 0:
            bad = i
    elif d2 > worst:
        worst = d2
    return worst, bad


@kernel
def max_displacement_sq(position, reference):
    """Largest squared displacement since `reference`, and the first non-finite row (-1 if none)."""
    worst = 0.0
    bad = -1
    for i in range(position.shape[0]):
        worst, bad = fold_displacement(position, reference, i, worst, bad)
    return worst, bad


@kernel
def spatial_sort_keys(position, lo, cell, dims):
    """Linear cell index of each row, x fastest: sorting by it groups neighbours in memory."""
    n = position.shape[0]
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = 0
        for a in range(2, -1, -1):
            k = int(np.floor((position[i, a] - lo[a]) / cell))
            if k < 0:
                k = 0
            elif k >= dims[a]:
                k = dims[a] - 1
            key = key * dims[a] + k
        keys[i] = key
    return keys


@kernel
def count_descents(keys):
    """Number of k with keys[k] < keys[k - 1]: rows out of sorted order."""
    count = 0
    for k in range(1, keys.size):
        if keys[k] < keys[k - 1]:
            count += 1
    return count


@kernel
def owner_ranks(position, inner_x, inner_y, inner_z, rank_of_coords):
    """Rank owning each position: the cell of the decomposition grid it lies in (the number
    of inner cut planes at or below it, per axis), looked up in `rank_of_coords`."""
    out = np.empty(position.shape[0], dtype=np.int64)
    for i in range(position.shape[0]):
        cx = 0
        for c in range(inner_x.size):
            if position[i, 0] >= inner_x[c]:
                cx += 1
        cy = 0
        for c in range(inner_y.size):
            if position[i, 1] >= inner_y[c]:
                cy += 1
        cz = 0
        for c in range(inner_z.size):
            if position[i, 2] >= inner_z[c]:
                cz += 1
        out[i] = rank_of_coords[cx, cy, cz]
    return out


# The packed-row kernels below take a tuple of (capacity, w) columns of one dtype (the
# float64 columns of a halo plan, the uint64 or uint8 views of ``row_packing``): a table's
# fields in one call. Widths 1 and 3 (scalars, 3-vectors) get unrolled loop bodies (two
# to three times faster than a loop over a run-time width).

@kernel
def gather_rows_packed(columns, rows, packed, first):
    """packed[k, first:] = the rows[k] values of every column, side by side."""
    off = first
    for col in columns:
        w = col.shape[1]
        if w == 1:
            for k in range(rows.size):
                packed[k, off] = col[row(rows[k]), 0]
        elif w == 3:
            for k in range(rows.size):
                r = row(rows[k])
                packed[k, off] = col[r, 0]
                packed[k, off + 1] = col[r, 1]
                packed[k, off + 2] = col[r, 2]
        else:
            for k in range(rows.size):
                r = rows[k]
                for c in range(w):
                    packed[k, off + c] = col[r, c]
        off += w


@kernel
def scatter_rows_packed(columns, start, packed, first):
    """Inverse of gather_rows_packed into rows start, start + 1, ..."""
    off = first
    for col in columns:
        w = col.shape[1]
        if w == 1:
            for k in range(packed.shape[0]):
                col[start + k, 0] = packed[k, off]
        elif w == 3:
            for k in range(packed.shape[0]):
                col[start + k, 0] = packed[k, off]
                col[start + k, 1] = packed[k, off + 1]
                col[start + k, 2] = packed[k, off + 2]
        else:
            for k in range(packed.shape[0]):
                for c in range(w):
                    col[start + k, c] = packed[k, off + c]
        off += w


@kernel
def scatter_rows_shifted(columns, start, packed, shift, shift_column):
    """scatter_rows_packed(columns, start, packed, 0), then ``shift`` (3,) added to the
    received rows of column `shift_column` (>= 0, a 3-vector: the periodic image of the
    received positions): the same bits as numpy's ``+=`` after the scatter, without its call."""
    scatter_rows_packed(columns, start, packed, 0)
    col = columns[shift_column]
    for k in range(start, start + packed.shape[0]):
        col[k, 0] += shift[0]
        col[k, 1] += shift[1]
        col[k, 2] += shift[2]


@kernel
def move_rows(columns, src, dst):
    """columns[dst[k]] = columns[src[k]] for every column, in k order."""
    for col in columns:
        w = col.shape[1]
        for k in range(src.size):
            s = src[k]
            d = dst[k]
            for c in range(w):
                col[d, c] = col[s, c]


@kernel
def permute_columns(columns, order, scratch):
    """columns[k] = old columns[order[k]] for every column; scratch: at least
    len(order) * (widest column) elements of the columns' dtype."""
    m = order.size
    for col in columns:
        w = col.shape[1]
        if w == 1:
            for k in range(m):
                scratch[k] = col[order[k], 0]
            for k in range(m):
                col[k, 0] = scratch[k]
        elif w == 3:
            for k in range(m):
                r = order[k]
                scratch[3 * k] = col[r, 0]
                scratch[3 * k + 1] = col[r, 1]
                scratch[3 * k + 2] = col[r, 2]
            for k in range(m):
                col[k, 0] = scratch[3 * k]
                col[k, 1] = scratch[3 * k + 1]
                col[k, 2] = scratch[3 * k + 2]
        else:
            for k in range(m):
                r = order[k]
                for c in range(w):
                    scratch[k * w + c] = col[r, c]
            for k in range(m):
                for c in range(w):
                    col[k, c] = scratch[k * w + c]


# The local-stage kernels below take a tuple of (capacity, w) float64 columns and add the
# periodic shift on the position column as they copy; 3-vectors get unrolled loop bodies.

@kernel
def copy_columns(columns, src_rows, dst_start, shift, shift_column):
    """Local ghost stage: columns[dst_start + k] = columns[src_rows[k]] (+ shift on one column)."""
    for j, col in enumerate(columns):
        w = col.shape[1]
        if j == shift_column and w == 3:
            s0 = shift[0]
            s1 = shift[1]
            s2 = shift[2]
            for k in range(src_rows.size):
                s = src_rows[k]
                d = dst_start + k
                col[d, 0] = col[s, 0] + s0
                col[d, 1] = col[s, 1] + s1
                col[d, 2] = col[s, 2] + s2
        elif j == shift_column:
            for k in range(src_rows.size):
                s = src_rows[k]
                for c in range(w):
                    col[dst_start + k, c] = col[s, c] + shift[c]
        elif w == 3:
            for k in range(src_rows.size):
                s = src_rows[k]
                d = dst_start + k
                col[d, 0] = col[s, 0]
                col[d, 1] = col[s, 1]
                col[d, 2] = col[s, 2]
        else:
            for k in range(src_rows.size):
                s = src_rows[k]
                for c in range(w):
                    col[dst_start + k, c] = col[s, c]


@kernel
def copy_rows_fused(columns, src, dst, shift, shift_column):
    """Consecutive local ghost stages in one call: columns[dst[k]] = columns[src[k]], in k
    order (a later stage may copy rows an earlier one wrote), plus ``shift[k]`` on column
    `shift_column` (the periodic image of row k)."""
    for j, col in enumerate(columns):
        w = col.shape[1]
        if j == shift_column and w == 3:
            for k in range(src.size):
                s = row(src[k])
                d = row(dst[k])
                col[d, 0] = col[s, 0] + shift[k, 0]
                col[d, 1] = col[s, 1] + shift[k, 1]
                col[d, 2] = col[s, 2] + shift[k, 2]
        elif j == shift_column:
            for k in range(src.size):
                for c in range(w):
                    col[dst[k], c] = col[src[k], c] + shift[k, c]
        elif w == 3:
            for k in range(src.size):
                s = row(src[k])
                d = row(dst[k])
                col[d, 0] = col[s, 0]
                col[d, 1] = col[s, 1]
                col[d, 2] = col[s, 2]
        else:
            for k in range(src.size):
                for c in range(w):
                    col[dst[k], c] = col[src[k], c]


@kernel
def add_rows_back_fused(columns, src, dst):
    """Consecutive local reverse stages in one call: columns[src[k]] += columns[dst[k]], then
    the ghost row dst[k] is zeroed, in k order (a ghost of a ghost first adds into its
    source ghost)."""
    for col in columns:
        w = col.shape[1]
        if w == 3:
            for k in range(src.size):
                s = row(src[k])
                d = row(dst[k])
                col[s, 0] += col[d, 0]
                col[s, 1] += col[d, 1]
                col[s, 2] += col[d, 2]
                col[d, 0] = 0.0
                col[d, 1] = 0.0
                col[d, 2] = 0.0
        else:
            for k in range(src.size):
                s = src[k]
                d = dst[k]
                for c in range(w):
                    col[s, c] += col[d, c]
                    col[d, c] = 0.0


@kernel
def scatter_add_columns(columns, rows, packed):
    """columns[rows[k]] += packed[k] (rows may repeat): the reverse reduction."""
    off = 0
    for col in columns:
        w = col.shape[1]
        if w == 3:
            for k in range(rows.size):
                r = row(rows[k])
                col[r, 0] += packed[k, off]
                col[r, 1] += packed[k, off + 1]
                col[r, 2] += packed[k, off + 2]
        else:
            for k in range(rows.size):
                r = rows[k]
                for c in range(w):
                    col[r, c] += packed[k, off + c]
        off += w


@kernel
def zero_rows(columns, start, count):
    """columns[start:start + count] = 0 for every column."""
    for col in columns:
        col[start:start + count] = 0.0  # a slice store: a loop over a run-time width is 5x slower


@kernel
def anchors_elsewhere(rows, gid, gids, n_rows, destination, here, out, out_destination):
    """Migration of an anchored table in one pass over its anchor references: the k with
    destination[rows[k]] != here, increasing, in out[:count], and those ranks in
    out_destination[:count]; returns count, or -1 as soon as some rows[k] is not an owned
    row of gid gids[k] (references out of date: the caller looks the anchors up).
    Without a branch on the rare leaving row."""
    count = 0
    for k in range(rows.size):
        r = rows[k]
        if r < 0 or r >= n_rows or gid[r] != gids[k]:
            return -1
        d = destination[r]
        out[count] = k
        out_destination[count] = d
        count += d != here
    return count


@kernel
def rows_elsewhere(destination, rows, here, out):
    """Indices k with destination[rows[k]] != here, increasing, in out[:count]; returns count."""
    count = 0
    for k in range(rows.size):
        if destination[rows[k]] != here:
            out[count] = k
            count += 1
    return count


@kernel
def holes_and_fillers(rows, n, holes, fillers):
    """For removing `rows` (strictly increasing, in [0, n)) from n rows by filling holes
    with the last rows: the holes (removed rows below n - k) and the last rows that stay,
    both increasing, in holes[:count], fillers[:count]; returns count, or -1 if `rows`
    is not strictly increasing within [0, n)."""
    k = rows.size
    for p in range(k):
        if rows[p] < 0 or rows[p] >= n or (p > 0 and rows[p] <= rows[p - 1]):
            return -1
    new_n = n - k
    count = 0
    while count < k and rows[count] < new_n:
        holes[count] = rows[count]
        count += 1
    p = count
    f = 0
    for t in range(new_n, n):
        if p < k and rows[p] == t:
            p += 1
        else:
            fillers[f] = t
            f += 1
    return count
