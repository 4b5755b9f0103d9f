/* The integer kernel (gemv-int.h) at the AVX2 level (AVX2 + FMA + F16C):
 * MXFP4, Q4 and compressed-tensors INT4 rows (4-bit codes), Q8 and compressed-tensors
 * INT8 rows (8-bit codes).
 *
 * 4-bit rows, per 32-byte load (64 columns): the low nibbles are the even columns and the
 * high nibbles the odd ones, so two planes of 32 unsigned byte codes come from the load and
 * the load shifted right by 4 (MXFP4: vpshufb maps each nibble to twice its E2M1 value plus
 * 12; Q4: the nibble, the value plus 8). The 24-bit activations are three byte digits, two's
 * complement: the top one signed, the lower two unsigned. vpmaddubsw multiplies unsigned
 * bytes by signed ones and adds pairs into saturating 16-bit words, so the codes (0..24) go
 * unsigned against the top digit (a pair is at most 2 * 24 * 128 = 6144) and signed (they
 * are below 128) against the lower digits (at most 2 * 255 * 24 = 12240); the two planes'
 * pairs of one digit are added in 16 bits (at most 24480 < 32767: no word saturates).
 * vpmaddwd then adds word pairs into 32-bit lanes (the top digit's with weight 256), and
 * (top * 256 + middle) * 256 + low is each lane's exact sum over its 8 columns of code
 * times fixed-point value (at most 8 * 24 * 2^23 < 2^31), less the code offset's share,
 * which starts the lowest digit's sum.
 *
 * 8-bit rows, per 32 columns: the codes (any int8, -128 included; compressed-tensors INT8
 * bytes less 128) sign-extended to words meet the activations as two 16-bit digits,
 * balanced: the low one in [-2^15, 2^15), the high one (value - low) / 2^16 in [-128, 128].
 * vpmaddwd's lanes (4 columns) are exact: at most 4 * 128 * 2^15 = 2^24 for the low digit
 * and 4 * 128 * 128 = 2^16 for the high one, both exact in f32, so one FMA (high * 2^16 +
 * low) rounds each lane's sum once.
 *
 * Each lane's sum, converted to f32, is multiplied by its group's weight scale times the
 * fixed-point scale of its activations and accumulated in f32, as the f32 kernel
 * accumulates its per-lane sums. Where one weight scale spans the block (per row, or
 * groups of a multiple of 128 columns), the lane sums are multiplied by their activation
 * scales (powers of two: exact) and added, and the block's sum times the weight scale
 * joins the accumulator: per row a block costs one FMA for the scales instead of a permute
 * and an FMA per step. The largest MXFP4 scale read is kept, to hand rows with a scale of
 * 253 or more (a weight that may overflow, or NaN) back to the f32 kernel.
 *
 * A product streams its weights from memory once: each thread keeps ROWS rows going at
 * once, a quarter of its row range apart, each one long sequential stream prefetched ahead
 * into L1 (adjacent rows side by side were short streams that the hardware prefetcher kept
 * restarting), the activations of a step loaded once for them all; 4-bit rows are summed
 * two at a time, so that their planes and digits stay in registers. */
#include <immintrin.h>
#include <string.h>

#include "kernels/gemv-int.h"
#include "kernels/kernel-table.h"
#include "quant/ct-int.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define AI static inline __attribute__((always_inline))
#define ROWS 4
#define GROUP 32
#define BLOCK BW_GEMV_INT_BLOCK
/* Bits of the fixed-point activations: value x * 2^(FIX - e) for a group whose largest
 * magnitude is below 2^e, in [-2^FIX, 2^FIX). */
#define FIX 23
#define OFFSET_MXFP4 12
#define OFFSET_Q4 8
/* How far ahead in each of the ROWS streams to prefetch, into L1. 2 threads, quiet, 4-bit
 * rows: 2 KiB 0.63 of the memory probe, 4 KiB 0.61, 8 KiB 0.57; 8-bit rows 0.84, 0.83,
 * 0.79 (2026-12-07). */
