/*
 * procio.c — the bytes this process made the storage layer read and write
 * (Linux's /proc/self/io), so that a phase reports the device traffic
 * behind its figures: RocksDB's write amplification counts the SSTs it
 * writes, not its WAL, nor files deleted before the kernel wrote them back
 * (docs/kvbench.md, "What is measured").
 */
#include <stdio.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

bool akv_kb_proc_io(akv_kb_io *io)
{
    memset(io, 0, sizeof *io);
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return false;
    char name[64];
    unsigned long long v;
    int seen = 0;
    while (fscanf(f, "%63[^:]: %llu\n", name, &v) == 2) {
        if (strcmp(name, "read_bytes") == 0)
            io->read_bytes = v, seen++;
        else if (strcmp(name, "write_bytes") == 0)
            io->write_bytes = v, seen++;
        else if (strcmp(name, "cancelled_write_bytes") == 0)
            io->cancelled_write_bytes = v, seen++;
    }
    fclose(f);
    return seen == 3;
}
