/* The integer one-token kernel for MXFP4 and Q4 rows (see gemv-int.h), AVX-512 VNNI
 * and VBMI; compressed-tensors INT4 rows are Q4's nibbles with BF16 scales. Q8 and
 * compressed-tensors INT8 rows are summed too (see "8-bit rows" below).
 *
 * Per 64-byte load of a row (128 columns): the low nibbles are the even columns and the
 * high nibbles the odd ones, so two planes of 64 unsigned byte codes come from the load
 * and the load shifted right by 4 (MXFP4: a vpermb on a table repeated every 16 bytes maps
 * each nibble to twice its E2M1 value plus 12 and ignores the bits above it; Q4: an `and`
 * keeps the nibble, the value plus 8). vpdpbusd multiplies each plane by one byte digit of
 * the activations at a time, the 4 rows of a group step by step side by side; the top two
 * digits' sums form one chain and the lowest digit's another (one long chain per row was
 * latency-bound), combined with shifts into each lane's exact sum over its 8 columns, less
 * the code offset's share, which starts the lowest chain.
 * Once per 4 blocks, each row's weight scale for each of their 16 32-column groups is
 * multiplied by that group's fixed-point activation scale, so a block costs one permute of
 * them per row. The largest MXFP4 scale read is kept, to hand rows with a scale of 253 or
 * more (a weight that may overflow, or NaN) back to the f32 kernel.
 *
 * 8-bit rows, per 64-byte load (64 columns, in order): the three byte digits of the
 * activations meet the signed codes in vpdpbusd, whose 32-bit lanes add 4 adjacent
 * columns (never two 32-column groups). The lower digits are unsigned and go against the
 * signed codes; the top digit is signed, so it goes against the codes plus 128 (unsigned),
 * its lane starting from minus 128 times that digit's sum over the lane's columns (one
 * vpdpbusd per 64 columns, shared by the rows summed side by side). The top
 * digit's sum, shifted by 8 before the middle digit's products join it, is below 2^24 + 2^17
 * and the lowest digit's below 2^17; one FMA (top-and-middle * 256 + lowest) rounds each
 * lane's sum of 4 products once (twice only where the first part passes 2^24). */
#include <immintrin.h>
#include <string.h>

#include "kernels/avx512-scales.h"
#include "kernels/gemv-int.h"
#include "kernels/kernel-table.h"
#include "quant/ct-int.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define AI static inline __attribute__((always_inline))
#define ROWS 4
#define GROUP 32
/* Bits of the fixed-point activations: value x * 2^(FIX - e) for a group whose largest
 * magnitude is below 2^e, in [-2^FIX, 2^FIX). */
#define FIX 23

/* One 128-column block. d2, d1, d0 are the bytes of each column's 24-bit fixed-point
 * value (two's complement: d2 signed, d1 and d0 unsigned), plane p holding the columns
 * 2j + p; lane k of ncorr is minus the code offset times the sum of the fixed-point values
 * of columns 8k .. 8k+7 (what the offset adds to that lane's sum), and xg[q] is 2^(e - FIX)
 * of group q, halved for MXFP4 (whose codes are twice the E2M1 value). */
typedef struct {
  uint8_t d2[2][64];
  uint8_t d1[2][64];
  uint8_t d0[2][64];
  int32_t ncorr[16];
  float xg[4];
  uint8_t pad[48];
} __attribute__((aligned (64))) IntBlock;

G_STATIC_ASSERT (sizeof (IntBlock) <= BW_GEMV_INT_BLOCK_BYTES_MAX);

/* One 128-column block for 8-bit rows, as large as IntBlock (the level's block size):
 * d2, d1, d0 as above, in column order; xg as above, not halved. */
typedef struct {
  uint8_t d2[128];
  uint8_t d1[128];
  uint8_t d0[128];
  float xg[4];
  uint8_t pad[112];
} __attribute__((aligned (64))) ByteBlock;

G_STATIC_ASSERT (sizeof (ByteBlock) == sizeof (IntBlock));

/* Nibble -> unsigned code: MXFP4 twice the E2M1 value plus 12 (broadcast to the 4 lanes
 * of a vpermb table, whose index bits 4 and 5 then do not matter). */
static const int8_t lut_mxfp4[16] = { 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0 };
#define OFFSET_MXFP4 12
#define OFFSET_Q4 8

