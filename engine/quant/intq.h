/* Symmetric integer weights with f32 scales, per row (group 0) or per `group` columns:
 *   Q8: int8 two's complement, one byte per column;
 *   Q4: value+8 in a nibble, even column in the low nibble, ceil(cols/2) bytes per row;
 *   Q2: value+2 in a 2-bit field, lowest bits first, ceil(cols/4) bytes per row.
 * Scales are [rows][ceil(cols/group)] (or [rows] for group 0); W = code * scale. */
#pragma once

#include <stdint.h>

static inline int64_t
bw_intq_row_bytes (int bits, int64_t cols)
{
  return (cols * bits + 7) / 8;
}

/* Scales per row: 1 for per-row scaling, else ceil(cols/group). */
static inline int64_t
bw_intq_row_scales (int64_t cols, int group)
{
  return group > 0 ? (cols + group - 1) / group : 1;
}

/* Columns per scale where a dense part is requantised (--dense-bits): int8 per 128 columns,
 * a quarter of the scale bytes of 32 that every token reads, for a weight error about a
 * tenth larger; int4 per 32, whose coarser codes need the finer scales. */
static inline int
bw_intq_dense_group (int bits)
{
  return bits == 8 ? 128 : 32;
}

/* The signed code of column c of a packed row. */
static inline int
bw_intq_get (int bits, const uint8_t *row, int64_t c)
{
  switch (bits)
    {
    case 8:
      return (int8_t) row[c];
    case 4:
      return (int) ((row[c >> 1] >> ((c & 1) * 4)) & 0xFu) - 8;
    default:
      return (int) ((row[c >> 2] >> ((c & 3) * 2)) & 0x3u) - 2;
    }
}

/* Largest code magnitude used by the symmetric scale: 2^(bits-1) - 1. */
static inline int
bw_intq_qmax (int bits)
{
  return (1 << (bits - 1)) - 1;
}

/* Quantises f32 [rows][cols] with bits in {8, 4, 2} and group in {0, 32, 64, 128, ...}:
 * scale = max|w| / (2^(bits-1) - 1) over the row or group (0 for an all-zero one), code =
 * round-half-even(w / scale) clamped to [-2^(bits-1), 2^(bits-1) - 1]. Unused bits of the
 * last byte of a row are written as code 0. */
void bw_intq_quantize (int bits, const float *w, int64_t rows, int64_t cols, int group,
                       uint8_t *packed, float *scales);

/* Writes code q (already in range) at column c of a packed row. */
void bw_intq_put (int bits, uint8_t *row, int64_t c, int q);
