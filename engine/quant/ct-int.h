/* compressed-tensors "pack-quantized" integer weights (INT4 as Kimi K2 Thinking ships
 * them, and INT8), symmetric, with BF16 scales per group of columns or per row.
 *
 * Packing (the library's pack_to_int32): the signed code q of `bits` bits is offset to
 * u = q + 2^(bits-1) and the u of a row are packed densely into little-endian int32
 * words, element 32/bits * k + j in bits [bits j, bits (j+1)) of word k. Read as bytes
 * that is: INT4, column c in byte c/2, the even column in the low nibble; INT8, column c
 * in byte c. A row is ceil(cols * bits / 32) words; padding fields hold u = 0.
 *
 * Scales: BF16 [rows][ceil(cols/group)], or [rows][1] per row (strategy "channel",
 * group 0 here). W[r][c] = q[r][c] * scale[r][c / group], computed in f32 (exact: |q| is
 * at most 128 and the scale a BF16 value). */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "quant/bf16.h"

/* bits is 4 or 8. */
static inline int64_t
bw_ct_int_row_words (int bits, int64_t cols)
{
  return (cols * bits + 31) / 32;
}

static inline int64_t
bw_ct_int_row_bytes (int bits, int64_t cols)
{
  return 4 * bw_ct_int_row_words (bits, cols);
}

/* Scales per row: 1 per row (group 0), else ceil(cols/group). */
static inline int64_t
bw_ct_int_row_scales (int64_t cols, int group)
{
  return group > 0 ? (cols + group - 1) / group : 1;
}

/* The signed code of column c of a packed row. */
static inline int
bw_ct_int_get (int bits, const uint8_t *row, int64_t c)
{
  if (bits == 8)
    return (int) row[c] - 128;
  return (int) ((row[c >> 1] >> ((c & 1) * 4)) & 0xFu) - 8;
}

/* Code range [-2^(bits-1), 2^(bits-1) - 1]. */
static inline int
bw_ct_int_qmin (int bits)
{
  return -(1 << (bits - 1));
}

static inline int
bw_ct_int_qmax (int bits)
{
  return (1 << (bits - 1)) - 1;
}

/* Scale i of a BF16 scale array at any byte offset (as mapped from a file), as f32. */
static inline float
bw_ct_int_scale (const void *scales, int64_t i)
{
  uint16_t h;
  memcpy (&h, (const uint8_t *) scales + 2 * i, sizeof h);
  return bw_bf16_to_f32 (h);
}

/* Columns [c0, c0 + len) of a row as f32: q * scale (row_scales: the row's BF16 scales,
 * at any byte offset). */
void bw_ct_int_unpack (int bits, const uint8_t *row, const void *row_scales, int group,
                       int64_t c0, int64_t len, float *out);

/* Packs the codes q[0, cols) (each in range) into a row of bw_ct_int_row_bytes bytes. */
void bw_ct_int_pack_row (int bits, const int8_t *q, int64_t cols, uint8_t *row);

/* The library's symmetric scale of a group whose largest magnitude is amax (a BF16
 * value): amax / ((qmax - qmin) / 2), i.e. / 7.5 for INT4 and / 127.5 for INT8, computed
 * in f32 and rounded to BF16; a zero scale becomes BF16's epsilon, 2^-7. */
uint16_t bw_ct_int_scale_for_amax (int bits, float amax);

/* Quantises one row of cols weights as compressed-tensors does on a BF16 model
 * (calculate_qparams with the minmax observer, then _quantize): each weight is first
 * rounded to BF16; per group (or the whole row for group 0), scale as above; q =
 * round-half-even(clamp(bf16(w / scale), qmin, qmax)). Non-finite weights and quotients
 * give code 0. Writes the packed row and its BF16 scales. */
void bw_ct_int_quantize_row (int bits, const float *w, int64_t cols, int group,
                             uint8_t *row, uint16_t *row_scales);