/* Group g of a block into 32 fixed-point int32 values; FALSE where the group rules the
 * kernel out. */
AI gboolean
fixed_group (const float *x, int32_t *out, float *xf, gboolean mx)
{
  const __m512 sign = _mm512_set1_ps (-0.0f);
  const __m512 a = _mm512_loadu_ps (x), c = _mm512_loadu_ps (x + 16);

  /* NaN and +-Inf (fpclass categories 0x01, 0x08, 0x10, 0x80) */
  if (_mm512_fpclass_ps_mask (a, 0x99) | _mm512_fpclass_ps_mask (c, 0x99))
    return FALSE;
  const float amax = _mm512_reduce_max_ps (_mm512_max_ps (_mm512_andnot_ps (sign, a), _mm512_andnot_ps (sign, c)));
  int e;
  if (!bw_gemv_int_exponent (amax, &e))
    return FALSE;
  /* |x| * 2^(FIX - e) < 2^FIX: the scaling is exact and the rounding moves x by at most
   * 2^(e - FIX - 1), one f32 ulp of the group's largest magnitude; the one value that
   * can round up to 2^FIX is clamped below it */
  const __m512 s = _mm512_set1_ps (bw_gemv_int_pow2f (FIX - e));
  const __m512i top = _mm512_set1_epi32 ((1 << FIX) - 1);
  /* the rounding mode must be an immediate (clang rejects a const variable) */
#define RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
  _mm512_store_si512 (out, _mm512_min_epi32 (_mm512_cvt_roundps_epi32 (_mm512_mul_ps (a, s), RN), top));
  _mm512_store_si512 (out + 16, _mm512_min_epi32 (_mm512_cvt_roundps_epi32 (_mm512_mul_ps (c, s), RN), top));
#undef RN
  *xf = bw_gemv_int_pow2f (e - FIX - (mx ? 1 : 0));
  return TRUE;
}

/* Byte `shift / 8` of the 64 fixed-point values at f, in column order (assembled in
 * registers: a store and a wider reload would stall store forwarding). */
AI __m512i
digit_row (const int32_t *f, int shift)
{
#define DIGITS(q) _mm512_cvtepi32_epi8 (_mm512_srai_epi32 (_mm512_load_si512 (f + 16 * (q)), shift))
  __m512i bytes = _mm512_castsi128_si512 (DIGITS (0));
  bytes = _mm512_inserti32x4 (bytes, DIGITS (1), 1);
  bytes = _mm512_inserti32x4 (bytes, DIGITS (2), 2);
  bytes = _mm512_inserti32x4 (bytes, DIGITS (3), 3);
#undef DIGITS
  return bytes;
}

/* Byte `shift / 8` of the 128 fixed-point values in fx, split into the even and the odd
 * columns (64 bytes each). */
AI void
digit_planes (const int32_t *fx, int shift, uint8_t even[64], uint8_t odd[64])
{
  for (int h = 0; h < 2; h++)
    {
      /* columns 64h .. 64h+63 as 32 words: low byte even, high odd */
      const __m512i bytes = digit_row (fx + 64 * h, shift);
      _mm256_store_si256 ((__m256i *) (even + 32 * h), _mm512_cvtepi16_epi8 (bytes));
      _mm256_store_si256 ((__m256i *) (odd + 32 * h), _mm512_cvtepi16_epi8 (_mm512_srli_epi16 (bytes, 8)));
    }
}

/* Lane k: the sum of fx[8k .. 8k+7] (below 2^26 in magnitude). */
AI __m512i
lane_sums (const int32_t *fx)
{
  const __m512i pick = _mm512_setr_epi32 (0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8);
  __m512i r = _mm512_setzero_si512 ();

  for (int q = 0; q < 8; q++)
    {
      __m512i v = _mm512_load_si512 (fx + 16 * q);
      v = _mm512_add_epi32 (v, _mm512_shuffle_epi32 (v, _MM_PERM_CDAB));
      v = _mm512_add_epi32 (v, _mm512_shuffle_epi32 (v, _MM_PERM_BADC));
      v = _mm512_add_epi32 (v, _mm512_shuffle_i32x4 (v, v, _MM_SHUFFLE (2, 3, 0, 1)));
      /* every dword of each 8-column half of v now holds that half's sum */
      r = _mm512_mask_permutexvar_epi32 (r, (__mmask16) (3u << (2 * q)), pick, v);
    }
  return r;
}

