/*
 * progress.c — a one-line progress bar on stderr, redrawn in place. The
 * runner calls it only when stderr is a terminal, so logs stay clean.
 */
#include "tools/kvbench/kvbench.h"

/* total UINT64_MAX: no limit (operationcount=0), so no bar. */
void akv_kb_progress(FILE *tty, const char *phase, uint64_t done, uint64_t total, double secs)
{
    enum { WIDTH = 30 };
    if (total == UINT64_MAX) {
        fprintf(tty, "\r%-5s %llu ops  %.0f ops/s   ", phase, (unsigned long long)done,
                secs > 0 ? (double)done / secs : 0);
        fflush(tty);
        return;
    }
    double frac = total ? (double)done / (double)total : 0;
    if (frac > 1)
        frac = 1;
    int fill = (int)(frac * WIDTH);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = 0;
    double rate = secs > 0 ? (double)done / secs : 0;
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    fprintf(tty, "\r%-5s [%s] %5.1f%% %llu/%llu ops  %.0f ops/s  eta %.0fs   ", phase, bar, frac * 100,
            (unsigned long long)done, (unsigned long long)total, rate, eta);
    fflush(tty);
}

void akv_kb_progress_end(FILE *tty)
{
    fputs("\r\033[K", tty);
    fflush(tty);
}
