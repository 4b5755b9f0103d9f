/* burrow_inspect: what a checkpoint folder holds and what running it would cost. */
#include "burrow-engine.h"

#include <string.h>

#include "core/check.h"
#include "core/checkpoint.h"
#include "core/ct-config.h"
#include "core/gguf.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "convert/public-error.h"
#include "model/checkpoint-tally.h"
#include "text/tokenizer.h"
#include "families/family.h"
#include "run/run-private.h"

G_STATIC_ASSERT (BW_DTYPE_COUNT <= G_N_ELEMENTS (((BurrowModelInfo *) 0)->bytes_by_dtype));

G_DEFINE_QUARK (burrow-engine-error-quark, burrow_engine_error)

const char *
burrow_dtype_name (int index)
{
  if (index < 0 || index >= BW_DTYPE_COUNT)
    return NULL;
  return bw_dtype_name ((BwDType) index);
}

/* The quantization_config in words: compressed-tensors pack-quantized in detail (or why it
 * is not supported), other methods by quant_method and format. */
static char *
describe_quantization (const BwCheckpoint *ckpt)
{
  JsonObject *cfg = ckpt->text_config;
  JsonNode *node = json_object_has_member (cfg, "quantization_config")
                     ? json_object_get_member (cfg, "quantization_config") : NULL;
  JsonObject *q = bw_json_node_get_object (node);

  if (q == NULL)
    return NULL;
  JsonNode *m = json_object_has_member (q, "quant_method") ? json_object_get_member (q, "quant_method") : NULL;
  JsonNode *f = json_object_has_member (q, "format") ? json_object_get_member (q, "format") : NULL;
  const char *method = bw_json_node_get_string (m), *format = bw_json_node_get_string (f);
  if (bw_ct_config_is (q) && g_strcmp0 (format, "pack-quantized") == 0)
    {
      g_autofree char *file = g_build_filename (ckpt->dir, "config.json", NULL);
      g_autoptr (GError) error = NULL;
      BwCtConfig ct;
      if (!bw_ct_config_parse (q, file, &ct, &error))
        return g_strdup_printf ("not supported: %s", error->message);
      char *text = bw_ct_config_describe (&ct);
      bw_ct_config_clear (&ct);
      return text;
    }
  return g_strdup_printf ("%s%s%s", method ? method : "(no quant_method)", format ? " " : "",
                          format ? format : "");
}

gboolean
burrow_inspect (const char *dir, BurrowModelInfo *info, GError **error)
{
  g_autoptr (BwCheckpoint) ckpt = NULL;
  g_autoptr (GError) local = NULL;
  const BwModelConfig *cfg;
  BwCheckpointTally tally;

  bw_return_error_if_fail (dir != NULL && info != NULL, error, FALSE);

  memset (info, 0, sizeof *info);
  if (bw_gguf_is_gguf_path (dir))
    return bw_inspect_gguf (dir, info, error);
  ckpt = bw_checkpoint_open (dir, bw_families (), &local);
  if (ckpt == NULL)
    {
      bw_error_publish (&local);
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  cfg = bw_checkpoint_get_config (ckpt);

  info->dir = g_strdup (ckpt->dir);
  info->family = g_strdup (ckpt->family->name);
  info->n_layers = cfg->n_layers;
  info->n_moe_layers = cfg->n_moe_layers;
  info->n_experts = cfg->n_experts;
  info->n_experts_per_token = cfg->n_experts_per_token;
  info->n_tensors = ckpt->n_tensors;
  info->n_shards = ckpt->n_shards;
  bw_checkpoint_tally (ckpt, &tally);
  info->total_bytes = tally.total_bytes;
  memcpy (info->bytes_by_dtype, tally.bytes_by_dtype, sizeof tally.bytes_by_dtype);
  info->resident_bytes = tally.resident_bytes;
  info->resident_bytes_q8 = tally.resident_bytes_q8;
  info->resident_bytes_q4 = tally.resident_bytes_q4;
  info->expert_bytes = tally.expert_bytes;
  info->bytes_per_expert = tally.bytes_per_expert;
  info->read_per_token = tally.read_per_token;
  info->ignored_bytes = tally.ignored_bytes;
  info->tokenizer = bw_tokenizer_find_in_dir (ckpt->dir);
  info->quantization = describe_quantization (ckpt);
  return TRUE;
}

void
burrow_model_info_clear (BurrowModelInfo *info)
{
  if (info == NULL)
    return;
  g_free (info->dir);
  g_free (info->family);
  g_free (info->tokenizer);
  g_free (info->quantization);
  g_strfreev (info->types_by_group);
  memset (info, 0, sizeof *info);
}