AI gboolean
byte_codes (BwFormat fmt)
{
  return fmt == BW_FMT_Q8 || fmt == BW_FMT_CT_INT8;
}

/* Byte `shift / 8` of the 128 fixed-point values in fx, in column order. */
AI void
digit_bytes (const int32_t *fx, int shift, uint8_t out[128])
{
  for (int h = 0; h < 2; h++)
    _mm512_store_si512 (out + 64 * h, digit_row (fx + 64 * h, shift));
}

static gboolean
prepare_bytes (const float *x, ByteBlock *out)
{
  int32_t fx[BW_GEMV_INT_BLOCK] __attribute__((aligned (64)));

  for (int g = 0; g < BW_GEMV_INT_BLOCK / GROUP; g++)
    if (!fixed_group (x + GROUP * g, fx + GROUP * g, &out->xg[g], FALSE))
      return FALSE;
  digit_bytes (fx, 16, out->d2);
  digit_bytes (fx, 8, out->d1);
  digit_bytes (fx, 0, out->d0);
  return TRUE;
}

static gboolean
prepare_block (BwFormat fmt, const float *x, void *block)
{
  IntBlock *out = block;
  const gboolean mx = fmt == BW_FMT_MXFP4;
  int32_t fx[BW_GEMV_INT_BLOCK] __attribute__((aligned (64)));
  const int32_t off = mx ? OFFSET_MXFP4 : OFFSET_Q4;

  if (byte_codes (fmt))
    return prepare_bytes (x, block);
  for (int g = 0; g < BW_GEMV_INT_BLOCK / GROUP; g++)
    if (!fixed_group (x + GROUP * g, fx + GROUP * g, &out->xg[g], mx))
      return FALSE;
  digit_planes (fx, 16, out->d2[0], out->d2[1]);
  digit_planes (fx, 8, out->d1[0], out->d1[1]);
  digit_planes (fx, 0, out->d0[0], out->d0[1]);
  _mm512_store_si512 (out->ncorr, _mm512_mullo_epi32 (lane_sums (fx), _mm512_set1_epi32 (-off)));
  return TRUE;
}

/* Lane k of out[i]: row i's exact sum over columns 8k .. 8k+7 of the block at byte off of
 * its row (|sum| < 2^31), for R rows. Each step is done for all the rows before the next,
 * so the rows' independent dot products sit side by side for the scheduler. The top two
 * digits form one chain (the top's sum shifted before the middle digit's products join
 * it) and the lowest digit another, started from the offset term. */
AI void
block_sums (BwFormat fmt, const uint8_t *const *rows, int64_t off, const IntBlock *xb,
            __m512i lut, const int R, __m512i *out)
{
  __m512i lo[ROWS], hi[ROWS], s21[ROWS], s0[ROWS];

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      __m512i v = _mm512_loadu_si512 (rows[i] + off);
      __asm__ ("" : "+v" (v)); /* keep the load in a register, not folded into each use */
      if (fmt == BW_FMT_MXFP4)
        {
          lo[i] = _mm512_permutexvar_epi8 (v, lut);
          hi[i] = _mm512_permutexvar_epi8 (_mm512_srli_epi16 (v, 4), lut);
        }
      else
        {
          const __m512i nib = _mm512_set1_epi8 (0x0F);
          lo[i] = _mm512_and_si512 (v, nib);
          hi[i] = _mm512_and_si512 (_mm512_srli_epi16 (v, 4), nib);
        }
    }
  /* codes unsigned against the signed top digit, then signed (they are below 128)
   * against the unsigned lower digits */
  const __m512i z = _mm512_setzero_si512 (), nc = _mm512_load_si512 (xb->ncorr);
  const __m512i d2e = _mm512_load_si512 (xb->d2[0]), d0e = _mm512_load_si512 (xb->d0[0]);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s21[i] = _mm512_dpbusd_epi32 (z, lo[i], d2e);
      s0[i] = _mm512_dpbusd_epi32 (nc, d0e, lo[i]);
    }
  const __m512i d2o = _mm512_load_si512 (xb->d2[1]), d0o = _mm512_load_si512 (xb->d0[1]);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s21[i] = _mm512_slli_epi32 (_mm512_dpbusd_epi32 (s21[i], hi[i], d2o), 8);
      s0[i] = _mm512_dpbusd_epi32 (s0[i], d0o, hi[i]);
    }
  const __m512i d1e = _mm512_load_si512 (xb->d1[0]), d1o = _mm512_load_si512 (xb->d1[1]);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s21[i] = _mm512_dpbusd_epi32 (_mm512_dpbusd_epi32 (s21[i], d1e, lo[i]), d1o, hi[i]);
      out[i] = _mm512_add_epi32 (_mm512_slli_epi32 (s21[i], 8), s0[i]);
    }
}

