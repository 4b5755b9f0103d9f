/* Internal: the products of the 32-element GGML types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
 * MXFP4) that the SIMD levels share, in kernels/ggml-dot.h's 8 lanes: a template over how a
 * level sums code products. The including file defines
 *   quads_from (from, u, x) -> __m256i: from plus, per 32-bit lane, the sum of the four
 *       products of unsigned codes u (bytes, at most 128) with activation codes x
 *       (|x| <= 127), exactly: lane l holds elements 4 l .. 4 l + 3,
 * then includes this file once, inside its library (built with FMA and F16C).
 *
 * Each block's sums stay in their lanes, converted to f32 and added with one FMA per block
 * and row; nothing is summed across lanes until a row's end. LANES32_ROWS rows are in
 * flight, a quarter of the thread's range apart (the rows driver picks them), sharing each
 * block's activation loads, each its own sequential stream prefetched ahead into L1 (the
 * hardware prefetcher alone gave 0.50-0.55 of the memory's rate, not 0.7-0.94). */

#define LANES32_ROWS 4

/* 1.5 * 2^23: an integer s, |s| < 2^22, added to its bits gives the f32 LANES32_MAGIC + s
 * exactly, and subtracting LANES32_MAGIC leaves s exactly (a block's lane sums are at most
 * 4 * 255 * 128 in magnitude). MXFP4 (offset codes, an E8M0 scale: a load) takes it into
 * its offset's add, turning vpcvtdq2ps into an f32 subtract that runs on more ports (1-4 %
 * faster on a Sapphire Rapids core, near the noise); the F16-scaled offset types measured
 * slower with it. */
#define LANES32_MAGIC 12582912.0f

/* How far ahead in each row to prefetch, into L1 (float-avx2.c's distance). */
#define LANES32_PREFETCH 2048

typedef struct {
  int bytes;             /* of a block */
  int qs;                /* where its codes start */
  int qh;                /* where Q5's fifth bits are, or 0 */
  gboolean m;            /* an f16 minimum after the f16 scale (Q4_1, Q5_1) */
  int offset;            /* how far the unsigned codes stand above the codes */
  const int8_t *values;  /* the codes the nibbles index (IQ4_NL, MXFP4), or NULL */
  gboolean q8;           /* signed bytes (Q8_0) */
  gboolean e8m0;         /* the scale an E8M0 byte (as bw_ggml_e8m0_half), else f16 */
} Lanes32;

/* The lane sums of one block at b against activation codes xq (xa: their magnitudes)
 * plus from: 0 (or LANES32_MAGIC's bits), less offset times the activations' lane sums
 * for codes stored `offset` above their value. Table codes without an offset (IQ4_NL:
 * |code| <= 127) take x's sign and go against |x|, one vpsignb per row (Q8_0's -128 has
 * no negation: it takes |w| against x). */
GGML_ROWS __m256i
lanes32_sums (const uint8_t *b, const Lanes32 *f, __m256i xq, __m256i xa, __m256i table, __m256i from)
{
  if (f->q8)
    {
      const __m256i w = loadu (b + 2);
      return quads_from (from, _mm256_sign_epi8 (w, w), _mm256_sign_epi8 (xq, w));
    }
  __m256i u = nibbles32 (b + f->qs);
  if (f->qh)
    u = _mm256_or_si256 (u, _mm256_and_si256 (bit_mask32 (bw_ggml_u32 (b + f->qh)), _mm256_set1_epi8 (16)));
  if (f->values)
    {
      u = _mm256_shuffle_epi8 (table, u);
      if (!f->offset)
        return quads_from (from, xa, _mm256_sign_epi8 (u, xq));
    }
  return quads_from (from, u, xq);
}

/* bw_ggml_e8m0_half's bits for every E8M0 byte: a load instead of a shift, a compare and
 * a move per block (the levels' tests compare them with the scalar level's products). */
#define E8M0_HALF(e) ((e) < 2 ? 0x00200000u << ((e) & 1) : (uint32_t) ((e) - 1) << 23)
#define E8M0_HALF4(e) E8M0_HALF (e), E8M0_HALF (e + 1), E8M0_HALF (e + 2), E8M0_HALF (e + 3)
#define E8M0_HALF16(e) E8M0_HALF4 (e), E8M0_HALF4 (e + 4), E8M0_HALF4 (e + 8), E8M0_HALF4 (e + 12)
#define E8M0_HALF64(e) E8M0_HALF16 (e), E8M0_HALF16 (e + 16), E8M0_HALF16 (e + 32), E8M0_HALF16 (e + 48)
static const uint32_t e8m0_half_bits[256] = {
  E8M0_HALF64 (0), E8M0_HALF64 (64), E8M0_HALF64 (128), E8M0_HALF64 (192),
};

/* A block's scale in every lane: the E8M0 byte's value, or the f16 at p (F16C, converted
 * from memory, lane 0 broadcast: bw_ggml_f16's value; p's next 6 bytes are in the block). */
GGML_ROWS __m256
lanes32_scale (const uint8_t *p, gboolean e8m0)
{
  if (e8m0)
    return _mm256_castsi256_ps (_mm256_set1_epi32 ((int) e8m0_half_bits[p[0]]));
  return _mm256_broadcastss_ps (_mm_cvtph_ps (_mm_loadl_epi64 ((const __m128i *) p)));
}

