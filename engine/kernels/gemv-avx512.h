/* One-token products (decode) for AVX-512, included by matvec-avx512.c: BF16, MXFP4, Q4
 * and compressed-tensors INT4 (Q4's nibbles, BF16 scales) decoded from 64-byte loads of weights straight into registers. A decode step is
 * bound by memory, so the access pattern matters as much as the arithmetic:
 *  - four rows at once share every activation load, but they are a quarter of the row
 *    range apart, so each is one long sequential stream (four adjacent rows read side by
 *    side restart the hardware prefetcher every few KiB and lost a third of the rate);
 *  - each 64-byte load is decoded in the lane order its bit layout gives for free (the
 *    16-bit halves, bytes or nibbles of each dword) and the activations are permuted once
 *    per call into that order, instead of shuffling every row's weights into column order.
 * Results match the reference within reassociation: BF16, Q4 and INT4 weights are the
 * reference's values exactly; MXFP4 applies its power-of-two scale once per 32-column
 * group to the group's sum, which is the same value as scaling each weight. */

#include "kernels/avx512-scales.h"

#define GV_AI static inline __attribute__((always_inline))
#define GV_ROWS 4
/* Activation floats permuted per pass (64 KiB of stack); a multiple of 512 columns. */
#define GV_X_MAX 16384

/* The weights of a block in a register: without this the compiler folds the load into
 * every shift that reads it, and the 512-bit load ports become the bottleneck. */
GV_AI __m512i
gv_load (const uint8_t *p)
{
  __m512i v = _mm512_loadu_si512 (p);
  __asm__ ("" : "+v" (v));
  return v;
}


/* Columns decoded from one 64-byte load. */
GV_AI int64_t
gv_block_cols (BwFormat fmt)
{
  return fmt == BW_FMT_BF16 ? 32 : 128;
}

/* ---- Activations in the decoded lane order ---- */

/* xp[32b .. 32b+15] = even columns of block b, then the odd ones. */
GV_AI void
gv_permute_bf16 (const float *x, int64_t nb, float *xp)
{
  for (int64_t b = 0; b < nb; b++)
    {
      __m512 v[2];
      deinterleave (_mm512_loadu_ps (x + 32 * b), _mm512_loadu_ps (x + 32 * b + 16), v);
      _mm512_store_ps (xp + 32 * b, v[0]);
      _mm512_store_ps (xp + 32 * b + 16, v[1]);
    }
}

/* Vector j of block b, lane k = column 128b + 8k + j (nibble j of dword k). */
GV_AI void
gv_permute_nibbles (const float *x, int64_t nb, float *xp)
{
  const __m512i iu = _mm512_setr_epi32 (0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
  const __m512i iv = _mm512_add_epi32 (iu, _mm512_set1_epi32 (4));

  for (int64_t b = 0; b < nb; b++)
    {
      const float *p = x + 128 * b;
      float *o = xp + 128 * b;
      __m512 u[4], v[4];
      for (int q = 0; q < 4; q++)
        {
          __m512 lo = _mm512_loadu_ps (p + 32 * q), hi = _mm512_loadu_ps (p + 32 * q + 16);
          u[q] = _mm512_permutex2var_ps (lo, iu, hi);
          v[q] = _mm512_permutex2var_ps (lo, iv, hi);
        }
      for (int h = 0; h < 2; h++)
        {
          const __m512 *s = h ? v : u;
          __m512 a01 = _mm512_shuffle_f32x4 (s[0], s[1], _MM_SHUFFLE (1, 0, 1, 0));
          __m512 a23 = _mm512_shuffle_f32x4 (s[2], s[3], _MM_SHUFFLE (1, 0, 1, 0));
          __m512 b01 = _mm512_shuffle_f32x4 (s[0], s[1], _MM_SHUFFLE (3, 2, 3, 2));
          __m512 b23 = _mm512_shuffle_f32x4 (s[2], s[3], _MM_SHUFFLE (3, 2, 3, 2));
          float *oh = o + 64 * h;
          _mm512_store_ps (oh, _mm512_shuffle_f32x4 (a01, a23, _MM_SHUFFLE (2, 0, 2, 0)));
          _mm512_store_ps (oh + 16, _mm512_shuffle_f32x4 (a01, a23, _MM_SHUFFLE (3, 1, 3, 1)));
          _mm512_store_ps (oh + 32, _mm512_shuffle_f32x4 (b01, b23, _MM_SHUFFLE (2, 0, 2, 0)));
          _mm512_store_ps (oh + 48, _mm512_shuffle_f32x4 (b01, b23, _MM_SHUFFLE (3, 1, 3, 1)));
        }
    }
}

GV_AI void
gv_permute (BwFormat fmt, const float *x, int64_t nb, float *xp)
{
  if (fmt == BW_FMT_BF16)
    gv_permute_bf16 (x, nb, xp);
  else
    gv_permute_nibbles (x, nb, xp);
}

/* ---- Row kernels: R rows (r, r + rs, ...) over blocks [b0, b0 + nb) ---- */

GV_AI void
gv_finish (float *y, int64_t r, int64_t rs, const int R, __m512 acc[][2], gboolean add)
{
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      float v = _mm512_reduce_add_ps (_mm512_add_ps (acc[i][0], acc[i][1]));
      y[r + i * rs] = add ? y[r + i * rs] + v : v;
    }
}