AI __m512i
nibble_table (void)
{
  return _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) lut_mxfp4));
}

AI void
store_rows (const __m512 *acc, float *y, int64_t r, int64_t rs, const int R, gboolean add)
{
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const float v = _mm512_reduce_add_ps (acc[i]);
      y[r + i * rs] = add ? y[r + i * rs] + v : v;
    }
}

/* The 16 activation scales of the blocks from xb (at most nb of them): lane 4j + k holds
 * that of group k of block j. */
AI __m512
quad_xf (const IntBlock *xb, int64_t nb)
{
  __m512 xf = _mm512_castps128_ps512 (_mm_load_ps (xb[0].xg));
  if (nb > 1)
    xf = _mm512_insertf32x4 (xf, _mm_load_ps (xb[1].xg), 1);
  if (nb > 2)
    xf = _mm512_insertf32x4 (xf, _mm_load_ps (xb[2].xg), 2);
  if (nb > 3)
    xf = _mm512_insertf32x4 (xf, _mm_load_ps (xb[3].xg), 3);
  return xf;
}

/* R rows from r, rs apart, over blocks [b0, b0 + nb) whose activations are blk[0, nb);
 * y is set, or added to when `add`. Per 4 blocks, each row's weight scales for their 16
 * 32-column groups are multiplied by the activations' 16 fixed-point scales; g32 says the
 * weight groups are those 32-column groups (MXFP4, Q4 group 32), else a Q4 scale spans
 * gsz columns and is picked by index. FALSE where an MXFP4 scale of these rows is 253 or
 * more (checked as the scales are read, not in a pass of its own beforehand). */
AI gboolean
rows_int (BwFormat fmt, const BwMatrix *w, const IntBlock *blk, int64_t b0, int64_t nb,
          float *y, int64_t r, int64_t rs, const int R, gboolean add, const gboolean g32)
{
  const gboolean mx = fmt == BW_FMT_MXFP4;
  const __m512i lut = nibble_table ();
  const __m512i lane = _mm512_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i lane_group = _mm512_srli_epi32 (lane, 2);
  const uint8_t *rows[ROWS];
  __m512 acc[ROWS], fsc[ROWS];
  __m512i emax = _mm512_setzero_si512 ();
  GvScales gs; /* the rows' scale pointers, scales per row, group size and its log2 */

  gv_scales_init (&gs, fmt, w, r, rs, R);
  gv_row_starts (w, fmt, r, rs, b0, rows, R);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    acc[i] = _mm512_setzero_ps ();
  for (int64_t q = 0; q < nb; q += 4)
    {
      const int64_t nq = MIN (4, nb - q), g = 4 * (b0 + q);
      const __m512 xf = quad_xf (&blk[q], nq);
      /* weight scale k of a row covers the 32-column groups [k gsz / 32, (k + 1) gsz / 32)
       * (a quotient exact in f32 where gsz is no power of two: both are below 2^24) */
      int64_t first = g;
      __m512i pick = lane;
      if (!g32)
        {
          const __m512i col = _mm512_slli_epi32 (_mm512_add_epi32 (lane, _mm512_set1_epi32 ((int) g)), 5);
          first = 32 * g / gs.gsz;
          if (gs.gshift >= 0)
            pick = _mm512_srl_epi32 (col, _mm_cvtsi32_si128 (gs.gshift));
          else
            pick = _mm512_cvttps_epi32 (_mm512_div_ps (_mm512_cvtepi32_ps (col), _mm512_set1_ps ((float) gs.gsz)));
          pick = _mm512_sub_epi32 (pick, _mm512_set1_epi32 ((int) first));
        }
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          __m512 sc;
          if (mx)
            {
              const __m512i e = gv_e8m0_bytes16 (gs.srow[i], first, gs.ns);
              emax = _mm512_max_epu32 (emax, e);
              sc = gv_e8m0_decode16 (e);
            }
          else
            sc = gv_scales_16 (fmt, gs.srow[i], first, gs.ns);
          if (!g32)
            sc = _mm512_permutexvar_ps (pick, sc);
          fsc[i] = _mm512_mul_ps (sc, xf);
          _mm_prefetch ((const char *) gs.srow[i] + (first + 64) * gv_scale_bytes (fmt), _MM_HINT_T0);
        }
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        {
          if (j >= nq)
            break;
          const int64_t b = q + j;
          const __m512i sidx = _mm512_add_epi32 (lane_group, _mm512_set1_epi32 (4 * j));
          __m512i s[ROWS];
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            _mm_prefetch ((const char *) rows[i] + 64 * b + GV_PREFETCH_BYTES, _MM_HINT_T0);
          block_sums (fmt, rows, 64 * b, &blk[b], lut, R, s);
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            acc[i] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (s[i]), _mm512_permutexvar_ps (sidx, fsc[i]), acc[i]);
        }
    }
  store_rows (acc, y, r, rs, R, add);
  return !_mm512_cmpge_epu32_mask (emax, _mm512_set1_epi32 (253));
}

