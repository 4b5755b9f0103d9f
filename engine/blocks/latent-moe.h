/* Stable LatentMoE (K3, ARCHITECTURES 3.3): route on the full-width input, run the routed
 * experts at a narrower latent width between a shared down- and up-projection, RMSNorm the
 * weighted routed sum once, then add the full-width shared experts. */
#pragma once

#include "blocks/moe.h"

typedef struct {
  BwMoe moe;              /* expert_width = latent width; router and shared at full width */
  BwMatrix down;          /* routed_expert_down_proj [latent, D] */
  BwMatrix up;            /* routed_expert_up_proj [D, latent] */
  const float *norm;      /* routed_expert_norm [latent], or NULL for no norm */
  float eps;
} BwLatentMoe;

gsize bw_latent_moe_scratch_bytes (const BwLatentMoe *lm, int n);

/* out = up( norm( routed mix of down(x) ) ) + shared(x), x and out [n][D]. */
gboolean bw_latent_moe_forward (const BwLatentMoe *lm, BwExpertStore *store, const float *x,
                                int n, float *out, void *scratch, BwPool *pool,
                                BwMoeTimes *times, GError **error);
