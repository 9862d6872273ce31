/* Ctrl-C during a long C loop.
 *
 * The C loops run without the GIL, so Python's own SIGINT handling (a flag
 * checked between bytecodes) cannot stop them. The bridge calls
 * ml_interrupt_enter() before releasing the GIL and ml_interrupt_leave()
 * after: enter installs a SIGINT handler that sets a flag and then calls the
 * handler it replaced (Python's, which records the signal so that
 * PyErr_CheckSignals() raises KeyboardInterrupt or runs the user's handler
 * once the GIL is back). Long loops poll ml_interrupted() at block
 * boundaries (a block is at most a few milliseconds of work) and return
 * ML_ERR_INTERRUPTED; an interrupted call leaves its outputs unspecified.
 *
 * The flag and the saved handler are process state by nature (a signal has
 * no other way in); each extension module carries its own copy, and only the
 * main thread (the one Python delivers KeyboardInterrupt to) enters. */
#ifndef METRICLUST_INTERRUPT_H
#define METRICLUST_INTERRUPT_H
#include <signal.h>

#define ML_ERR_INTERRUPTED (-4)

#if defined(__GNUC__) || defined(__clang__)
#define ML_HIDDEN __attribute__((visibility("hidden")))
#else
#define ML_HIDDEN
#endif

ML_HIDDEN extern volatile sig_atomic_t ml_interrupt_flag;

static inline int ml_interrupted(void) { return ml_interrupt_flag != 0; }

/* Clear the flag and install the handler (nested calls count); returns 1 if
 * installed, 0 where SIGINT is ignored or left at its default action. */
ML_HIDDEN int ml_interrupt_enter(void);
/* Undo one enter; the last one restores the previous handler unless someone
 * else replaced ours in the meantime (then theirs stays). */
ML_HIDDEN void ml_interrupt_leave(void);
#endif
