"""The host<->device pipeline: NumPy operands and results streamed through the device in chunks.

On the CUDA backend every primitive moves NumPy operands to the device and results back through
one chunked, overlapped pipeline (csrc/cuda/pipeline.c).  `_gpuscan._pipeline_chunk_bytes(n)`
(the tests' knob, like $GPUSCAN_CHUNK_BYTES) makes its chunks tiny, so every primitive's streamed
path - carries from chunk to chunk, partials combined, counts accumulated, split's two passes -
runs at small sizes here, against NumPy and the same call on device arrays (which is never
chunked).  The knob's argument handling runs everywhere; the streamed paths need the GPU.
"""
import gc
import signal
import threading
import time

import numpy as np
import pytest

import gpuscan
from gpuscan import _gpuscan
from numpy._core.multiarray import get_handler_name
from conftest import make_layout, random_array
from reference import bits, check_reduce, check_scan, check_segmented_scan, check_split

gpu = pytest.mark.gpu

# A chunk of 4 KiB: 1024 float32 values, so the sizes below take a few to a few hundred chunks.
TINY = 4096
SIZES = [pytest.param(1000, id="one_chunk"), pytest.param(4 * 1024 + 7, id="five_chunks"),
         pytest.param(300_001, id="many_chunks")]


@pytest.fixture
def tiny_chunks():
    old = _gpuscan._pipeline_chunk_bytes(TINY)
    yield TINY
    _gpuscan._pipeline_chunk_bytes(old)


# ---- the knob (every backend) -----------------------------------------------------------------

def test_knob_sets_and_restores():
    old = _gpuscan._pipeline_chunk_bytes()
    assert isinstance(old, int) and old > 0
    try:
        assert _gpuscan._pipeline_chunk_bytes(TINY) == old  # returns the previous value
        assert _gpuscan._pipeline_chunk_bytes() == TINY
        _gpuscan._pipeline_chunk_bytes(0)                    # 0: back to the default
        assert _gpuscan._pipeline_chunk_bytes() == old
    finally:
        _gpuscan._pipeline_chunk_bytes(old)


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), ("big", TypeError), (1.5, TypeError)])
def test_knob_rejects_bad_values(bad, exc):
    old = _gpuscan._pipeline_chunk_bytes()
    with pytest.raises(exc):
        _gpuscan._pipeline_chunk_bytes(bad)
    assert _gpuscan._pipeline_chunk_bytes() == old


def test_knob_small_values_round_up():
    old = _gpuscan._pipeline_chunk_bytes()
    try:
        _gpuscan._pipeline_chunk_bytes(1)
        assert 1 < _gpuscan._pipeline_chunk_bytes() <= 4096
    finally:
        _gpuscan._pipeline_chunk_bytes(old)


def test_prefault_knob_sets_and_restores():
    old = _gpuscan._pipeline_prefault()
    assert old is True                                       # on by default
    try:
        assert _gpuscan._pipeline_prefault(False) is True   # returns the previous setting
        assert _gpuscan._pipeline_prefault() is False
        assert _gpuscan._pipeline_prefault(None) is False   # None only reads it
        assert _gpuscan._pipeline_prefault(1) is False
        assert _gpuscan._pipeline_prefault() is True
    finally:
        _gpuscan._pipeline_prefault(old)


# ---- faulting in the result's pages ahead of the unpack ---------------------------------------

@gpu
@pytest.mark.parametrize("chunk", [TINY, 3 << 20], ids=["tiny_chunks", "3MiB_chunks"])
@pytest.mark.parametrize("prefault", [True, False], ids=["prefault", "no_prefault"])
def test_prefault_changes_nothing_but_pages(rng, chunk, prefault):
    """Populating the result's pages (madvise MADV_POPULATE_WRITE, one task per 2 MiB page)
    writes no byte: a fresh result, an out= slice between guard values (its first and last
    pages shared with them) and an in-place scan give NumPy's values, the guards intact."""
    old_chunk = _gpuscan._pipeline_chunk_bytes(chunk)
    old = _gpuscan._pipeline_prefault(prefault)
    try:
        n = 3_000_017                                        # 12 MB: several 2 MiB pages
        a = rng.integers(-100, 100, n, dtype=np.int32)
        check_scan(gpuscan.scan(a), a, "add")
        big = np.full(n + 2000, -7, np.int64)
        out = big[1001:1001 + n]                             # starts mid-page, ends mid-page
        res = gpuscan.scan(a, out=out)
        assert res is out
        np.testing.assert_array_equal(out, np.cumsum(a, dtype=np.int64))
        assert (big[:1001] == -7).all() and (big[1001 + n:] == -7).all()
        b = a.copy()
        gpuscan.scan(b, out=b)
        np.testing.assert_array_equal(b, np.cumsum(a, dtype=np.int32))
    finally:
        _gpuscan._pipeline_prefault(old)
        _gpuscan._pipeline_chunk_bytes(old_chunk)