AI gboolean
rows_fmt (BwFormat fmt, const BwMatrix *w, const IntBlock *blk, int64_t b0, int64_t nb,
          float *y, int64_t r0, int64_t r1, gboolean add, const gboolean g32)
{
  const int64_t s = (r1 - r0) / ROWS;
  gboolean ok = TRUE;

  for (int64_t k = 0; k < s; k++)
    ok &= rows_int (fmt, w, blk, b0, nb, y, r0 + k, s, ROWS, add, g32);
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    ok &= rows_int (fmt, w, blk, b0, nb, y, r, 1, 1, add, g32);
  return ok;
}

/* How a row's weight scales map onto the 4 groups of 32 columns of a block: one each
 * (G32), one per two (G64), or one for the whole block (WIDE: per row, or a multiple of
 * 128 columns). */
typedef enum { G32, G64, WIDE } Groups;

/* Scale i of a row's scales s: f32 (Q8) or BF16 (compressed-tensors INT8). */
AI float
byte_scale1 (BwFormat fmt, const uint8_t *s, int64_t i)
{
  return fmt == BW_FMT_CT_INT8 ? bw_ct_int_scale (s, i) : bw_load_f32 (s + 4 * i);
}

/* The weight scales of the 4 groups of block gb of a row (scales s; for WIDE, scale si). */
AI __m128
byte_block_scales (BwFormat fmt, Groups gk, const uint8_t *s, int64_t gb, int64_t si)
{
  if (gk == G32)
    {
      if (fmt == BW_FMT_CT_INT8)
        return _mm_castsi128_ps (_mm_slli_epi32 (_mm_cvtepu16_epi32 (_mm_loadl_epi64 ((const __m128i *) (s + 8 * gb))), 16));
      return _mm_loadu_ps ((const float *) (s + 16 * gb));
    }
  if (gk == G64)
    {
      const float s0 = byte_scale1 (fmt, s, 2 * gb), s1 = byte_scale1 (fmt, s, 2 * gb + 1);
      return _mm_setr_ps (s0, s0, s1, s1);
    }
  return _mm_set1_ps (byte_scale1 (fmt, s, si));
}

/* byte_block_scales, where block gb may be a row's partial last block (ns scales of gk's
 * groups): the groups it lacks get 0 (masked loads: a copy's narrow stores would stall the
 * wider load). */
AI __m128
byte_block_scales_at (BwFormat fmt, Groups gk, const uint8_t *s, int64_t gb, int64_t si, int64_t ns)
{
  const int64_t per = gk == G64 ? 2 : 4;

  if (gk == WIDE || per * (gb + 1) <= ns)
    return byte_block_scales (fmt, gk, s, gb, si);
  if (gk == G64)
    return _mm_setr_ps (byte_scale1 (fmt, s, 2 * gb), byte_scale1 (fmt, s, 2 * gb), 0.0f, 0.0f);
  const __mmask8 have = (__mmask8) ((1u << (ns - 4 * gb)) - 1);
  if (fmt == BW_FMT_CT_INT8)
    return _mm_castsi128_ps (_mm_slli_epi32 (_mm_cvtepu16_epi32 (_mm_maskz_loadu_epi16 (have, s + 8 * gb)), 16));
  return _mm_maskz_loadu_ps (have, s + 16 * gb);
}