#define PREFETCH_NIB 2048
#define PREFETCH_BYTE 2048

/* One prepared 128-column block for 4-bit rows. Half h holds columns 64h .. 64h+63 (one
 * 32-byte load of a row): dig[h][k][p][j] is digit 2 - k (the top first) of column
 * 64h + 2j + p; lane k of ncorr[h] is minus the code offset times the sum of the
 * fixed-point values of columns 64h + 8k .. 64h + 8k + 7; xg[q] is 2^(e - FIX) of group q,
 * halved for MXFP4 (whose codes are twice the E2M1 value). */
typedef struct {
  uint8_t dig[2][3][2][32];
  int32_t ncorr[2][8];
  float xg[4];
  uint8_t pad[48];
} __attribute__((aligned (64))) NibBlock;

/* One prepared 128-column block for 8-bit rows: each column's fixed-point value is
 * hi * 2^16 + lo (column order), xg as above. */
typedef struct {
  int16_t lo[BLOCK];
  int16_t hi[BLOCK];
  float xg[4];
  uint8_t pad[48];
} __attribute__((aligned (64))) ByteBlock;

#define BLOCK_BYTES 576
G_STATIC_ASSERT (sizeof (NibBlock) <= BLOCK_BYTES && sizeof (ByteBlock) == BLOCK_BYTES);
G_STATIC_ASSERT (BLOCK_BYTES <= BW_GEMV_INT_BLOCK_BYTES_MAX);

/* Nibble -> unsigned code: twice the E2M1 value plus 12. */
static const int8_t lut_mxfp4[16] = { 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0 };

AI gboolean
byte_codes (BwFormat fmt)
{
  return fmt == BW_FMT_Q8 || fmt == BW_FMT_CT_INT8;
}

/* The 32 activations of a group as fixed-point int32 values, and their scale *xf (halved
 * when `halve`); FALSE where the group rules the kernel out. */
static gboolean
fixed_group (const float *x, int32_t *out, float *xf, gboolean halve)
{
  const __m256 absmask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  const __m256 inf = _mm256_set1_ps (__builtin_inff ());
  __m256 v[4], m = _mm256_setzero_ps (), bad = _mm256_setzero_ps ();

  for (int q = 0; q < 4; q++)
    {
      v[q] = _mm256_loadu_ps (x + 8 * q);
      const __m256 a = _mm256_and_ps (v[q], absmask);
      bad = _mm256_or_ps (bad, _mm256_cmp_ps (a, inf, _CMP_NLT_UQ)); /* NaN or Inf */
      m = _mm256_max_ps (m, a);
    }
  if (_mm256_movemask_ps (bad))
    return FALSE;
  __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
  h = _mm_max_ps (h, _mm_movehl_ps (h, h));
  h = _mm_max_ss (h, _mm_movehdup_ps (h));
  const float amax = _mm_cvtss_f32 (h);
  int e;
  if (!bw_gemv_int_exponent (amax, &e))
    return FALSE;
  /* |x| * 2^(FIX - e) < 2^FIX: the scaling is exact, the conversion rounds to nearest
   * (even), moving x by at most 2^(e - FIX - 1); the one value that can round up to 2^FIX
   * is clamped below it */
  const __m256 s = _mm256_set1_ps (bw_gemv_int_pow2f (FIX - e));
  const __m256i top = _mm256_set1_epi32 ((1 << FIX) - 1);
  for (int q = 0; q < 4; q++)
    _mm256_store_si256 ((__m256i *) (out + 8 * q),
                        _mm256_min_epi32 (_mm256_cvtps_epi32 (_mm256_mul_ps (v[q], s)), top));
  *xf = bw_gemv_int_pow2f (e - FIX - (halve ? 1 : 0));
  return TRUE;
}

