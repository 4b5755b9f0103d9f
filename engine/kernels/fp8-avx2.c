/* FP8 E4M3 rows with 128x128 block scales at the AVX2 level, for one token or many, in
 * integers.
 *
 * Every E4M3 code is a small integer times a power of two: its value times 2^9 is
 * M * 2^t, M = m (subnormals, E = 0) or 8 + m, t = max (E - 1, 0), at most 15 * 2^14. Split
 * by exponent into two classes, each is a 16-bit integer W = M * 2^s (s = t for E <= 8,
 * class A; s = t - 8 for E >= 9, class B, whose value is W * 2^8), |W| <= 1920: tables of
 * 2^s and of the leading bit by E (vpshufb), the sign by vpsignb, and one vpmaddubsw per
 * 16 columns for the product (decode32).
 *
 * Each token's 128 activations of a scale block become one fixed-point integer each,
 * X = x * 2^(FIX - e) (e the exponent of the block's largest magnitude, FIX = 22, rounded
 * to nearest even), in two balanced 16-bit digits X = hi * 2^16 + lo. A class-B column's
 * product W * 2^8 * X takes the digits of 2^8 X instead: lo' = lo * 2^8 wrapped to 16 bits
 * and hi' = 2^8 hi + (2^8 lo - lo') / 2^16. Chosen per column (the prepared differences
 * lo ^ lo' and hi ^ hi', masked by the class and applied with vpxor: single-uop
 * instructions where vpblendvb takes two or three on Intel cores), the digits meet W in
 * vpmaddwd: each 32-bit lane sums its 16 columns of the block exactly
 * (low digits at most 16 * 1920 * 2^15 < 2^31, high digits 16 * 960 * (2^14 + 2^7) <
 * 2^31), and L + 2^16 H, the lane's exact sum of W * X (below 2^47), is formed in f64 and
 * rounded once to f32. Times 2^(e - FIX - 9) (exact) and the block's scale (one FMA into
 * the lane's f32 total), the lanes are summed at the end as the other kernels sum theirs.
 *
 * So, per lane, the only roundings are each activation's (at most 2^(e - 23), one ulp of
 * its block's largest element), the lane sum's one rounding per block, and the f32
 * accumulation over blocks: tests/kernels/test-fp8-avx2.c checks the bits against a
 * scalar model of exactly this arithmetic, and the result against the exact product.
 *
 * NaN codes (S.1111.111) are found on the bytes and make the row's result NaN, as the
 * reference's. Declined (FALSE, nothing written; the f32 kernel does the product): block
 * scales that are not finite or |s| >= 2^119 (the range the reference's per-weight value
 * stays finite in), and activations with NaN or Inf, or a block whose largest magnitude
 * lies outside [2^-60, 2^60). Columns past the last whole 16-column step go to the
 * reference decoder (bw_rows_tail).
 *
 * The cost: the class select and the second digit make this about 1.5 instructions per
 * weight byte in the inner loop for one token (two per byte with the per-block rounding),
 * where widening each code to an exact f16 and using FMAs takes about one; each further
 * token adds about one per byte, where an f32 FMA tile adds about 0.25 (valgrind counts,
 * 512 x 3584).
 * A row's codes are decoded once for up to NT_MAX tokens; activations are prepared once
 * per call for a pass of up to PASS_BLOCKS blocks, the pass's lanes summed into y. */
#include <immintrin.h>
#include <math.h>

#include "kernels/gemv-int.h"
#include "kernels/kernel-table.h"
#include "quant/fp8.h"

#define AI static inline __attribute__((always_inline))
#define STEP 16
#define FIX 22
#define PREFETCH 2048
/* Scale blocks of one pass, and tokens prepared at once. */
#define PASS_BLOCKS 32
#define NT_MAX 4

/* One token's prepared 128 columns of a scale block (zero past the row's whole steps). */
typedef struct {
  int16_t lo[BW_FP8_BLOCK];
  int16_t hi[BW_FP8_BLOCK];
  int16_t dlo[BW_FP8_BLOCK];    /* lo ^ lo': a class-B column's lo is lo ^ dlo */
  int16_t dhi[BW_FP8_BLOCK];    /* hi ^ hi' */
  float xs;                     /* 2^(e - FIX - 9) */
  uint8_t pad[60];
} __attribute__((aligned (64))) Fp8Act;

G_STATIC_ASSERT (sizeof (Fp8Act) % 64 == 0);

static _Thread_local Fp8Act thread_act[NT_MAX][PASS_BLOCKS];