# ---- scan -------------------------------------------------------------------------------------

@gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype, op", [(np.int32, "add"), (np.uint8, "add"), (np.int64, "mul"),
                                       (np.int16, "max"), (np.uint32, "xor"), (np.bool_, "and"),
                                       (np.float32, "add"), (np.float64, "add"),
                                       (np.float32, "min"), (np.float64, "mul")])
@pytest.mark.parametrize("exclusive", [False, True], ids=["incl", "excl"])
def test_scan_streamed(tiny_chunks, rng, n, dtype, op, exclusive):
    a = random_array(rng, dtype, (n,), op)
    res = gpuscan.scan(a, op, exclusive=exclusive)
    check_scan(res, a, op, exclusive=exclusive)
    if np.dtype(dtype).kind == "f":  # deterministic: the chunks are a function of n and dtype
        again = gpuscan.scan(a, op, exclusive=exclusive)
        assert (bits(again) == bits(res)).all()


@gpu
@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "byteswapped_strided",
                                    "unaligned", "fortran_column"])
def test_scan_streamed_layouts(tiny_chunks, rng, layout):
    base = random_array(rng, np.int32, (20_011,), "add")
    a = make_layout(layout, base)
    check_scan(gpuscan.scan(a), a)
    check_scan(gpuscan.scan(a, dtype=np.int32), a, dtype=np.int32)


@gpu
def test_scan_streamed_broadcast_and_cast(tiny_chunks):
    a = np.broadcast_to(np.float32(0.5), (50_000,))
    check_scan(gpuscan.scan(a, dtype=np.float64), a, dtype=np.float64)
    b = np.arange(30_000, dtype=np.int64)
    check_scan(gpuscan.scan(b, dtype=np.int8), b, dtype=np.int8)  # cast chunk by chunk, wraps


@gpu
@pytest.mark.parametrize("shape, axis", [((300, 257), 0), ((300, 257), 1), ((7, 3000), 1),
                                         ((3000, 7), 0), ((2, 5000), 1), ((4, 50, 33), 1)])
def test_scan_streamed_axis(tiny_chunks, rng, shape, axis):
    # (2, 5000) along axis 1: rows longer than a chunk, each scanned on its own with carries.
    a = random_array(rng, np.float64, shape, "add")
    check_scan(gpuscan.scan(a, axis=axis), a, axis=axis)
    i = random_array(rng, np.int32, shape, "add")
    check_scan(gpuscan.scan(i, axis=axis), i, axis=axis)


@gpu
def test_scan_streamed_out(tiny_chunks, rng):
    a = random_array(rng, np.int32, (30_000,), "add")
    out = np.zeros(90_000, np.int64)[::3]
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(a))
    b = a.astype(np.int64)
    expected = np.cumsum(b)
    assert gpuscan.scan(b, out=b) is b  # in place
    np.testing.assert_array_equal(b, expected)
    c = a.astype(np.int64)
    expected = np.cumsum(c[::-1])
    gpuscan.scan(c[::-1], out=c)  # out overlaps the input in another order
    np.testing.assert_array_equal(c, expected)


@gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype, op", [(np.int32, "add"), (np.float32, "add"),
                                       (np.float64, "mul"), (np.uint16, "max")])
def test_segmented_scan_streamed(tiny_chunks, rng, n, dtype, op):
    a = random_array(rng, dtype, (n,), op)
    # Heads rare enough that segments cross chunks, and one right at a chunk start.
    flags = rng.random(n) < 0.0005
    flags[min(n - 1, 1024)] = True
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive)


