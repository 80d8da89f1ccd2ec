/*
 * release.c — akv_version: which release of the library is linked, so that a
 * program can compare it with the header it was built against
 * (AKV_VERSION_* in adaptkv.h, the one place the release number is written;
 * the Makefile reads it from there).
 */
#include "engine/internal.h"

const char *akv_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = AKV_VERSION_MAJOR;
    if (minor)
        *minor = AKV_VERSION_MINOR;
    if (patch)
        *patch = AKV_VERSION_PATCH;
    return AKV_VERSION_STRING;
}
