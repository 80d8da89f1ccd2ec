/*
 * api.h — AKV_API, the mark on every function of adaptkv's public API.
 *
 * The library is compiled with -fvisibility=hidden, so the shared library
 * exports exactly the functions declared with AKV_API in the public headers
 * (adaptkv.h, filter.h, hash.h) and nothing else: the engine's akvi_* symbols
 * and the akv_* helpers of filters/ and revmap/ stay internal. The header
 * declaration is the one place that makes a function public; a function
 * without AKV_API is not part of the API, even if its name starts with akv_.
 *
 * Programs that include these headers need not define anything: the mark
 * only affects how the library itself is built.
 */
#ifndef AKV_API_H
#define AKV_API_H

#ifndef AKV_API
#if defined(__GNUC__) || defined(__clang__)
#define AKV_API __attribute__((visibility("default")))
#else
#define AKV_API
#endif
#endif

#endif
