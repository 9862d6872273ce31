/* SIGINT flag for the C loops: see interrupt.h. */
#if !defined(_WIN32) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700  /* sigaction and SA_ONSTACK under -std=c99 */
#endif
#include "interrupt.h"

#include <stddef.h>

volatile sig_atomic_t ml_interrupt_flag = 0;

#if defined(_WIN32)
/* No sigaction: the loops are not interruptible on Windows (the flag stays 0). */
int ml_interrupt_enter(void) { ml_interrupt_flag = 0; return 0; }
void ml_interrupt_leave(void) {}
#else
static struct sigaction previous;
static int depth = 0, installed = 0;

static void on_sigint(int sig, siginfo_t *info, void *ctx)
{
    ml_interrupt_flag = 1;
    /* Chain: Python's handler records the signal for PyErr_CheckSignals. */
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, ctx);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
               previous.sa_handler != NULL) {
        previous.sa_handler(sig);
    }
}

int ml_interrupt_enter(void)
{
    if (depth++ > 0) return installed;
    ml_interrupt_flag = 0;
    installed = 0;
    struct sigaction now;
    if (sigaction(SIGINT, NULL, &now) != 0) return 0;
    /* SIG_DFL kills the process anyway; SIG_IGN means the user opted out. */
    if (!(now.sa_flags & SA_SIGINFO) &&
        (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
        return 0;
    struct sigaction ours;
    ours.sa_sigaction = on_sigint;
    ours.sa_flags = SA_SIGINFO | (now.sa_flags & SA_ONSTACK);
    sigemptyset(&ours.sa_mask);
    previous = now;
    if (sigaction(SIGINT, &ours, NULL) != 0) return 0;
    installed = 1;
    return 1;
}

void ml_interrupt_leave(void)
{
    if (depth <= 0 || --depth > 0) return;
    ml_interrupt_flag = 0;  /* calls outside enter/leave never see a stale flag */
    if (!installed) return;
    installed = 0;
    struct sigaction now;
    if (sigaction(SIGINT, NULL, &now) != 0) return;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigint)
        sigaction(SIGINT, &previous, NULL);
}
#endif
