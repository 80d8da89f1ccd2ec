/*
 * tsan.c — ThreadSanitizer suppressions for what adaptkv cannot instrument.
 */
#if defined(__SANITIZE_THREAD__)
/*
 * RocksDB is not built with ThreadSanitizer, so its internal synchronisation
 * (atomics, its own write-group and version refcounting) is invisible to the
 * tool and shows up as races inside librocksdb. Suppress reports with a
 * RocksDB frame; races in adaptkv's own code are still reported. recover.c
 * refers to this function, so every program that opens a database links it.
 * The library is built with -fvisibility=hidden; the runtime finds this hook
 * only through the dynamic symbol table, so it keeps default visibility.
 */
__attribute__((visibility("default"))) const char *__tsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__tsan_default_suppressions(void)
{
    /* libstdc++ and libzstd are reached only through RocksDB (adaptkv is
     * C), so their memory accesses are RocksDB's too. */
    return "race:librocksdb.so\n"
           "race:rocksdb::\n"
           "race:libzstd.so\n"
           "called_from_lib:librocksdb.so\n"
           "called_from_lib:libstdc++.so\n"
           "called_from_lib:libzstd.so\n"
           "mutex:librocksdb.so\n";
}
#endif