@gpu
def test_streamed_equals_device_for_integers(tiny_chunks, rng):
    a = random_array(rng, np.int64, (100_003,), "add")
    flags = rng.random(a.size) < 0.01
    d = gpuscan.to_device(a)
    np.testing.assert_array_equal(gpuscan.scan(a), gpuscan.scan(d).get())
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags, "max"),
                                  gpuscan.segmented_scan(d, flags, "max").get())


# ---- reduce -----------------------------------------------------------------------------------

@gpu
@pytest.mark.parametrize("shape, axis", [((100_003,), None), ((300, 257), 0), ((300, 257), 1),
                                         ((3, 4000), 1), ((60, 70, 5), (0, 2)), ((5, 3000), None)])
@pytest.mark.parametrize("dtype, op", [(np.int32, "add"), (np.float32, "add"), (np.float64, "add"),
                                       (np.int8, "max"), (np.float32, "min"), (np.uint64, "xor")])
def test_reduce_streamed(tiny_chunks, rng, shape, axis, dtype, op):
    a = random_array(rng, dtype, shape, op)
    check_reduce(gpuscan.reduce(a, op, axis=axis), a, op, axis=axis)


@gpu
def test_reduce_streamed_deterministic(tiny_chunks, rng):
    a = random_array(rng, np.float32, (200_000,), "add")
    r = [gpuscan.reduce(a) for _ in range(3)]
    assert len({x.tobytes() for x in r}) == 1


# ---- histogram and bincount -------------------------------------------------------------------

@gpu
@pytest.mark.parametrize("n", SIZES)
def test_histogram_streamed(tiny_chunks, rng, n):
    a = rng.normal(size=n).astype(np.float32)
    for bins in (10, 256, np.array([-2.0, -0.5, 0.0, 0.1, 3.0])):
        c, e = gpuscan.histogram(a, bins)
        ce, ee = np.histogram(a, bins)
        np.testing.assert_array_equal(c, ce)
        np.testing.assert_array_equal(e, ee)
    w = rng.random(n)
    c, _ = gpuscan.histogram(a, 32, range=(-1, 1), weights=w)
    ce, _ = np.histogram(a, 32, range=(-1, 1), weights=w)
    np.testing.assert_allclose(c, ce, rtol=1e-12)
    u = rng.integers(0, 256, size=n, dtype=np.uint8)
    np.testing.assert_array_equal(gpuscan.histogram(u, 256)[0], np.histogram(u, 256)[0])


@gpu
@pytest.mark.parametrize("n", SIZES)
def test_bincount_streamed(tiny_chunks, rng, n):
    x = rng.integers(0, 1000, size=n).astype(np.int32)
    np.testing.assert_array_equal(gpuscan.bincount(x), np.bincount(x))
    w = rng.random(n)
    np.testing.assert_allclose(gpuscan.bincount(x, w, minlength=1200),
                               np.bincount(x, w, minlength=1200), rtol=1e-12)
    x[n // 2] = -3
    with pytest.raises(ValueError):
        gpuscan.bincount(x)


# ---- split and compact ------------------------------------------------------------------------

@gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8])
@pytest.mark.parametrize("density", [0.0, 0.003, 0.5, 1.0])
def test_split_streamed(tiny_chunks, rng, n, dtype, density):
    a = random_array(rng, dtype, (n,), "add")
    flags = rng.random(n) < density
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)


@gpu
def test_split_streamed_layouts(tiny_chunks, rng):
    a = make_layout("byteswapped_strided", random_array(rng, np.int64, (30_001,), "add"))
    flags = make_layout("reversed", (rng.random(a.size) < 0.3).astype(np.float32))
    check_split(gpuscan.split(a, flags), a, flags)


# ---- to_device, get ---------------------------------------------------------------------------

@gpu
@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "unaligned"])
def test_to_device_and_get_streamed(tiny_chunks, rng, layout):
    a = make_layout(layout, random_array(rng, np.float32, (50_003,), "add"))
    d = gpuscan.to_device(a)
    back = d.get()
    assert back.dtype == a.dtype.newbyteorder("=") and back.flags.c_contiguous
    assert (bits(back) == bits(a)).all()
    m = random_array(rng, np.int16, (301, 77), "add")[:, ::2]
    np.testing.assert_array_equal(gpuscan.to_device(m).get(), m)