static gboolean
prepare_block (BwFormat fmt, const float *x, void *block)
{
  int32_t fx[BLOCK] __attribute__((aligned (32)));
  float xg[4];

  for (int g = 0; g < BLOCK / GROUP; g++)
    if (!fixed_group (x + GROUP * g, fx + GROUP * g, &xg[g], fmt == BW_FMT_MXFP4))
      return FALSE;
  if (byte_codes (fmt))
    {
      ByteBlock *o = block;
      for (int c = 0; c < BLOCK; c++)
        {
          const int32_t lo = (int32_t) (((uint32_t) fx[c] & 0xFFFFu) ^ 0x8000u) - 0x8000;
          o->lo[c] = (int16_t) lo;
          o->hi[c] = (int16_t) ((fx[c] - lo) / 65536);
        }
      memcpy (o->xg, xg, sizeof xg);
      return TRUE;
    }
  NibBlock *o = block;
  const int32_t off = fmt == BW_FMT_MXFP4 ? OFFSET_MXFP4 : OFFSET_Q4;
  for (int h = 0; h < 2; h++)
    {
      for (int j = 0; j < 32; j++)
        for (int p = 0; p < 2; p++)
          {
            const uint32_t v = (uint32_t) fx[64 * h + 2 * j + p];
            o->dig[h][0][p][j] = (uint8_t) (v >> 16);
            o->dig[h][1][p][j] = (uint8_t) (v >> 8);
            o->dig[h][2][p][j] = (uint8_t) v;
          }
      for (int k = 0; k < 8; k++)
        {
          int32_t sum = 0;
          for (int c = 0; c < 8; c++)
            sum += fx[64 * h + 8 * k + c];
          o->ncorr[h][k] = -off * sum;
        }
    }
  memcpy (o->xg, xg, sizeof xg);
  return TRUE;
}

/* How a row's weight scales map onto the 4 groups of 32 columns of a block: one each
 * (G32), one per two (G64), or one for the whole block (WIDE: per row, or a multiple of
 * 128 columns). */
typedef enum { G32, G64, WIDE } Groups;

AI int
scale_bytes (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 ? 1 : fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8 ? 2 : 4;
}

/* Scale i of a row's scales s (not MXFP4). */
AI float
scale1 (BwFormat fmt, const uint8_t *s, int64_t i)
{
  if (fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8)
    return bw_ct_int_scale (s, i);
  return bw_load_f32 (s + 4 * i);
}

/* Four E8M0 scale bytes (little-endian in `four`) as f32, their largest kept in *emax. */
AI __m128
e8m0_scales (uint32_t four, __m128i *emax)
{
  const __m128i e = _mm_cvtepu8_epi32 (_mm_cvtsi32_si128 ((int) four));
  *emax = _mm_max_epu32 (*emax, e);
  /* 2^(e - 127) from the exponent bits; E8M0 0 is 2^-127, a subnormal */
  const __m128i f = _mm_slli_epi32 (e, 23);
  const __m128i zero = _mm_cmpeq_epi32 (e, _mm_setzero_si128 ());
  return _mm_castsi128_ps (_mm_blendv_epi8 (f, _mm_set1_epi32 (1 << 22), zero));
}

/* The weight scales of the 4 groups of block gb of a row (scales s; for WIDE, scale si),
 * as f32; MXFP4 scale bytes are kept in *emax. */
AI __m128
block_scales (BwFormat fmt, Groups gk, const uint8_t *s, int64_t gb, int64_t si, __m128i *emax)
{
  if (fmt == BW_FMT_MXFP4)
    {
      uint32_t four;
      memcpy (&four, s + 4 * gb, sizeof four);
      return e8m0_scales (four, emax);
    }
  if (gk == G32)
    {
      if (fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8)
        return _mm_castsi128_ps (_mm_slli_epi32 (_mm_cvtepu16_epi32 (_mm_loadl_epi64 ((const __m128i *) (s + 8 * gb))), 16));
      return _mm_loadu_ps ((const float *) (s + 16 * gb));
    }
  if (gk == G64)
    {
      const float s0 = scale1 (fmt, s, 2 * gb), s1 = scale1 (fmt, s, 2 * gb + 1);
      return _mm_setr_ps (s0, s0, s1, s1);
    }
  return _mm_set1_ps (scale1 (fmt, s, si));
}