GV_AI void
gv_bf16 (const uint8_t *const rows[], const float *xp, int64_t nb, __m512 acc[][2], const int R)
{
  const __m512i hi = _mm512_set1_epi32 ((int) 0xFFFF0000u);

#pragma GCC unroll 2
  for (int64_t b = 0; b < nb; b++)
    {
      const __m512 xe = _mm512_load_ps (xp + 32 * b), xo = _mm512_load_ps (xp + 32 * b + 16);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          _mm_prefetch ((const char *) rows[i] + 64 * b + GV_PREFETCH_BYTES_BF16, _MM_HINT_T0);
          __m512i v = _mm512_loadu_si512 (rows[i] + 64 * b);
          acc[i][0] = _mm512_fmadd_ps (_mm512_castsi512_ps (_mm512_slli_epi32 (v, 16)), xe, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps (_mm512_castsi512_ps (_mm512_and_si512 (v, hi)), xo, acc[i][1]);
        }
    }
}

/* E2M1 as bf16 (exact: at most two significant bits), twice: vpermw reads 5 index bits. */
static const uint16_t gv_bf16_e2m1[32] = {
  0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0,
  0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0,
  0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0,
  0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0,
};

/* Q4 codes (value + 8) as bf16, twice. */
static const uint16_t gv_bf16_q4[32] = {
  0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040, 0xC000, 0xBF80,
  0x0000, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0,
  0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040, 0xC000, 0xBF80,
  0x0000, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0,
};

/* Nibble jj of each 16-bit word looks up its bf16 value (one vpermw decodes 32 weights);
 * the low word of dword k is then column 8k + jj and the high word column 8k + 4 + jj.
 * The per-lane sums of a block are multiplied once by a vector of their groups' scales
 * (lane k holds columns 8k .. 8k+7 of the block, so a group of 32 is 4 lanes). For MXFP4
 * that is the same value as scaling each weight (a power of two); for Q4 it is the
 * per-group scale applied to the group's sum. */
GV_AI void
gv_nibbles (BwFormat fmt, const uint8_t *const rows[], const float *xp, int64_t b0, int64_t nb,
            const BwMatrix *w, int64_t r, int64_t rs, __m512 acc[][2], const int R)
{
  const __m512i lut = _mm512_loadu_si512 (fmt == BW_FMT_MXFP4 ? gv_bf16_e2m1 : gv_bf16_q4);
  const __m512i hi = _mm512_set1_epi32 ((int) 0xFFFF0000u);
  GvScales gs;

  gv_scales_init (&gs, fmt, w, r, rs, R);
  for (int64_t b = 0; b < nb; b++)
    {
      const float *xb = xp + 128 * b;
      const __m512i sidx = gv_scales_block (&gs, fmt, b0 + b, R);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          __m512i v = gv_load (rows[i] + 64 * b);
          __m512 s0 = _mm512_setzero_ps (), s1 = _mm512_setzero_ps ();
#pragma GCC unroll 4
          for (int jj = 0; jj < 4; jj++)
            {
              const __m512i p = _mm512_permutexvar_epi16 (v, lut);
              const __m512 lo = _mm512_castsi512_ps (_mm512_slli_epi32 (p, 16));
              const __m512 up = _mm512_castsi512_ps (_mm512_and_si512 (p, hi));
              s0 = _mm512_fmadd_ps (lo, _mm512_load_ps (xb + 16 * jj), s0);
              s1 = _mm512_fmadd_ps (up, _mm512_load_ps (xb + 16 * (jj + 4)), s1);
              v = _mm512_srli_epi16 (v, 4);
            }
          acc[i][0] = _mm512_fmadd_ps (_mm512_add_ps (s0, s1), _mm512_permutexvar_ps (sidx, gs.sc[i]), acc[i][0]);
        }
    }
}

