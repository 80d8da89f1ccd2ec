// smoke.cpp — a C++ program built only against the installed library:
//
//     c++ -std=c++17 smoke.cpp $(pkg-config --cflags --libs adaptkv)
//
// It creates a database in DIR (argument 1; a fresh temporary directory,
// removed at the end, when absent), puts, gets and deletes a key, checks
// every result, reopens the existing database, and checks that a bad
// argument is refused with AKV_EINVAL and a message. On success it prints
// exactly one line on stdout and nothing on stderr: the library itself
// must print nothing on a successful open (test/test_install.c checks both
// streams). It registers no filter kind.
#include <adaptkv/adaptkv.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace
{

struct db_closer {
    void operator()(akv_db *db) const { akv_close(db); }
};
using db_ptr = std::unique_ptr<akv_db, db_closer>;

struct buf_free {
    void operator()(void *p) const { akv_free(p); }
};

int failures = 0;

void check(bool ok, const char *what, int rc)
{
    if (!ok) {
        std::fprintf(stderr, "smoke: FAIL %s: rc=%d (%s) %s\n", what, rc, akv_strerror(rc), akv_errmsg());
        ++failures;
    }
}

db_ptr open_db(const std::string &dir, int create)
{
    akv_options opt;
    akv_options_init(&opt);
    opt.create_if_missing = create;
    akv_db *db = nullptr;
    int rc = akv_open(dir.c_str(), &opt, &db);
    check(rc == AKV_OK && db != nullptr, create ? "open (create)" : "open (existing)", rc);
    return db_ptr(db);
}

} // namespace

int main(int argc, char **argv)
{
    namespace fs = std::filesystem;
    std::string dir;
    bool own_dir = argc < 2;
    if (own_dir) {
        std::string tmpl = (fs::temp_directory_path() / "akvsmoke-XXXXXX").string();
        std::vector<char> t(tmpl.begin(), tmpl.end());
        t.push_back('\0');
        if (!mkdtemp(t.data())) {
            std::perror("smoke: mkdtemp");
            return 2;
        }
        dir = std::string(t.data()) + "/db";
    } else {
        dir = argv[1];
    }

    const std::string key = "greeting", value = "hello from C++";
    {
        db_ptr db = open_db(dir, 1);
        if (!db)
            return 1;
        check(akv_db_layout(db.get()) == AKV_LAYOUT_HASH, "default layout is hash", AKV_OK);
        int rc = akv_put(db.get(), key.data(), key.size(), value.data(), value.size());
        check(rc == AKV_OK, "put", rc);
        void *v = nullptr;
        size_t vlen = 0;
        rc = akv_get(db.get(), key.data(), key.size(), &v, &vlen);
        std::unique_ptr<void, buf_free> got(v);
        check(rc == AKV_OK, "get", rc);
        check(rc == AKV_OK && std::string(static_cast<const char *>(v), vlen) == value,
              "get returns the value", rc);
        check(akv_flush(db.get()) == AKV_OK, "flush", AKV_OK);
    } // closed here

    {
        // Reopen the existing database: this open must print nothing either.
        db_ptr db = open_db(dir, 0);
        if (!db)
            return 1;
        void *v = nullptr;
        size_t vlen = 0;
        int rc = akv_get(db.get(), key.data(), key.size(), &v, &vlen);
        std::unique_ptr<void, buf_free> got(v);
        check(rc == AKV_OK && std::string(static_cast<const char *>(v), vlen) == value, "get after reopen",
              rc);
        rc = akv_delete(db.get(), key.data(), key.size());
        check(rc == AKV_OK, "delete", rc);
        void *v2 = nullptr;
        rc = akv_get(db.get(), key.data(), key.size(), &v2, &vlen);
        std::unique_ptr<void, buf_free> gone(v2);
        check(rc == AKV_NOTFOUND, "get after delete is AKV_NOTFOUND", rc);

        // An error: an empty key is refused, with a message.
        rc = akv_put(db.get(), "", 0, "x", 1);
        check(rc == AKV_EINVAL, "empty key is AKV_EINVAL", rc);
        check(std::strlen(akv_errmsg()) > 0, "akv_errmsg explains the error", rc);
        if (failures == 0)
            std::printf("smoke: ok; error %d is \"%s\"\n", rc, akv_strerror(rc));
    }

    if (own_dir) {
        std::error_code ec;
        fs::remove_all(fs::path(dir).parent_path(), ec);
    }
    return failures == 0 ? 0 : 1;
}
