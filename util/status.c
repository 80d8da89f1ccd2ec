/*
 * status.c — names of the result codes (adaptkv/adaptkv.h).
 */
#include "adaptkv/adaptkv.h"

const char *akv_strerror(int rc)
{
    switch (rc) {
    case AKV_OK: return "ok";
    case AKV_NOTFOUND: return "not found";
    case AKV_EINVAL: return "invalid argument";
    case AKV_EIO: return "I/O error";
    case AKV_ECORRUPT: return "corrupt data";
    case AKV_ENOTSUP: return "not supported";
    case AKV_ENOMEM: return "out of memory";
    case AKV_EFULL: return "full";
    case AKV_EBUSY: return "busy";
    case AKV_EEXIST: return "already exists";
    default: return "unknown error";
    }
}
