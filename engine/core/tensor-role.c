/* Tensor roles from the publishers' naming schemes. */
#include "core/tensor-role.h"

#include <string.h>

#define MAX_INDEX 1000000

/* Parses a decimal index followed by '.', as in "12.rest"; returns -1 when s does not
 * start that way. *rest points past the dot. */
static int
parse_index (const char *s, const char **rest)
{
  int v = 0, n = 0;

  while (s[n] >= '0' && s[n] <= '9')
    {
      v = v * 10 + (s[n] - '0');
      if (++n > 7 || v > MAX_INDEX)
        return -1;
    }
  if (n == 0 || s[n] != '.')
    return -1;
  *rest = s + n + 1;
  return v;
}

gboolean
bw_tensor_classify (const BwModelConfig *cfg, const char *file, BwTensorInfo *t,
                    GError **error)
{
  const char *prefix = bw_family_tensor_prefix (cfg->family);
  const char *experts = cfg->family->experts_prefix;
  const char *rest = t->name, *in_layer;

  t->role = BW_ROLE_DENSE;
  t->layer = -1;
  t->expert = -1;
  if (!g_str_has_prefix (rest, prefix))
    {
      t->role = BW_ROLE_IGNORED;   /* outside the text model: vision tower, projector */
      return TRUE;
    }
  rest += strlen (prefix);
  if (!g_str_has_prefix (rest, "model.layers."))
    return TRUE;
  t->layer = parse_index (rest + strlen ("model.layers."), &in_layer);
  if (t->layer < 0)
    return TRUE;
  if (t->layer >= cfg->n_layers)
    {
      t->role = BW_ROLE_IGNORED;   /* multi-token-prediction layers follow the main ones */
      return TRUE;
    }
  if (experts == NULL || !g_str_has_prefix (in_layer, experts))
    return TRUE;

  t->expert = parse_index (in_layer + strlen (experts), &rest);
  /* a fused family's tensors hold every expert of the layer, unless its experts are stored
   * one tensor each (a GGUF file's slices) */
  if (cfg->family->fused_experts && t->expert < 0)
    t->expert = -1;
  else if (t->expert < 0 || t->expert >= cfg->n_experts)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' names an expert outside the %d routed experts in "
                   "config.json", file, t->name, cfg->n_experts);
      return FALSE;
    }
  if (!cfg->layer_is_moe[t->layer])
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' is a routed expert but config.json makes layer %d dense",
                   file, t->name, t->layer);
      return FALSE;
    }
  t->role = BW_ROLE_EXPERT;
  return TRUE;
}
