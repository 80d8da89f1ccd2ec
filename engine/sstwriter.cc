/*
 * sstwriter.cc — RocksDB's SstFileWriter, without its page-cache drops
 * (docs/design.md, "Data layout").
 *
 * The only C++ in adaptkv: RocksDB's C API builds its SstFileWriter with
 * invalidate_page_cache on, and no setter reaches it. With it on, the
 * writer asks the kernel to drop the whole file from the page cache
 * (posix_fadvise DONTNEED) after every MiB it writes, which starts
 * writeback of the file so far; under a mixed load the point reads
 * behind that write stream took twice RocksDB's p99 (docs/benchmarks.md,
 * "What adaptkv's readers wait on"). RocksDB's own flushes and
 * compactions never drop what they write. The table options are RocksDB's
 * defaults, as every run family's are (rocks.c sets only the block cache,
 * which writing does not use).
 */
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>

extern "C" {
#include "engine/sstwriter.h"
}

struct akvi_sstw {
    rocksdb::SstFileWriter w;
    explicit akvi_sstw(const rocksdb::Options &o)
        : w(rocksdb::EnvOptions(), o, nullptr, false /* invalidate_page_cache */)
    {
    }
};

/* An error string for akvi_rocks_err, which frees it with free(). */
static char *error_string(const rocksdb::Status &s)
{
    return strdup(s.ToString().c_str());
}

static char *oom(void)
{
    return strdup("out of memory");
}

extern "C" akvi_sstw *akvi_sstw_open(const char *path, bool zstd, char **err)
{
    try {
        rocksdb::Options o;
        o.compression = zstd ? rocksdb::kZSTD : rocksdb::kNoCompression;
        o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(rocksdb::BlockBasedTableOptions()));
        akvi_sstw *s = new akvi_sstw(o);
        rocksdb::Status st = s->w.Open(path);
        if (!st.ok()) {
            *err = error_string(st);
            akvi_sstw_destroy(s);
            return nullptr;
        }
        return s;
    } catch (const std::bad_alloc &) {
        *err = oom();
        return nullptr;
    }
}

extern "C" bool akvi_sstw_put(akvi_sstw *s, const void *key, size_t klen, const void *val, size_t vlen,
                              char **err)
{
    try {
        rocksdb::Status st = s->w.Put(rocksdb::Slice(static_cast<const char *>(key), klen),
                                      rocksdb::Slice(static_cast<const char *>(val), vlen));
        if (st.ok())
            return true;
        *err = error_string(st);
    } catch (const std::bad_alloc &) {
        *err = oom();
    }
    return false;
}

extern "C" bool akvi_sstw_finish(akvi_sstw *s, char **err)
{
    try {
        rocksdb::Status st = s->w.Finish();
        if (st.ok())
            return true;
        *err = error_string(st);
    } catch (const std::bad_alloc &) {
        *err = oom();
    }
    return false;
}

extern "C" void akvi_sstw_destroy(akvi_sstw *s)
{
    delete s;
}
