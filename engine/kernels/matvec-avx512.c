/* AVX-512 kernels (F, BW, VL): 16 columns per vector. Decoding is exact: every weight is
 * the reference's code value times scale rounded once to f32, then fused-multiply-added
 * in f32. Compiled with AVX-512 flags in its own library; called only when the CPU has
 * them. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernel-table.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define VEC __m512
#define VL 16
#define RB_MAX 4

static inline __m512 vec_zero (void) { return _mm512_setzero_ps (); }
static inline __m512 vec_loadu (const float *p) { return _mm512_loadu_ps (p); }
static inline __mmask16 tail_mask (int rem) { return (__mmask16) ((1u << rem) - 1); }

static inline __m512
vec_load_tail (const float *p, int rem)
{
  return _mm512_maskz_loadu_ps (tail_mask (rem), p);
}

static inline __m512 vec_fma (__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps (a, b, c); }

static inline __m512
vec_fma_tail (__m512 w, __m512 x, __m512 acc, int rem)
{
  return _mm512_mask3_fmadd_ps (w, x, acc, tail_mask (rem));
}

static inline float vec_reduce (__m512 v) { return _mm512_reduce_add_ps (v); }

/* The 16 E2M1 values, and int4/int2 codes (int2 repeated so any 4-bit index works). */
static const float lut_e2m1[16] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6 };
static const float lut_q4[16] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };
static const float lut_q2[16] = { -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1 };

static inline __attribute__((always_inline)) __m512
group_state (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g)
{
  switch (fmt)
    {
    case BW_FMT_FP8_E4M3_B128:
      {
        const float *s = (const float *) w->scales + (r / BW_FP8_BLOCK) * bw_fp8_blocks (w->cols);
        return _mm512_set1_ps (s[g] * 0x1p120f);
      }
    case BW_FMT_MXFP4:
      {
        uint8_t e = ((const uint8_t *) w->scales)[r * bw_mxfp4_row_scales (w->cols) + g];
        return _mm512_mul_ps (_mm512_loadu_ps (lut_e2m1), _mm512_set1_ps (bw_e8m0_to_f32 (e)));
      }
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
      {
        float s = ((const float *) w->scales)[r * bw_intq_row_scales (w->cols, w->group) + g];
        const float *lut = fmt == BW_FMT_Q4 ? lut_q4 : lut_q2;
        if (fmt == BW_FMT_Q8)
          return _mm512_set1_ps (s);
        return _mm512_mul_ps (_mm512_loadu_ps (lut), _mm512_set1_ps (s));
      }
    default:
      return _mm512_setzero_ps ();
    }
}

/* Two nibbles per byte into 16 dwords whose low 4 bits are the nibbles, in column order:
 * each byte b becomes the qword b | b << 28, i.e. dwords (b, b >> 4). */
static inline __m512i
nibbles16 (const uint8_t *p)
{
  __m512i q = _mm512_cvtepu8_epi64 (_mm_loadl_epi64 ((const __m128i *) p));
  return _mm512_or_si512 (q, _mm512_slli_epi64 (q, 28));
}

static inline __attribute__((always_inline)) __m512
decode (BwFormat fmt, const uint8_t *p, __m512 st)
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
    case BW_FMT_FP8_E4M3_B128:
      {
        /* Sign-extended byte << 20, masked to sign + 7 magnitude bits, is the e4m3 value
         * times 2^-120 (normals and subnormals); st holds scale * 2^120. */
        __m512i b = _mm512_cvtepi8_epi32 (_mm_loadu_si128 ((const __m128i *) p));
        __m512i v = _mm512_and_si512 (_mm512_slli_epi32 (b, 20), _mm512_set1_epi32 ((int) 0x87F00000u));
        __mmask16 nan = _mm512_cmpeq_epi32_mask (_mm512_and_si512 (v, _mm512_set1_epi32 (0x07F00000)),
                                                 _mm512_set1_epi32 (0x07F00000));
        __m512 f = _mm512_mask_mov_ps (_mm512_castsi512_ps (v), nan, _mm512_set1_ps (NAN));
        return _mm512_mul_ps (f, st);
      }
    case BW_FMT_MXFP4:
    case BW_FMT_Q4:
      return _mm512_permutexvar_ps (nibbles16 (p), st);
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
    default:
      return _mm512_setzero_ps ();
    }
}

#include "kernels/simd-rows.h"

const BwKernelTable bw_kernels_avx512 = SIMD_KERNEL_TABLE ("avx512");
