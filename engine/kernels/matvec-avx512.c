/* AVX-512 kernels (F, BW, VL): 16 columns per vector. Decoding is exact: every weight is
 * the reference's code value times scale rounded once to f32, then fused-multiply-added
 * in f32. Compiled with AVX-512 flags in its own library; called only when the CPU has
 * them. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/ggml-dot.h"
#include "kernels/kernel-table.h"
#include "quant/ct-int.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define VEC __m512
#define VL 16
#define RB_MAX 4

static inline __m512 vec_zero (void) { return _mm512_setzero_ps (); }
static inline __m512 vec_set1 (float f) { return _mm512_set1_ps (f); }
static inline __mmask16 first_lanes (int n) { return (__mmask16) ((1u << n) - 1); }
static inline __m512 vec_fma (__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps (a, b, c); }

static inline __m512
vec_fma_tail (__m512 w, __m512 x, __m512 acc, int n)
{
  return _mm512_mask3_fmadd_ps (w, x, acc, first_lanes (n));
}

static inline float vec_reduce (__m512 v) { return _mm512_reduce_add_ps (v); }

/* Some formats decode 32 columns per step: nibbles as even and odd columns (one widening
 * load yields both), FP8 as two halves (converted as 16-bit lanes, 32 at a time). */
static inline __attribute__((always_inline)) int
pairs (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 || fmt == BW_FMT_Q4 || fmt == BW_FMT_CT_INT4
         || fmt == BW_FMT_FP8_E4M3_B128 ? 2 : 1;
}

static inline __attribute__((always_inline)) gboolean
interleaved (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 || fmt == BW_FMT_Q4 || fmt == BW_FMT_CT_INT4;
}

static inline __attribute__((always_inline)) int
tail_lanes (BwFormat fmt, int rem, int k)
{
  if (pairs (fmt) == 1)
    return rem;
  if (interleaved (fmt))
    return (rem - k + 1) / 2;
  return CLAMP (rem - 16 * k, 0, 16);
}

static inline void vec_storeu (float *p, __m512 v) { _mm512_storeu_ps (p, v); }
static inline __m512 vec_first (__m512 v, int n) { return _mm512_maskz_mov_ps (first_lanes (n), v); }