/* R rows from r, rs apart, over the column blocks [b0, b0 + nb) whose activations are in
 * xp; y is set, or added to when `add`. */
GV_AI void
gv_rows (BwFormat fmt, const BwMatrix *w, const float *xp, int64_t b0, int64_t nb, float *y,
         int64_t r, int64_t rs, const int R, gboolean add)
{
  const uint8_t *rows[GV_ROWS];
  __m512 acc[GV_ROWS][2];

  gv_row_starts (w, fmt, r, rs, b0, rows, R);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps ();
  switch (fmt)
    {
    case BW_FMT_BF16: gv_bf16 (rows, xp, nb, acc, R); break;
    case BW_FMT_MXFP4:
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4: gv_nibbles (fmt, rows, xp, b0, nb, w, r, rs, acc, R); break;
    default: break;
    }
  gv_finish (y, r, rs, R, acc, add);
}

/* Whether the one-token kernel applies: MXFP4 scales below 253 (from there a weight can overflow to Inf, or is
 * NaN, which a per-group sum would not reproduce), Q4 groups it can index. */
GV_AI gboolean
gv_ok (BwFormat fmt, const BwMatrix *w, int64_t r0, int64_t r1)
{
  switch (fmt)
    {
    case BW_FMT_BF16:
      return TRUE;
    case BW_FMT_MXFP4:
      return gv_mxfp4_scales_ok (w, r0, r1);
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4:
      return gv_q4_group_ok (w->group);
    default:
      return FALSE;
    }
}

/* y[r] = W[r] . x for r in [r0, r1); the matrix passed gv_ok. */
GV_AI void
gv_matvec_fmt (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  const int64_t B = gv_block_cols (fmt), nfull = w->cols / B, s = (r1 - r0) / GV_ROWS;
  float xp[GV_X_MAX] __attribute__((aligned (64)));

  for (int64_t b0 = 0; b0 < nfull; b0 += GV_X_MAX / B)
    {
      const int64_t nb = MIN (GV_X_MAX / B, nfull - b0);
      const gboolean add = b0 > 0;
      gv_permute (fmt, x + b0 * B, nb, xp);
      for (int64_t k = 0; k < s; k++)
        gv_rows (fmt, w, xp, b0, nb, y, r0 + k, s, GV_ROWS, add);
      for (int64_t r = r0 + GV_ROWS * s; r < r1; r++)
        gv_rows (fmt, w, xp, b0, nb, y, r, 1, 1, add);
    }
  if (nfull * B < w->cols)
    bw_rows_tail (w, x, y, r0, r1, nfull * B, nfull > 0);
}


#define GV_DEFINE(name, FMT)                                                              \
  static __attribute__((noinline)) void                                                  \
  name (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)             \
  {                                                                                      \
    gv_matvec_fmt (FMT, w, x, y, r0, r1);                                                \
  }

GV_DEFINE (gv_matvec_bf16, BW_FMT_BF16)
GV_DEFINE (gv_matvec_mxfp4, BW_FMT_MXFP4)
GV_DEFINE (gv_matvec_q4, BW_FMT_Q4)
GV_DEFINE (gv_matvec_ct_int4, BW_FMT_CT_INT4)

/* Y[t] = W X[t] for n tokens with the one-token kernel of the format, if it has one and it
 * applies to this matrix. Every token goes through exactly the one-token arithmetic, so a
 * prefill and a token-by-token decode give the same bits. */
GV_AI gboolean
gv_matvec (BwFormat fmt, const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
           int64_t r0, int64_t r1)
{
  void (*one) (const BwMatrix *, const float *, float *, int64_t, int64_t);

  switch (fmt)
    {
    case BW_FMT_BF16: one = gv_matvec_bf16; break;
    case BW_FMT_MXFP4: one = gv_matvec_mxfp4; break;
    case BW_FMT_Q4: one = gv_matvec_q4; break;
    case BW_FMT_CT_INT4: one = gv_matvec_ct_int4; break;
    default: return FALSE;
    }
  if (!gv_ok (fmt, w, r0, r1))
    return FALSE;
  if (n == 1)
    {
      one (w, x, y, r0, r1);
      return TRUE;
    }
  const int64_t sub = MAX (16, GV_TOKEN_ROWS_BYTES / MAX (1, (int64_t) bw_matrix_row_bytes (fmt, w->cols)));
  for (int64_t r = r0; r < r1; r += sub)
    for (int t = 0; t < n; t++)
      one (w, x + (int64_t) t * w->cols, y + (int64_t) t * ldy, r, MIN (r1, r + sub));
  return TRUE;
}