@gpu
def test_to_device_of_a_huge_broadcast_is_a_memory_error():
    # 1 TiB that NumPy does not hold: the device allocation fails first, nothing is copied.
    a = np.broadcast_to(np.float32(1), (1 << 38,))
    t0 = time.perf_counter()
    with pytest.raises(MemoryError, match="bytes"):
        gpuscan.to_device(a)
    assert time.perf_counter() - t0 < 10
    assert gpuscan.scan(np.arange(5)).tolist() == [0, 1, 3, 6, 10]  # still usable


@gpu
def test_uploads_wait_for_work_still_enqueued(rng):
    # A NumPy operand's chunks go up on a copy stream into device slots that the pool hands out
    # in the order of gpuscan's stream, so a slot may be memory that an earlier call's kernels,
    # still running, write (their results or scratch freed in stream order).  The first uploads
    # wait for that work.  Before they did, reduceat of device values with NumPy indices, called
    # in a loop with no synchronisation, read an earlier call's partials as indices (an
    # IndexError naming a garbage index, or wrong sums).
    n = 1 << 24
    x = gpuscan.to_device(rng.uniform(-1, 1, n).astype(np.float32))
    idx = np.arange(0, n, 1000)
    want = bits(gpuscan.reduceat(x, idx).get())
    got = [gpuscan.reduceat(x, idx) for _ in range(8)]
    for r in got:
        assert np.array_equal(bits(r.get()), want)
    # A NumPy scan right after device work whose result was dropped at once.
    a = np.arange(1 << 20, dtype=np.int64)
    for _ in range(8):
        gpuscan.scan(x)
        assert np.array_equal(gpuscan.scan(a), np.cumsum(a))


# ---- Ctrl-C between chunks --------------------------------------------------------------------

@gpu
def test_ctrl_c_between_chunks(tiny_chunks):
    # Many tiny chunks take seconds; a SIGINT from another thread stops the scan between two of
    # them with KeyboardInterrupt, and the package works afterwards.
    a = np.ones(30_000_000, np.int32)
    main = threading.main_thread().ident
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            gpuscan.scan(a)
            time.sleep(5)  # had the scan finished first, the signal lands here
    finally:
        timer.cancel()
    np.testing.assert_array_equal(gpuscan.scan(np.arange(100_000)), np.cumsum(np.arange(100_000)))


# ---- page-locked results (csrc/cuda/pinned.c) -------------------------------------------------
# On CUDA a NumPy result of 4 MiB and more that the pipeline fills comes from a bounded cache of
# page-locked blocks, and the copy engines write it directly; a page-locked operand is read
# directly.  device_info() counts the blocks in use and cached.

BIG = 1 << 21  # float32 values: 8 MiB, above the cache's 4 MiB threshold


def pinned():
    info = gpuscan.device_info()
    return info["pinned_bytes_in_use"], info["pinned_bytes_cached"]


@pytest.fixture
def fresh_cache():
    gpuscan.free_cached_memory()
    old = _gpuscan._pinned_limit(1 << 30)
    yield
    _gpuscan._pinned_limit(old)
    gpuscan.free_cached_memory()


def test_pinned_limit_knob_sets_and_restores():
    old = _gpuscan._pinned_limit()
    assert isinstance(old, int) and old >= 0
    try:
        assert _gpuscan._pinned_limit(0) == old             # returns the previous value
        assert _gpuscan._pinned_limit() == 0
        assert _gpuscan._pinned_limit(None) == 0            # None only reads it
    finally:
        _gpuscan._pinned_limit(old)
    assert _gpuscan._pinned_limit() == old


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), ("big", TypeError), (1.5, TypeError)])
def test_pinned_limit_knob_rejects_bad_values(bad, exc):
    old = _gpuscan._pinned_limit()
    with pytest.raises(exc):
        _gpuscan._pinned_limit(bad)
    assert _gpuscan._pinned_limit() == old


def test_free_cached_memory_answers_on_every_backend(backend):
    freed = gpuscan.free_cached_memory()
    assert set(freed) == {"device_bytes", "pinned_bytes"}
    assert all(isinstance(v, int) and v >= 0 for v in freed.values())
    if backend == "cpu":
        assert freed == {"device_bytes": 0, "pinned_bytes": 0}
        assert "pinned_bytes_in_use" not in gpuscan.device_info()