/* Block i of R rows at row + r * stride: bw_ggml_lane's steps in every lane. */
GGML_ROWS void
lanes32_block (const uint8_t *row, size_t stride, const BwGgmlAct32 *x, int64_t i, __m256 *lane,
               const int R, const Lanes32 *f, __m256i table)
{
  const __m256i xq = loadu (x[i].q);
  const __m256 dx = _mm256_broadcast_ss (&x[i].d);
  const __m256i zero = _mm256_setzero_si256 ();
  const __m256 magic = _mm256_set1_ps (LANES32_MAGIC);
  const gboolean by_magic = f->offset && f->e8m0;
  const __m256i from = f->offset ? _mm256_sub_epi32 (by_magic ? _mm256_castps_si256 (magic) : zero,
                                                     quads_from (zero, _mm256_set1_epi8 ((char) f->offset), xq))
                                 : zero;
  const __m256i xa = f->values && !f->offset ? _mm256_abs_epi8 (xq) : zero;
  const __m256 xs = f->m ? _mm256_cvtepi32_ps (quads_from (zero, _mm256_set1_epi8 (1), xq)) : _mm256_setzero_ps ();
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    {
      const uint8_t *b = row + r * stride + (size_t) (f->bytes * i);
      const __m256i sums = lanes32_sums (b, f, xq, xa, table, from);
      const __m256 s = by_magic ? _mm256_sub_ps (_mm256_castsi256_ps (sums), magic) : _mm256_cvtepi32_ps (sums);
      if (f->m)
        {
          /* d and m side by side: both converted and multiplied at once */
          const __m128 dm = _mm_mul_ps (_mm_cvtph_ps (_mm_loadl_epi64 ((const __m128i *) b)), _mm256_castps256_ps128 (dx));
          lane[r] = _mm256_fmadd_ps (_mm256_broadcastss_ps (dm), s, lane[r]);
          lane[r] = _mm256_fmadd_ps (_mm256_permutevar8x32_ps (_mm256_castps128_ps256 (dm), _mm256_set1_epi32 (1)), xs, lane[r]);
        }
      else
        lane[r] = _mm256_fmadd_ps (_mm256_mul_ps (dx, lanes32_scale (b, f->e8m0)), s, lane[r]);
    }
}

/* acc[r] plus the product of R rows (1 or LANES32_ROWS, a constant) at row + r * stride:
 * blocks in groups of about a cache line, one prefetch per row and group. */
GGML_ROWS void
lanes32_rows (const uint8_t *row, size_t stride, const BwGgmlAct32 *x, int64_t nb, float *acc,
              const int R, const Lanes32 *f)
{
  const int group = MAX (1, 64 / f->bytes);
  const __m256i table = f->values ? _mm256_add_epi8 (table16 (f->values), _mm256_set1_epi8 ((char) f->offset))
                                  : _mm256_setzero_si256 ();
  __m256 lane[LANES32_ROWS];
  int64_t i = 0;

#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    lane[r] = _mm256_setzero_ps ();
  for (; i + group <= nb; i += group)
    {
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        _mm_prefetch ((const char *) row + r * stride + f->bytes * i + LANES32_PREFETCH, _MM_HINT_T0);
#pragma GCC unroll 4
      for (int k = 0; k < group; k++)
        lanes32_block (row, stride, x, i + k, lane, R, f, table);
    }
  for (; i < nb; i++)
    lanes32_block (row, stride, x, i, lane, R, f, table);
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    {
      float l[8];
      _mm256_storeu_ps (l, lane[r]);
      acc[r] = bw_ggml_lanes_end (acc[r], l);
    }
}

/* A type's one-row and four-row products (kernel-table.h's BwGgmlDot, BwGgmlDot4). */
#define LANES32(name, ...)                                                                        \
  static const Lanes32 name##_lanes = { __VA_ARGS__ };                                           \
  static float dot_##name (const uint8_t *row, const void *act, int64_t nb, float acc)           \
  {                                                                                              \
    lanes32_rows (row, 0, act, nb, &acc, 1, &name##_lanes);                                      \
    return acc;                                                                                  \
  }                                                                                              \
  static void dot4_##name (const uint8_t *row, size_t stride, const void *act, int64_t nb,      \
                           float acc[4])                                                         \
  {                                                                                              \
    lanes32_rows (row, stride, act, nb, acc, LANES32_ROWS, &name##_lanes);                       \
  }

/* bytes, qs, qh, m, offset, values, q8, e8m0 */
LANES32 (q4_0, 18, 2, 0, FALSE, 8, NULL, FALSE, FALSE)
LANES32 (q4_1, 20, 4, 0, TRUE, 0, NULL, FALSE, FALSE)
LANES32 (q5_0, 22, 6, 2, FALSE, 16, NULL, FALSE, FALSE)
LANES32 (q5_1, 24, 8, 4, TRUE, 0, NULL, FALSE, FALSE)
LANES32 (q8_0, 34, 2, 0, FALSE, 0, NULL, TRUE, FALSE)
LANES32 (iq4_nl, 18, 2, 0, FALSE, 0, bw_iq4nl_values, FALSE, FALSE)
LANES32 (mxfp4, 17, 1, 0, FALSE, 12, bw_mxfp4_values, FALSE, TRUE)

/* The table entries of the 32-element types. */
#define LANES32_ENTRIES \
  [BW_FMT_GGML_Q4_0] = { dot_q4_0, dot4_q4_0 }, \
  [BW_FMT_GGML_Q4_1] = { dot_q4_1, dot4_q4_1 }, \
  [BW_FMT_GGML_Q5_0] = { dot_q5_0, dot4_q5_0 }, \
  [BW_FMT_GGML_Q5_1] = { dot_q5_1, dot4_q5_1 }, \
  [BW_FMT_GGML_Q8_0] = { dot_q8_0, dot4_q8_0 }, \
  [BW_FMT_GGML_IQ4_NL] = { dot_iq4_nl, dot4_iq4_nl }, \
  [BW_FMT_GGML_MXFP4] = { dot_mxfp4, dot4_mxfp4 },
