/* The family registry: every family file's ops table. */
#include "model/family-api.h"

static const BwFamilyOps *const families[] = {
  &bw_kimi_linear_ops,
  &bw_kimi_k3_ops,
  &bw_glm52_ops,
  &bw_deepseek_v3_ops,
  &bw_qwen3_moe_ops,
  &bw_glm4_moe_ops,
  &bw_qwen3_next_ops,
};

const BwFamilyOps *
bw_family_ops (BwFamily family)
{
  for (gsize i = 0; i < G_N_ELEMENTS (families); i++)
    if (families[i]->family == family)
      return families[i];
  return NULL;
}