/* block_scales, where block gb may be a row's partial last block (scales for ns groups of
 * gk's size): the groups it lacks get 0 (built in registers: a copy's narrow stores would
 * stall the wider load). */
AI __m128
block_scales_at (BwFormat fmt, Groups gk, const uint8_t *s, int64_t gb, int64_t si, int64_t ns,
                 __m128i *emax)
{
  const int64_t per = gk == G64 ? 2 : 4, have = ns - per * gb;
  float f[3] = { 0 };

  if (gk == WIDE || have >= per)
    return block_scales (fmt, gk, s, gb, si, emax);
  if (fmt == BW_FMT_MXFP4)
    {
      uint32_t four = 0;
      for (int i = 0; i < have; i++)
        four |= (uint32_t) s[4 * gb + i] << (8 * i);
      return e8m0_scales (four, emax);
    }
  if (gk == G64)
    return _mm_setr_ps (scale1 (fmt, s, 2 * gb), scale1 (fmt, s, 2 * gb), 0.0f, 0.0f);
  for (int i = 0; i < have; i++)
    f[i] = scale1 (fmt, s, 4 * gb + i);
  return _mm_setr_ps (f[0], f[1], f[2], 0.0f);
}

/* Lane k of out[i]: row i's exact sum over columns 8k .. 8k+7 of the 64 columns at byte
 * off of its row, less the code offset's share, for R rows side by side. */
AI void
nib_sums (BwFormat fmt, const uint8_t *const *rows, int64_t off, const uint8_t (*dig)[2][32],
          __m256i ncorr, const int R, __m256i *out)
{
  const __m256i nib = _mm256_set1_epi8 (0x0F), one = _mm256_set1_epi16 (1);
  const __m256i k256 = _mm256_set1_epi16 (256);
  const __m256i lut = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) lut_mxfp4));
  __m256i lo[ROWS], hi[ROWS], t[ROWS];

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const __m256i v = _mm256_loadu_si256 ((const __m256i *) (rows[i] + off));
      lo[i] = _mm256_and_si256 (v, nib);
      hi[i] = _mm256_and_si256 (_mm256_srli_epi16 (v, 4), nib);
      if (fmt == BW_FMT_MXFP4)
        {
          lo[i] = _mm256_shuffle_epi8 (lut, lo[i]);
          hi[i] = _mm256_shuffle_epi8 (lut, hi[i]);
        }
    }
  const __m256i d2e = _mm256_load_si256 ((const __m256i *) dig[0][0]);
  const __m256i d2o = _mm256_load_si256 ((const __m256i *) dig[0][1]);
  const __m256i d1e = _mm256_load_si256 ((const __m256i *) dig[1][0]);
  const __m256i d1o = _mm256_load_si256 ((const __m256i *) dig[1][1]);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const __m256i p2 = _mm256_add_epi16 (_mm256_maddubs_epi16 (lo[i], d2e), _mm256_maddubs_epi16 (hi[i], d2o));
      const __m256i p1 = _mm256_add_epi16 (_mm256_maddubs_epi16 (d1e, lo[i]), _mm256_maddubs_epi16 (d1o, hi[i]));
      t[i] = _mm256_add_epi32 (_mm256_madd_epi16 (p2, k256), _mm256_madd_epi16 (p1, one));
    }
  const __m256i d0e = _mm256_load_si256 ((const __m256i *) dig[2][0]);
  const __m256i d0o = _mm256_load_si256 ((const __m256i *) dig[2][1]);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const __m256i p0 = _mm256_add_epi16 (_mm256_maddubs_epi16 (d0e, lo[i]), _mm256_maddubs_epi16 (d0o, hi[i]));
      out[i] = _mm256_add_epi32 (_mm256_slli_epi32 (t[i], 8), _mm256_add_epi32 (_mm256_madd_epi16 (p0, one), ncorr));
    }
}

