/* AVX2 + FMA + F16C kernels: 8 columns per vector, same exact decoding as the AVX-512
 * kernels. Compiled with those flags in its own library; called only when the CPU has
 * them. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/avx2-lanes.h"
#include "kernels/gemv-int.h"
#include "kernels/ggml-dot.h"
#include "kernels/kernel-table.h"
#include "quant/ct-int.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define VEC __m256
#define vec_reduce bw_avx2_reduce8
#define VL 8
#define RB_MAX 2

static inline __m256 vec_zero (void) { return _mm256_setzero_ps (); }
static inline __m256 vec_set1 (float f) { return _mm256_set1_ps (f); }

static inline __m256i
first_lanes (int n)
{
  return _mm256_cmpgt_epi32 (_mm256_set1_epi32 (n), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __m256 vec_fma (__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps (a, b, c); }

static inline __m256
vec_fma_tail (__m256 w, __m256 x, __m256 acc, int n)
{
  return _mm256_blendv_ps (acc, _mm256_fmadd_ps (w, x, acc), _mm256_castsi256_ps (first_lanes (n)));
}

/* Q2 steps are 16 columns, two halves of 8: their 4 code bytes are one broadcast load
 * (a load-port uop, where a 2-byte one took a shuffle-port broadcast besides the lookup's
 * permute, and the shuffle port bounded the kernel at 2 code bytes per cycle). */
static inline __attribute__((always_inline)) int
pairs (BwFormat fmt)
{
  return fmt == BW_FMT_Q2 ? 2 : 1;
}

static inline void vec_storeu (float *p, __m256 v) { _mm256_storeu_ps (p, v); }

static inline __m256
vec_first (__m256 v, int n)
{
  return _mm256_and_ps (v, _mm256_castsi256_ps (first_lanes (n)));
}

static inline __attribute__((always_inline)) void
to_columns (BwFormat fmt, __m256 v[2])
{
}

/* first_lanes takes counts past 8 as all lanes and those below 1 as none. */
static inline __attribute__((always_inline)) int
tail_lanes (BwFormat fmt, int rem, int k)
{
  return rem - VL * k;
}

static inline __attribute__((always_inline)) void
load_x (BwFormat fmt, const float *p, __m256 out[2])
{
  out[0] = _mm256_loadu_ps (p);
  if (pairs (fmt) == 2)
    out[1] = _mm256_loadu_ps (p + VL);
}

static inline __attribute__((always_inline)) void
load_x_tail (BwFormat fmt, const float *p, int rem, __m256 out[2])
{
  out[0] = _mm256_maskload_ps (p, first_lanes (rem));
  if (pairs (fmt) == 2)
    out[1] = _mm256_maskload_ps (p + VL, first_lanes (rem - VL));
}

static const float lut_e2m1_mag[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };
static const float lut_q2[8] = { -2, -1, 0, 1, -2, -1, 0, 1 };

static inline __attribute__((always_inline)) void
scale_block (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g, float out[8])
{
}

static inline __attribute__((always_inline)) __m256
group_state (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g, const float block[8])
{
  switch (fmt)
    {
    case BW_FMT_FP8_E4M3_B128:
      {
        return _mm256_set1_ps (bw_load_scale (w, (r / BW_FP8_BLOCK) * bw_fp8_blocks (w->cols) + g) * 0x1p8f);
      }
    case BW_FMT_MXFP4:
      {
        uint8_t e = ((const uint8_t *) w->scales)[r * bw_mxfp4_row_scales (w->cols) + g];
        return _mm256_mul_ps (_mm256_loadu_ps (lut_e2m1_mag), _mm256_set1_ps (bw_e8m0_to_f32 (e)));
      }
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
      {
        float s = bw_load_scale (w, r * bw_intq_row_scales (w->cols, w->group) + g);
        if (fmt == BW_FMT_Q2)
          return _mm256_mul_ps (_mm256_loadu_ps (lut_q2), _mm256_set1_ps (s));
        return _mm256_set1_ps (s);
      }
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      return _mm256_set1_ps (bw_ct_int_scale (w->scales, r * bw_ct_int_row_scales (w->cols, w->group) + g));
    default:
      return _mm256_setzero_ps ();
    }
}

