"""gpuscan.Operator: associative operators written in C (SPEC "Operators you write"), on the
active backend: on the CPU compiled by the system's C compiler and run on the backend's threads,
on CUDA compiled by NVRTC (csrc/cuda/nvrtc.c); cached in the process and on disk.

The oracle is a sequential left fold in Python (`fold`, `scan_ref`).  Sizes are named after the
paths they reach in csrc/cpu/user.c: a chunk holds 262144 / itemsize values (32768 of 8 bytes,
8192 of 32), and a call of 8 chunks or more runs on several threads (cpu/chain.h's front and
back); runs of 32 * lanes values or more are scanned as lanes (cpu/jit_kernels.h).  On CUDA
(kernels/agent/user.cuh) a tile holds 256 threads of 128 bytes of values (4096 of 4 or 8 bytes,
1024 of 32): the same sizes span one tile, several, and a partial last one.  The cache tests
run the CPU backend in fresh processes on any machine; their `gpu` twins at the end run CUDA's.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpuscan
from conftest import run_python
from reference import scan_reference, segmented_scan_reference

M64 = (1 << 64) - 1
CHUNK8 = 32768  # values of 8 bytes per chunk (cpu/jit.h's GS_JIT_CHUNK_BYTES)
CHUNK32 = 8192  # values of 32 bytes per chunk
LANES8, LANES32 = 8 * 32, 4 * 32  # the fewest values a kernel runs as lanes (cpu/jit_kernels.h)
SIZES8 = [1, 2, 7, LANES8 - 1, LANES8, CHUNK8 - 1, CHUNK8, CHUNK8 + 1,
          9 * CHUNK8 + 5]  # the last: parallel
SIZES32 = [1, 3, LANES32 - 1, LANES32 + 3, CHUNK32, CHUNK32 + 1, 9 * CHUNK32 + 3]
CHUNK4 = 65536  # values of 4 bytes per chunk: scanned as lanes 8 steps at a time, transposed
SIZES4 = [LANES8 - 1, LANES8, LANES8 + 9, 1000, 8 * 135 + 8 * 16 + 7, CHUNK4 - 1, CHUNK4,
          9 * CHUNK4 + 13]



@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Every test's disk cache in a folder of its own (the process's cache still serves
    operators compiled by earlier tests)."""
    monkeypatch.setenv("GPUSCAN_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


# ---- the operators and their Python twins ----------------------------------------------------

ADD = gpuscan.Operator("x + y", dtype=np.int64, identity=0, name="add")

MAT = gpuscan.Operator(
    """T r;
    r.a = x.a * y.a + x.b * y.c;
    r.b = x.a * y.b + x.b * y.d;
    r.c = x.c * y.a + x.d * y.c;
    r.d = x.c * y.b + x.d * y.d;
    return r;""",
    dtype=[("a", "u8"), ("b", "u8"), ("c", "u8"), ("d", "u8")], identity=(1, 0, 0, 1),
    name="matmul2")


def mat(x, y):
    a, b, c, d = x
    e, f, g, h = y
    return ((a * e + b * g) & M64, (a * f + b * h) & M64, (c * e + d * g) & M64,
            (c * f + d * h) & M64)


AFFINE = gpuscan.Operator("T r; r.a = x.a * y.a; r.b = y.a * x.b + y.b; return r;",
                          dtype=[("a", "u8"), ("b", "u8")], identity=(1, 0), name="affine")


def affine(x, y):
    return ((x[0] * y[0]) & M64, (y[0] * x[1] + y[1]) & M64)


AFFINE16 = gpuscan.Operator(  # a T of 4 bytes that is not a number, and not commutative
    "T r; r.a = (uint16_t)((uint32_t)x.a * y.a); r.b = (uint16_t)((uint32_t)y.a * x.b + y.b);"
    " return r;", dtype=[("a", "u2"), ("b", "u2")], identity=(1, 0), name="affine16")


def affine16(x, y):
    return ((x[0] * y[0]) & 0xFFFF, (y[0] * x[1] + y[1]) & 0xFFFF)


NEG = -(1 << 40)  # below every prefix the tests make: the identity's "minus infinity"
KADANE = gpuscan.Operator(
    """T r;
    r.t = x.t + y.t;
    r.p = x.p > x.t + y.p ? x.p : x.t + y.p;
    r.s = y.s > x.s + y.t ? y.s : x.s + y.t;
    r.b = x.b > y.b ? x.b : y.b;
    if (x.s + y.p > r.b) r.b = x.s + y.p;
    return r;""",
    dtype=[("t", "i8"), ("p", "i8"), ("s", "i8"), ("b", "i8")], identity=(0, NEG, NEG, NEG),
    name="kadane")


def kadane(x, y):
    t = x[0] + y[0]
    return (t, max(x[1], x[0] + y[1]), max(y[2], x[2] + y[0]), max(x[3], y[3], x[2] + y[1]))


ARGMAX = gpuscan.Operator("y.v > x.v ? y : x", dtype=[("v", "f8"), ("i", "i8")],
                          identity=(-np.inf, -1), name="argmax")


def fold(f, values, start=None):
    acc = start
    for v in values:
        acc = v if acc is None else f(acc, v)
    return acc


def scan_ref(f, values, identity, exclusive=False):
    out, acc = [], None
    for v in values:
        if exclusive:
            out.append(identity if acc is None else acc)
        acc = v if acc is None else f(acc, v)
        if not exclusive:
            out.append(acc)
    return out


def rows(arr):
    return [tuple(int(v) for v in r) for r in arr.tolist()]


def random_struct(op, n, seed, high=1 << 64):
    rng = np.random.default_rng(seed)
    a = np.empty(n, op.dtype)
    for name in op.dtype.names:
        a[name] = rng.integers(0, high, n, dtype=np.uint64).astype(op.dtype[name])
    return a


# ---- the object --------------------------------------------------------------------------------

def test_operator_object():
    op = gpuscan.Operator("x > y ? x : y", dtype=np.int32, identity=-2**31)
    assert op.combine == "x > y ? x : y" and op.dtype == np.int32 and op.name is None
    assert op.identity == -2**31
    assert repr(op) == "Operator('x > y ? x : y', dtype=dtype('int32'), identity=-2147483648)"
    same = gpuscan.Operator("x > y ? x : y", dtype="i4", identity=-2**31, name="max")
    assert op == same and hash(op) == hash(same) and "name='max'" in repr(same)
    assert op != gpuscan.Operator("x > y ? x : y", dtype=np.int32, identity=0)
    assert op != gpuscan.Operator("x > y ? x : y", dtype=np.int64, identity=-2**31)
    assert op != gpuscan.Operator("y < x ? x : y", dtype=np.int32, identity=-2**31)
    assert len({op, same}) == 1
    assert AFFINE.identity == (1, 0)
    assert issubclass(gpuscan.CompileError, ValueError)


def test_pickle():
    # An Operator travels to other processes (multiprocessing, Dask's workers) by its
    # constructor's arguments: the copy is equal and computes the same.
    import pickle
    named = gpuscan.Operator("x > y ? x : y", dtype=np.int32, identity=-2**31, name="max")
    for op in (named, AFFINE):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            copy = pickle.loads(pickle.dumps(op, protocol))
            assert type(copy) is gpuscan.Operator and copy == op and repr(copy) == repr(op)
    x = np.array([3, -1, 7, 2], np.int32)
    np.testing.assert_array_equal(gpuscan.scan(x, pickle.loads(pickle.dumps(named))),
                                  np.maximum.accumulate(x))


@pytest.mark.parametrize("kwargs, exc", [
    (dict(dtype=np.complex128, identity=0), TypeError),
    (dict(dtype=object, identity=0), TypeError),
    (dict(dtype="U3", identity="a"), TypeError),
    (dict(dtype=[("a", "i8", (2,))], identity=((0, 0),)), TypeError),
    (dict(dtype=[("a", [("b", "i8")])], identity=((0,),)), TypeError),
    (dict(dtype=[("not a name", "i8")], identity=(0,)), ValueError),
    (dict(dtype=[("a", "f8")] * 1 + [("b", "f8")] + [(f"c{i}", "f8") for i in range(40)],
          identity=(0,) * 42), TypeError),  # 336 bytes: over the limit
    (dict(dtype=np.int64, identity=(1, 2)), ValueError),
    (dict(dtype=[("a", "i8"), ("b", "i8")], identity=(1, 2, 3)), ValueError),
    (dict(dtype=np.int64), TypeError),
    (dict(identity=0), TypeError),
])
def test_bad_operators(kwargs, exc):
    with pytest.raises(exc):
        gpuscan.Operator("x + y", **kwargs)


def test_empty_combine():
    with pytest.raises(ValueError, match="empty"):
        gpuscan.Operator("  \n", dtype=np.int64, identity=0)


# ---- results against the sequential fold -------------------------------------------------------

@pytest.mark.parametrize("n", [0] + SIZES8)
@pytest.mark.parametrize("exclusive", [False, True])
def test_add_scan_equals_cumsum(n, exclusive):
    a = np.random.default_rng(n).integers(-1000, 1000, n)
    got = gpuscan.scan(a, ADD, exclusive=exclusive)
    want = np.cumsum(a)
    if exclusive:
        want = np.concatenate([[0], want[:-1]]) if n else want
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert gpuscan.reduce(a, ADD) == a.sum()


@pytest.mark.parametrize("n", SIZES32)
@pytest.mark.parametrize("exclusive", [False, True])
def test_matrix_products_not_commutative(n, exclusive):
    a = random_struct(MAT, n, seed=n)
    values = rows(a)
    got = gpuscan.scan(a, MAT, exclusive=exclusive)
    assert got.dtype == MAT.dtype
    assert rows(got) == scan_ref(mat, values, (1, 0, 0, 1), exclusive)
    assert tuple(int(v) for v in gpuscan.reduce(a, MAT).tolist()) == fold(mat, values)


@pytest.mark.parametrize("n", SIZES4)
@pytest.mark.parametrize("exclusive", [False, True])
def test_four_byte_values(n, exclusive):
    # A T of 4 bytes takes the lanes' transposed pass: each lane's 8 values at a time.
    x = np.random.default_rng(n).integers(-(1 << 31), 1 << 31, n, dtype=np.int32)
    add32 = gpuscan.Operator("x + y", dtype=np.int32, identity=0, name="add32")
    want = np.cumsum(x, dtype=np.int32)
    if exclusive:
        want = np.concatenate([[0], want[:-1]]).astype(np.int32)
    assert np.array_equal(gpuscan.scan(x, add32, exclusive=exclusive), want)
    # A remainder: a combine the compiler cannot make a vector operation of (the kernels then
    # keep the one-lane-at-a-time pass, where it is the faster; the same bits either way).
    mulmod = gpuscan.Operator("(uint32_t)(((uint64_t)x * y) % 1000003u)", dtype=np.uint32,
                              identity=1, name="mulmod")
    u = (x.view(np.uint32) % 1000003).astype(np.uint32)
    got = gpuscan.scan(u, mulmod, exclusive=exclusive)
    assert got.tolist() == scan_ref(lambda p, q: p * q % 1000003, u.tolist(), 1, exclusive)
    a = random_struct(AFFINE16, n, seed=n, high=1 << 16)
    a["a"] |= 1  # odd factors: the products do not run to zero
    got = gpuscan.scan(a, AFFINE16, exclusive=exclusive)
    assert rows(got) == scan_ref(affine16, rows(a), (1, 0), exclusive)
    assert tuple(int(v) for v in gpuscan.reduce(a, AFFINE16).tolist()) == fold(affine16, rows(a))


def test_fibonacci_mod_2_64():
    n = 5000
    q = np.zeros(n, MAT.dtype)
    q["a"], q["b"], q["c"] = 1, 1, 1  # [[1, 1], [1, 0]]
    fib = [0, 1]
    for _ in range(n):
        fib.append((fib[-1] + fib[-2]) & M64)
    got = gpuscan.scan(q, MAT)["b"]  # Q^k = [[F(k+1), F(k)], [F(k), F(k-1)]]
    assert [int(v) for v in got] == fib[1:n + 1]


@pytest.mark.parametrize("n", [1, 17, CHUNK32 * 4 + 1, 10 * CHUNK8 // 2])
def test_affine_maps_tuple_in_tuple_out(n):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    ga, gb = gpuscan.scan((a, b), AFFINE)
    want = scan_ref(affine, list(zip(a.tolist(), b.tolist())), (1, 0))
    assert [int(v) for v in ga] == [w[0] for w in want]
    assert [int(v) for v in gb] == [w[1] for w in want]
    assert ga.dtype == np.uint64 and ga.flags.c_contiguous
    ra, rb = gpuscan.reduce((a, b), AFFINE)
    assert (int(ra), int(rb)) == want[-1] and isinstance(ra, np.uint64)


def test_order_matters():
    # The same maps in the other order give another composition: nothing is swapped.
    a = np.array([2, 3, 5], np.uint64)
    b = np.array([1, 4, 7], np.uint64)
    fwd = gpuscan.reduce((a, b), AFFINE)
    rev = gpuscan.reduce((a[::-1], b[::-1]), AFFINE)
    assert tuple(map(int, fwd)) == fold(affine, [(2, 1), (3, 4), (5, 7)]) == (30, 42)
    assert tuple(map(int, rev)) == fold(affine, [(5, 7), (3, 4), (2, 1)]) == (30, 51)


@pytest.mark.parametrize("n", [1, 50, CHUNK32 * 9 + 7])
def test_kadane_max_subarray(n):
    v = np.random.default_rng(n).integers(-100, 100, n)
    leaves = np.empty(n, KADANE.dtype)
    for name in "tpsb":
        leaves[name] = v
    got = gpuscan.reduce(leaves, KADANE)
    best, cur = -10**9, 0
    for x in v.tolist():  # Kadane's loop
        cur = max(x, cur + x)
        best = max(best, cur)
    assert int(got["b"]) == best and int(got["t"]) == v.sum()
    prefix = gpuscan.scan(leaves, KADANE)
    assert rows(prefix) == scan_ref(kadane, rows(leaves), None)


def test_argmax_first_of_ties():
    v = np.array([3.0, 7.0, 1.0, 7.0, 2.0, 7.0])
    val, idx = gpuscan.reduce((v, np.arange(v.size)), ARGMAX)
    assert val == 7.0 and idx == 1
    sv, si = gpuscan.scan((v, np.arange(v.size)), ARGMAX)
    assert si.tolist() == [0, 1, 1, 1, 1, 1] and sv.tolist() == [3, 7, 7, 7, 7, 7]
    # an empty reduction is the identity
    val, idx = gpuscan.reduce((v[:0], np.arange(0)), ARGMAX)
    assert val == -np.inf and idx == -1


@pytest.mark.parametrize("n", SIZES8)
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("density", [0.0, 0.001, 0.3])
def test_segmented_scan(n, exclusive, density):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    flags = rng.random(n) < density
    ga, gb = gpuscan.segmented_scan((a, b), flags, AFFINE, exclusive=exclusive)
    pairs = list(zip(a.tolist(), b.tolist()))
    want, start = [], 0
    heads = [i for i in range(1, n) if flags[i]] + [n]
    for end in heads:
        want += scan_ref(affine, pairs[start:end], (1, 0), exclusive)
        start = end
    assert list(zip(map(int, ga), map(int, gb))) == want


@pytest.mark.parametrize("exclusive", [False, True])
def test_segmented_scan_over_anchors(exclusive):
    # Long enough that CUDA's look-back starts from anchors (user_params.h: for a T of 4 bytes
    # in tiles of 4096 an anchor every 64 tiles, from 192 tiles back; for 32 bytes in tiles of
    # 1024 every 32, from 64 back), with heads hundreds of tiles apart, so that anchors carry a
    # segment's prefix across many tiles and a head stops it: flags, rows, and exclusive scans.
    rng = np.random.default_rng(47)
    add32 = gpuscan.Operator("x + y", dtype=np.int32, identity=0, name="add32")
    n = 600 * 4096 + 3
    a = rng.integers(-100, 100, n).astype(np.int32)
    flags = np.zeros(n, bool)
    flags[[5, 700_000, 700_001, 2_000_000]] = True
    got = gpuscan.segmented_scan(a, flags, add32, exclusive=exclusive)
    assert np.array_equal(got, segmented_scan_reference(a, flags, "add", exclusive, np.int32))
    m = a[:n - 3].reshape(3, -1)  # rows of 819200 values
    got = gpuscan.scan(m, add32, axis=1, exclusive=exclusive)
    assert np.array_equal(got, scan_reference(m, "add", exclusive, axis=1, dtype=np.int32))

    n = 300 * 1024 + 5
    v = rng.integers(-100, 100, n)
    leaves = np.empty(n, KADANE.dtype)
    for name in "tpsb":
        leaves[name] = v
    flags = np.zeros(n, bool)
    flags[[3, 150_000, 150_001, 280_000]] = True
    got = gpuscan.segmented_scan(leaves, flags, KADANE, exclusive=exclusive)
    values, want, start = rows(leaves), [], 0
    for end in [3, 150_000, 150_001, 280_000, n]:
        want += scan_ref(kadane, values[start:end], (0, NEG, NEG, NEG), exclusive)
        start = end
    assert rows(got) == want


def test_segmented_scan_example():
    flags = np.array([1, 0, 0, 1, 0, 0, 1, 0])
    a = np.array([4, 2, 1, 3, 0, 2, 1, 5])
    got = gpuscan.segmented_scan(a, flags, ADD, exclusive=True)
    assert got.tolist() == [0, 4, 6, 0, 3, 3, 0, 1]
    m = gpuscan.segmented_scan(a.reshape(2, 4), flags.reshape(2, 4) * 2.5, ADD)
    assert m.shape == (2, 4) and m.ravel().tolist() == [4, 6, 7, 3, 3, 5, 1, 6]


def test_axes():
    m = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for axis in range(3):
        assert np.array_equal(gpuscan.scan(m, ADD, axis=axis), np.cumsum(m, axis=axis))
        assert np.array_equal(gpuscan.reduce(m, ADD, axis=axis), m.sum(axis=axis))
    assert np.array_equal(gpuscan.reduce(m, ADD, axis=(0, 2)), m.sum(axis=(0, 2)))
    assert np.array_equal(gpuscan.reduce(m, ADD, axis=(0, 2), keepdims=True),
                          m.sum(axis=(0, 2), keepdims=True))
    assert gpuscan.reduce(m, ADD, initial=1000) == m.sum() + 1000
    assert np.array_equal(gpuscan.scan(m, ADD), np.cumsum(m))
    assert np.array_equal(gpuscan.scan(m[:, ::-1, 1:], ADD, axis=1),
                          np.cumsum(m[:, ::-1, 1:], axis=1))


def test_reduce_in_c_order():
    # Several axes are combined in C order: a non-commutative operator shows it.
    a = random_struct(AFFINE, 24, seed=1).reshape(2, 3, 4)
    got = gpuscan.reduce(a, AFFINE, axis=(0, 2))
    for j in range(3):
        want = fold(affine, rows(a[:, j, :].reshape(-1)))
        assert tuple(map(int, got[j].tolist())) == want
    initial = (3, 4)
    got = gpuscan.reduce(a, AFFINE, initial=initial)
    assert tuple(map(int, got.tolist())) == fold(affine, rows(a.reshape(-1)), initial)


def test_structured_layouts():
    # A packed dtype (NumPy's default: no padding) and a non-native one compute as the aligned T.
    packed = np.dtype([("c", "u1"), ("v", ">i8")])
    op = gpuscan.Operator("T r; r.c = x.c + y.c; r.v = x.v + y.v; return r;", dtype=packed,
                          identity=(0, 0))
    a = np.zeros(100, packed)
    a["c"], a["v"] = np.arange(100) % 7, np.arange(100) * 3
    got = gpuscan.scan(a, op)
    assert got.dtype == packed
    assert np.array_equal(got["c"], np.cumsum(a["c"]).astype(np.uint8))
    assert np.array_equal(got["v"], np.cumsum(a["v"]))


@pytest.mark.parametrize("dtype", ["i1", "u2", "f4", "f8", "f2", "bool"])
def test_scalar_dtypes(dtype):
    op = gpuscan.Operator("x > y ? x : y", dtype=dtype, identity=0)
    a = (np.random.default_rng(0).random(1000) * 100).astype(dtype)
    assert np.array_equal(gpuscan.scan(a, op), np.maximum.accumulate(a))
    assert gpuscan.scan(a, op).dtype == np.dtype(dtype)


def test_input_cast_same_kind():
    op = gpuscan.Operator("x + y", dtype=np.float64, identity=0.0)
    got = gpuscan.scan([1, 2, 3], op)  # a list of ints: castable to float64
    assert got.dtype == np.float64 and got.tolist() == [1.0, 3.0, 6.0]
    assert gpuscan.scan(np.arange(3, dtype=np.int16), ADD).tolist() == [0, 1, 3]


def test_float_statements_and_math():
    op = gpuscan.Operator("double m = fmax(x, y);\nreturn m + log(exp(x - m) + exp(y - m));",
                          dtype=np.float64, identity=-np.inf, name="logaddexp")
    v = np.random.default_rng(0).normal(size=30000)
    got = gpuscan.scan(v, op)
    want = np.logaddexp.accumulate(v)
    assert np.allclose(got, want, rtol=1e-12)
    again = gpuscan.scan(v, op)
    assert got.tobytes() == again.tobytes()  # deterministic


def test_deterministic_on_any_thread_count(tmp_path):
    op_src = "x + y"
    code = textwrap.dedent(f"""
        import hashlib, numpy as np, gpuscan
        op = gpuscan.Operator({op_src!r}, dtype=np.float32, identity=0)
        v = np.random.default_rng(5).normal(size=300001).astype(np.float32)
        print(hashlib.sha256(gpuscan.scan(v, op).tobytes()).hexdigest(),
              hashlib.sha256(gpuscan.reduce(v, op).tobytes()).hexdigest())
    """)
    outs = set()
    for threads in ("1", "2", "3"):
        r = run_python(code, env={"GPUSCAN_NUM_THREADS": threads, "GPUSCAN_BACKEND": "cpu",
                                  "GPUSCAN_CACHE_DIR": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1


@pytest.mark.parametrize("n", [1, 7, CHUNK32 + 1, 9 * CHUNK32 + 3])
def test_reduce_where(n):
    """where= leaves values out: each row's fold over the values its mask keeps (the others
    become the identity), for a scalar and a structured operator, the mask broadcast as NumPy's,
    and tuple input."""
    rng = np.random.default_rng(n)
    m = rng.integers(-1000, 1000, (3, n))
    keep = rng.random((3, n)) < 0.6
    np.testing.assert_array_equal(gpuscan.reduce(m, ADD, axis=1, where=keep),
                                  np.add.reduce(m, axis=1, where=keep))
    row = keep[0]  # broadcast over the rows
    np.testing.assert_array_equal(gpuscan.reduce(m, ADD, axis=1, where=row, initial=5),
                                  np.add.reduce(m, axis=1, where=row, initial=5))
    assert gpuscan.reduce(m, ADD, where=keep) == m[keep].sum()
    a = random_struct(AFFINE, n, seed=n)
    mask = rng.random(n) < 0.5
    want = fold(affine, rows(a[mask]))
    got = gpuscan.reduce(a, AFFINE, where=mask)
    assert tuple(map(int, got.tolist())) == (want if want is not None else (1, 0))
    got = gpuscan.reduce((a["a"], a["b"]), AFFINE, where=mask, initial=(3, 4))
    assert isinstance(got, tuple)
    assert tuple(int(v) for v in got) == fold(affine, rows(a[mask]), (3, 4))
    k = random_struct(KADANE, n, seed=n + 1, high=100)
    got = gpuscan.reduce(k, KADANE, where=~mask)
    want = fold(kadane, rows(k[~mask]))
    assert tuple(map(int, got.tolist())) == (want if want is not None else (0, NEG, NEG, NEG))


def test_reduce_where_errors():
    a = np.arange(6)
    with pytest.raises(ValueError):
        gpuscan.reduce(a, ADD, where=np.ones(4, bool))  # not broadcastable, as NumPy's
    with pytest.raises(TypeError):
        gpuscan.reduce(a, ADD, where=np.ones(6, np.int64))  # NumPy's safe cast to bool
    assert gpuscan.reduce(a, ADD, where=np.zeros(6, bool)) == 0  # nothing kept: the identity
    assert gpuscan.reduce(a, ADD, where=True) == 15
    assert gpuscan.reduce(a, ADD, where=np.False_) == 0


def test_out_forms():
    a = np.arange(10)
    out = np.empty(10, np.int64)
    assert gpuscan.scan(a, ADD, out=out) is out and out.tolist() == np.cumsum(a).tolist()
    wide = np.empty(10, np.float64)  # int64 -> float64 is same_kind
    gpuscan.scan(a, ADD, out=wide)
    assert wide.tolist() == np.cumsum(a).tolist()
    inplace = a.copy()
    gpuscan.scan(inplace, ADD, out=inplace)
    assert inplace.tolist() == np.cumsum(a).tolist()
    x, y = np.empty(4, np.uint64), np.empty(4, np.uint64)
    res = gpuscan.scan((np.full(4, 2, np.uint64), np.ones(4, np.uint64)), AFFINE, out=(x, y))
    assert res[0] is x and res[1] is y and x.tolist() == [2, 4, 8, 16] and y.tolist() == [1, 3, 7, 15]
    s = np.empty(4, AFFINE.dtype)
    gpuscan.scan((np.full(4, 2, np.uint64), np.ones(4, np.uint64)), AFFINE, out=s)
    assert s["b"].tolist() == [1, 3, 7, 15]
    r = np.empty((), AFFINE.dtype)
    gpuscan.reduce(s, AFFINE, out=r)
    assert int(r["a"]) == 2**10 and int(r["b"]) == fold(affine, rows(s))[1]


@pytest.mark.parametrize("n", [1, 10, CHUNK32 * 3 + 1])
def test_reduceat_and_segmented_reduce(n):
    a = random_struct(AFFINE, n, seed=n)
    values = rows(a)
    rng = np.random.default_rng(n)
    idx = np.sort(rng.integers(0, n, 6))
    idx[2] = idx[1]  # NumPy's rule: an index not below the next gives a[i]
    got = gpuscan.reduceat(a, idx, AFFINE)
    for i, start in enumerate(idx.tolist()):
        end = n if i + 1 == len(idx) else idx[i + 1]
        want = fold(affine, values[start:end]) if start < end else values[start]
        assert tuple(map(int, got[i].tolist())) == want
    flags = rng.random(n) < 0.01
    got = gpuscan.segmented_reduce(a, flags, AFFINE)
    heads = [0] + [i for i in range(1, n) if flags[i]] + [n]
    assert rows(got) == [fold(affine, values[s:e]) for s, e in zip(heads, heads[1:])]
    m = np.arange(20).reshape(4, 5)
    assert np.array_equal(gpuscan.reduceat(m, [0, 2, 2, 3], ADD, axis=1),
                          np.add.reduceat(m, [0, 2, 2, 3], axis=1))
    assert np.array_equal(gpuscan.reduceat(m, [0, 3], ADD), np.add.reduceat(m, [0, 3]))
    with pytest.raises(IndexError):
        gpuscan.reduceat(m, [0, 4], ADD)
    x, y = gpuscan.segmented_reduce((a["a"], a["b"]), flags, AFFINE)
    assert list(zip(map(int, x), map(int, y))) == rows(got)


# ---- bad input -----------------------------------------------------------------------------------

def test_bad_input():
    a = np.arange(5)
    with pytest.raises(TypeError, match="dtype="):
        gpuscan.scan(a, ADD, dtype=np.int64)
    with pytest.raises(TypeError, match="dtype="):
        gpuscan.reduce(a, ADD, dtype=np.int32)
    with pytest.raises(TypeError, match="same_kind"):
        gpuscan.scan(np.ones(3), ADD)  # float64 into int64
    with pytest.raises(TypeError, match="exactly"):
        gpuscan.scan(np.zeros(3, [("x", "u8"), ("y", "u8")]), AFFINE)  # other field names
    with pytest.raises(TypeError, match="exactly"):
        gpuscan.scan(np.zeros(3, np.uint64), AFFINE)
    with pytest.raises(ValueError, match="one array per field"):
        gpuscan.scan((np.ones(3, np.uint64),), AFFINE)
    with pytest.raises(ValueError, match="one shape"):
        gpuscan.scan((np.ones(3, np.uint64), np.ones(4, np.uint64)), AFFINE)
    with pytest.raises(TypeError, match="same_kind"):
        gpuscan.scan((np.ones(3), np.ones(3)), AFFINE)  # float64 fields into uint64
    with pytest.raises(ValueError, match="algorithm"):
        gpuscan.scan(a, ADD, algorithm="blelloch")
    with pytest.raises(ValueError, match="flags"):
        gpuscan.segmented_scan(a, np.ones(4), ADD)
    with pytest.raises(ValueError, match="shape"):
        gpuscan.scan(a, ADD, out=np.empty(4, np.int64))
    ro = np.empty(5, np.int64)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gpuscan.scan(a, ADD, out=ro)
    with pytest.raises(TypeError, match="same_kind"):
        gpuscan.scan(a, ADD, out=np.empty(5, bool))  # int64 into bool
    with pytest.raises(TypeError):
        gpuscan.scan(a, ADD, out=[0] * 5)
    with pytest.raises(ValueError):
        gpuscan.reduce(a, ADD, initial=(1, 2))
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.scan(a, ADD, axis=1)
    with pytest.raises(TypeError, match="MaskedArray|masked"):
        gpuscan.scan(np.ma.masked_array(a, a > 2), ADD)


def test_compile_error_has_the_users_lines():
    op = gpuscan.Operator("T r;\nr = x + y;\nreturn r + undeclared;", dtype=np.int64,
                          identity=0, name="mine")
    with pytest.raises(gpuscan.CompileError) as info:
        gpuscan.scan(np.arange(3), op)
    assert isinstance(info.value, ValueError)
    assert ("mine:3:" in str(info.value) or "mine(3)" in str(info.value)) \
        and "undeclared" in str(info.value)
    with pytest.raises(gpuscan.CompileError):  # again: not cached as a success
        gpuscan.reduce(np.arange(3), op)


# ---- the caches ------------------------------------------------------------------------------

# A compiler that logs each of its runs, then runs cc: which processes compiled.
LOGGING_CC = """#!/bin/sh
echo "$@" >> "{log}"
exec cc "$@"
"""


def logging_cc(tmp_path):
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc.sh"
    cc.write_text(LOGGING_CC.format(log=log))
    cc.chmod(0o755)
    return str(cc), log


def compiles(log):
    """The compiler's runs in the log that compiled (not --version)."""
    return [line for line in log.read_text().splitlines() if "--version" not in line] \
        if log.exists() else []


USE = textwrap.dedent("""
    import numpy as np, gpuscan
    op = gpuscan.Operator("x + y + 1 /* {tag} */", dtype=np.uint64, identity=2**64 - 1)
    a = np.arange(100000, dtype=np.uint64)
    got = gpuscan.scan(a, op)
    want = np.zeros_like(a)
    acc = 0
    for i, v in enumerate(a.tolist()[:2000]):
        acc = v if i == 0 else (acc + v + 1) & ((1 << 64) - 1)
        want[i] = acc
    assert np.array_equal(got[:2000], want[:2000])
    assert int(gpuscan.reduce(a[:2000], op)) == acc
    print("ok")
""")


def run_use(tmp_path, cache, tag, cc):
    return run_python(USE.format(tag=tag), env={"GPUSCAN_BACKEND": "cpu", "CC": cc,
                                               "GPUSCAN_CACHE_DIR": str(cache)})


def entries(cache):
    return sorted(p.name for p in cache.iterdir())


def test_fresh_process_uses_the_disk_cache(tmp_path):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    r = run_use(tmp_path, cache, "fresh", cc)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert len(compiles(log)) == 1
    assert (cache.stat().st_mode & 0o777) == 0o700
    (entry,) = entries(cache)
    assert entry.endswith(".so") and (cache / entry).stat().st_mode & 0o077 == 0
    r = run_use(tmp_path, cache, "fresh", cc)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert len(compiles(log)) == 1  # the second process compiled nothing
    assert entries(cache) == [entry]


def four_at_once(code, env):
    """`code` run by four processes started together; each must print "ok"."""
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and out.strip() == "ok" for p, (out, _) in zip(procs, outs)), outs


def test_four_processes_at_once(tmp_path):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ, GPUSCAN_BACKEND="cpu", CC=cc, GPUSCAN_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(sys.path))
    four_at_once(USE.format(tag="race"), env)
    assert len(entries(cache)) == 1 and entries(cache)[0].endswith(".so")  # no temporary left
    before = len(compiles(log))
    assert 1 <= before <= 4
    r = run_use(tmp_path, cache, "race", cc)
    assert r.returncode == 0 and len(compiles(log)) == before  # the one entry is valid


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "empty"])
def test_corrupted_entry_is_rebuilt(tmp_path, damage):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    assert run_use(tmp_path, cache, "corrupt", cc).returncode == 0
    (entry,) = entries(cache)
    path = cache / entry
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "flip":
        path.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    elif damage == "foreign":  # another operator's entry, renamed
        assert run_use(tmp_path, cache, "other", cc).returncode == 0
        other = next(p for p in cache.iterdir() if p.name != entry)
        other.replace(path)
    else:
        path.write_bytes(b"")
    before = len(compiles(log))
    r = run_use(tmp_path, cache, "corrupt", cc)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert len(compiles(log)) == before + 1  # rebuilt, never loaded
    assert path.read_bytes() == good


def test_unsafe_cache_folder_is_not_used(tmp_path):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    r = run_python(textwrap.dedent("""
        import warnings, numpy as np, gpuscan
        op = gpuscan.Operator("x + y /* unsafe */", dtype=np.int64, identity=0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert gpuscan.scan(np.arange(4), op).tolist() == [0, 1, 3, 6]
        assert any("others can write" in str(x.message) for x in w), [str(x.message) for x in w]
        print("ok")
    """), env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_CACHE_DIR": str(cache)})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert list(cache.iterdir()) == []


def test_no_compiler(tmp_path):
    r = run_python(textwrap.dedent("""
        import numpy as np, gpuscan
        op = gpuscan.Operator("x + y /* no cc */", dtype=np.int64, identity=0)
        try:
            gpuscan.scan(np.arange(4), op)
        except RuntimeError as e:
            print(type(e).__name__, e)
    """), env={"GPUSCAN_BACKEND": "cpu", "CC": "/nonexistent/cc",
               "GPUSCAN_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("RuntimeError") and "apt-get install gcc" in r.stdout


# ---- the CUDA backend: NVRTC, device arrays, its disk cache ------------------------------------

@pytest.mark.gpu
def test_cuda_operator_on_device_arrays():
    d = gpuscan.to_device(np.arange(1000))
    got = gpuscan.scan(d, ADD)
    assert isinstance(got, gpuscan.DeviceArray)
    assert np.array_equal(got.get(), np.cumsum(np.arange(1000)))
    assert gpuscan.reduce(d, ADD) == np.arange(1000).sum()
    assert gpuscan.reduce(d, ADD, initial=5) == np.arange(1000).sum() + 5
    excl = gpuscan.scan(d, ADD, exclusive=True).get()
    assert excl[0] == 0 and np.array_equal(excl[1:], np.cumsum(np.arange(999)))
    with pytest.raises(TypeError, match="dtype"):
        gpuscan.scan(gpuscan.to_device(np.arange(10, dtype=np.int32)), ADD)


@pytest.mark.gpu
def test_cuda_operator_segmented_scan_on_device_arrays():
    # device values, flags of any dtype on the device or in NumPy: a DeviceArray of a's shape,
    # or out= (in place too); reduceat and segmented_reduce take NumPy arrays only
    a = np.arange(24).reshape(4, 6)
    flags = np.zeros((4, 6), np.int32)
    flags[1, 2] = flags[3, 0] = 7
    want = segmented_scan_reference(a, flags != 0, "add", False, np.int64).reshape(4, 6)
    d = gpuscan.to_device(a)
    for f in (gpuscan.to_device(flags), flags, gpuscan.to_device(flags != 0)):
        got = gpuscan.segmented_scan(d, f, ADD)
        assert isinstance(got, gpuscan.DeviceArray) and got.shape == (4, 6)
        assert np.array_equal(got.get(), want)
    excl = gpuscan.segmented_scan(d, flags, ADD, exclusive=True).get().ravel()
    assert np.array_equal(excl, segmented_scan_reference(a, flags != 0, "add", True, np.int64))
    assert gpuscan.segmented_scan(d, flags, ADD, out=d) is d
    assert np.array_equal(d.get(), want)
    with pytest.raises(ValueError, match="flags"):
        gpuscan.segmented_scan(d, flags[:3], ADD)
    with pytest.raises(TypeError, match="out="):
        gpuscan.segmented_scan(d, flags, ADD, out=np.empty((4, 6), np.int64))
    with pytest.raises(NotImplementedError, match="reduceat"):
        gpuscan.reduceat(d, [0, 3], ADD)
    with pytest.raises(NotImplementedError, match="segmented_reduce"):
        gpuscan.segmented_reduce(d, flags, ADD)


@pytest.mark.gpu
def test_cuda_operator_device_out_and_keepdims():
    # a device array's scan into out= (in place too), its reduction whole with keepdims; along
    # an axis of a 2-D one, NumPy input only
    a = np.arange(1, 25)
    d, o = gpuscan.to_device(a), gpuscan.to_device(np.zeros(24, np.int64))
    assert gpuscan.scan(d, ADD, out=o) is o and np.array_equal(o.get(), np.cumsum(a))
    assert gpuscan.scan(d, ADD, exclusive=True, out=d) is d
    assert np.array_equal(d.get(), np.cumsum(a) - a)
    m = gpuscan.to_device(a.reshape(4, 6))
    assert np.array_equal(gpuscan.scan(m, ADD).get(), np.cumsum(a))  # flattened, as axis=None
    for axis in (None, (0, 1), (-1, 0)):
        r = gpuscan.reduce(m, ADD, axis=axis, keepdims=True)
        assert isinstance(r, np.ndarray) and r.shape == (1, 1) and r[0, 0] == a.sum()
    assert gpuscan.reduce(m, ADD, axis=(0, 1)) == a.sum()
    with pytest.raises(TypeError, match="out="):
        gpuscan.scan(d, ADD, out=np.empty(24, np.int64))
    with pytest.raises(ValueError, match="out"):
        gpuscan.scan(d, ADD, out=gpuscan.to_device(np.zeros(23, np.int64)))
    with pytest.raises(NotImplementedError, match="axis"):
        gpuscan.scan(m, ADD, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.scan(d, ADD, axis=1)  # as for NumPy input
    assert np.array_equal(gpuscan.scan(o, ADD, axis=-1).get(), np.cumsum(np.cumsum(a)))
    with pytest.raises(NotImplementedError, match="whole"):
        gpuscan.reduce(m, ADD, axis=0)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 3 * 4096 + 5, 1 << 20])
def test_cuda_float_add_within_the_bound(n):
    op = gpuscan.Operator("x + y", dtype=np.float32, identity=0.0, name="fadd")
    a = np.random.default_rng(n).random(n, dtype=np.float32)
    d = gpuscan.to_device(a)
    got = gpuscan.scan(d, op).get()
    exact = np.cumsum(a.astype(np.float64))
    bound = (np.log2(n) + 2) * np.finfo(np.float32).eps * exact
    assert np.all(np.abs(got - exact) <= bound + 1e-30)
    assert gpuscan.scan(d, op).get().tobytes() == got.tobytes()  # deterministic


# USE's operator is associative only within the CPU's sequential chunks; the GPU regroups from
# the first tile on: an associative operator here, over many tiles (the look-back's anchors).
CUDA_USE = textwrap.dedent("""
    import numpy as np, gpuscan
    op = gpuscan.Operator("x + y /* {tag} */", dtype=np.uint64, identity=0)
    a = np.arange(1000000, dtype=np.uint64) << np.uint64(40)
    assert np.array_equal(gpuscan.scan(a, op), np.cumsum(a))
    assert int(gpuscan.reduce(a, op)) == int(a.sum())
    print("ok")
""")


def run_cuda_use(cache, tag):
    return run_python(CUDA_USE.format(tag=tag), env={"GPUSCAN_BACKEND": "cuda",
                                                    "GPUSCAN_CACHE_DIR": str(cache)})


def published(cache):
    """The cache's entries as (name, inode): a compile publishes a new inode (a rename)."""
    return sorted((p.name, p.stat().st_ino) for p in cache.iterdir())


@pytest.mark.gpu
def test_cuda_fresh_process_uses_the_disk_cache(tmp_path):
    cache = tmp_path / "cache"
    r = run_cuda_use(cache, "fresh")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert (cache.stat().st_mode & 0o777) == 0o700
    first = published(cache)
    assert len(first) == 2 and all(name.endswith(".cubin") for name, _ in first)  # scan, fold
    assert all((cache / name).stat().st_mode & 0o077 == 0 for name, _ in first)
    r = run_cuda_use(cache, "fresh")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert published(cache) == first  # the second process compiled nothing


@pytest.mark.gpu
def test_cuda_four_processes_at_once(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, GPUSCAN_BACKEND="cuda", GPUSCAN_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(sys.path))
    four_at_once(CUDA_USE.format(tag="race"), env)
    entries_now = published(cache)
    assert len(entries_now) == 2 and all(n.endswith(".cubin") for n, _ in entries_now)
    r = run_cuda_use(cache, "race")
    assert r.returncode == 0 and published(cache) == entries_now  # the entries are valid


@pytest.mark.gpu
@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "empty"])
def test_cuda_corrupted_entry_is_rebuilt(tmp_path, damage):
    cache = tmp_path / "cache"
    r = run_cuda_use(cache, "corrupt")
    assert r.returncode == 0, r.stderr
    good = {name: (cache / name).read_bytes() for name, _ in published(cache)}
    if damage == "foreign":
        other = tmp_path / "other"
        r = run_cuda_use(other, "other")
        assert r.returncode == 0, r.stderr
        theirs = sorted(p for p in other.iterdir())
    for i, name in enumerate(sorted(good)):
        path, data = cache / name, good[name]
        if damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "flip":
            path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
        elif damage == "foreign":  # another operator's entry, renamed
            theirs[i].replace(path)
        else:
            path.write_bytes(b"")
    r = run_cuda_use(cache, "corrupt")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    rebuilt = published(cache)
    assert sorted(name for name, _ in rebuilt) == sorted(good), (rebuilt, sorted(good))
    r = run_cuda_use(cache, "corrupt")
    assert r.returncode == 0, r.stderr
    assert published(cache) == rebuilt, (published(cache), rebuilt)  # the rebuilt entries are whole


@pytest.mark.gpu
def test_cuda_families_compile_apart(tmp_path):
    """A scan compiles the scan kernels alone: the fold's come with the first reduction."""
    cache = tmp_path / "cache"
    r = run_python(textwrap.dedent("""
        import numpy as np, gpuscan
        op = gpuscan.Operator("x + y /* families */", dtype=np.int64, identity=0)
        gpuscan.scan(np.arange(10), op)
        print(len(list(__import__("pathlib").Path(r"{cache}").iterdir())))
        gpuscan.reduce(np.arange(10), op)
        gpuscan.segmented_scan(np.arange(10), np.arange(10) % 3 == 0, op)
        print(len(list(__import__("pathlib").Path(r"{cache}").iterdir())))
    """).replace("{cache}", str(cache)), env={"GPUSCAN_BACKEND": "cuda",
                                               "GPUSCAN_CACHE_DIR": str(cache)})
    assert r.returncode == 0 and r.stdout.split() == ["1", "3"], r.stderr