@gpu
def test_pinned_result_is_cached_and_reused(fresh_cache, rng):
    a = rng.random(BIG, dtype=np.float32)
    assert pinned() == (0, 0)
    r = gpuscan.scan(a)
    check_scan(r, a, "add")
    in_use, cached = pinned()
    assert in_use >= r.nbytes and cached == 0
    view = r[10:20]
    del r
    assert pinned() == (in_use, 0)                           # a view keeps the block alive
    del view
    assert pinned() == (0, in_use)                           # back in the cache
    r2 = gpuscan.scan(a)                                     # the same size takes it again
    assert pinned() == (in_use, 0)
    check_scan(r2, a, "add")
    assert (bits(gpuscan.scan(a)) == bits(r2)).all()        # deterministic, direct or not
    del r2
    assert gpuscan.free_cached_memory()["pinned_bytes"] >= in_use
    assert pinned() == (0, 0)


@gpu
def test_pinned_results_equal_ordinary_ones(fresh_cache, rng):
    a = random_array(rng, np.int64, (BIG + 13,), "add")
    flags = rng.random(a.size) < 0.01

    many = rng.random(a.size) < 0.6                          # a compact of > 4 MiB

    def results():
        return (gpuscan.scan(a), gpuscan.segmented_scan(a, flags), gpuscan.split(a, flags)[0],
                gpuscan.to_device(a).get(), gpuscan.compact(a, many), gpuscan.split(a, many)[0])

    _gpuscan._pinned_limit(0)                                # no cache: ordinary memory
    plain = results()
    assert pinned()[0] == 0
    _gpuscan._pinned_limit(1 << 30)
    locked = results()
    assert pinned()[0] >= 5 * a.nbytes
    for p, q in zip(plain, locked):
        assert q.flags.c_contiguous and q.flags.writeable and q.dtype == p.dtype
        np.testing.assert_array_equal(p, q)
    check_scan(locked[0], a, "add")
    check_segmented_scan(locked[1], a, flags, "add")
    check_split((locked[2], int(flags.sum())), a, flags)
    np.testing.assert_array_equal(locked[3], a)
    check_split(locked[4], a, many, compact=True)
    check_split((locked[5], int(many.sum())), a, many)


@gpu
@pytest.mark.parametrize("chunk", [64 << 10, 0], ids=["64KiB_chunks", "default_chunks"])
def test_pinned_operands_are_read_and_written_directly(fresh_cache, rng, chunk):
    """A page-locked input (an earlier result) is uploaded without staging, and an out= that is
    page-locked is written directly: in place, and into another page-locked result."""
    old = _gpuscan._pipeline_chunk_bytes(chunk)
    try:
        a = rng.integers(-1, 2, BIG, dtype=np.int64)          # no sum below overflows
        p = gpuscan.scan(a)                                   # page-locked
        assert pinned()[0] >= p.nbytes
        once = np.cumsum(a)
        twice = np.cumsum(once)
        q = gpuscan.scan(p)                                   # direct in, direct out
        np.testing.assert_array_equal(q, twice)
        assert gpuscan.scan(p, out=p) is p                    # in place, both direct
        np.testing.assert_array_equal(p, twice)
        r = np.empty_like(a)
        gpuscan.scan(q, out=r)                                # direct in, staged out
        np.testing.assert_array_equal(r, np.cumsum(twice))
        assert gpuscan.scan(r[::-1], out=q) is q              # staged in, direct out
        np.testing.assert_array_equal(q, np.cumsum(r[::-1]))
        w = gpuscan.scan(p, dtype=np.int32)                   # another dtype: staged, cast
        np.testing.assert_array_equal(w, np.cumsum(twice, dtype=np.int32))
    finally:
        _gpuscan._pipeline_chunk_bytes(old)