/* Lane k of out[i]: row i's sum over its 4 columns {2k, 2k+1, 16+2k, 16+2k+1} of the 32
 * columns at byte off (exact, rounded once to f32). */
AI void
byte_sums (BwFormat fmt, const uint8_t *const *rows, int64_t off, const int16_t *lo,
           const int16_t *hi, const int R, __m256 *out)
{
  const __m256i loa = _mm256_load_si256 ((const __m256i *) lo);
  const __m256i lob = _mm256_load_si256 ((const __m256i *) (lo + 16));
  const __m256i hia = _mm256_load_si256 ((const __m256i *) hi);
  const __m256i hib = _mm256_load_si256 ((const __m256i *) (hi + 16));

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      __m128i qa = _mm_loadu_si128 ((const __m128i *) (rows[i] + off));
      __m128i qb = _mm_loadu_si128 ((const __m128i *) (rows[i] + off + 16));
      if (fmt == BW_FMT_CT_INT8)
        {
          qa = _mm_xor_si128 (qa, _mm_set1_epi8 ((char) 0x80));
          qb = _mm_xor_si128 (qb, _mm_set1_epi8 ((char) 0x80));
        }
      const __m256i a = _mm256_cvtepi8_epi16 (qa), b = _mm256_cvtepi8_epi16 (qb);
      const __m256i sl = _mm256_add_epi32 (_mm256_madd_epi16 (a, loa), _mm256_madd_epi16 (b, lob));
      const __m256i sh = _mm256_add_epi32 (_mm256_madd_epi16 (a, hia), _mm256_madd_epi16 (b, hib));
      out[i] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (sh), _mm256_set1_ps (65536.0f), _mm256_cvtepi32_ps (sl));
    }
}

/* Block gb of R rows (their codes rows[i], their scales srow[i]; WIDE: scale si) against
 * its prepared activations xb: for G32 and G64 added to acc[i] with the rows' group
 * scales, for WIDE into t[i] with the activations' scales alone. */
AI void
nib_block (BwFormat fmt, Groups gk, const uint8_t *const *rows, const uint8_t *const *srow,
           const NibBlock *xb, int64_t gb, int64_t si, int64_t ns, const int R, __m256 *acc,
           __m256 *t, __m128i *emax)
{
  const __m256i idx[2] = { _mm256_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1),
                           _mm256_setr_epi32 (2, 2, 2, 2, 3, 3, 3, 3) };
  const __m128 xg = _mm_load_ps (xb->xg);
  const __m256 xh[2] = { _mm256_permutevar8x32_ps (_mm256_castps128_ps256 (xg), idx[0]),
                         _mm256_permutevar8x32_ps (_mm256_castps128_ps256 (xg), idx[1]) };
  __m128 fs[ROWS];

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      if (gk != WIDE)
        fs[i] = _mm_mul_ps (block_scales_at (fmt, gk, srow[i], gb, si, ns, emax), xg);
      _mm_prefetch ((const char *) rows[i] + 64 * gb + PREFETCH_NIB, _MM_HINT_T0);
    }
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++)
    {
      const __m256i ncorr = _mm256_load_si256 ((const __m256i *) xb->ncorr[h]);
#pragma GCC unroll 2
      for (int p = 0; p < R; p += 2)
        {
          __m256i s[ROWS];
          const int n = R - p < 2 ? R - p : 2;
          nib_sums (fmt, rows + p, 64 * gb + 32 * h, xb->dig[h], ncorr, n, s);
#pragma GCC unroll 2
          for (int i = p; i < p + n; i++)
            {
              const __m256 sf = _mm256_cvtepi32_ps (s[i - p]);
              if (gk != WIDE)
                acc[i] = _mm256_fmadd_ps (sf, _mm256_permutevar8x32_ps (_mm256_castps128_ps256 (fs[i]), idx[h]),
                                          acc[i]);
              else
                t[i] = h ? _mm256_fmadd_ps (sf, xh[1], t[i]) : _mm256_mul_ps (sf, xh[0]);
            }
        }
    }
}

