/* The quantization_config of a compressed-tensors checkpoint (quant_method
 * "compressed-tensors", format "pack-quantized"): which Linear modules are quantised and
 * how. Supported: symmetric integer weights of 4 or 8 bits, per group of columns or per
 * output row, no activation or KV-cache quantisation, no activation ordering. Anything
 * else is refused with an error naming the file and the field. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

typedef struct {
  char *name;         /* the config_groups key, for errors */
  int num_bits;       /* 4 or 8 */
  int group;          /* columns per scale; 0 = one per row ("channel") */
  char **targets;     /* "Linear", exact module names or "re:" patterns */
  GRegex **target_re; /* compiled "re:" targets, NULL-terminated */
} BwCtGroup;

typedef struct {
  BwCtGroup *groups;
  int n_groups;
  char **ignore;      /* exact module names */
  GRegex **ignore_re; /* "re:" patterns, NULL-terminated */
} BwCtConfig;

/* Whether q (a quantization_config object) is compressed-tensors'. */
gboolean bw_ct_config_is (JsonObject *q);

/* Parses q into *out (cleared first; free with bw_ct_config_clear). `file` names the
 * config in errors (BW_CHECKPOINT_ERROR_CONFIG or _UNSUPPORTED). */
gboolean bw_ct_config_parse (JsonObject *q, const char *file, BwCtConfig *out, GError **error);
void bw_ct_config_clear (BwCtConfig *c);

/* The group that quantises the Linear module `module` ("model.layers.1.mlp.experts.0.
 * gate_proj"), or NULL when the ignore list names it or no group targets it. As the
 * library reads them: an "re:" entry must match from the start of the name (re.match),
 * a plain entry must equal it, and the target "Linear" is every Linear module. */
const BwCtGroup *bw_ct_config_group_for (const BwCtConfig *c, const char *module);

/* For people: "compressed-tensors pack-quantized: INT4 symmetric, groups of 32 columns,
 * BF16 scales (group_0); 4 ignore entries". */
char *bw_ct_config_describe (const BwCtConfig *c);
