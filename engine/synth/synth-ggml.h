/* Random GGML blocks of a chosen standard deviation, for synthetic GGUF files: random codes
 * under sub-block scales of a modest range and one block scale (d, and dmin where the type
 * has mins, set so the weights average zero) measured on the engine's own decoding, so a
 * tensor's weights have the asked deviation and every f16 scale is a normal number. */
#pragma once

#include <glib.h>

#include "synth/synth-rng.h"

typedef struct {
  int type;               /* BwGgmlType */
  guint block_bytes, block_elements;
  int d_at, dmin_at;      /* byte offsets of the f16 scales (dmin_at -1: none) */
  guint16 d, dmin;        /* their values, f16 */
  void (*scales) (guint8 *block, guint64 bits);   /* sub-block scales; NULL: random */
} BwSynthGgml;

/* Whether random blocks of the type can be made (the K types Q2_K..Q6_K, Q4_0, Q5_0, Q8_0
 * and the IQ2_XXS, IQ2_XS, IQ3_XXS, IQ4_NL, IQ4_XS grids). */
gboolean bw_synth_ggml_supported (int type);

/* Prepares blocks of the type whose weights have this standard deviation; FALSE for a type
 * bw_synth_ggml_supported refuses or a deviation no normal f16 scale gives. */
gboolean bw_synth_ggml_init (BwSynthGgml *g, int type, float std, GError **error);

/* n_blocks random blocks at dst. */
void bw_synth_ggml_fill (const BwSynthGgml *g, BwSynthRng *rng, guint8 *dst, gsize n_blocks);