/* 2^s by exponent field E (index bit 7 set: 0, for the high bytes of 16-bit lanes). */
static const int8_t lut_pow[16] = { 1, 1, 2, 4, 8, 16, 32, 64, (int8_t) 128,
                                    1, 2, 4, 8, 16, 32, 64 };
/* The implicit leading bit: 8 for normals. */
static const int8_t lut_lead[16] = { 0, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8 };

/* 16 int32 lanes (two vectors) packed to int16 in column order. */
AI __m256i
pack16 (__m256i a, __m256i b)
{
  return _mm256_permute4x64_epi64 (_mm256_packs_epi32 (a, b), 0xD8);
}

/* The exponent e of x[0, n) (its largest magnitude below 2^e); FALSE for NaN, Inf or a
 * magnitude outside the fixed point's range. */
static gboolean
block_exponent (const float *x, int n, int *e)
{
  float amax = 0;
  gboolean finite = TRUE;

  for (int c = 0; c < n; c++)
    {
      finite &= isfinite (x[c]);
      amax = fmaxf (amax, fabsf (x[c]));
    }
  return finite && bw_gemv_int_exponent (amax, e);
}

/* Prepares x[0, n) (n <= 128; the rest zero), of exponent e, as one block. */
static void
prepare_block (const float *x, int n, int e, Fp8Act *b)
{
  const __m256 f = _mm256_set1_ps (bw_gemv_int_pow2f (FIX - e));
  /* per 32 columns, two vectors of 16 in the order the codes' byte unpacking gives:
   * columns 0..7 and 16..23, then 8..15 and 24..31 */
  for (int c = 0; c < BW_FP8_BLOCK; c += STEP)
    {
      const int base = c & ~31, part = (c >> 4) & 1;
      __m256i lo[2], hi[2], dlo[2], dhi[2];
      for (int h = 0; h < 2; h++)
        {
          const int at = base + 8 * part + 16 * h;
          const __m256i mask = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (n - at),
                                                   _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
          const __m256 v = _mm256_maskload_ps (x + at, mask);
          const __m256i q = _mm256_cvtps_epi32 (_mm256_mul_ps (v, f));
          const __m256i half = _mm256_set1_epi32 (0x8000);
          lo[h] = _mm256_sub_epi32 (_mm256_and_si256 (_mm256_add_epi32 (q, half),
                                                      _mm256_set1_epi32 (0xFFFF)), half);
          hi[h] = _mm256_srai_epi32 (_mm256_sub_epi32 (q, lo[h]), 16);
          const __m256i lo_b = _mm256_srai_epi32 (_mm256_slli_epi32 (lo[h], 24), 16);
          const __m256i hi_b = _mm256_add_epi32 (_mm256_slli_epi32 (hi[h], 8),
                                                 _mm256_srai_epi32 (_mm256_sub_epi32 (_mm256_slli_epi32 (lo[h], 8), lo_b), 16));
          dlo[h] = _mm256_xor_si256 (lo[h], lo_b);
          dhi[h] = _mm256_xor_si256 (hi[h], hi_b);
        }
      _mm256_store_si256 ((__m256i *) (b->lo + c), pack16 (lo[0], lo[1]));
      _mm256_store_si256 ((__m256i *) (b->hi + c), pack16 (hi[0], hi[1]));
      _mm256_store_si256 ((__m256i *) (b->dlo + c), pack16 (dlo[0], dlo[1]));
      _mm256_store_si256 ((__m256i *) (b->dhi + c), pack16 (dhi[0], dhi[1]));
    }
  b->xs = bw_gemv_int_pow2f (e - FIX - 9);
}

/* Columns of block b that the integer sums cover: its whole 16-column steps. */
static int
block_cols (int64_t b, int64_t c16)
{
  return (int) CLAMP (c16 - b * BW_FP8_BLOCK, 0, BW_FP8_BLOCK);
}

/* Columns [c, c + 32) of a row (only the first 16 where `half`; the rest read as zero):
 * the signed 16-bit W of each code in w[2] and its class (all ones for class B) in cls[2],
 * in unpacking order (columns 0..7 and 16..23, then 8..15 and 24..31); *nan gets 0xFF
 * bytes where a code is NaN. The byte work is done once for 32 columns: exponent field,
 * 2^s and the leading bit by table, the sign on the 4-bit M; vpmaddubsw of (2^s, 0) by
 * (M, M) byte pairs widens and multiplies in one instruction. */