/* Four bytes into 8 dwords whose low 4 bits are the nibbles in column order. */
static inline __m256i
nibbles8 (const uint8_t *p)
{
  uint32_t word;
  memcpy (&word, p, 4);
  __m256i q = _mm256_cvtepu8_epi64 (_mm_cvtsi32_si128 ((int) word));
  return _mm256_or_si256 (q, _mm256_slli_epi64 (q, 28));
}

static inline __attribute__((always_inline)) __m256
decode1 (BwFormat fmt, const uint8_t *p, __m256 st)
{
  switch (fmt)
    {
    case BW_FMT_F32:
      return _mm256_loadu_ps ((const float *) p);
    case BW_FMT_BF16:
      {
        /* each value's 16 bits into the top of its dword, zeros below: one in-lane byte
         * shuffle of the 16 bytes loaded into both lanes (a widening and a shift took a
         * shuffle and an FMA-port uop) */
        const __m256i hi16 = _mm256_setr_epi8 (-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7,
                                               -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
        const __m256i b = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) p));
        return _mm256_castsi256_ps (_mm256_shuffle_epi8 (b, hi16));
      }
    case BW_FMT_F16:
      return _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p));
    case BW_FMT_FP8_E4M3_B128:
      {
        /* As in the AVX-512 kernel: an exact f16 of the value times 2^-8; st holds
         * scale * 2^8; magnitude 0x7F lanes become NaN. */
        const __m128i mag = _mm_set1_epi16 (0x3F80);
        __m128i b = _mm_cvtepi8_epi16 (_mm_loadl_epi64 ((const __m128i *) p));
        __m128i h = _mm_and_si128 (_mm_slli_epi16 (b, 7), _mm_set1_epi16 ((short) 0xBF80));
        __m256i nan = _mm256_cvtepi16_epi32 (_mm_cmpeq_epi16 (_mm_and_si128 (h, mag), mag));
        __m256 f = _mm256_mul_ps (_mm256_cvtph_ps (h), st);
        return _mm256_blendv_ps (f, _mm256_set1_ps (NAN), _mm256_castsi256_ps (nan));
      }
    case BW_FMT_MXFP4:
      {
        /* Magnitude from the scaled table by the low 3 bits; bit 3 is the sign. */
        __m256i d = nibbles8 (p);
        __m256 mag = _mm256_permutevar8x32_ps (st, d);
        __m256i sign = _mm256_and_si256 (_mm256_slli_epi32 (d, 28), _mm256_set1_epi32 ((int) 0x80000000u));
        return _mm256_xor_ps (mag, _mm256_castsi256_ps (sign));
      }
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4:
      {
        __m256i q = _mm256_sub_epi32 (_mm256_and_si256 (nibbles8 (p), _mm256_set1_epi32 (15)),
                                      _mm256_set1_epi32 (8));
        return _mm256_mul_ps (_mm256_cvtepi32_ps (q), st);
      }
    case BW_FMT_Q8:
      {
        __m256i b = _mm256_cvtepi8_epi32 (_mm_loadl_epi64 ((const __m128i *) p));
        return _mm256_mul_ps (_mm256_cvtepi32_ps (b), st);
      }
    case BW_FMT_CT_INT8:
      {
        __m256i u = _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) p));
        __m256i q = _mm256_sub_epi32 (u, _mm256_set1_epi32 (128));
        return _mm256_mul_ps (_mm256_cvtepi32_ps (q), st);
      }
    default:
      return _mm256_setzero_ps ();
    }
}

static inline __attribute__((always_inline)) void
decode (BwFormat fmt, const uint8_t *p, __m256 st, __m256 out[2])
{
  if (fmt == BW_FMT_Q2)
    {
      /* permutevar8x32 reads the low 3 bits of each lane: the field and one bit above it,
       * which the duplicated table ignores */
      const __m256i b = _mm256_castps_si256 (_mm256_broadcast_ss ((const float *) p));
      out[0] = _mm256_permutevar8x32_ps (st, _mm256_srlv_epi32 (b, _mm256_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14)));
      out[1] = _mm256_permutevar8x32_ps (st, _mm256_srlv_epi32 (b, _mm256_setr_epi32 (16, 18, 20, 22, 24, 26, 28, 30)));
      return;
    }
  out[0] = decode1 (fmt, p, st);
}

