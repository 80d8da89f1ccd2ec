/*
 * report.c — how kvshell reports a failure: on stderr, after whatever is
 * already on stdout, prefixed with the script line ("line 12: ") and the
 * command ("put: "). Every command file reports through here, so none of
 * them needs another's helpers.
 */
#include "tools/kvshell/kvshell.h"

#include <stdarg.h>

void kvs_error_begin(const kvs_ctx *c, const char *cmd)
{
    fflush(stdout); /* keep stdout and stderr in order on a terminal */
    if (c && c->where)
        fprintf(stderr, "%s: ", c->where);
    if (cmd)
        fprintf(stderr, "%s: ", cmd);
}

void kvs_error(const kvs_ctx *c, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    kvs_error_begin(c, cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

const char *kvs_engine_msg(int rc)
{
    const char *m = akv_errmsg();
    return m && *m ? m : akv_strerror(rc);
}
