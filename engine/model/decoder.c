/* The shared decoder (see decoder.h): binding in load order, the FFN step with phase timing,
 * embeddings, the LM head and the pre-norm residual forward. */
#include "model/decoder.h"

#include "model/model-private.h"

#include <string.h>

#include "blocks/norm.h"
#include "core/ct-config.h"
#include "core/json-load.h"
#include "kernels/ggml-dot.h"
#include "quant/bf16.h"
#include "quant/ct-int.h"
#include "quant/f16.h"

#define L "model.layers.%d."

gboolean
bw_decoder_bind_mlp (BwModel *model, BwMlp *mlp, int l, const char *prefix, int64_t width,
                     int64_t inter, const BwActivation *act, GError **error)
{
  mlp->act = *act;
  return bw_model_bind_matrix (model, &mlp->gate, inter, width, error,
                               L "%sgate_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->up, inter, width, error,
                                  L "%sup_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->down, width, inter, error,
                                  L "%sdown_proj.weight", l, prefix);
}

/* Routed experts */

static gboolean
expert_error (BwModel *model, GError **error, const char *base, const char *what)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT, "%s: tensor %s%s %s",
               model->ckpt->dir, model->ckpt->tensor_prefix, base, what);
  return FALSE;
}

static gboolean
shape_matches (const BwTensorInfo *t, int64_t rows, int64_t cols)
{
  return t->n_dims == 2 ? t->shape[0] == rows && t->shape[1] == cols
                        : t->n_elements == rows * cols;
}

/* <base>.weight as stored: F32, BF16, F16, a GGML block type, or F8_E4M3 with its F32
 * <base>.weight_scale_inv grid of 128 x 128 block scales. */