/* Even and odd columns back to column order. */
static inline __attribute__((always_inline)) void
to_columns (BwFormat fmt, __m512 v[2])
{
  if (pairs (fmt) == 2 && interleaved (fmt))
    {
      const __m512i lo = _mm512_setr_epi32 (0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i hi = _mm512_setr_epi32 (8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      __m512 a = _mm512_permutex2var_ps (v[0], lo, v[1]);
      v[1] = _mm512_permutex2var_ps (v[0], hi, v[1]);
      v[0] = a;
    }
}

static inline void
deinterleave (__m512 lo, __m512 hi, __m512 out[2])
{
  const __m512i even = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32 (1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  out[0] = _mm512_permutex2var_ps (lo, even, hi);
  out[1] = _mm512_permutex2var_ps (lo, odd, hi);
}

static inline __attribute__((always_inline)) void
load_x (BwFormat fmt, const float *p, __m512 out[2])
{
  if (pairs (fmt) == 1)
    out[0] = _mm512_loadu_ps (p);
  else if (interleaved (fmt))
    deinterleave (_mm512_loadu_ps (p), _mm512_loadu_ps (p + 16), out);
  else
    out[0] = _mm512_loadu_ps (p), out[1] = _mm512_loadu_ps (p + 16);
}

static inline __attribute__((always_inline)) void
load_x_tail (BwFormat fmt, const float *p, int rem, __m512 out[2])
{
  __m512 lo = _mm512_maskz_loadu_ps (first_lanes (MIN (rem, 16)), p);

  if (pairs (fmt) == 1)
    out[0] = lo;
  else
    {
      __m512 hi = _mm512_maskz_loadu_ps (first_lanes (MAX (rem - 16, 0)), p + 16);
      if (interleaved (fmt))
        deinterleave (lo, hi, out);
      else
        out[0] = lo, out[1] = hi;
    }
}

/* The 16 E2M1 values, and int4/int2 codes (int2 repeated so any 4-bit index works). */
static const float lut_e2m1[16] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6 };
static const float lut_q4[16] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };
static const float lut_q2[16] = { -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1 };

/* Decodes the scales of 16 consecutive groups of row r from group g (fewer at the row's
 * end) into out, from where group_state broadcasts one with a plain load. */
static inline __attribute__((always_inline)) void
scale_block (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g, float out[16])
{
  if (fmt == BW_FMT_MXFP4)
    {
      int64_t ns = bw_mxfp4_row_scales (w->cols);
      __mmask16 k = (__mmask16) ((1u << MIN (16, ns - g)) - 1);
      __m512i e = _mm512_cvtepu8_epi32 (_mm_maskz_loadu_epi8 (k, (const uint8_t *) w->scales + r * ns + g));
      /* E8M0 s is the f32 with bits s << 23, except 0 (2^-127, subnormal) and 0xFF (NaN). */
      __m512i f = _mm512_slli_epi32 (e, 23);
      f = _mm512_mask_mov_epi32 (f, _mm512_cmpeq_epi32_mask (e, _mm512_setzero_si512 ()),
                                 _mm512_set1_epi32 (1 << 22));
      f = _mm512_mask_mov_epi32 (f, _mm512_cmpeq_epi32_mask (e, _mm512_set1_epi32 (255)),
                                 _mm512_set1_epi32 (0x7FC00000));
      _mm512_store_ps (out, _mm512_castsi512_ps (f));
    }
  else if ((fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2) && w->group > 0)
    {
      int64_t ns = bw_intq_row_scales (w->cols, w->group);
      __mmask16 k = (__mmask16) ((1u << MIN (16, ns - g)) - 1);
      _mm512_store_ps (out, _mm512_maskz_loadu_ps (k, (const float *) w->scales + r * ns + g));
    }
  else if ((fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8) && w->group > 0)
    {
      /* BF16 scales: the f32 with the same top 16 bits */
      int64_t ns = bw_ct_int_row_scales (w->cols, w->group);
      __mmask16 k = (__mmask16) ((1u << MIN (16, ns - g)) - 1);
      __m512i h = _mm512_cvtepu16_epi32 (_mm256_maskz_loadu_epi16 (k, (const uint16_t *) w->scales + r * ns + g));
      _mm512_store_ps (out, _mm512_castsi512_ps (_mm512_slli_epi32 (h, 16)));
    }
}

static inline __attribute__((always_inline)) __m512
group_state (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g, const float block[16])
{
  switch (fmt)
    {
    case BW_FMT_FP8_E4M3_B128:
      {
        return _mm512_set1_ps (bw_load_scale (w, (r / BW_FP8_BLOCK) * bw_fp8_blocks (w->cols) + g) * 0x1p8f);
      }
    case BW_FMT_MXFP4:
      {
        return _mm512_mul_ps (_mm512_loadu_ps (lut_e2m1), _mm512_set1_ps (block[g & 15]));
      }
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
      {
        __m512 s = _mm512_set1_ps (w->group > 0 ? block[g & 15] : bw_load_scale (w, r));
        if (fmt == BW_FMT_Q8)
          return s;
        return _mm512_mul_ps (_mm512_loadu_ps (fmt == BW_FMT_Q4 ? lut_q4 : lut_q2), s);
      }
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      {
        __m512 s = _mm512_set1_ps (w->group > 0 ? block[g & 15] : bw_ct_int_scale (w->scales, r));
        if (fmt == BW_FMT_CT_INT8)
          return s;
        return _mm512_mul_ps (_mm512_loadu_ps (lut_q4), s);
      }
    default:
      return _mm512_setzero_ps ();
    }
}

static inline __attribute__((always_inline)) __m512
decode1 (BwFormat fmt, const uint8_t *p, __m512 st)
{
  switch (fmt)
    {
    case BW_FMT_F32:
      return _mm512_loadu_ps ((const float *) p);
    case BW_FMT_BF16:
      {
        __m512i h = _mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) p));
        return _mm512_castsi512_ps (_mm512_slli_epi32 (h, 16));
      }
    case BW_FMT_F16:
      return _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) p));
    case BW_FMT_Q2:
      {
        /* 16 two-bit fields of one dword: shift each lane to its field; the table
         * repeats every 4 entries so the bits above the field do not matter. */
        uint32_t word;
        memcpy (&word, p, 4);
        __m512i shifts = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        __m512i idx = _mm512_srlv_epi32 (_mm512_set1_epi32 ((int) word), shifts);
        return _mm512_permutexvar_ps (idx, st);
      }
    case BW_FMT_Q8:
      {
        __m512i b = _mm512_cvtepi8_epi32 (_mm_loadu_si128 ((const __m128i *) p));
        return _mm512_mul_ps (_mm512_cvtepi32_ps (b), st);
      }
    case BW_FMT_CT_INT8:
      {
        __m512i u = _mm512_cvtepu8_epi32 (_mm_loadu_si128 ((const __m128i *) p));
        return _mm512_mul_ps (_mm512_cvtepi32_ps (_mm512_sub_epi32 (u, _mm512_set1_epi32 (128))), st);
      }
    default:
      return _mm512_setzero_ps ();
    }
}