AI void
decode32 (const uint8_t *p, gboolean half, __m256i w[2], __m256i cls[2], __m256i *nan)
{
  const __m256i v = half ? _mm256_zextsi128_si256 (_mm_loadu_si128 ((const __m128i *) p))
                         : _mm256_loadu_si256 ((const __m256i *) p);
  *nan = _mm256_or_si256 (*nan, _mm256_cmpeq_epi8 (_mm256_or_si256 (v, _mm256_set1_epi8 ((char) 0x80)),
                                                   _mm256_set1_epi8 ((char) 0xFF)));
  const __m256i e = _mm256_and_si256 (_mm256_srli_epi16 (v, 3), _mm256_set1_epi8 (15));
  const __m256i pw = _mm256_shuffle_epi8 (_mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) lut_pow)), e);
  const __m256i lead = _mm256_shuffle_epi8 (_mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) lut_lead)), e);
  const __m256i m = _mm256_sign_epi8 (_mm256_or_si256 (_mm256_and_si256 (v, _mm256_set1_epi8 (7)), lead), v);
  const __m256i k = _mm256_cmpgt_epi8 (e, _mm256_set1_epi8 (8));
  const __m256i zero = _mm256_setzero_si256 ();
  w[0] = _mm256_maddubs_epi16 (_mm256_unpacklo_epi8 (pw, zero), _mm256_unpacklo_epi8 (m, m));
  w[1] = _mm256_maddubs_epi16 (_mm256_unpackhi_epi8 (pw, zero), _mm256_unpackhi_epi8 (m, m));
  cls[0] = _mm256_unpacklo_epi8 (k, k);
  cls[1] = _mm256_unpackhi_epi8 (k, k);
}

/* The exact lane sums L + 2^16 H rounded once to f32. */
AI __m256
lanes_f32 (__m256i l, __m256i h)
{
  const __m256d k = _mm256_set1_pd (65536.0);
  const __m256d t0 = _mm256_fmadd_pd (_mm256_cvtepi32_pd (_mm256_castsi256_si128 (h)), k,
                                      _mm256_cvtepi32_pd (_mm256_castsi256_si128 (l)));
  const __m256d t1 = _mm256_fmadd_pd (_mm256_cvtepi32_pd (_mm256_extracti128_si256 (h, 1)), k,
                                      _mm256_cvtepi32_pd (_mm256_extracti128_si256 (l, 1)));
  return _mm256_set_m128 (_mm256_cvtpd_ps (t1), _mm256_cvtpd_ps (t0));
}

AI float
reduce8 (__m256 v)
{
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}

/* y[t][r] (+)= row r times tokens t < NT over the pass's blocks [b0, b1) and their whole
 * steps (columns below c16); act[t] holds the pass's blocks. */
AI void
fp8_tile (const BwMatrix *w, Fp8Act (*act)[PASS_BLOCKS], float *y, int64_t ldy, int64_t r,
          int64_t b0, int64_t b1, int64_t c16, gboolean add, const int NT)
{
  const int64_t cols = w->cols, cb = bw_fp8_blocks (cols);
  const uint8_t *sc = (const uint8_t *) w->scales + (r / BW_FP8_BLOCK) * cb * 4;
  const uint8_t *row = (const uint8_t *) w->data + r * cols;
  __m256 tot[NT_MAX];
  __m256i nan = _mm256_setzero_si256 ();

#pragma GCC unroll 4
  for (int t = 0; t < NT; t++)
    tot[t] = _mm256_setzero_ps ();
  for (int64_t b = b0; b < b1; b++)
    {
      const int64_t c0 = b * BW_FP8_BLOCK, c1 = MIN (c0 + BW_FP8_BLOCK, c16);
      __m256i lsum[NT_MAX], hsum[NT_MAX];
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        lsum[t] = hsum[t] = _mm256_setzero_si256 ();
      for (int64_t c = c0; c < c1; c += 2 * STEP)
        {
          const int64_t k = c - c0;
          __m256i wv[2], cls[2];
          _mm_prefetch ((const char *) row + c + PREFETCH, _MM_HINT_T0);
          decode32 (row + c, c + 2 * STEP > c1, wv, cls, &nan);
#pragma GCC unroll 4
          for (int t = 0; t < NT; t++)
            {
              const Fp8Act *a = &act[t][b - b0];
#pragma GCC unroll 2
              for (int h = 0; h < 2; h++)
                {
                  const __m256i lo = _mm256_load_si256 ((const __m256i *) (a->lo + k + STEP * h));
                  const __m256i hi = _mm256_load_si256 ((const __m256i *) (a->hi + k + STEP * h));
                  const __m256i dl = _mm256_xor_si256 (lo, _mm256_and_si256 (cls[h], _mm256_load_si256 ((const __m256i *) (a->dlo + k + STEP * h))));
                  const __m256i dh = _mm256_xor_si256 (hi, _mm256_and_si256 (cls[h], _mm256_load_si256 ((const __m256i *) (a->dhi + k + STEP * h))));
                  lsum[t] = _mm256_add_epi32 (lsum[t], _mm256_madd_epi16 (wv[h], dl));
                  hsum[t] = _mm256_add_epi32 (hsum[t], _mm256_madd_epi16 (wv[h], dh));
                }
            }
        }
      const __m256 s = _mm256_set1_ps (bw_load_f32 (sc + 4 * b));
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        tot[t] = _mm256_fmadd_ps (_mm256_mul_ps (lanes_f32 (lsum[t], hsum[t]),
                                                 _mm256_set1_ps (act[t][b - b0].xs)), s, tot[t]);
    }
  const gboolean bad = !_mm256_testz_si256 (nan, nan);
#pragma GCC unroll 4
  for (int t = 0; t < NT; t++)
    {
      float *out = y + t * ldy + r;
      const float v = bad ? NAN : reduce8 (tot[t]);
      *out = add ? *out + v : v;
    }
}

