/*
 * sstreader.cc — RocksDB's SstFileReader behind a C interface
 * (docs/design.md, "Run files").
 *
 * adaptkv's second C++ file, for the same reason as sstwriter.cc: runs are
 * plain SST files named by the catalog, outside RocksDB's MANIFEST, and the
 * only RocksDB class that reads such a file without a DB is SstFileReader,
 * which the C API does not reach. The table options are the run families'
 * (rocks.c): RocksDB's defaults with one LRU block cache, so an index is
 * read once at open and held by its reader (cache_index_and_filter_blocks
 * off), data blocks go through the shared cache, and every block read is
 * checked against its checksum.
 */
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <rocksdb/cache.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>

extern "C" {
#include "engine/sstreader.h"

/* The C API's handle of a block cache. RocksDB's C API keeps its
 * definition in its own source file and offers no accessor, so this is
 * that definition, the same in every RocksDB release: the one way to share
 * the database's cache with these readers (docs/design.md, "Run files"). */
struct rocksdb_cache_t {
    std::shared_ptr<rocksdb::Cache> rep;
};
}

struct akvi_sstr_env {
    std::shared_ptr<rocksdb::Cache> cache;
    rocksdb::Options opt;
};

struct akvi_sstr {
    rocksdb::SstFileReader r;
    std::shared_ptr<const rocksdb::TableProperties> props;
    explicit akvi_sstr(const rocksdb::Options &o) : r(o) {}
};

struct akvi_sstr_it {
    std::unique_ptr<rocksdb::Iterator> it;
};

static char *dup_or_null(const std::string &s)
{
    return strdup(s.c_str());
}

/* A status's code, its message in *err. */
static int fail(const rocksdb::Status &s, char **err)
{
    *err = dup_or_null(s.ToString());
    /* A file that is not what it should be: bad magic, short, bad checksum,
     * an unknown format or compression. Missing or unreadable: I/O. */
    if (s.IsCorruption() || s.IsNotSupported() || s.IsInvalidArgument())
        return AKVI_SSTR_CORRUPT;
    return AKVI_SSTR_IO;
}

static int oom(char **err)
{
    *err = strdup("out of memory");
    return AKVI_SSTR_NOMEM;
}

extern "C" akvi_sstr_env *akvi_sstr_env_create(rocksdb_cache_t *cache, size_t cache_bytes, bool direct_reads,
                                               char **err)
{
    try {
        std::unique_ptr<akvi_sstr_env> e(new akvi_sstr_env);
        e->cache = cache ? cache->rep : rocksdb::NewLRUCache(cache_bytes);
        if (!e->cache) {
            *err = strdup("cannot create the block cache");
            return nullptr;
        }
        rocksdb::BlockBasedTableOptions t;
        t.block_cache = e->cache;
        e->opt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
        e->opt.use_direct_reads = direct_reads;
        return e.release();
    } catch (const std::bad_alloc &) {
        oom(err);
        return nullptr;
    }
}

extern "C" void akvi_sstr_env_destroy(akvi_sstr_env *e)
{
    delete e;
}

extern "C" size_t akvi_sstr_env_cache_usage(const akvi_sstr_env *e)
{
    return e->cache->GetUsage();
}

extern "C" int akvi_sstr_open(akvi_sstr_env *e, const char *path, akvi_sstr **out, char **err)
{
    *out = nullptr;
    try {
        std::unique_ptr<akvi_sstr> r(new akvi_sstr(e->opt));
        rocksdb::Status s = r->r.Open(path);
        if (!s.ok())
            return fail(s, err);
        r->props = r->r.GetTableProperties();
        if (!r->props) {
            *err = strdup("no table properties");
            return AKVI_SSTR_CORRUPT;
        }
        *out = r.release();
        return AKVI_SSTR_OK;
    } catch (const std::bad_alloc &) {
        return oom(err);
    }
}

extern "C" void akvi_sstr_close(akvi_sstr *r)
{
    delete r;
}

static void copy_field(char *dst, size_t cap, const std::string &src)
{
    size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
    memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

extern "C" void akvi_sstr_props_get(const akvi_sstr *r, akvi_sstr_props *p)
{
    const rocksdb::TableProperties &t = *r->props;
    p->entries = t.num_entries;
    p->data_bytes = t.data_size;
    p->index_bytes = t.index_size;
    p->orig_file_number = t.orig_file_number;
    copy_field(p->db_session, sizeof p->db_session, t.db_session_id);
    copy_field(p->db_id, sizeof p->db_id, t.db_id);
}

static rocksdb::ReadOptions read_options(bool scan)
{
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    if (scan) {
        ro.fill_cache = false;
        ro.readahead_size = 2u << 20;
    }
    return ro;
}

extern "C" int akvi_sstr_verify(akvi_sstr *r, char **err)
{
    try {
        rocksdb::Status s = r->r.VerifyChecksum(read_options(true));
        return s.ok() ? AKVI_SSTR_OK : fail(s, err);
    } catch (const std::bad_alloc &) {
        return oom(err);
    }
}

extern "C" akvi_sstr_it *akvi_sstr_iter(akvi_sstr *r, bool scan)
{
    try {
        std::unique_ptr<akvi_sstr_it> it(new akvi_sstr_it);
        it->it.reset(r->r.NewIterator(read_options(scan)));
        return it->it ? it.release() : nullptr;
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

extern "C" void akvi_sstr_it_destroy(akvi_sstr_it *it)
{
    delete it;
}

extern "C" void akvi_sstr_it_seek_first(akvi_sstr_it *it)
{
    it->it->SeekToFirst();
}

extern "C" void akvi_sstr_it_seek(akvi_sstr_it *it, const void *key, size_t klen)
{
    it->it->Seek(rocksdb::Slice(static_cast<const char *>(key), klen));
}

extern "C" void akvi_sstr_it_next(akvi_sstr_it *it)
{
    it->it->Next();
}

extern "C" void akvi_sstr_it_seek_last(akvi_sstr_it *it)
{
    it->it->SeekToLast();
}

extern "C" void akvi_sstr_it_prev(akvi_sstr_it *it)
{
    it->it->Prev();
}

extern "C" bool akvi_sstr_it_valid(const akvi_sstr_it *it)
{
    return it->it->Valid();
}

extern "C" const void *akvi_sstr_it_key(const akvi_sstr_it *it, size_t *len)
{
    rocksdb::Slice k = it->it->key();
    *len = k.size();
    return k.data();
}

extern "C" const void *akvi_sstr_it_value(const akvi_sstr_it *it, size_t *len)
{
    rocksdb::Slice v = it->it->value();
    *len = v.size();
    return v.data();
}

extern "C" int akvi_sstr_it_status(const akvi_sstr_it *it, char **err)
{
    try {
        rocksdb::Status s = it->it->status();
        return s.ok() ? AKVI_SSTR_OK : fail(s, err);
    } catch (const std::bad_alloc &) {
        return oom(err);
    }
}
