/* Random GGML blocks of a chosen standard deviation (synth-ggml.h). */
#include "synth/synth-ggml.h"

#include <math.h>

#include "quant/f16.h"
#include "quant/ggml-quants.h"

#define CALIBRATION_BLOCKS 64
#define F16_MIN_NORMAL 6.103515625e-05f

/* Sub-block scales in 8..15 (Q6_K: 4..7 with a random sign) keep the block scale d well
 * above the f16 subnormals at the deviations of real weights (1/sqrt(width), 0.008 and up).
 * Where a sub-block also has a min, it equals the scale, and dmin = d times the codes'
 * mean makes every sub-block average zero. */
static void
q2_k_scales (guint8 *b, guint64 bits)
{
  for (int j = 0; j < 16; j++, bits >>= 3)
    {
      guint8 s = (guint8) (8 + (bits & 7));
      b[j] = (guint8) (s | s << 4);
    }
}

/* Q4_K / Q5_K: scale and min j < 4 in bytes 4 + j and 8 + j, j >= 4 as the two nibbles of
 * byte 12 + j - 4 (their high bits, kept in the top of bytes 4..11, are zero below 16). */
static void
k_scales (guint8 *b, guint64 bits)
{
  for (int j = 0; j < 8; j++, bits >>= 3)
    {
      guint8 s = (guint8) (8 + (bits & 7));
      if (j < 4)
        b[4 + j] = b[8 + j] = s;
      else
        b[12 + j - 4] = (guint8) (s | s << 4);
    }
}

static void
q6_k_scales (guint8 *b, guint64 bits)
{
  for (int j = 0; j < 16; j++, bits >>= 3)
    {
      int s = 4 + (int) (bits & 3);
      b[192 + j] = (guint8) (gint8) ((bits & 4) ? -s : s);
    }
}

typedef struct {
  int type;
  int d_at, dmin_at;
  float dmin_ratio;       /* dmin = d times this: the mean code */
  void (*scales) (guint8 *block, guint64 bits);
} Spec;

static const Spec specs[] = {
  { BW_GGML_Q4_0, 0, -1, 0, NULL },
  { BW_GGML_Q5_0, 0, -1, 0, NULL },
  { BW_GGML_Q8_0, 0, -1, 0, NULL },
  { BW_GGML_Q2_K, 80, 82, 1.5f, q2_k_scales },
  { BW_GGML_Q3_K, 108, -1, 0, NULL },
  { BW_GGML_Q4_K, 0, 2, 7.5f, k_scales },
  { BW_GGML_Q5_K, 0, 2, 15.5f, k_scales },
  { BW_GGML_Q6_K, 208, -1, 0, q6_k_scales },
  { BW_GGML_IQ2_XXS, 0, -1, 0, NULL },
  { BW_GGML_IQ2_XS, 0, -1, 0, NULL },
  { BW_GGML_IQ3_XXS, 0, -1, 0, NULL },
  { BW_GGML_IQ4_NL, 0, -1, 0, NULL },
  { BW_GGML_IQ4_XS, 0, -1, 0, NULL },
};

static const Spec *
find_spec (int type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (specs); i++)
    if (specs[i].type == type)
      return &specs[i];
  return NULL;
}

gboolean
bw_synth_ggml_supported (int type)
{
  return find_spec (type) != NULL && bw_ggml_codec (type) != NULL;
}

static void
put_f16 (guint8 *b, int at, guint16 v)
{
  if (at >= 0)
    memcpy (b + at, &v, sizeof v);
}

void
bw_synth_ggml_fill (const BwSynthGgml *g, BwSynthRng *rng, guint8 *dst, gsize n_blocks)
{
  bw_synth_rng_bytes (rng, dst, n_blocks * g->block_bytes);
  for (gsize i = 0; i < n_blocks; i++)
    {
      guint8 *b = dst + i * g->block_bytes;
      if (g->scales != NULL)
        g->scales (b, bw_synth_rng_next (rng));
      put_f16 (b, g->d_at, g->d);
      put_f16 (b, g->dmin_at, g->dmin);
    }
}

/* The root mean square of the type's weights at d = 1, on blocks drawn from a fixed seed. */
static double
unit_rms (BwSynthGgml *g)
{
  g_autofree guint8 *blocks = g_malloc ((gsize) CALIBRATION_BLOCKS * g->block_bytes);
  g_autofree float *w = g_new (float, (gsize) CALIBRATION_BLOCKS * g->block_elements);
  gint64 n = (gint64) CALIBRATION_BLOCKS * g->block_elements;
  BwSynthRng rng;
  double sum = 0;

  bw_synth_rng_seed (&rng, 0x5eed);
  bw_synth_ggml_fill (g, &rng, blocks, CALIBRATION_BLOCKS);
  if (!bw_ggml_dequant (g->type, blocks, n, w))
    return 0;
  for (gint64 i = 0; i < n; i++)
    sum += (double) w[i] * w[i];
  return sqrt (sum / (double) n);
}

gboolean
bw_synth_ggml_init (BwSynthGgml *g, int type, float std, GError **error)
{
  const Spec *s = find_spec (type);
  const BwGgmlCodec *codec = bw_ggml_codec (type);
  double rms;
  float d;

  if (s == NULL || codec == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic GGUF: no random blocks of type %s",
                   bw_ggml_type_name ((guint32) type) ? bw_ggml_type_name ((guint32) type) : "?");
      return FALSE;
    }
  *g = (BwSynthGgml) { type, codec->info->block_bytes, codec->info->block_elements, s->d_at,
                       s->dmin_at, bw_f32_to_f16 (1.0f), bw_f32_to_f16 (s->dmin_ratio),
                       s->scales };
  rms = unit_rms (g);
  d = rms > 0 ? (float) (std / rms) : 0;
  if (!(d >= F16_MIN_NORMAL && d * MAX (s->dmin_ratio, 1.0f) < 65504.0f))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic GGUF: weights of deviation %g in %s need a block scale of %g, "
                   "outside f16's normal numbers", (double) std, codec->info->name, (double) d);
      return FALSE;
    }
  g->d = bw_f32_to_f16 (d);
  g->dmin = bw_f32_to_f16 (d * s->dmin_ratio);
  return TRUE;
}