static gboolean
plain_or_fp8 (BwModel *model, const char *base, const BwTensorInfo *t, BwExpertTensor *out,
              GError **error)
{
  const BwCheckpoint *ck = model->ckpt;
  g_autofree char *what = NULL;

  if (!shape_matches (t, out->rows, out->cols))
    {
      what = g_strdup_printf (".weight must have shape [%" G_GINT64_FORMAT ", %"
                              G_GINT64_FORMAT "]", out->rows, out->cols);
      return expert_error (model, error, base, what);
    }
  out->data = t;
  switch (t->dtype)
    {
    case BW_DTYPE_F32:
      out->fmt = BW_FMT_F32;
      return TRUE;
    case BW_DTYPE_BF16:
      out->fmt = BW_FMT_BF16;
      return TRUE;
    case BW_DTYPE_F16:
      out->fmt = BW_FMT_F16;
      return TRUE;
    case BW_DTYPE_F8_E4M3:
      break;
    case BW_DTYPE_GGML:
      out->fmt = bw_format_of_tensor (t);
      if (out->fmt != BW_FMT_COUNT)
        return TRUE;
      what = g_strdup_printf (".weight has GGML type %d, which is not read",
                              t->ggml_type);
      return expert_error (model, error, base, what);
    default:
      what = g_strdup_printf (".weight has unsupported dtype %s", bw_dtype_name (t->dtype));
      return expert_error (model, error, base, what);
    }
  const BwTensorInfo *s = bw_checkpoint_findf (ck, "%s.weight_scale_inv", base);
  int64_t sr = (out->rows + 127) / 128, sc = (out->cols + 127) / 128;
  if (s == NULL || s->dtype != BW_DTYPE_F32 || s->n_elements != sr * sc)
    {
      what = g_strdup_printf (".weight is FP8 but its weight_scale_inv is missing or not F32 [%"
                              G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", sr, sc);
      return expert_error (model, error, base, what);
    }
  out->fmt = BW_FMT_FP8_E4M3_B128;
  out->scales = s;
  return TRUE;
}

/* compressed-tensors MXFP4: <base>.weight_packed (U8, two E2M1 codes a byte) and
 * <base>.weight_scale (U8 E8M0, one per 32 columns). */
static gboolean
packed_mxfp4 (BwModel *model, const char *base, const BwTensorInfo *t, BwExpertTensor *out,
              GError **error)
{
  const BwTensorInfo *s = bw_checkpoint_findf (model->ckpt, "%s.weight_scale", base);
  int64_t rows = out->rows, cols = out->cols;

  if (s == NULL || t->dtype != BW_DTYPE_U8 || s->dtype != BW_DTYPE_U8 || cols % 32 != 0
      || t->n_elements != rows * cols / 2 || s->n_elements != rows * cols / 32)
    {
      g_autofree char *what = g_strdup_printf (
        ".weight_packed + weight_scale are missing or not U8 MXFP4 of [%" G_GINT64_FORMAT ", %"
        G_GINT64_FORMAT "]", rows, cols);
      return expert_error (model, error, base, what);
    }
  out->fmt = BW_FMT_MXFP4;
  out->group = 32;
  out->data = t;
  out->scales = s;
  return TRUE;
}

/* Checks <base>.weight_shape (I32 or I64 [2]) holds [rows, cols]. */
static gboolean
packed_shape_ok (BwModel *model, const char *base, int64_t rows, int64_t cols, GError **error)
{
  const BwTensorInfo *t = bw_checkpoint_findf (model->ckpt, "%s.weight_shape", base);
  int64_t v[2] = { 0, 0 };

  if (t == NULL || t->n_elements != 2 || (t->dtype != BW_DTYPE_I32 && t->dtype != BW_DTYPE_I64))
    return expert_error (model, error, base, ".weight_shape is missing or not I32/I64 [2]");
  if (t->dtype == BW_DTYPE_I64)
    {
      if (!bw_checkpoint_read (model->ckpt, t, v, error))
        return FALSE;
    }
  else
    {
      int32_t v32[2];
      if (!bw_checkpoint_read (model->ckpt, t, v32, error))
        return FALSE;
      v[0] = v32[0];
      v[1] = v32[1];
    }
  if (v[0] != rows || v[1] != cols)
    {
      g_autofree char *what = g_strdup_printf (
        ".weight_shape is [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "], expected [%"
        G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", v[0], v[1], rows, cols);
      return expert_error (model, error, base, what);
    }
  return TRUE;
}

/* compressed-tensors pack-quantized integers (quant/ct-int.h): <base>.weight_packed (I32
 * words), <base>.weight_scale (BF16 per group or row) and <base>.weight_shape, with the
 * bits and grouping of the config group that quantises the module. */
static gboolean
packed_ct_int (BwModel *model, const char *base, const BwTensorInfo *t, const BwCtConfig *ct,
               BwExpertTensor *out, GError **error)
{
  const BwCheckpoint *ck = model->ckpt;
  g_autofree char *module = g_strconcat (ck->tensor_prefix, base, NULL);
  const BwCtGroup *g = ct ? bw_ct_config_group_for (ct, module) : NULL;
  int64_t rows = out->rows, cols = out->cols;

  if (ct == NULL)
    return expert_error (model, error, base, ".weight_packed is I32 (pack-quantized integers) "
                         "but config.json has no compressed-tensors pack-quantized "
                         "quantization_config");
  if (g == NULL)
    return expert_error (model, error, base, ".weight_packed is stored but "
                         "quantization_config (targets, ignore) does not quantise the module");
  if (bw_checkpoint_findf (ck, "%s.weight_zero_point", base) != NULL
      || bw_checkpoint_findf (ck, "%s.weight_g_idx", base) != NULL)
    return expert_error (model, error, base, ".weight_zero_point / weight_g_idx are not supported "
                         "(symmetric weights without activation ordering only)");
  const BwTensorInfo *s = bw_checkpoint_findf (ck, "%s.weight_scale", base);
  const int64_t words = bw_ct_int_row_words (g->num_bits, cols);
  const int64_t ns = bw_ct_int_row_scales (cols, g->group);
  if (s == NULL || s->dtype != BW_DTYPE_BF16 || s->n_elements != rows * ns
      || t->n_elements != rows * words || (t->n_dims == 2 && t->shape[1] != words))
    {
      g_autofree char *what = g_strdup_printf (
        ".weight_packed + weight_scale are missing or not I32 [%" G_GINT64_FORMAT ", %"
        G_GINT64_FORMAT "] + BF16 [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] (INT%d, %s %d)",
        rows, words, rows, ns, g->num_bits, g->group > 0 ? "group" : "channel", g->group);
      return expert_error (model, error, base, what);
    }
  if (!packed_shape_ok (model, base, rows, cols, error))
    return FALSE;
  out->fmt = g->num_bits == 4 ? BW_FMT_CT_INT4 : BW_FMT_CT_INT8;
  out->group = g->group;
  out->data = t;
  out->scales = s;
  return TRUE;
}

static gboolean
expert_named (BwModel *model, const char *base, int64_t rows, int64_t cols,
              const BwCtConfig *ct, BwExpertTensor *out, GError **error)
{
  const BwTensorInfo *t;

  memset (out, 0, sizeof *out);
  out->rows = rows;
  out->cols = cols;
  if ((t = bw_checkpoint_findf (model->ckpt, "%s.weight", base)) != NULL)
    return plain_or_fp8 (model, base, t, out, error);
  if ((t = bw_checkpoint_findf (model->ckpt, "%s.weight_packed", base)) != NULL)
    return t->dtype == BW_DTYPE_I32 ? packed_ct_int (model, base, t, ct, out, error)
                                    : packed_mxfp4 (model, base, t, out, error);
  return expert_error (model, error, base,
                       ".weight (or weight_packed + weight_scale) is missing");
}

gboolean
bw_decoder_expert_tensor (BwModel *model, const char *base, int64_t rows, int64_t cols,
                          BwExpertTensor *out, GError **error)
{
  return expert_named (model, base, rows, cols, NULL, out, error);
}

/* Expert e's part of a tensor that holds all E experts of a layer, each one contiguous
 * byte range of it (the store reads one expert at a time): a copy of its description
 * narrowed to that range, in *slot (memory the model owns). */
static const BwTensorInfo *
expert_slice (const BwTensorInfo *t, int E, int e, BwTensorInfo *slot)
{
  *slot = *t;
  slot->nbytes = t->nbytes / (guint64) E;
  slot->offset = t->offset + (guint64) e * slot->nbytes;
  slot->n_elements = t->n_elements / E;
  slot->n_dims = 1;
  slot->shape[0] = slot->n_elements;
  slot->expert = e;
  return slot;
}

/* Matrix `which` of expert e from the layer's fused tensors, as gpt-oss releases them:
 * "<name>_blocks" (U8 [E, rows, cols / 32, 16], E2M1 pairs) and "<name>_scales" (U8 E8M0
 * [E, rows, cols / 32]), rows the outputs; or unquantised "<name>" [E, cols, rows]
 * (inputs first), which the store transposes as it lands. A NULL name (gpt-oss's up)
 * leaves out empty. */
static gboolean
fused_tensor (BwModel *model, const BwDecoder *dec, int l, int e, int which,
              BwExpertTensor *out, BwTensorInfo *slots, GError **error)
{
  const BwFamily *family = model->ckpt->family;
  const char *name = family->expert_names[which];
  int E = dec->ffn.n_experts;
  int64_t rows = out->rows, cols = out->cols;

  if (name == NULL)
    {
      memset (out, 0, sizeof *out);
      return TRUE;
    }
  g_autofree char *base = g_strdup_printf (L "%s%s", l, family->experts_prefix, name);
  const BwTensorInfo *b = bw_checkpoint_findf (model->ckpt, "%s_blocks", base);
  const BwTensorInfo *s = bw_checkpoint_findf (model->ckpt, "%s_scales", base);
  const BwTensorInfo *t = b == NULL ? bw_checkpoint_findf (model->ckpt, "%s", base) : NULL;
  if (t != NULL)
    {
      if (t->n_dims != 3 || t->shape[0] != E || t->shape[1] != cols || t->shape[2] != rows
          || (t->dtype != BW_DTYPE_BF16 && t->dtype != BW_DTYPE_F16
              && t->dtype != BW_DTYPE_F32))
        {
          g_autofree char *what = g_strdup_printf (
            "must be BF16, F16 or F32 of shape [%d, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
            "]", E, cols, rows);
          return expert_error (model, error, base, what);
        }
      out->fmt = t->dtype == BW_DTYPE_BF16 ? BW_FMT_BF16
                 : t->dtype == BW_DTYPE_F16 ? BW_FMT_F16 : BW_FMT_F32;
      out->transposed = TRUE;
      out->data = expert_slice (t, E, e, &slots[0]);
      return TRUE;
    }
  if (b == NULL || s == NULL || b->dtype != BW_DTYPE_U8 || s->dtype != BW_DTYPE_U8
      || cols % 32 != 0 || b->n_elements != (int64_t) E * rows * cols / 2
      || s->n_elements != (int64_t) E * rows * cols / 32)
    {
      g_autofree char *what = g_strdup_printf (
        "_blocks + _scales are missing or not U8 MXFP4 of %d x [%" G_GINT64_FORMAT ", %"
        G_GINT64_FORMAT "]", E, rows, cols);
      return expert_error (model, error, base, what);
    }
  out->fmt = BW_FMT_MXFP4;
  out->group = 32;
  out->data = expert_slice (b, E, e, &slots[0]);
  out->scales = expert_slice (s, E, e, &slots[1]);
  return TRUE;
}

/* The names of a fused family's experts stored one tensor per matrix and expert, as a GGUF
 * file's expert slices are (families/gguf-checkpoint.c). */
static const char *const split_names[3] = { "gate_proj", "up_proj", "down_proj" };

/* Whether a fused family's experts are stored that way: then gate and up are separate
 * products, with biases of their own. */
static void
find_split_experts (BwModel *model, BwDecoder *dec)
{
  const BwFamily *family = model->ckpt->family;
  for (int l = 0; l < dec->n_layers && family->fused_experts; l++)
    if (dec->is_moe[l])
      {
        dec->ffn.split_experts = bw_checkpoint_findf (model->ckpt, L "%s0.%s.weight", l,
                                                      family->experts_prefix,
                                                      split_names[0]) != NULL
                                 || bw_checkpoint_findf (model->ckpt, L "%s0.%s.weight_packed",
                                                         l, family->experts_prefix,
                                                         split_names[0]) != NULL;
        dec->ffn.fused_gate_up &= !dec->ffn.split_experts;
        return;
      }
}

/* Matrix `which` (0 gate, 1 up, 2 down) of expert e in layer l, described for the store.
 * Per-expert tensors are named by the family's descriptor; fused ones are sliced per expert
 * (slots: two descriptions' room). */
static gboolean
expert_tensor (BwModel *model, const BwDecoder *dec, int l, int e, int which, int64_t rows,
               int64_t cols, const BwCtConfig *ct, BwExpertTensor *out, BwTensorInfo *slots,
               GError **error)
{
  const BwFamily *family = model->ckpt->family;
  const char *name = dec->ffn.split_experts ? split_names[which] : family->expert_names[which];

  if (family->fused_experts && !dec->ffn.split_experts)
    {
      memset (out, 0, sizeof *out);
      out->rows = rows;
      out->cols = cols;
      return fused_tensor (model, dec, l, e, which, out, slots, error);
    }
  g_autofree char *base = g_strdup_printf (L "%s%d.%s", l, family->experts_prefix, e, name);
  return expert_named (model, base, rows, cols, ct, out, error);
}

static gboolean
bind_experts (BwModel *model, const BwDecoder *dec, GError **error)
{
  const BwDecoderFfn *f = &dec->ffn;
  int width = f->latent ? f->latent : dec->hidden, E = f->n_experts;
  gboolean any = FALSE;

  for (int l = 0; l < dec->n_layers; l++)
    any |= dec->is_moe[l];
  if (!any)
    return TRUE;
  g_autofree BwExpertLayout *layouts = g_new0 (BwExpertLayout, (gsize) dec->n_layers * E);
  BwTensorInfo *slots = NULL;
  int64_t gate_rows = (int64_t) f->moe_inter * (f->fused_gate_up ? 2 : 1);
  const BwCtConfig *ct = model->cfg->ct;
  gboolean ok = TRUE;
  if (model->ckpt->family->fused_experts && !f->split_experts)
    slots = bw_model_alloc (model, (gsize) dec->n_layers * E * 6 * sizeof (BwTensorInfo));
  for (int l = 0; l < dec->n_layers && ok; l++)
    for (int e = 0; e < E && dec->is_moe[l] && ok; e++)
      {
        BwExpertLayout *x = &layouts[(gsize) l * E + e];
        BwTensorInfo *s = slots ? slots + ((gsize) l * E + e) * 6 : NULL;
        ok = expert_tensor (model, dec, l, e, 0, gate_rows, width, ct, &x->gate, s, error)
             && expert_tensor (model, dec, l, e, 1, f->moe_inter, width, ct, &x->up,
                               s ? s + 2 : NULL, error)
             && expert_tensor (model, dec, l, e, 2, width, f->moe_inter, ct, &x->down,
                               s ? s + 4 : NULL, error);
      }
  return ok && bw_model_create_store (model, E, layouts, error);
}

/* MoE block: router, correction bias, shared experts, latent projections. */

static gboolean
bind_latent (BwModel *model, const BwDecoder *dec, int l, BwLatentMoe *lm, GError **error)
{
  const BwDecoderFfn *f = &dec->ffn;
  const char *p = f->moe_prefix;
  float *norm;

  lm->eps = dec->eps;
  if (!bw_model_bind_matrix (model, &lm->down, f->latent, dec->hidden, error,
                             L "%srouted_expert_down_proj.weight", l, p)
      || !bw_model_bind_matrix (model, &lm->up, dec->hidden, f->latent, error,
                                L "%srouted_expert_up_proj.weight", l, p))
    return FALSE;
  if (!f->latent_norm)
    return TRUE;
  if (!bw_model_bind_vector (model, &norm, f->latent, FALSE, error,
                             L "%srouted_expert_norm.weight", l, p))
    return FALSE;
  lm->norm = norm;
  return TRUE;
}

/* "<experts_prefix><gate name>_bias" [E][2 moe_inter] (gate and up interleaved, as the
 * fused rows are), or with the experts stored apart (GGUF) "gate_proj_bias" and
 * "up_proj_bias" [E][moe_inter] each; and "<down name>_bias" [E][hidden]. */
static gboolean
bind_expert_biases (BwModel *model, const BwDecoder *dec, int l, BwMoe *m, GError **error)
{
  const BwFamily *family = model->ckpt->family;
  const BwDecoderFfn *f = &dec->ffn;
  const char *prefix = family->experts_prefix;
  int64_t E = f->n_experts, inter = f->moe_inter;
  float *gb, *ub = NULL, *db;

  gboolean ok = f->split_experts
    ? bw_model_bind_vector (model, &gb, E * inter, FALSE, error, L "%s%s_bias", l, prefix,
                            split_names[0])
      && bw_model_bind_vector (model, &ub, E * inter, FALSE, error, L "%s%s_bias", l, prefix,
                               split_names[1])
    : bw_model_bind_vector (model, &gb, E * 2 * inter, FALSE, error, L "%s%s_bias", l, prefix,
                            family->expert_names[0]);
  if (!ok || !bw_model_bind_vector (model, &db, E * dec->hidden, FALSE, error, L "%s%s_bias",
                                    l, prefix, family->expert_names[2]))
    return FALSE;
  if (f->split_experts)
    {
      m->gate_bias = gb;
      m->up_bias = ub;
    }
  else
    m->gate_up_bias = gb;
  m->down_bias = db;
  return TRUE;
}

static gboolean
bind_moe (BwModel *model, const BwDecoder *dec, int l, BwLatentMoe *lm, GError **error)
{
  const BwDecoderFfn *f = &dec->ffn;
  BwMoe *m = &lm->moe;
  float *bias;

  memset (lm, 0, sizeof *lm);
  m->router = f->router;
  m->layer = l;
  m->expert_width = f->latent ? f->latent : dec->hidden;
  m->expert_inter = f->moe_inter;
  m->act = f->act;
  m->has_shared = f->n_shared > 0 || f->shared_inter > 0;
  m->has_shared_gate = m->has_shared && f->shared_gate;
  if (!bw_model_bind_matrix_exact (model, &m->gate, f->n_experts, dec->hidden, error,
                                   L "%s%s.weight", l, f->moe_prefix,
                                   f->router_name ? f->router_name : "gate"))
    return FALSE;
  if (f->router_bias)
    {
      if (!bw_model_bind_vector (model, &bias, f->n_experts, FALSE, error, L "%s%s", l,
                                 f->moe_prefix, f->router_bias))
        return FALSE;
      m->bias = bias;
    }
  if (f->correction_bias)
    {
      if (!bw_model_bind_vector (model, &bias, f->n_experts, FALSE, error,
                                 L "%sgate.e_score_correction_bias", l, f->moe_prefix))
        return FALSE;
      m->bias = bias;
    }
  if (m->has_shared)
    {
      g_autofree char *shared = g_strconcat (f->moe_prefix,
                                             f->shared_name ? f->shared_name : "shared_experts.",
                                             NULL);
      int64_t width = f->shared_inter ? f->shared_inter : (int64_t) f->moe_inter * f->n_shared;
      if (!bw_decoder_bind_mlp (model, &m->shared, l, shared, dec->hidden, width, &f->act,
                                error))
        return FALSE;
    }
  if (m->has_shared_gate
      && !bw_model_bind_matrix_exact (model, &m->shared_gate, 1, dec->hidden, error,
                                      L "%sshared_expert_gate.weight", l, f->moe_prefix))
    return FALSE;
  if (f->fused_gate_up)
    m->fused_gate_up = TRUE;
  if (f->expert_bias && !bind_expert_biases (model, dec, l, m, error))
    return FALSE;
  return !f->latent || bind_latent (model, dec, l, lm, error);
}

/* A residual-stream norm weight; zero-centred ones become 1 + w once, here. */
static gboolean
bind_norm (BwModel *model, const BwDecoder *dec, float **out, const char *name, GError **error)
{
  if (!bw_model_bind_vector (model, out, dec->hidden, FALSE, error, "%s", name))
    return FALSE;
  for (int i = 0; i < dec->hidden && dec->norm_plus_one; i++)
    (*out)[i] += 1.0f;
  return TRUE;
}

static gboolean
bind_layer (BwModel *model, BwDecoder *dec, const BwDecoderAttention *attn, gpointer self,
            int l, GError **error)
{
  BwDecoderLayer *ly = &dec->layers[l];
  float *in, *post;

  g_autofree char *in_name = g_strdup_printf (L "input_layernorm.weight", l);
  g_autofree char *post_name = g_strdup_printf (L "post_attention_layernorm.weight", l);

  ly->moe = dec->is_moe[l];
  if (!bind_norm (model, dec, &in, in_name, error)
      || !bind_norm (model, dec, &post, post_name, error) || !attn->bind (model, self, l, error))
    return FALSE;
  ly->in_norm = in;
  ly->post_norm = post;
  if (ly->moe)
    return bind_moe (model, dec, l, &ly->moe_w, error);
  return bw_decoder_bind_mlp (model, &ly->mlp, l, dec->ffn.mlp_prefix, dec->hidden,
                              dec->ffn.inter, &dec->ffn.act, error);
}

static gboolean
bind_globals (BwModel *model, BwDecoder *dec, GError **error)
{
  float *norm;
  if (!dec->tied)
    dec->embed_file = bw_model_bind_rows_in_file (model, &dec->embed, dec->vocab, dec->hidden,
                                                  "model.embed_tokens.weight");
  gboolean ok = dec->embed_file != NULL ? TRUE
    : dec->embed_exact
    ? bw_model_bind_matrix_exact (model, &dec->embed, dec->vocab, dec->hidden, error,
                                  "model.embed_tokens.weight")
    : bw_model_bind_matrix (model, &dec->embed, dec->vocab, dec->hidden, error,
                            "model.embed_tokens.weight");
  if (!ok || !bind_norm (model, dec, &norm, "model.norm.weight", error))
    return FALSE;
  if (!dec->tied && dec->embed_file == NULL)
    model->lookup_bytes = bw_matrix_bytes (&dec->embed);
  dec->final_norm = norm;
  if (dec->tied)
    {
      dec->lm_head = dec->embed;
      return TRUE;
    }
  return bw_model_bind_matrix (model, &dec->lm_head, dec->vocab, dec->hidden, error,
                               "lm_head.weight");
}

/* Router lookahead: each MoE layer predicts the next one's experts during decode. */
static void
link_lookahead (BwModel *model, BwDecoder *dec)
{
  dec->first_moe = -1;
  for (int l = 0, prev = -1; l < dec->n_layers && model->opts.store.prefetch; l++)
    if (dec->layers[l].moe)
      {
        if (prev >= 0)
          bw_moe_set_lookahead (&dec->layers[prev].moe_w.moe, &dec->layers[l].moe_w.moe,
                                model->opts.store.prefetch_top);
        else
          {
            dec->first_moe = l;
            bw_moe_set_start_lookahead (&dec->layers[l].moe_w.moe,
                                        model->opts.store.prefetch_top);
          }
        prev = l;
      }
}

void
bw_decoder_lookahead_start (BwModel *model, BwDecoder *dec, const float *x, int n)
{
  if (n != 1 || dec->first_moe < 0 || model->store == NULL)
    return;
  const BwDecoderLayer *ly = &dec->layers[dec->first_moe];
  bw_rmsnorm_rows (dec->h, x, ly->post_norm, 1, dec->hidden, dec->eps);
  bw_moe_prefetch_start (&ly->moe_w.moe, model->store, dec->h, dec->scratch, model->pool);
}

static gsize
ffn_scratch (const BwDecoderLayer *ly, int n)
{
  if (!ly->moe)
    return bw_mlp_scratch_bytes (&ly->mlp, n);
  return ly->moe_w.down.rows ? bw_latent_moe_scratch_bytes (&ly->moe_w, n)
                             : bw_moe_scratch_bytes (&ly->moe_w.moe, n);
}

static void
alloc_buffers (BwModel *model, BwDecoder *dec, const BwDecoderAttention *attn, gpointer self)
{
  int n = model->opts.max_batch, threads = bw_pool_size (model->pool);
  gsize rows = (gsize) n * dec->hidden * sizeof (float);

  for (int l = 0; l < dec->n_layers; l++)
    {
      gsize att = attn->scratch_bytes (self, l, n, threads);
      dec->scratch_bytes = MAX (dec->scratch_bytes, MAX (att, ffn_scratch (&dec->layers[l], n)));
    }
  dec->scratch = bw_model_alloc (model, dec->scratch_bytes);
  dec->x = bw_model_alloc (model, rows);
  dec->h = bw_model_alloc (model, rows);
  dec->a = bw_model_alloc (model, rows);
  model->resident_bytes += dec->scratch_bytes + 3 * rows;
}

gboolean
bw_decoder_load (BwModel *model, BwDecoder *dec, const BwDecoderAttention *attn, gpointer self,
                 GCancellable *cancellable, GError **error)
{
  bw_model_set_shape (model, dec->vocab, dec->n_layers, dec->hidden);
  dec->layers = bw_model_alloc (model, dec->n_layers * sizeof (BwDecoderLayer));
  find_split_experts (model, dec);

  if (!bind_globals (model, dec, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_model_progress (model, 0.05 + 0.85 * l / dec->n_layers, BW_LOAD_PHASE_WEIGHTS);
      if (!bind_layer (model, dec, attn, self, l, error))
        return FALSE;
    }
  bw_model_progress (model, 0.9, BW_LOAD_PHASE_EXPERT_CACHE);
  if (!bind_experts (model, dec, error) || g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  link_lookahead (model, dec);
  alloc_buffers (model, dec, attn, self);
  return TRUE;
}

/* Running */

/* A GGML row of cols values at the end of out, widened from its first block: each block's
 * floats end before the next block's bytes begin, and a block is copied aside before its
 * own floats cover it. */
static void
widen_ggml_row (int type, int64_t cols, float *out)
{
  const BwGgmlCodec *c = bw_ggml_codec (type);
  gsize bytes = c->info->block_bytes, n = c->info->block_elements;
  const guint8 *src = (const guint8 *) (out + cols) - (gsize) cols / n * bytes;
  guint8 block[BW_ROW_BLOCK_MAX];
  for (int64_t at = 0; at < cols; at += (int64_t) n, src += bytes)
    {
      memcpy (block, src, bytes);
      c->dequant (block, out + at);
    }
}

/* Row `id` of the embedding table from the checkpoint into out ([hidden] floats): plain
 * floats land at its start and widen in place, from the last value down, so that each
 * value is read before a wider one covers it; a GGML row lands at its end. */
static gboolean
embed_row_from_file (BwModel *model, const BwDecoder *dec, int32_t id, float *out,
                     GError **error)
{
  const BwMatrix *e = &dec->embed;
  gsize row = bw_matrix_row_bytes (e->fmt, e->cols);
  int type = bw_ggml_format_type (e->fmt);
  guint8 *dst = (guint8 *) out + (type >= 0 ? (gsize) e->cols * sizeof (float) - row : 0);
  if (!bw_checkpoint_read_range (model->ckpt, dec->embed_file, (guint64) id * row, row, dst,
                                 error))
    return FALSE;
  if (type >= 0)
    {
      widen_ggml_row (type, e->cols, out);
      return TRUE;
    }
  const uint16_t *half = (const uint16_t *) out;
  for (int64_t c = e->cols - 1; e->fmt != BW_FMT_F32 && c >= 0; c--)
    {
      uint16_t h = half[c];
      out[c] = e->fmt == BW_FMT_BF16 ? bw_bf16_to_f32 (h) : bw_f16_to_f32 (h);
    }
  return TRUE;
}

gboolean
bw_decoder_embed (BwModel *model, const BwDecoder *dec, const int32_t *ids, int n, float *x,
                  GError **error)
{
  if (dec->embed_file == NULL)
    {
      for (int t = 0; t < n; t++)
        bw_matrix_dequant_row (&dec->embed, ids[t], x + (gsize) t * dec->hidden);
      return TRUE;
    }
  gsize row = bw_matrix_row_bytes (dec->embed.fmt, dec->embed.cols);
  /* A prompt's rows are asked for together first, so that a cold disk reads them at
   * once rather than one after another. */
  for (int t = 0; n > 1 && t < n; t++)
    bw_checkpoint_advise_range (model->ckpt, dec->embed_file, (guint64) ids[t] * row, row);
  for (int t = 0; t < n; t++)
    if (!embed_row_from_file (model, dec, ids[t], x + (gsize) t * dec->hidden, error))
      return FALSE;
  return TRUE;
}

gboolean
bw_decoder_ffn (BwModel *model, BwDecoder *dec, int l, const float *h, int n, float *a,
                GError **error)
{
  BwDecoderLayer *ly = &dec->layers[l];
  BwMoeTimes t = { 0 };
  gboolean ok = TRUE;
  guint64 t0 = bw_now_ns ();

  if (!ly->moe)
    {
      bw_mlp_forward (&ly->mlp, h, n, a, FALSE, dec->scratch, model->pool);
      model->stats.ns[BW_PHASE_EXPERT_MATMUL] += bw_now_ns () - t0;
      dec->t = bw_now_ns ();
      return TRUE;
    }
  if (dec->ffn.latent)
    ok = bw_latent_moe_forward (&ly->moe_w, model->store, h, n, a, dec->scratch, model->pool,
                                &t, error);
  else
    ok = bw_moe_forward (&ly->moe_w.moe, model->store, h, n, a, dec->scratch, model->pool, &t,
                         error);
  model->stats.ns[BW_PHASE_OTHER] += t.route_ns;
  model->stats.ns[BW_PHASE_EXPERT_WAIT] += t.wait_ns;
  model->stats.ns[BW_PHASE_EXPERT_MATMUL] += t.matmul_ns;
  dec->t = bw_now_ns ();
  return ok;
}

void
bw_decoder_lm_head (BwModel *model, BwDecoder *dec, float *x, int n, float *logits,
                    gboolean all_logits)
{
  int D = dec->hidden;
  if (logits == NULL)
    {
      bw_model_tick (model, BW_PHASE_LM_HEAD, &dec->t);
      return;
    }
  if (!all_logits)
    {
      x += (gsize) (n - 1) * D;
      n = 1;
    }
  bw_rmsnorm_rows (x, x, dec->final_norm, n, D, dec->eps);
  bw_matmul (&dec->lm_head, x, n, logits, model->pool);
  bw_model_tick (model, BW_PHASE_LM_HEAD, &dec->t);
}

gboolean
bw_decoder_begin (BwModel *model, BwDecoder *dec, const int32_t *ids, int n, GError **error)
{
  dec->t = bw_now_ns ();
  if (!bw_decoder_embed (model, dec, ids, n, dec->x, error))
    return FALSE;
  bw_decoder_lookahead_start (model, dec, dec->x, n);
  bw_model_tick (model, BW_PHASE_OTHER, &dec->t);
  return TRUE;
}

void
bw_decoder_attn_norm (BwDecoder *dec, int l, int n)
{
  bw_rmsnorm_rows (dec->h, dec->x, dec->layers[l].in_norm, n, dec->hidden, dec->eps);
}

void
bw_decoder_residual (BwDecoder *dec, int n)
{
  gsize len = (gsize) n * dec->hidden;
  for (gsize i = 0; i < len; i++)
    dec->x[i] += dec->a[i];
}

void
bw_decoder_ffn_norm (BwModel *model, BwDecoder *dec, int l, int n)
{
  bw_rmsnorm_rows (dec->h, dec->x, dec->layers[l].post_norm, n, dec->hidden, dec->eps);
  bw_model_tick (model, BW_PHASE_ATTENTION, &dec->t);
}

gboolean
bw_decoder_init (BwDecoder *dec, const BwModelConfig *cfg, GError **error)
{
  BwDecoderFfn *f = &dec->ffn;
  BwRouterConfig *r = &f->router;

  dec->hidden = cfg->hidden_size;
  dec->vocab = cfg->vocab_size;
  dec->n_layers = cfg->n_layers;
  dec->eps = (float) cfg->rms_norm_eps;
  dec->tied = cfg->tie_word_embeddings;
  dec->is_moe = cfg->layer_is_moe;
  dec->embed_exact = TRUE;
  f->inter = cfg->intermediate_size;
  f->moe_inter = cfg->moe_intermediate_size ? cfg->moe_intermediate_size
                                            : cfg->intermediate_size;
  f->n_experts = cfg->n_experts;
  f->n_shared = cfg->n_shared_experts;
  f->shared_inter = cfg->shared_expert_intermediate_size;
  f->act = (BwActivation) { .kind = BW_ACT_SWIGLU };
  f->mlp_prefix = "mlp.";
  f->moe_prefix = "mlp.";
  r->n_experts = cfg->n_experts;
  r->top_k = cfg->n_experts_per_token;
  r->n_group = cfg->n_group;
  r->topk_group = cfg->topk_group;
  r->renormalize = cfg->norm_topk_prob;
  r->scaling = (float) cfg->routed_scaling_factor;
  if (f->moe_inter <= 0)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_CONFIG,
                                 "moe_intermediate_size is missing");
  if (f->n_experts > BW_MAX_BATCH_EXPERTS
      || r->topk_group * (f->n_experts / r->n_group) < r->top_k)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_CONFIG,
                                 "the expert count, num_experts_per_tok, n_group and "
                                 "topk_group are inconsistent");
  for (int l = 0; l < dec->n_layers; l++)
    if (!dec->is_moe[l] && f->inter <= 0)
      return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_CONFIG,
                                   "layer %d is dense but intermediate_size is missing", l);
  return TRUE;
}