/* Lane k of out[i]: row i's sum over columns 4k .. 4k+3 of the 64 at byte off of its row
 * (f32, rounded once), for R rows side by side; d2, d1, d0 are those columns' digits. */
AI void
byte_sums (BwFormat fmt, const uint8_t *const *rows, int64_t off, const uint8_t *d2,
           const uint8_t *d1, const uint8_t *d0, const int R, __m512 *out)
{
  const __m512i flip = _mm512_set1_epi8 ((char) 0x80);
  const __m512i z = _mm512_setzero_si512 ();
  __m512i sw[ROWS], uw[ROWS], s21[ROWS], s0[ROWS];

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      __m512i v = _mm512_loadu_si512 (rows[i] + off);
      __asm__ ("" : "+v" (v)); /* keep the load in a register, not folded into each use */
      /* Q8 bytes are the signed codes; compressed-tensors INT8 bytes are the codes plus 128 */
      sw[i] = fmt == BW_FMT_CT_INT8 ? _mm512_xor_si512 (v, flip) : v;
      uw[i] = fmt == BW_FMT_CT_INT8 ? v : _mm512_xor_si512 (v, flip);
    }
  const __m512i t2 = _mm512_load_si512 (d2), t0 = _mm512_load_si512 (d0);
  /* minus 128 times the top digits' sum over each lane's columns: what the offset adds */
  const __m512i ncorr = _mm512_sub_epi32 (z, _mm512_dpbusd_epi32 (z, flip, t2));
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s21[i] = _mm512_dpbusd_epi32 (ncorr, uw[i], t2);
      s0[i] = _mm512_dpbusd_epi32 (z, t0, sw[i]);
    }
  const __m512i t1 = _mm512_load_si512 (d1);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s21[i] = _mm512_dpbusd_epi32 (_mm512_slli_epi32 (s21[i], 8), t1, sw[i]);
      out[i] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (s21[i]), _mm512_set1_ps (256.0f),
                                _mm512_cvtepi32_ps (s0[i]));
    }
}

/* R rows from r, rs apart, over blocks [b0, b0 + nb) whose activations are blk[0, nb);
 * y is set, or added to when `add`. */
AI void
rows_bytes (BwFormat fmt, Groups gk, const BwMatrix *w, const ByteBlock *blk, int64_t b0,
            int64_t nb, float *y, int64_t r, int64_t rs, const int R, gboolean add)
{
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, w->cols);
  const int sb = gv_scale_bytes (fmt);
  /* compressed-tensors rows have as many scales as Q8's (quant/ct-int.h) */
  const int64_t ns = bw_intq_row_scales (w->cols, w->group);
  /* WIDE: the scale of the block's columns, and the column where the next one starts */
  const int64_t gsz = w->group > 0 ? w->group : INT64_MAX / 2;
  int64_t si = BW_GEMV_INT_BLOCK * b0 / gsz, next = (si + 1) * gsz;
  /* lanes 0-7 of half h take group 2h's scale, lanes 8-15 group 2h + 1's */
  const __m512i half0 = _mm512_setr_epi32 (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i half1 = _mm512_add_epi32 (half0, _mm512_set1_epi32 (2));
  const uint8_t *rows[ROWS], *srow[ROWS];
  __m512 acc[ROWS];

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i * rs) * row_bytes;
      srow[i] = (const uint8_t *) w->scales + (r + i * rs) * ns * sb;
      acc[i] = _mm512_setzero_ps ();
    }
  for (int64_t b = 0; b < nb; b++)
    {
      const int64_t gb = b0 + b, off = BW_GEMV_INT_BLOCK * gb;
      const ByteBlock *xb = &blk[b];
      const __m128 xg = _mm_load_ps (xb->xg);
      __m512 fs[ROWS];
      if (gk == WIDE && off >= next)
        {
          si = off / gsz;
          next = (si + 1) * gsz;
        }
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          fs[i] = _mm512_castps128_ps512 (_mm_mul_ps (byte_block_scales_at (fmt, gk, srow[i], gb, si, ns), xg));
          /* the scales only: the hardware streams the codes faster on its own (PERFORMANCE.md) */
          if (gk != WIDE)
            _mm_prefetch ((const char *) srow[i] + (gk == G32 ? 4 : 2) * sb * (gb + 16), _MM_HINT_T0);
        }
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++)
        {
          __m512 s[ROWS];
          byte_sums (fmt, rows, off + 64 * h, xb->d2 + 64 * h, xb->d1 + 64 * h, xb->d0 + 64 * h,
                     R, s);
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            acc[i] = _mm512_fmadd_ps (s[i], _mm512_permutexvar_ps (h ? half1 : half0, fs[i]), acc[i]);
        }
    }
  store_rows (acc, y, r, rs, R, add);
}