/* R rows from r, rs apart, over blocks [b0, b0 + nb) whose activations are blk[0, nb);
 * y is set, or added to when `add`. FALSE where an MXFP4 scale of these rows is 253 or more. */
AI gboolean
rows_int (BwFormat fmt, Groups gk, const BwMatrix *w, const void *blk, int64_t b0, int64_t nb,
          float *y, int64_t r, int64_t rs, const int R, gboolean add)
{
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, w->cols);
  const int64_t ns = fmt == BW_FMT_MXFP4 ? bw_mxfp4_row_scales (w->cols)
                     : fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8 ? bw_ct_int_row_scales (w->cols, w->group)
                                                                      : bw_intq_row_scales (w->cols, w->group);
  /* WIDE: the scale of the block's columns, and the column where the next one starts */
  const int64_t gsz = w->group > 0 ? w->group : INT64_MAX / 2;
  /* scale bytes per block (G32, G64): per-group scales are a second stream beside each
   * row's codes, an eighth of their bytes for Q8, which the hardware alone fetched late */
  const int64_t sblock = (gk == G32 ? 4 : 2) * scale_bytes (fmt);
  int64_t si = BLOCK * b0 / gsz, next = (si + 1) * gsz;
  const uint8_t *rows[ROWS], *srow[ROWS];
  __m256 acc[ROWS], ws[ROWS];
  __m128i emax = _mm_setzero_si128 ();

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i * rs) * row_bytes;
      srow[i] = (const uint8_t *) w->scales + (r + i * rs) * ns * scale_bytes (fmt);
      acc[i] = _mm256_setzero_ps ();
      ws[i] = gk == WIDE ? _mm256_set1_ps (scale1 (fmt, srow[i], si)) : acc[i];
    }
  for (int64_t b = 0; b < nb; b++)
    {
      const int64_t gb = b0 + b;
      /* G32, G64: each row's 4 group scales times the activations'; WIDE: each row's one
       * weight scale, applied to the block's sum once the activations' are */
      __m128 fs[ROWS];
      __m256 t[ROWS];
      if (gk == WIDE && BLOCK * gb >= next)
        {
          si = BLOCK * gb / gsz;
          next = (si + 1) * gsz;
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            ws[i] = _mm256_set1_ps (scale1 (fmt, srow[i], si));
        }
      if (byte_codes (fmt))
        {
          const ByteBlock *xb = (const ByteBlock *) ((const uint8_t *) blk + b * BLOCK_BYTES);
          const __m128 xg = _mm_load_ps (xb->xg);
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            {
              if (gk != WIDE)
                fs[i] = _mm_mul_ps (block_scales_at (fmt, gk, srow[i], gb, si, ns, &emax), xg);
              _mm_prefetch ((const char *) rows[i] + BLOCK * gb + PREFETCH_BYTE, _MM_HINT_T0);
              _mm_prefetch ((const char *) rows[i] + BLOCK * gb + 64 + PREFETCH_BYTE, _MM_HINT_T0);
              if (gk != WIDE)
                _mm_prefetch ((const char *) srow[i] + sblock * (gb + PREFETCH_BYTE / BLOCK),
                              _MM_HINT_T0);
            }
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            {
              __m256 s[ROWS];
              const __m256i pick = _mm256_set1_epi32 (j);
              const __m256 xj = _mm256_broadcast_ss (xb->xg + j);
              byte_sums (fmt, rows, BLOCK * gb + 32 * j, xb->lo + 32 * j, xb->hi + 32 * j, R, s);
#pragma GCC unroll 4
              for (int i = 0; i < R; i++)
                if (gk != WIDE)
                  acc[i] = _mm256_fmadd_ps (s[i], _mm256_permutevar8x32_ps (_mm256_castps128_ps256 (fs[i]), pick), acc[i]);
                else
                  t[i] = j ? _mm256_fmadd_ps (s[i], xj, t[i]) : _mm256_mul_ps (s[i], xj);
            }
        }
      else
        nib_block (fmt, gk, rows, srow, (const NibBlock *) ((const uint8_t *) blk + b * BLOCK_BYTES),
                   gb, si, ns, R, acc, t, &emax);
      if (gk == WIDE)
#pragma GCC unroll 4
        for (int i = 0; i < R; i++)
          acc[i] = _mm256_fmadd_ps (t[i], ws[i], acc[i]);
    }
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      __m128 v = _mm_add_ps (_mm256_castps256_ps128 (acc[i]), _mm256_extractf128_ps (acc[i], 1));
      v = _mm_add_ps (v, _mm_movehl_ps (v, v));
      v = _mm_add_ss (v, _mm_movehdup_ps (v));
      const float sum = _mm_cvtss_f32 (v);
      y[r + i * rs] = add ? y[r + i * rs] + sum : sum;
    }
  return !_mm_movemask_epi8 (_mm_cmpgt_epi32 (emax, _mm_set1_epi32 (252)));
}

