#include "childproc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

pid_t akvt_spawn_self(const char *const *env_add)
{
    size_t n_env = 0, n_add = 0;
    while (environ[n_env])
        n_env++;
    while (env_add && env_add[n_add])
        n_add++;
    /* Built before fork: the child may only exec. Added entries come first
     * and so win over inherited ones of the same name. */
    char **env = calloc(n_env + n_add + 1, sizeof *env);
    cr_assert_not_null(env);
    for (size_t i = 0; i < n_add; i++)
        env[i] = (char *)env_add[i];
    for (size_t i = 0; i < n_env; i++)
        env[n_add + i] = environ[i];
    char *const argv[] = {"akvt-child", NULL};
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        execve("/proc/self/exe", argv, env);
        _exit(6);
    }
    free(env);
    return pid;
}

double akvt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool akvt_wait_bounded(pid_t pid, int seconds, int *status)
{
    double until = akvt_now() + seconds;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        cr_assert_eq(r, 0, "waitpid: %s", strerror(errno));
        if (akvt_now() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return false;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void akvt_faultfs_env(char *preload, size_t preload_cap, char *asan, size_t asan_cap)
{
    const char *e = getenv("AKV_FAULTFS");
    if (e && *e) {
        snprintf(preload, preload_cap, "LD_PRELOAD=%s", e);
    } else {
        char exe[512];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        cr_assert_gt(n, 0);
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        cr_assert_not_null(slash);
        *slash = '\0';
        snprintf(preload, preload_cap, "LD_PRELOAD=%s/faultfs.so", exe);
    }
    const char *a = getenv("ASAN_OPTIONS");
    snprintf(asan, asan_cap, "ASAN_OPTIONS=verify_asan_link_order=0%s%s", a && *a ? ":" : "", a ? a : "");
}
