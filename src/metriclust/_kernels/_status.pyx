"""Status codes of the C core -> Python exceptions: the one ``check_status``.

Public classes and functions:

.. autosummary::

   check_status      -- (cdef, for the bridges) a C status to its exception
   raise_for_status  -- the same from Python (tests)
   NonFiniteResult   -- ML_ERR_NUMERIC: a non-finite result (a FloatingPointError)
   OK, ERR_ALLOC, ERR_ARG, ERR_NUMERIC, ERR_INTERRUPTED  -- the status codes

Every bridge calls :func:`check_status` on the status its C call returned;
:func:`raise_for_status` is the same from Python (for tests).
"""

from cpython.exc cimport PyErr_CheckSignals

cdef extern from "common.h" nogil:
    int ML_OK
    int ML_ERR_ALLOC
    int ML_ERR_ARG
    int ML_ERR_NUMERIC
    int ML_ERR_INTERRUPTED



class NonFiniteResult(FloatingPointError):
    """A C kernel's result is not finite (``ML_ERR_NUMERIC``) although its input
    was: an overflow in its arithmetic (data far apart in scale, or a metric
    scaled up by pairs at distance ~0)."""


OK = ML_OK
ERR_ALLOC = ML_ERR_ALLOC
ERR_ARG = ML_ERR_ARG
ERR_NUMERIC = ML_ERR_NUMERIC
ERR_INTERRUPTED = ML_ERR_INTERRUPTED


cdef int check_status(int status, str where,
                      str arg_hint="a size or index is out of range") except -1:
    """0 for ML_OK; otherwise raise the exception of ``status``, naming ``where``.

    ML_ERR_ALLOC -> MemoryError, ML_ERR_ARG -> ValueError (``arg_hint`` says
    what was out of range), ML_ERR_NUMERIC -> NonFiniteResult (a FloatingPointError),
    ML_ERR_INTERRUPTED -> KeyboardInterrupt (after running Python's pending
    signal handlers), any other code -> RuntimeError.
    """
    if status == ML_OK:
        return 0
    if status == ML_ERR_ALLOC:
        raise MemoryError(f"{where}: allocation failed")
    if status == ML_ERR_ARG:
        raise ValueError(f"{where}: {arg_hint}")
    if status == ML_ERR_NUMERIC:
        raise NonFiniteResult(f"{where}: a non-finite intermediate result "
                                 "(overflow in the data?)")
    if status == ML_ERR_INTERRUPTED:
        PyErr_CheckSignals()
        raise KeyboardInterrupt
    raise RuntimeError(f"{where}: unknown status {status} from the C core "
                       "(a bridge and csrc/common.h disagree)")


def raise_for_status(int status, str where="test"):
    """:func:`check_status` from Python: None for ML_OK, else raises."""
    check_status(status, where)
