/* The byte counts of a checkpoint: as stored, requantised, per expert miss. */
#include "model/checkpoint-tally.h"

#include <string.h>

#include "core/model-config.h"
#include "quant/intq.h"

static gboolean
is_float_dtype (BwDType t)
{
  return t == BW_DTYPE_F32 || t == BW_DTYPE_F16 || t == BW_DTYPE_BF16 || t == BW_DTYPE_F64
         || t == BW_DTYPE_F8_E4M3;
}

/* The block scales of an FP8 weight vanish once the weight is requantised with its own. */
static gboolean
is_fp8_scale (const BwCheckpoint *ckpt, const BwTensorInfo *t)
{
  gsize len = strlen (t->name);
  g_autofree char *weight = NULL;
  const BwTensorInfo *w;

  if (!g_str_has_suffix (t->name, "_scale_inv"))
    return FALSE;
  weight = g_strndup (t->name, len - strlen ("_scale_inv"));
  w = bw_checkpoint_find (ckpt, weight);
  return w != NULL && w->dtype == BW_DTYPE_F8_E4M3;
}

/* Bytes a dense tensor would take with 2-D float weights requantised to `bits` (8 or 4)
 * with an f32 scale per bw_intq_dense_group columns; everything else stays as stored. */
static guint64
requantised_bytes (const BwCheckpoint *ckpt, const BwTensorInfo *t, int bits)
{
  guint64 rows, cols, groups;

  if (is_fp8_scale (ckpt, t))
    return 0;
  if (t->n_dims != 2 || !is_float_dtype (t->dtype))
    return t->nbytes;
  rows = (guint64) t->shape[0];
  cols = (guint64) t->shape[1];
  groups = (guint64) bw_intq_row_scales ((int64_t) cols, bw_intq_dense_group (bits));
  return rows * (bits == 8 ? cols : (cols + 1) / 2) + rows * groups * sizeof (float);
}

static guint64
saturating_mul (guint64 a, guint64 b)
{
  guint64 r;
  return __builtin_mul_overflow (a, b, &r) ? G_MAXUINT64 : r;
}

/* The largest sum of one (layer, expert)'s tensors: what one expert miss reads. */
static guint64
largest_expert (const BwCheckpoint *ckpt, int n_experts)
{
  g_autoptr (GHashTable) per_expert = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                                             g_free, g_free);
  guint64 largest = 0;

  for (int i = 0; i < ckpt->n_tensors; i++)
    {
      const BwTensorInfo *t = &ckpt->tensors[i];
      gint64 key = (gint64) t->layer * n_experts + t->expert;
      guint64 *sum;

      if (t->role != BW_ROLE_EXPERT)
        continue;
      sum = g_hash_table_lookup (per_expert, &key);
      if (sum == NULL)
        {
          sum = g_new0 (guint64, 1);
          g_hash_table_insert (per_expert, g_memdup2 (&key, sizeof key), sum);
        }
      /* a tensor fused over the layer's experts: each expert is an equal byte range */
      *sum += t->expert < 0 ? t->nbytes / (guint64) MAX (n_experts, 1) : t->nbytes;
      largest = MAX (largest, *sum);
    }
  return largest;
}

static void
tally_tensors (const BwCheckpoint *ckpt, BwCheckpointTally *info)
{
  for (int i = 0; i < ckpt->n_tensors; i++)
    {
      const BwTensorInfo *t = &ckpt->tensors[i];

      info->total_bytes += t->nbytes;
      info->bytes_by_dtype[t->dtype] += t->nbytes;
      switch (t->role)
        {
        case BW_ROLE_DENSE:
          info->resident_bytes += t->nbytes;
          info->resident_bytes_q8 += requantised_bytes (ckpt, t, 8);
          info->resident_bytes_q4 += requantised_bytes (ckpt, t, 4);
          break;
        case BW_ROLE_EXPERT:
          info->expert_bytes += t->nbytes;
          break;
        case BW_ROLE_IGNORED:
        default:
          info->ignored_bytes += t->nbytes;
          break;
        }
    }
}

void
bw_checkpoint_tally (const BwCheckpoint *ckpt, BwCheckpointTally *info)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (ckpt);
  memset (info, 0, sizeof *info);
  tally_tensors (ckpt, info);
  info->bytes_per_expert = largest_expert (ckpt, cfg->n_experts);
  info->read_per_token = saturating_mul (saturating_mul ((guint64) cfg->n_moe_layers,
                                                         (guint64) cfg->n_experts_per_token),
                                         info->bytes_per_expert);
}

