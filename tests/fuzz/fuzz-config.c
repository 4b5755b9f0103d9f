/* Fuzz target: config.json bytes through the config parser and tensor classification. */
#include <stdlib.h>
#include <string.h>

#include "core/model-config.h"
#include "core/safetensors.h"
#include "core/tensor-role.h"
#include "fuzz.h"
#include "families/family.h"

const char bw_fuzz_label[] = "config.json";

/* Names around the config's layer and expert bounds, classified against the parsed config. */
static void
classify_probes (const BwModelConfig *cfg)
{
  const char *prefix = bw_family_tensor_prefix (cfg->family);
  const char *experts = cfg->family->experts_prefix;
  const int layers[] = { 0, 1, cfg->n_layers - 1, cfg->n_layers, 9999999 };
  const int expert_ids[] = { 0, cfg->n_experts - 1, cfg->n_experts, 12345678 };

  for (gsize l = 0; l < G_N_ELEMENTS (layers); l++)
    for (gsize e = 0; e < G_N_ELEMENTS (expert_ids); e++)
      {
        g_autofree char *name = g_strdup_printf ("%smodel.layers.%d.%s%d.w1.weight",
                                                 prefix, layers[l], experts, expert_ids[e]);
        BwTensorInfo t = { .name = name };
        GError *error = NULL;
        if (bw_tensor_classify (cfg, bw_fuzz_label, &t, &error))
          {
            if (t.role == BW_ROLE_EXPERT
                && (t.layer < 0 || t.layer >= cfg->n_layers || !cfg->layer_is_moe[t.layer]
                    || t.expert < 0 || t.expert >= cfg->n_experts))
              abort ();
          }
        else
          g_error_free (error);
      }
}

static void
check_config (const BwModelConfig *cfg)
{
  int moe = 0;

  if (cfg->n_layers < 1 || cfg->n_layers > BW_CONFIG_MAX_LAYERS || cfg->n_experts < 1
      || cfg->n_experts_per_token < 1 || cfg->n_experts_per_token > cfg->n_experts
      || cfg->hidden_size < 1 || cfg->head_dim < 1)
    abort ();
  for (int i = 0; i < cfg->n_layers; i++)
    moe += cfg->layer_is_moe[i] != 0;
  if (moe != cfg->n_moe_layers)
    abort ();
  classify_probes (cfg);
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  BwModelConfig *cfg = bw_model_config_parse (bw_fuzz_label, (const char *) data, size,
                                              bw_families (), NULL, error);

  if (cfg == NULL)
    return FALSE;
  check_config (cfg);
  bw_model_config_free (cfg);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
