/* libFuzzer target: ION's ionconfig text into node__ionconfig_parse. Any
 * input is accepted or refused with a "file:line: ..." message; what it
 * accepts leaves a store profile the store can use (a heap from 1 MiB to the
 * node's maximum, a known mode). */
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sdr_profile p = {.name = "tern", .heap_size = NODE_DEFAULT_HEAP, .mode = SDR_DURABLE};
    char err[512] = "";
    node_notes notes = {0};
    int rc = node__ionconfig_parse("fuzz.ionconfig", (const char *)data, size,
                                   "/nonexistent", &p, &notes, err, sizeof err);
    node__notes_free(&notes);
    if (rc == TERN_ESYNTAX) {
        if (strncmp(err, "fuzz.ionconfig:", 15) != 0)
            abort(); /* every refusal names file:line */
        return 0;
    }
    if (rc != 0)
        abort();
    if (p.heap_size < (1u << 20) || p.heap_size > NODE_MAX_HEAP ||
        (p.mode != SDR_MEMORY && p.mode != SDR_DURABLE))
        abort();
    return 0;
}
