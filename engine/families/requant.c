/* Load-time requantisation of dense weights (--dense-bits). */
#include "families/family.h"

gboolean
bw_model_requantize_dense (BwModel *model, BwMatrix *m, const char *name, GError **error)
{
  if (model->opts.dense_bits == 0)
    return TRUE;
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
               "requantising dense weights to %d bits is not available yet (tensor %s)",
               model->opts.dense_bits, name);
  return FALSE;
}
