/* Where each linear combination of an r1cs constraints section starts. They vary in
 * length (a u32 term count, then that many terms of `term` bytes), so each one's start is
 * the previous one's end: a chain no array operation can follow, walked here once (three
 * a constraint, tens of millions at 2^24). Everything after it is gathered in bulk. */
#include <stdint.h>
#include <string.h>

/* The `lcs` linear combinations from the start of `data` (`len` bytes): each one's term
 * count into counts[i] and the offset of its first term into starts[i]. Returns the offset
 * just past the last one, or -1 when the data ends before it. */
int64_t r1cs_lc_walk(const uint8_t *data, int64_t len, int64_t lcs, int64_t term, int64_t *starts,
                     int64_t *counts) {
    int64_t pos = 0;
    for (int64_t i = 0; i < lcs; i++) {
        if (len - pos < 4) return -1;
        uint32_t count;
        memcpy(&count, data + pos, 4); /* little-endian, as the x86-64 and arm64 hosts */
        pos += 4;
        if ((int64_t)count > (len - pos) / term) return -1;
        starts[i] = pos;
        counts[i] = count;
        pos += term * (int64_t)count;
    }
    return pos;
}
