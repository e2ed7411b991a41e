"""Every example in gpuscan's docstrings runs and shows what it says it shows.

The docstrings are the API's one reference (docs/api.rst renders them), so their examples are
tests: one test per docstring (the C extension's functions and DeviceArray, from
csrc/binding/docstrings.c; gpuscan.trace; gpuscan.dask), run by the standard library's doctest
in a namespace of its own (each docstring imports what it uses, as a reader copying it would).

An example that needs a CUDA device (to_device, DeviceArray) carries the doctest option
``# doctest: +REQUIRES_CUDA``, registered here; a docstring with such an example is skipped, as
a whole and with the reason, where the active backend is not "cuda", and runs where it is.  The
reprs are NumPy 2's (``np.int64(14)``): with an older NumPy the examples are skipped, with the
reason.  gpuscan.dask's examples need Dask (the `test` extra installs it).
"""
import doctest
import inspect

import numpy as np
import pytest

import gpuscan
import gpuscan.trace

REQUIRES_CUDA = doctest.register_optionflag("REQUIRES_CUDA")
OPTIONS = doctest.ELLIPSIS


def _objects():
    """(name, object) of every public object whose docstring documents the API."""
    out = [("gpuscan", gpuscan)]
    out += [(f"gpuscan.{n}", getattr(gpuscan, n)) for n in gpuscan.__all__
            if n not in ("__version__", "trace")]
    out += [("gpuscan.trace", gpuscan.trace)]
    out += [(f"gpuscan.trace.{n}", getattr(gpuscan.trace, n)) for n in gpuscan.trace.__all__]
    try:
        import gpuscan.dask as gsd
    except ImportError:  # reported by test_dask_docstrings_are_collected
        return out
    out += [("gpuscan.dask", gsd)]
    out += [(f"gpuscan.dask.{n}", getattr(gsd, n)) for n in gsd.__all__]
    return out


def _doctests():
    """The docstrings with examples, one DocTest each (a class's methods are their own)."""
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    tests = {}
    for name, obj in _objects():
        # module=False: the C functions' __module__ is gpuscan._gpuscan, not the module they are
        # found through.  A module's own docstring only (its functions are listed one by one).
        found = finder.find(obj, name, module=False, globs={})
        for t in found:
            if inspect.ismodule(obj) and t.name != name:
                continue
            tests.setdefault(t.name, t)
    return sorted(tests.values(), key=lambda t: t.name)


DOCTESTS = _doctests()


def _needs_cuda(test):
    return any(ex.options.get(REQUIRES_CUDA) for ex in test.examples)


def test_the_examples_are_collected():
    # Every primitive documents itself with an example; a finder that silently found nothing
    # would make the test below vacuous.
    names = {t.name for t in DOCTESTS}
    for fn in ("scan", "segmented_scan", "reduce", "reduceat", "segmented_reduce",
               "linear_recurrence", "histogram", "bincount", "split", "compact", "backend",
               "device_info", "free_cached_memory", "to_device", "DeviceArray", "Operator"):
        assert f"gpuscan.{fn}" in names, f"gpuscan.{fn} has no example"
    for fn in ("scan", "segmented_scan", "split"):
        assert f"gpuscan.trace.{fn}" in names, f"gpuscan.trace.{fn} has no example"
    assert sum(len(t.examples) for t in DOCTESTS) >= 60


def test_dask_docstrings_are_collected():
    pytest.importorskip("dask.array", reason="Dask is not installed (pip install -e '.[test]')")
    names = {t.name for t in DOCTESTS}
    for fn in ("scan", "segmented_scan", "reduce", "histogram", "bincount", "compact", "split"):
        assert f"gpuscan.dask.{fn}" in names, f"gpuscan.dask.{fn} has no example"


def test_device_examples_are_marked():
    # Examples that make device arrays must say so, or they fail on a machine without CUDA.
    for t in DOCTESTS:
        uses_device = any("to_device" in ex.source for ex in t.examples)
        assert not uses_device or _needs_cuda(t), f"{t.name}: mark it # doctest: +REQUIRES_CUDA"


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples(test):
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip(f"the examples show NumPy 2's reprs; NumPy is {np.__version__}")
    if _needs_cuda(test) and gpuscan.backend() != "cuda":
        pytest.skip(f"{test.name}'s examples need the CUDA backend; the active backend is "
                    f"{gpuscan.backend()}")
    report = []
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
    assert result.attempted == len(test.examples)


def test_a_wrong_example_fails():
    # The machinery above can fail: an example whose output is wrong is reported.
    test = doctest.DocTestParser().get_doctest(
        ">>> import gpuscan\n>>> gpuscan.scan([1, 2, 3])\narray([1, 2, 4])\n", {}, "wrong",
        None, 0)
    report = []
    result = doctest.DocTestRunner(optionflags=OPTIONS).run(test, out=report.append)
    assert result.failed == 1
    assert "array([1, 3, 6])" in "".join(report)
