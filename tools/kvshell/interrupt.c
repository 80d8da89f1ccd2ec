/*
 * interrupt.c — Ctrl-C in an interactive session: it cancels the line being
 * typed, or stops a long command, instead of ending kvshell.
 *
 * SIGINT is sent to the process, and the kernel hands it to any thread that
 * does not block it, engine threads included. So kvshell blocks it in the
 * main thread before the database opens (every thread the engine starts
 * inherits that mask) and lets it through only while libedit reads a line,
 * when the main thread is the only one that can take it. While a command
 * runs the signal stays pending, and commands that loop over records ask
 * kvs_interrupted() between records.
 *
 * A flag alone cannot end the read of a line: the signal may come while
 * libedit is between two reads (or before its first, at the prompt), and the
 * next read would then wait for a key. So libedit reads the terminal through
 * a descriptor of its own, and the handler makes that descriptor
 * non-blocking: a read under way fails with EINTR, a later one with EAGAIN,
 * and readline() returns NULL either way. The descriptor is a new opening of
 * the terminal, so the flag never reaches the descriptors kvshell shares with
 * the shell that started it.
 *
 * Piped and command-mode runs never call this, so there Ctrl-C ends kvshell
 * as it always did.
 */
#include "tools/kvshell/kvshell.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t caught;
static int input_fd = -1; /* what libedit reads */
static int input_flags;   /* its file status flags, blocking */

static void on_sigint(int sig)
{
    (void)sig;
    caught = 1;
    if (input_fd >= 0)
        fcntl(input_fd, F_SETFL, input_flags | O_NONBLOCK);
}

static void sigint_set(sigset_t *s)
{
    sigemptyset(s);
    sigaddset(s, SIGINT);
}

int kvs_interrupt_setup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a read under way must fail */
    if (sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    sigset_t s;
    sigint_set(&s);
    return pthread_sigmask(SIG_BLOCK, &s, NULL) == 0 ? 0 : -1;
}

FILE *kvs_interrupt_input(void)
{
    char name[256];
    int fd = -1;
    if (ttyname_r(0, name, sizeof name) == 0)
        fd = open(name, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    FILE *f = fl >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    /* SIGINT is blocked here, so the handler never sees these half set. */
    input_flags = fl & ~O_NONBLOCK;
    input_fd = fd;
    return f;
}

void kvs_interrupt_reading(bool reading)
{
    sigset_t s;
    sigint_set(&s);
    if (!reading) {
        pthread_sigmask(SIG_BLOCK, &s, NULL);
        if (input_fd >= 0)
            fcntl(input_fd, F_SETFL, input_flags);
        return;
    }
    /* Still blocked: take a Ctrl-C pressed during the last command off the
     * queue without handling it, so that it does not cancel the line about
     * to be typed; then let the next one through. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, NULL, &zero) == SIGINT)
        ;
    caught = 0;
    if (input_fd >= 0)
        fcntl(input_fd, F_SETFL, input_flags);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

bool kvs_interrupted(void)
{
    if (caught)
        return true;
    sigset_t s;
    return sigpending(&s) == 0 && sigismember(&s, SIGINT) == 1;
}