AI void
bytes_fmt (BwFormat fmt, Groups gk, const BwMatrix *w, const ByteBlock *blk, int64_t b0,
           int64_t nb, float *y, int64_t r0, int64_t r1, gboolean add)
{
  const int64_t s = (r1 - r0) / ROWS;

  for (int64_t k = 0; k < s; k++)
    rows_bytes (fmt, gk, w, blk, b0, nb, y, r0 + k, s, ROWS, add);
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    rows_bytes (fmt, gk, w, blk, b0, nb, y, r, 1, 1, add);
}

#define BYTES_BY_GROUPS(FMT)                                                             \
  (gk == G32 ? bytes_fmt (FMT, G32, w, blk, b0, nb, y, r0, r1, add)                       \
   : gk == G64 ? bytes_fmt (FMT, G64, w, blk, b0, nb, y, r0, r1, add)                     \
               : bytes_fmt (FMT, WIDE, w, blk, b0, nb, y, r0, r1, add))

static void
bytes_range (const BwMatrix *w, const ByteBlock *blk, int64_t b0, int64_t nb, float *y,
             int64_t r0, int64_t r1, gboolean add)
{
  const Groups gk = w->group == GROUP ? G32 : w->group == 2 * GROUP ? G64 : WIDE;
  if (w->fmt == BW_FMT_CT_INT8)
    BYTES_BY_GROUPS (BW_FMT_CT_INT8);
  else
    BYTES_BY_GROUPS (BW_FMT_Q8);
}

/* FALSE where an MXFP4 scale of the rows rules the kernel out (the rows are then
 * written with wrong values, for the caller to redo). */
static gboolean
rows_range (const BwMatrix *w, const void *prepared, int64_t b0, int64_t nb, float *y,
            int64_t r0, int64_t r1, gboolean add)
{
  const IntBlock *blk = prepared;

  if (byte_codes (w->fmt))
    {
      bytes_range (w, prepared, b0, nb, y, r0, r1, add);
      return TRUE;
    }
  if (w->fmt == BW_FMT_MXFP4)
    return rows_fmt (BW_FMT_MXFP4, w, blk, b0, nb, y, r0, r1, add, TRUE);
  if (w->fmt == BW_FMT_CT_INT4)
    return rows_fmt (BW_FMT_CT_INT4, w, blk, b0, nb, y, r0, r1, add, w->group == GROUP);
  if (w->group == GROUP)
    return rows_fmt (BW_FMT_Q4, w, blk, b0, nb, y, r0, r1, add, TRUE);
  return rows_fmt (BW_FMT_Q4, w, blk, b0, nb, y, r0, r1, add, FALSE);
}

/* What the f32 kernel also requires of the format: Q4, Q8 and compressed-tensors groups it
 * can index (MXFP4 scales below 253 are checked by the kernel as it reads them). */
static gboolean
applies (const BwMatrix *w)
{
  if (w->fmt == BW_FMT_Q4 || w->fmt == BW_FMT_CT_INT4 || byte_codes (w->fmt))
    return gv_q4_group_ok (w->group);
  return w->fmt == BW_FMT_MXFP4;
}

const BwGemvInt bw_gemv_int_avx512vnni = {
  .block_bytes = sizeof (IntBlock),
  .max_tokens = G_MAXINT,
  .applies = applies,
  .prepare_block = prepare_block,
  .blocks = rows_range,
  .fallback = bw_kernels_avx512.rows,
};