@gpu
def test_pinned_limit_is_respected(fresh_cache, rng):
    gc.collect()
    base = pinned()[0]                                        # blocks other arrays still hold
    _gpuscan._pinned_limit(base + (12 << 20))
    a = rng.random(BIG, dtype=np.float32)                     # 8 MiB results
    r1 = gpuscan.scan(a)
    assert pinned() == (base + (8 << 20), 0)
    r2 = gpuscan.scan(a)                                      # would pass the limit: ordinary
    assert pinned() == (base + (8 << 20), 0)
    np.testing.assert_array_equal(r1, r2)
    small = gpuscan.scan(a[:1000])                            # below 4 MiB: ordinary
    assert pinned() == (base + (8 << 20), 0)
    check_scan(small, a[:1000], "add")
    del r1
    assert pinned() == (base, 8 << 20)
    _gpuscan._pinned_limit(0)                                 # lowered: nothing kept past it
    r3 = gpuscan.scan(a)
    assert pinned() == (base, 0)
    np.testing.assert_array_equal(r3, r2)


# ---- big operands used again, held page-locked (csrc/core/hold.c) ----------------------------
# On CUDA a NumPy operand of 64 MiB or more whose base owns its data is page-locked in place at
# its second use, until the owner is freed, so the copy engines read or write it directly.  The
# tests lower the threshold to 8 MiB (_hold_bytes).

HELD = BIG  # float32 values: 8 MiB


@pytest.fixture
def hold_small(fresh_cache):
    old = _gpuscan._hold_bytes(4 * HELD)
    yield
    _gpuscan._hold_bytes(old)


def test_hold_knob_sets_and_restores():
    old = _gpuscan._hold_bytes()
    assert old == 64 << 20                                   # the default
    try:
        assert _gpuscan._hold_bytes(0) == old
        assert _gpuscan._hold_bytes(None) == 0
        with pytest.raises(ValueError):
            _gpuscan._hold_bytes(-1)
        with pytest.raises(TypeError):
            _gpuscan._hold_bytes(1.5)
    finally:
        _gpuscan._hold_bytes(old)
    assert _gpuscan._hold_bytes() == old


@gpu
def test_big_operands_are_held_at_their_second_use(hold_small, rng):
    gc.collect()
    base = pinned()[0]
    a = rng.random(HELD, dtype=np.float32)
    out = np.empty_like(a)
    assert gpuscan.scan(a, out=out) is out                   # first use: remembered only
    check_scan(out, a, "add")
    assert pinned()[0] == base
    out[:] = 0
    assert gpuscan.scan(a, out=out) is out                   # second: both held
    assert pinned()[0] == base + 2 * a.nbytes
    check_scan(out, a, "add")
    first = out.copy()
    out[:] = np.nan
    gpuscan.scan(a, out=out)                                 # held: read and written directly
    assert (bits(out) == bits(first)).all()
    np.testing.assert_array_equal(gpuscan.to_device(a).get(), a)
    assert pinned()[0] == base + 2 * a.nbytes
    del out                                                  # freed: let go
    assert pinned()[0] == base + a.nbytes
    del a
    assert pinned()[0] == base


@gpu
def test_a_view_holds_its_base(hold_small, rng):
    gc.collect()
    base = pinned()[0]
    owner = rng.random(HELD + 100, dtype=np.float32)
    for _ in range(2):
        d = gpuscan.to_device(owner[50:-50])                 # a view: its base is held whole
    assert pinned()[0] == base + owner.nbytes
    np.testing.assert_array_equal(d.get(), owner[50:-50])
    np.testing.assert_array_equal(gpuscan.to_device(owner[::2]).get(), owner[::2])  # strided: staged
    assert get_handler_name(owner) == "gpuscan_held"         # its memory handler wrapped
    del d
    owner.resize(2 * HELD, refcheck=False)                   # moved by its handler: let go first
    assert pinned()[0] == base
    for _ in range(2):                                       # held again where it is now
        np.testing.assert_array_equal(gpuscan.to_device(owner).get(), owner)
    assert pinned()[0] == base + owner.nbytes
    del owner
    gc.collect()
    assert pinned()[0] == base


