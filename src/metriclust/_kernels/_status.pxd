# The one mapping from the C core's status codes (csrc/common.h, interrupt.h)
# to Python exceptions, used by every bridge after its nogil call:
#
#     interrupt_leave(entered, status)
#     check_status(status, "pairs_full")
#
# ML_OK returns 0; every ML_ERR_* code raises its exception; a code this
# table does not know raises RuntimeError (never ignored).

cdef int check_status(int status, str where, str arg_hint=*) except -1
