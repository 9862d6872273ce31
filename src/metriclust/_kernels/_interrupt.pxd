# Ctrl-C around a nogil call into the C core (csrc/interrupt.h), written once:
#
#     entered = interrupt_enter()
#     with nogil:
#         status = ml_something(...)
#     interrupt_leave(entered, status)   # raises KeyboardInterrupt if interrupted
#
# A signal handler rather than a periodic GIL re-acquire + PyErr_CheckSignals:
# the C loops run inside OpenMP regions on worker threads, which must never
# take the GIL, and polling a volatile flag costs nothing per block.

from cpython.exc cimport PyErr_CheckSignals

cdef extern from "interrupt.h" nogil:
    int ML_ERR_INTERRUPTED
    int ml_interrupt_enter()
    void ml_interrupt_leave()


cdef inline bint interrupt_enter():
    """Arm the SIGINT flag if this is the main thread (the only one Python
    delivers KeyboardInterrupt to); returns whether it was armed."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        return False
    ml_interrupt_enter()
    return True


cdef inline int interrupt_leave(bint entered, int status) except -1:
    """Disarm; an interrupted call runs Python's pending signal handlers
    (KeyboardInterrupt for SIGINT) and raises KeyboardInterrupt if none did."""
    if entered:
        ml_interrupt_leave()
    if status == ML_ERR_INTERRUPTED:
        PyErr_CheckSignals()
        raise KeyboardInterrupt
    return 0
