/* What a family file's descriptor names from the files beside it: its chat format
 * (<name>-chat.c) and its synthetic-checkpoint writer (<name>-synth.c). */
#pragma once

#include "families/family.h"

G_BEGIN_DECLS

extern const BwChatFormat bw_chatml_format;   /* Qwen3-MoE and Qwen3-Next */
extern const BwChatFormat bw_deepseek_v3_chat;
extern const BwChatFormat bw_glm4_moe_chat;
extern const BwChatFormat bw_glm52_chat;
extern const BwChatFormat bw_gpt_oss_chat;
extern const BwChatFormat bw_kimi_k3_chat;
extern const BwChatFormat bw_kimi_linear_chat;

/* K3's chat tag opener "<|open|>NAME a1="v1" a2="v2"<|sep|>", escaping & and " in the
 * values only. attrs: name, value pairs ending with NULL. */
void bw_kimi_k3_open_tag (GString *out, const char *name, const char *const *attrs);

/* Synthetic checkpoints at the releases' widths (synth/synth-checkpoint.h). */
gboolean bw_deepseek_v3_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_deepseek_v3_synth_gguf (const BwSynthOptions *opts, BwSynthGguf *gguf,
                                    GError **error);
gboolean bw_glm4_moe_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_glm52_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_gpt_oss_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_kimi_k3_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_kimi_linear_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_qwen3_moe_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_qwen3_next_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);

G_END_DECLS