static inline __attribute__((always_inline)) void
decode (BwFormat fmt, const uint8_t *p, __m512 st, __m512 out[2])
{
  switch (fmt)
    {
    case BW_FMT_MXFP4:
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4:
      {
        /* 16 bytes = 32 nibbles; the table lookup reads only the low 4 bits of a lane,
         * so the byte itself indexes the even column and byte >> 4 the odd one. */
        __m512i d = _mm512_cvtepu8_epi32 (_mm_loadu_si128 ((const __m128i *) p));
        out[0] = _mm512_permutexvar_ps (d, st);
        out[1] = _mm512_permutexvar_ps (_mm512_srli_epi32 (d, 4), st);
        break;
      }
    case BW_FMT_FP8_E4M3_B128:
      {
        /* The sign-extended byte << 7, with bit 14 cleared, is an f16 equal to the e4m3
         * value times 2^-8 (normals and subnormals alike); converting it is exact and,
         * unlike an f32 bit trick, never feeds a subnormal to the multiplier. st holds
         * scale * 2^8. */
        const __m512i mag = _mm512_set1_epi16 (0x3F80);
        __m512i b = _mm512_cvtepi8_epi16 (_mm256_loadu_si256 ((const __m256i *) p));
        __m512i h = _mm512_and_si512 (_mm512_slli_epi16 (b, 7), _mm512_set1_epi16 ((short) 0xBF80));
        /* e4m3 NaN (magnitude 0x7F) becomes an f16 NaN before the conversion. */
        h = _mm512_mask_mov_epi16 (h, _mm512_cmpeq_epi16_mask (_mm512_and_si512 (h, mag), mag),
                                   _mm512_set1_epi16 (0x7E00));
        out[0] = _mm512_mul_ps (_mm512_cvtph_ps (_mm512_castsi512_si256 (h)), st);
        out[1] = _mm512_mul_ps (_mm512_cvtph_ps (_mm512_extracti64x4_epi64 (h, 1)), st);
        break;
      }
    default:
      out[0] = decode1 (fmt, p, st);
      break;
    }
}

#define VEC_I __m512i
static inline __m512i vec_i_zero (void) { return _mm512_setzero_si512 (); }
static inline __m512i vec_i_load (const void *p) { return _mm512_load_si512 (p); }
static inline __m512i vec_i_add (__m512i a, __m512i b) { return _mm512_add_epi64 (a, b); }
/* Wrapping sum (GCC's _mm512_reduce_add_epi64 adds as signed and may overflow). */
static inline uint64_t
vec_i_reduce (__m512i v)
{
  uint64_t lanes[8], sum = 0;
  _mm512_storeu_si512 (lanes, v);
  for (int i = 0; i < 8; i++)
    sum += lanes[i];
  return sum;
}

#include "kernels/gemv-avx512.h"

/* FP8 takes the AVX2 level's kernel, which forms each product exactly from an f16: a
 * 512-bit path that puts the codes in f32 bit patterns makes subnormal codes f32
 * denormals, and Intel cores take a microcode assist on each (1.1 GB/s against 27). */
static inline __attribute__((always_inline)) gboolean
token_kernel (BwFormat fmt, const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
              int64_t r0, int64_t r1)
{
  if (fmt == BW_FMT_FP8_E4M3_B128)
    return bw_fp8_rows_avx2 (w, x, n, y, ldy, r0, r1);
  return gv_matvec (fmt, w, x, n, y, ldy, r0, r1);
}
#define TOKEN_KERNEL token_kernel

#include "kernels/simd-rows.h"

const BwKernelTable bw_kernels_avx512 = SIMD_KERNEL_TABLE ("avx512", NULL, bw_ggml_dots_avx2,
                                                       bw_peak_fma_avx512, bw_peak_int_avx2);