AI gboolean
rows_fmt (BwFormat fmt, Groups gk, const BwMatrix *w, const void *blk, int64_t b0, int64_t nb,
          float *y, int64_t r0, int64_t r1, gboolean add)
{
  const int64_t s = (r1 - r0) / ROWS;
  gboolean ok = TRUE;

  for (int64_t k = 0; k < s; k++)
    ok &= rows_int (fmt, gk, w, blk, b0, nb, y, r0 + k, s, ROWS, add);
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    ok &= rows_int (fmt, gk, w, blk, b0, nb, y, r, 1, 1, add);
  return ok;
}

#define BY_GROUPS(FMT)                                                                   \
  (w->group == GROUP ? rows_fmt (FMT, G32, w, blk, b0, nb, y, r0, r1, add)               \
   : w->group == 2 * GROUP ? rows_fmt (FMT, G64, w, blk, b0, nb, y, r0, r1, add)         \
                           : rows_fmt (FMT, WIDE, w, blk, b0, nb, y, r0, r1, add))

static gboolean
blocks (const BwMatrix *w, const void *blk, int64_t b0, int64_t nb, float *y, int64_t r0,
        int64_t r1, gboolean add)
{
  switch (w->fmt)
    {
    case BW_FMT_MXFP4: return rows_fmt (BW_FMT_MXFP4, G32, w, blk, b0, nb, y, r0, r1, add);
    case BW_FMT_Q4: return BY_GROUPS (BW_FMT_Q4);
    case BW_FMT_CT_INT4: return BY_GROUPS (BW_FMT_CT_INT4);
    case BW_FMT_Q8: return BY_GROUPS (BW_FMT_Q8);
    case BW_FMT_CT_INT8: return BY_GROUPS (BW_FMT_CT_INT8);
    default: return FALSE;
    }
}

/* The formats summed here, with groups of 32 or 64 columns, a multiple of 128, or per row
 * (as the f32 kernels index them; MXFP4 scales below 253 are checked as they are read). */
static gboolean
applies (const BwMatrix *w)
{
  switch (w->fmt)
    {
    case BW_FMT_MXFP4:
      return TRUE;
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4:
    case BW_FMT_Q8:
    case BW_FMT_CT_INT8:
      return w->group == 0 || w->group == GROUP || w->group == 2 * GROUP || w->group % BLOCK == 0;
    default:
      return FALSE;
    }
}

const BwGemvInt bw_gemv_int_avx2 = {
  .block_bytes = BLOCK_BYTES,
  /* Its sums cost several instructions per product for every token, where the f32 kernel
   * decodes a row once for a tile of tokens and then spends one FMA per 8 products: from
   * 8 tokens (simd-rows.h's GEMM_MIN_TOKENS) the f32 kernel is the cheaper. */
  .max_tokens = 7,
  .applies = applies,
  .prepare_block = prepare_block,
  .blocks = blocks,
  .fallback = bw_kernels_avx2_f32_rows,
};