/* Whether every scale of the rows' blocks is finite and below 2^119 in magnitude. */
static gboolean
scales_ok (const BwMatrix *w, int64_t r0, int64_t r1)
{
  const int64_t cb = bw_fp8_blocks (w->cols);

  for (int64_t i = (r0 / BW_FP8_BLOCK) * cb; i < bw_fp8_blocks (r1) * cb; i++)
    if (!(fabsf (bw_load_scale (w, i)) < 0x1p119f))
      return FALSE;
  return TRUE;
}

/* Whether every activation block of every token is in the fixed point's range. */
static gboolean
activations_ok (const float *x, int n, int64_t cols)
{
  const int64_t c16 = cols & ~(int64_t) (STEP - 1);
  int e;

  for (int t = 0; t < n; t++)
    for (int64_t b = 0; b < bw_fp8_blocks (c16); b++)
      if (!block_exponent (x + t * cols + b * BW_FP8_BLOCK, block_cols (b, c16), &e))
        return FALSE;
  return TRUE;
}

/* Rows [r0, r1) for tokens [0, nt) (nt <= NT_MAX) over the blocks [b0, b1). */
static void
fp8_pass (const BwMatrix *w, const float *x, int nt, float *y, int64_t ldy, int64_t r0,
          int64_t r1, int64_t b0, int64_t b1)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1);
  const gboolean add = b0 > 0;

  for (int t = 0; t < nt; t++)
    for (int64_t b = b0; b < b1; b++)
      {
        const float *xb = x + t * cols + b * BW_FP8_BLOCK;
        int e;
        block_exponent (xb, block_cols (b, c16), &e); /* checked by activations_ok */
        prepare_block (xb, block_cols (b, c16), e, &thread_act[t][b - b0]);
      }
  for (int64_t r = r0; r < r1; r++)
    switch (nt)
      {
      case 1: fp8_tile (w, thread_act, y, ldy, r, b0, b1, c16, add, 1); break;
      case 2: fp8_tile (w, thread_act, y, ldy, r, b0, b1, c16, add, 2); break;
      case 3: fp8_tile (w, thread_act, y, ldy, r, b0, b1, c16, add, 3); break;
      default: fp8_tile (w, thread_act, y, ldy, r, b0, b1, c16, add, 4); break;
      }
}

gboolean
bw_fp8_rows_avx2 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
                  int64_t r1)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1);
  const int64_t nb = bw_fp8_blocks (c16);

  if (w->fmt != BW_FMT_FP8_E4M3_B128 || !scales_ok (w, r0, r1) || !activations_ok (x, n, cols))
    return FALSE;
  for (int t0 = 0; t0 < n; t0 += NT_MAX)
    {
      const int nt = MIN (NT_MAX, n - t0);
      if (nb == 0)
        for (int t = 0; t < nt; t++)
          for (int64_t r = r0; r < r1; r++)
            y[(t0 + t) * ldy + r] = 0;
      for (int64_t b0 = 0; b0 < nb; b0 += PASS_BLOCKS)
        fp8_pass (w, x + (int64_t) t0 * cols, nt, y + (int64_t) t0 * ldy, ldy, r0, r1, b0,
                  MIN (nb, b0 + PASS_BLOCKS));
    }
  if (c16 < cols)
    for (int t = 0; t < n; t++)
      bw_rows_tail_avx2 (w, x + (int64_t) t * cols, y + (int64_t) t * ldy, r0, r1, c16, TRUE);
  return TRUE;
}