#define VEC_I __m256i
static inline __m256i vec_i_zero (void) { return _mm256_setzero_si256 (); }
static inline __m256i vec_i_load (const void *p) { return _mm256_load_si256 ((const __m256i *) p); }
static inline __m256i vec_i_add (__m256i a, __m256i b) { return _mm256_add_epi64 (a, b); }

static inline uint64_t
vec_i_reduce (__m256i v)
{
  uint64_t lanes[4];
  _mm256_storeu_si256 ((__m256i *) lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

/* Prefill's decode of FP8 rows (simd-rows.h's DECODE_RUN): decode1's values, 16 columns
 * from one load and one NaN test on the bytes; a run with a NaN code stops there, and
 * decode1 takes the rest. The product by st is left out where st is 1 (the exact
 * products' state). */
static inline __attribute__((always_inline)) int64_t
decode_run_fp8 (const uint8_t *row, int64_t c, int64_t end, __m256 st, float *out)
{
  const gboolean unit = _mm256_movemask_ps (_mm256_cmp_ps (st, _mm256_set1_ps (1.0f), _CMP_EQ_OQ)) == 0xFF;

  for (; c + 16 <= end; c += 16, out += 16)
    {
      const __m128i v = _mm_loadu_si128 ((const __m128i *) (row + c));
      if (_mm_movemask_epi8 (_mm_cmpeq_epi8 (_mm_or_si128 (v, _mm_set1_epi8 ((char) 0x80)),
                                             _mm_set1_epi8 ((char) 0xFF))))
        break;
      const __m256i h = _mm256_and_si256 (_mm256_slli_epi16 (_mm256_cvtepi8_epi16 (v), 7),
                                          _mm256_set1_epi16 ((short) 0xBF80));
      __m256 lo = _mm256_cvtph_ps (_mm256_castsi256_si128 (h));
      __m256 hi = _mm256_cvtph_ps (_mm256_extracti128_si256 (h, 1));
      if (!unit)
        {
          lo = _mm256_mul_ps (lo, st);
          hi = _mm256_mul_ps (hi, st);
        }
      _mm256_storeu_ps (out, lo);
      _mm256_storeu_ps (out + 8, hi);
    }
  return c;
}

/* Prefill's decode of 4-bit rows (simd-rows.h's DECODE_RUN): 32 columns from 16 bytes,
 * each nibble looked up as a small integer (the code minus 8, or twice the E2M1 value with
 * its sign) and scaled, the same f32 values as decode1's (MXFP4: st's lane 1 is half the
 * block scale, a power of two) for about half the instructions. */
static inline __attribute__((always_inline)) int64_t
decode_run (BwFormat fmt, const uint8_t *row, int64_t c, int64_t end, __m256 st, float *out)
{
  if (fmt == BW_FMT_FP8_E4M3_B128)
    return decode_run_fp8 (row, c, end, st, out);
  if (fmt != BW_FMT_MXFP4 && fmt != BW_FMT_Q4 && fmt != BW_FMT_CT_INT4)
    return c;
  const __m128i lut = fmt == BW_FMT_MXFP4
                        ? _mm_setr_epi8 (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
                        : _mm_setr_epi8 (-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 s = fmt == BW_FMT_MXFP4 ? _mm256_permutevar8x32_ps (st, _mm256_set1_epi32 (1)) : st;
  const __m128i low = _mm_set1_epi8 (15);

  for (; c + 32 <= end; c += 32, out += 32)
    {
      const __m128i v = _mm_loadu_si128 ((const __m128i *) (row + c / 2));
      const __m128i lo = _mm_shuffle_epi8 (lut, _mm_and_si128 (v, low));
      const __m128i hi = _mm_shuffle_epi8 (lut, _mm_and_si128 (_mm_srli_epi16 (v, 4), low));
      const __m128i q[4] = { _mm_unpacklo_epi8 (lo, hi), _mm_srli_si128 (_mm_unpacklo_epi8 (lo, hi), 8),
                             _mm_unpackhi_epi8 (lo, hi), _mm_srli_si128 (_mm_unpackhi_epi8 (lo, hi), 8) };
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++)
        _mm256_storeu_ps (out + 8 * k, _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (q[k])), s));
    }
  return c;
}
#define DECODE_RUN(fmt, row, c, end, st, out) decode_run (fmt, row, c, end, st, out)

/* One-token F32, BF16 and F16 products go to float-avx2.c, FP8 products to fp8-avx2.c,
 * and those of the formats the integer kernel sums (gemv-int-avx2.c), of as many tokens as
 * it takes, to it; FALSE where they decline, and the f32 kernel does the product. */
static inline __attribute__((always_inline)) gboolean
int_tokens (BwFormat fmt, const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
            int64_t r0, int64_t r1)
{
  if (n == 1 && (fmt == BW_FMT_F32 || fmt == BW_FMT_BF16 || fmt == BW_FMT_F16))
    return bw_float_matvec_avx2 (w, x, y, r0, r1);
  if (fmt == BW_FMT_FP8_E4M3_B128)
    return bw_fp8_rows_avx2 (w, x, n, y, ldy, r0, r1);
  if (n > bw_gemv_int_avx2.max_tokens
      || !(fmt == BW_FMT_MXFP4 || fmt == BW_FMT_Q4 || fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_Q8
           || fmt == BW_FMT_CT_INT8))
    return FALSE;
  return n == 1 ? bw_gemv_int_matvec (&bw_gemv_int_avx2, w, x, y, r0, r1)
                : bw_gemv_int_matmul (&bw_gemv_int_avx2, w, x, n, y, ldy, r0, r1);
}
#define TOKEN_KERNEL(fmt, w, x, n, y, ldy, r0, r1) int_tokens (fmt, w, x, n, y, ldy, r0, r1)

/* decode1's FP8 values with this state are the codes' values times 2^-8, exactly */
#define GEMM_FP8_UNIT_STATE _mm256_set1_ps (1.0f)

/* BF16 and F16 products of 8 tokens decode each step once into a register (16 tokens, two
 * passes of 8, were 10-30 % slower than the prefill tiles; F32, which needs no decode, 7 %
 * slower: its tiles read the rows in place) */
#define FEW_TOKENS_PATH
#include "kernels/simd-rows.h"

void
bw_fp8_gemm_avx2 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
                  int64_t r1)
{
  for (int t0 = 0; t0 < n; t0 += GEMM_TOKENS)
    for (int64_t r = r0; r < r1; r += GEMM_ROWS)
      gemm_rows (BW_FMT_FP8_E4M3_B128, w, x + (int64_t) t0 * w->cols, MIN (GEMM_TOKENS, n - t0),
                 y + (int64_t) t0 * ldy, ldy, r, (int) MIN (GEMM_ROWS, r1 - r), TRUE);
}

const BwKernelTable bw_kernels_avx2 = SIMD_KERNEL_TABLE ("avx2", &bw_gemv_int_avx2, bw_ggml_dots_avx2,
                                                     bw_peak_fma_avx2, bw_peak_int_avx2);

const BwRowsKernel bw_kernels_avx2_f32_rows[BW_FMT_COUNT] = {
  [BW_FMT_F32] = rows_f32_f32, [BW_FMT_BF16] = rows_bf16_f32, [BW_FMT_F16] = rows_f16_f32,
  [BW_FMT_FP8_E4M3_B128] = rows_fp8_f32, [BW_FMT_MXFP4] = rows_mxfp4_f32,
  [BW_FMT_Q8] = rows_q8_f32, [BW_FMT_Q4] = rows_q4_f32, [BW_FMT_Q2] = rows_q2_f32,
  [BW_FMT_CT_INT4] = rows_ct_int4_f32, [BW_FMT_CT_INT8] = rows_ct_int8_f32,
};
