"""Imported by every Python the tests start (their PYTHONPATH names this folder): a shim for
version skew between third-party packages, not for rmm-rs. numba-cuda 0.30 calls
``np.row_stack`` when it compiles a kernel, and NumPy 2.5 removed that alias of ``np.vstack``
(seen on the GPU machine: ``AttributeError: module 'numpy' has no attribute 'row_stack'``)."""

try:
    import numpy
except ImportError:
    numpy = None

if numpy is not None and not hasattr(numpy, "row_stack"):
    numpy.row_stack = numpy.vstack
