"""Which candidates of a grain lie on patches sharing a vertex (systems/membrane/vertex_sharing.py).

The expected graph is derived here from sets of vertex gids, candidate by candidate; the
kernel compares vertex gids in a different order and builds offsets in two passes.
"""
import numpy as np

from ecs_dem.systems.membrane.vertex_sharing import vertex_sharing


def expected(pair_i, pair_t, tri_vertices):
    out = []
    for c in range(pair_i.size):
        mine = set(tri_vertices[pair_t[c]])
        out.append([c2 for c2 in range(pair_i.size) if c2 != c and pair_i[c2] == pair_i[c]
                    and mine & set(tri_vertices[pair_t[c2]])])
    return out


def test_graph_of_a_strip_equals_the_vertex_sets():
    # a strip of triangles along x (vertex gids 100 + k, two rows of vertices); triangles 0..9,
    # each sharing an edge with its neighbours and a vertex with the next but one
    top, bottom = 100 + np.arange(0, 12, 2), 100 + np.arange(1, 12, 2)
    tri_vertices = np.array([(bottom[k // 2], bottom[k // 2 + 1], top[k // 2]) if k % 2 == 0
                             else (bottom[k // 2 + 1], top[k // 2 + 1], top[k // 2])
                             for k in range(10)], dtype=np.int64)
    rng = np.random.default_rng(7)
    pair_i, pair_t = [], []
    for grain in (3, 8, 5):  # grouped by grain, rows not sorted
        tris = np.sort(rng.choice(10, size=rng.integers(1, 8), replace=False))
        pair_i += [grain] * tris.size
        pair_t += list(tris)
    pair_i = np.array(pair_i + [11], dtype=np.int32)  # a grain with one candidate
    pair_t = np.array(pair_t + [4], dtype=np.int32)
    start, adjacent = vertex_sharing(pair_i, pair_t, tri_vertices)
    want = expected(pair_i, pair_t, tri_vertices)
    assert start[0] == 0 and start.size == pair_i.size + 1
    assert [list(adjacent[start[c]:start[c + 1]]) for c in range(pair_i.size)] == want
    assert any(want), "the case must have sharing candidates"


def test_no_candidates():
    start, adjacent = vertex_sharing(np.zeros(0, np.int32), np.zeros(0, np.int32),
                                     np.zeros((0, 3), np.int64))
    assert list(start) == [0] and adjacent.size == 0
