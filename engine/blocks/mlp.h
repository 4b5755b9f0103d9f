/* Gated MLP: down( act(gate x, up x) ). The dense FFN layers and the shared experts. */
#pragma once

#include "blocks/activation.h"
#include "kernels/matrix.h"

typedef struct {
  BwMatrix gate;   /* [inter, in] */
  BwMatrix up;     /* [inter, in] */
  BwMatrix down;   /* [in, inter] */
  BwActivation act;
} BwMlp;

/* Bytes of scratch bw_mlp_forward needs for n tokens. */
gsize bw_mlp_scratch_bytes (const BwMlp *mlp, int n);

/* out[t] (+)= MLP(x[t]) for n rows of width in; accumulate adds instead of overwriting. */
void bw_mlp_forward (const BwMlp *mlp, const float *x, int n, float *out, gboolean accumulate,
                     void *scratch, BwPool *pool);