@gpu
def test_what_is_not_held(hold_small, rng, tmp_path):
    gc.collect()
    base = pinned()[0]
    small = rng.random(HELD // 2, dtype=np.float32)          # under the threshold
    buf = np.frombuffer(bytearray(4 * HELD), np.float32)     # not owning its data
    mapped = np.memmap(tmp_path / "m", np.float32, "w+", shape=HELD)
    swapped = rng.random(HELD, dtype=np.float32).astype(">f4")
    for _ in range(3):
        for x in (small, buf, swapped, mapped):
            r = gpuscan.scan(x)
            check_scan(r, x, "add")
            del r
    assert pinned()[0] == base
    del mapped
    _gpuscan._pinned_limit(base + (4 << 20))                 # the limit: past it, none held
    a = rng.random(HELD, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(gpuscan.to_device(a).get(), a)
    assert pinned()[0] == base


@gpu
def test_a_first_use_is_remembered_until_the_knob_is_set(hold_small, rng):
    gc.collect()
    base = pinned()[0]
    a = rng.random(HELD, dtype=np.float32)
    gpuscan.scan(a)                                          # remembered (a weak reference):
    with pytest.raises(ValueError):                          # NumPy refuses to resize it
        a.resize(HELD + 1, refcheck=False)
    _gpuscan._hold_bytes(_gpuscan._hold_bytes())             # setting the knob forgets it
    a.resize(HELD + 1, refcheck=False)
    gpuscan.scan(a)                                          # a first use again
    assert pinned()[0] == base
    check_scan(gpuscan.scan(a), a, "add")                    # the second: held
    assert pinned()[0] == base + a.nbytes


@gpu
def test_temporaries_are_not_held(hold_small, rng):
    # Each is a new array, often at the address (and with the id) of the one freed before it:
    # taking it for that one would lock and unlock memory on every step of a loop.
    gc.collect()
    base = pinned()[0]
    for i in range(6):
        x = rng.random(HELD, dtype=np.float32)
        check_scan(gpuscan.scan(x * 2), x * 2, "add")
        np.testing.assert_array_equal(gpuscan.to_device(x + i).get(), x + i)
        assert pinned()[0] == base
        del x


@gpu
def test_a_small_view_of_a_big_array_is_not_held(hold_small, rng):
    gc.collect()
    base = pinned()[0]
    owner = rng.random(4 * HELD, dtype=np.float32)
    for _ in range(3):
        check_scan(gpuscan.scan(owner[:HELD // 2]), owner[:HELD // 2], "add")
    assert pinned()[0] == base


@gpu
@pytest.mark.parametrize("order", ["=", ">"])
def test_memory_replaced_under_a_held_array_is_let_go(hold_small, rng, order):
    # __setstate__ frees a held array's memory and gives it other memory (a copy of the state's
    # bytes when they are byte-swapped, and so perhaps at the same address; else the bytes
    # object's own): its range is let go as it is freed, and nothing reads or writes the old
    # pages through a registration the driver would otherwise keep.
    gc.collect()
    base = pinned()[0]
    a = rng.random(HELD, dtype=np.float32)
    for _ in range(2):
        check_scan(gpuscan.scan(a), a, "add")
    assert pinned()[0] == base + a.nbytes
    old = a.ctypes.data
    b = rng.random(HELD, dtype=np.float32)
    a.__setstate__(b.astype(order + "f4").__reduce__()[2])
    assert pinned()[0] == base
    assert a.flags.owndata == (order == ">")                # a copy, or the pickle's bytes
    assert get_handler_name(a) == ("default_allocator" if order == ">" else None)
    news = [a]                                               # new arrays, perhaps at a's old
    for v in range(8):                                       # address (not always: malloc's)
        if news[-1].ctypes.data == old:
            break
        news.append(np.full(HELD, v, np.float32))
    for x in news:                                           # each used once: none held
        np.testing.assert_array_equal(gpuscan.to_device(x).get(), x)
    np.testing.assert_array_equal(a, b)
    assert pinned()[0] == base
    del news, x
    for _ in range(2):                                       # held again if it owns its memory
        check_scan(gpuscan.scan(a), b, "add")
    assert pinned()[0] == base + (a.nbytes if a.flags.owndata else 0)
    del a
    assert pinned()[0] == base


@gpu
def test_held_arrays_one_after_another(hold_small, rng):
    # Each entry of the held table is given back when its array is freed: more arrays than
    # the table has entries are held in turn.
    gc.collect()
    base = pinned()[0]
    for i in range(40):
        a = np.full(HELD, i, np.float32)
        for _ in range(2):
            np.testing.assert_array_equal(gpuscan.to_device(a).get(), a)
        assert pinned()[0] == base + a.nbytes
        del a
        assert pinned()[0] == base
