/* Planning a conversion from the tensor table: which tensors form one matrix (FP8 with its
 * block scales, MXFP4 with its E8M0 scales, gpt-oss fused experts), what each becomes, and
 * how the outputs fill shards. */
#include "convert/convert-plan.h"

#include <string.h>

#include "core/gguf.h"
#include "core/model-config.h"
#include "core/safetensors-writer.h"
#include "kernels/ggml-dot.h"
#include "quant/ct-int.h"
#include "quant/format.h"

#define DEFAULT_SHARD_BYTES ((guint64) 5 * 1000 * 1000 * 1000)

static gboolean
ends_with (const char *s, const char *suffix)
{
  return g_str_has_suffix (s, suffix);
}

/* s without its suffix (which it must end with). */
static char *
strip (const char *s, const char *suffix)
{
  return g_strndup (s, strlen (s) - strlen (suffix));
}

static const BwTensorInfo *
find_sibling (const BwCheckpoint *ck, const char *base, const char *suffix)
{
  g_autofree char *name = g_strconcat (base, suffix, NULL);
  return bw_checkpoint_find (ck, name);
}

/* The scale tensors that belong to another tensor: they travel with it. */
static GHashTable *
find_companions (const BwCheckpoint *ck)
{
  GHashTable *set = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; i < ck->n_tensors; i++)
    {
      const BwTensorInfo *t = &ck->tensors[i], *main = NULL;
      g_autofree char *base = NULL;
      if (ends_with (t->name, "_scale_inv"))
        {
          base = strip (t->name, "_scale_inv");
          main = bw_checkpoint_find (ck, base);
          if (main != NULL && main->dtype != BW_DTYPE_F8_E4M3)
            main = NULL;
        }
      else if (ends_with (t->name, ".weight_scale"))
        {
          base = strip (t->name, ".weight_scale");
          main = find_sibling (ck, base, ".weight_packed");
        }
      else if (ends_with (t->name, ".weight_shape"))
        {
          base = strip (t->name, ".weight_shape");
          main = find_sibling (ck, base, ".weight_packed");
        }
      else if (ends_with (t->name, "_scales"))
        {
          base = strip (t->name, "_scales");
          main = find_sibling (ck, base, "_blocks");
        }
      else if (ends_with (t->name, ".v_b_proj.weight"))
        {
          base = strip (t->name, ".v_b_proj.weight");
          main = find_sibling (ck, base, ".k_b_proj.weight");
        }
      if (main != NULL)
        g_hash_table_add (set, t->name);
    }
  return set;
}

static BwTensorClass
class_of (const BwTensorInfo *t)
{
  if (t->role == BW_ROLE_EXPERT)
    return BW_CLASS_ROUTED;
  if (strstr (t->name, "shared_expert") != NULL)
    return BW_CLASS_SHARED;
  if (strstr (t->name, "attn") != NULL || strstr (t->name, "attention") != NULL)
    return BW_CLASS_ATTENTION;
  if (t->layer >= 0 && (strstr (t->name, "mlp") != NULL || strstr (t->name, "ffn") != NULL))
    return BW_CLASS_DENSE_MLP;
  return BW_CLASS_OTHER;
}

/* A resident matrix the dense option may re-encode: a projection inside a decoder layer,
 * not a router (one row per expert) nor a one-row gate or vector. */
static gboolean
dense_quantisable (const BwModelConfig *cfg, const BwTensorInfo *t, int64_t rows)
{
  if (t->role != BW_ROLE_DENSE || t->layer < 0 || rows < 2)
    return FALSE;
  return !(cfg->layer_is_moe[t->layer] && rows == cfg->n_experts);
}

static void
add_out (BwJob *job, char *name, BwDType dtype, int n_dims, const int64_t *shape)
{
  BwOutTensor *o = &job->out[job->n_out++];
  o->name = name;
  o->dtype = dtype;
  o->n_dims = n_dims;
  o->nbytes = bw_dtype_size (dtype);
  for (int d = 0; d < n_dims; d++)
    {
      o->shape[d] = shape[d];
      o->nbytes *= (guint64) shape[d];
    }
}

static void
add_copy_outs (BwJob *job)
{
  for (int i = 0; i < job->n_src; i++)
    {
      const BwTensorInfo *t = job->src[i];
      BwOutTensor *o = &job->out[job->n_out++];
      o->name = g_strdup (t->name);
      o->dtype = t->dtype;
      o->n_dims = t->n_dims;
      memcpy (o->shape, t->shape, sizeof o->shape);
      o->nbytes = t->nbytes;
    }
}

/* Whether the source's bytes cannot be copied as they are: a GGUF block type (no
 * safetensors dtype holds it) or MLA's two tensors that make kv_b_proj. */
static gboolean
needs_decoding (const BwJob *job)
{
  return job->src[0]->dtype == BW_DTYPE_GGML || job->mla_heads > 0;
}

/* The F32 copy of a matrix that cannot be copied: its exact values, under the source's
 * name and shape (MLA's two tensors: kv_b_proj's). */
static void
add_f32_out (BwJob *job)
{
  const BwTensorInfo *t = job->src[0];
  job->kind = BW_JOB_F32;
  if (job->mla_heads > 0)
    add_out (job, g_strconcat (job->module, ".weight", NULL), BW_DTYPE_F32, 2,
             (int64_t[]) { job->rows, job->cols });
  else
    add_out (job, g_strdup (t->name), BW_DTYPE_F32, t->n_dims, t->shape);
}

static gboolean
unfit (const BwJob *job, GError **error, const char *why)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "tensor %s: %s", job->src[0]->name, why);
  return FALSE;
}

/* Whether a compressed-tensors INT source's scales cover the same columns as `group`
 * would (one scale per row is both "channel" and a group as wide as the row). */
static gboolean
same_grouping (const BwJob *job, int group)
{
  int64_t ns = bw_ct_int_row_scales (job->cols, group);
  return ns == bw_ct_int_row_scales (job->cols, job->src_group)
         && (ns == 1 || group == job->src_group);
}

/* Chooses the job's kind for the wanted format and declares its outputs. A routed expert
 * that cannot take the format fails; a dense matrix stays as stored. */
static gboolean
decide (BwJob *job, BwConvertFormat want, int group, GError **error)
{
  const char *base = job->module;
  int64_t r = job->rows, c = job->cols;
  gboolean fused = job->n_experts > 1 || job->transposed;

  if ((want == BW_CONVERT_MXFP4 && job->src_fmt == BW_FMT_MXFP4)
      || (want == BW_CONVERT_INT4 && job->src_fmt == BW_FMT_CT_INT4
          && same_grouping (job, group))
      || (want == BW_CONVERT_INT8 && job->src_fmt == BW_FMT_CT_INT8
          && same_grouping (job, group)))
    want = BW_CONVERT_KEEP;
  if ((want == BW_CONVERT_MXFP4 && c % 32 != 0)
      || ((want == BW_CONVERT_INT4 || want == BW_CONVERT_INT8) && group > 0 && c % group != 0))
    {
      if (job->routed)
        return unfit (job, error, want == BW_CONVERT_MXFP4
                      ? "its input width is not a multiple of 32, which MXFP4 needs"
                      : "its input width is not a multiple of the group size");
      want = BW_CONVERT_KEEP;
    }
  if (fused && (want == BW_CONVERT_INT4 || want == BW_CONVERT_INT8))
    return unfit (job, error, "experts fused into one tensor per layer can be kept or "
                  "written as MXFP4 (--experts keep|mxfp4), not as INT4/INT8");
  if (want == BW_CONVERT_KEEP && needs_decoding (job))
    {
      add_f32_out (job);
      return TRUE;
    }
  if (want == BW_CONVERT_KEEP)
    {
      job->kind = BW_JOB_COPY;
      add_copy_outs (job);
      return TRUE;
    }
  if (want == BW_CONVERT_MXFP4 && fused)
    {
      int64_t E = job->n_experts;
      job->kind = BW_JOB_MXFP4_FUSED;
      add_out (job, g_strconcat (base, "_blocks", NULL), BW_DTYPE_U8, 4,
               (int64_t[]) { E, r, c / 32, 16 });
      add_out (job, g_strconcat (base, "_scales", NULL), BW_DTYPE_U8, 3,
               (int64_t[]) { E, r, c / 32 });
      return TRUE;
    }
  if (want == BW_CONVERT_MXFP4)
    {
      job->kind = BW_JOB_MXFP4;
      add_out (job, g_strconcat (base, ".weight_packed", NULL), BW_DTYPE_U8, 2,
               (int64_t[]) { r, c / 2 });
      add_out (job, g_strconcat (base, ".weight_scale", NULL), BW_DTYPE_U8, 2,
               (int64_t[]) { r, c / 32 });
      return TRUE;
    }
  job->kind = BW_JOB_INT;
  job->bits = want == BW_CONVERT_INT4 ? 4 : 8;
  job->group = group;
  add_out (job, g_strconcat (base, ".weight_packed", NULL), BW_DTYPE_I32, 2,
           (int64_t[]) { r, bw_ct_int_row_words (job->bits, c) });
  add_out (job, g_strconcat (base, ".weight_scale", NULL), BW_DTYPE_BF16, 2,
           (int64_t[]) { r, bw_ct_int_row_scales (c, group) });
  add_out (job, g_strconcat (base, ".weight_shape", NULL), BW_DTYPE_I32, 1, (int64_t[]) { 2 });
  return TRUE;
}

/* Reads a 2-element I32 / I64 weight_shape; FALSE when it is not one. */
static gboolean
read_shape (const BwCheckpoint *ck, const BwTensorInfo *t, int64_t *rows, int64_t *cols)
{
  guint8 buf[16];
  if (t->n_elements != 2 || (t->dtype != BW_DTYPE_I32 && t->dtype != BW_DTYPE_I64)
      || !bw_checkpoint_read (ck, t, buf, NULL))
    return FALSE;
  gint64 v[2];
  for (int i = 0; i < 2; i++)
    {
      gint32 a;
      if (t->dtype == BW_DTYPE_I32)
        {
          memcpy (&a, buf + 4 * i, 4);
          v[i] = GINT32_FROM_LE (a);
        }
      else
        {
          memcpy (&v[i], buf + 8 * i, 8);
          v[i] = GINT64_FROM_LE (v[i]);
        }
    }
  *rows = v[0];
  *cols = v[1];
  return v[0] > 0 && v[1] > 0;
}

/* compressed-tensors pack-quantized integers: I32 weight_packed, BF16 weight_scale and
 * weight_shape; bits from the words per row, group from the scales per row. */
static void
describe_ct_int (const BwCheckpoint *ck, const BwTensorInfo *t, BwJob *job)
{
  g_autofree char *base = strip (t->name, ".weight_packed");
  const BwTensorInfo *s = find_sibling (ck, base, ".weight_scale");
  const BwTensorInfo *shape = find_sibling (ck, base, ".weight_shape");
  int64_t rows, cols;

  if (s == NULL || shape == NULL || s->dtype != BW_DTYPE_BF16 || s->n_dims != 2
      || !read_shape (ck, shape, &rows, &cols) || rows != t->shape[0] || s->shape[0] != rows)
    return;
  for (int bits = 4; bits <= 8; bits += 4)
    if (bw_ct_int_row_words (bits, cols) == t->shape[1])
      {
        int64_t ns = s->shape[1];
        int group = ns == 1 ? 0 : (int) (cols / ns);
        if (bw_ct_int_row_scales (cols, group) != ns)
          return;
        job->rows = rows;
        job->cols = cols;
        job->bits = bits;
        job->group = job->src_group = group;
        job->src_fmt = bits == 4 ? BW_FMT_CT_INT4 : BW_FMT_CT_INT8;
        job->src[job->n_src++] = s;
        job->src[job->n_src++] = shape;
        job->module = g_steal_pointer (&base);
        return;
      }
}

static BwFormat
tensor_format (const BwTensorInfo *t)
{
  return t->dtype == BW_DTYPE_GGML ? bw_ggml_type_format (t->ggml_type)
                                   : bw_format_of_dtype (t->dtype);
}

/* MLA's k_b_proj and v_b_proj as a GGUF stores them (families/gguf-checkpoint.c): the
 * job writes the kv_b_proj they were split from. Unrecognised shapes stay as they are. */
static void
describe_mla (const BwCheckpoint *ck, const BwTensorInfo *kb, BwJob *job)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (ck);
  g_autofree char *base = strip (kb->name, ".k_b_proj.weight");
  const BwTensorInfo *vb = find_sibling (ck, base, ".v_b_proj.weight");
  int64_t H = cfg->n_heads;

  if (vb == NULL || kb->n_dims != 2 || vb->n_dims != 2 || H <= 0 || vb->shape[1] <= 0
      || kb->shape[0] != H * vb->shape[1] || vb->shape[0] % H != 0)
    return;
  job->mla_heads = (int) H;
  job->mla_nope = (int) kb->shape[1];
  job->mla_v = (int) (vb->shape[0] / H);
  job->rows = H * (job->mla_nope + job->mla_v);
  job->cols = vb->shape[1];
  job->src_fmt = tensor_format (kb);
  job->src[job->n_src++] = vb;
  job->module = g_strconcat (base, ".kv_b_proj", NULL);
}

/* A tensor in a GGUF block type: a matrix (a vector as one row) of that format; only a
 * Linear's weight (with a module name) may be re-encoded, anything else is kept (F32). */
static void
describe_ggml (const BwTensorInfo *t, BwJob *job)
{
  if (t->n_dims < 1 || t->n_dims > 2)
    return;
  job->rows = t->n_dims == 2 ? t->shape[0] : 1;
  job->cols = t->shape[t->n_dims - 1];
  job->src_fmt = bw_ggml_type_format (t->ggml_type);
  if (job->src_fmt != BW_FMT_COUNT && t->n_dims == 2 && ends_with (t->name, ".weight"))
    job->module = g_strndup (t->name, strlen (t->name) - strlen (".weight"));
}

/* Recognises t as a matrix (filling the job's source); otherwise the job stays a plain
 * copy of t. */
static void
describe_source (const BwCheckpoint *ck, const BwTensorInfo *t, gboolean fused_family,
                 BwJob *job)
{
  const BwTensorInfo *s;

  job->src[0] = t;
  job->n_src = 1;
  job->n_experts = 1;
  job->src_fmt = BW_FMT_COUNT;
  if (ends_with (t->name, ".k_b_proj.weight"))
    {
      describe_mla (ck, t, job);
      return;
    }
  if (t->dtype == BW_DTYPE_GGML)
    {
      describe_ggml (t, job);
      return;
    }
  if (ends_with (t->name, ".weight") && t->n_dims == 2)
    {
      job->rows = t->shape[0];
      job->cols = t->shape[1];
      job->src_fmt = bw_format_of_dtype (t->dtype);
      if (t->dtype == BW_DTYPE_F8_E4M3
          && (s = find_sibling (ck, t->name, "_scale_inv")) != NULL
          && s->dtype == BW_DTYPE_F32
          && s->n_elements == ((job->rows + 127) / 128) * ((job->cols + 127) / 128))
        {
          job->src_fmt = BW_FMT_FP8_E4M3_B128;
          job->src[job->n_src++] = s;
        }
      if (job->src_fmt != BW_FMT_COUNT)
        job->module = g_strndup (t->name, strlen (t->name) - strlen (".weight"));
      return;
    }
  if (ends_with (t->name, ".weight_packed") && t->dtype == BW_DTYPE_I32 && t->n_dims == 2)
    {
      describe_ct_int (ck, t, job);
      return;
    }
  if (ends_with (t->name, ".weight_packed") && t->dtype == BW_DTYPE_U8 && t->n_dims == 2)
    {
      g_autofree char *base = strip (t->name, ".weight_packed");
      s = find_sibling (ck, base, ".weight_scale");
      if (s == NULL || s->dtype != BW_DTYPE_U8 || s->n_dims != 2 || s->shape[0] != t->shape[0]
          || s->shape[1] * 16 != t->shape[1])
        return;
      job->rows = t->shape[0];
      job->cols = t->shape[1] * 2;
      job->src_fmt = BW_FMT_MXFP4;
      job->src[job->n_src++] = s;
      job->module = g_steal_pointer (&base);
      return;
    }
  if (ends_with (t->name, "_blocks") && t->dtype == BW_DTYPE_U8 && t->n_dims == 4
      && t->shape[3] == 16)
    {
      g_autofree char *base = strip (t->name, "_blocks");
      s = find_sibling (ck, base, "_scales");
      if (s == NULL || s->dtype != BW_DTYPE_U8 || s->n_elements * 16 != t->n_elements)
        return;
      job->n_experts = (int) t->shape[0];
      job->rows = t->shape[1];
      job->cols = t->shape[2] * 32;
      job->src_fmt = BW_FMT_MXFP4;
      job->src[job->n_src++] = s;
      job->module = g_steal_pointer (&base);
      return;
    }
  /* gpt-oss unquantised fused experts: [E, inputs, outputs]. */
  if (fused_family && t->role == BW_ROLE_EXPERT && t->n_dims == 3
      && !ends_with (t->name, "_bias") && bw_format_of_dtype (t->dtype) != BW_FMT_COUNT)
    {
      job->n_experts = (int) t->shape[0];
      job->rows = t->shape[2];
      job->cols = t->shape[1];
      job->transposed = TRUE;
      job->src_fmt = bw_format_of_dtype (t->dtype);
      job->module = g_strdup (t->name);
    }
}

static void
describe_job (const BwCheckpoint *ck, const BwTensorInfo *t, BwJob *job)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (ck);
  describe_source (ck, t, ck->family->fused_experts, job);
  job->cls = class_of (t);
  job->routed = t->role == BW_ROLE_EXPERT;
  /* A router (one row per expert) is not part of the MLP it chooses for. */
  if (t->role == BW_ROLE_DENSE && t->layer >= 0 && cfg->layer_is_moe[t->layer]
      && job->src_fmt != BW_FMT_COUNT && job->rows == cfg->n_experts)
    job->cls = BW_CLASS_OTHER;
}

static gboolean
decide_job (const BwCheckpoint *ck, const BwConvertOptions *opts, int expert_group,
            BwJob *job, GError **error)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (ck);

  if (job->src_fmt == BW_FMT_COUNT && job->src[0]->dtype == BW_DTYPE_GGML)
    {
      const char *type = bw_ggml_type_name ((guint32) job->src[0]->ggml_type);
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "tensor %s: its GGML type %s cannot be decoded", job->src[0]->name,
                   type != NULL ? type : "(unknown)");
      return FALSE;
    }
  if (job->src_fmt == BW_FMT_COUNT)
    {
      job->kind = BW_JOB_COPY;
      add_copy_outs (job);
      return TRUE;
    }
  if (job->module == NULL)
    return decide (job, BW_CONVERT_KEEP, opts->group, error);
  if (job->routed)
    return decide (job, opts->experts, expert_group, error);
  if (dense_quantisable (cfg, job->src[0], job->rows))
    return decide (job, opts->dense, opts->group, error);
  return decide (job, BW_CONVERT_KEEP, opts->group, error);
}

/* The group every routed expert can take: the option's, or per row when some expert's
 * width is not a multiple of it (compressed-tensors refuses partial groups). */
static int
pick_expert_group (const BwConvertPlan *plan, int group)
{
  for (int j = 0; j < plan->n_jobs; j++)
    if (plan->jobs[j].routed && plan->jobs[j].src_fmt != BW_FMT_COUNT
        && plan->jobs[j].cols % group != 0)
      return 0;
  return group;
}

guint64
bw_job_out_bytes (const BwJob *job)
{
  guint64 n = 0;
  for (int i = 0; i < job->n_out; i++)
    n += job->out[i].nbytes;
  return n;
}

guint64
bw_job_in_bytes (const BwJob *job)
{
  guint64 n = 0;
  for (int i = 0; i < job->n_src; i++)
    n += job->src[i]->nbytes;
  return n;
}

static guint64
shard_file_bytes (const BwConvertPlan *plan, int s)
{
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();
  for (int j = plan->shard_first[s]; j < plan->shard_first[s + 1]; j++)
    for (int k = 0; k < plan->jobs[j].n_out; k++)
      {
        const BwOutTensor *o = &plan->jobs[j].out[k];
        bw_safetensors_writer_add (w, o->name, o->dtype, o->n_dims, o->shape);
      }
  return bw_safetensors_writer_file_bytes (w);
}

/* Consecutive jobs fill a shard up to the limit; a job larger than it gets one alone. */
static void
plan_shards (BwConvertPlan *plan, guint64 limit)
{
  GArray *first = g_array_new (FALSE, FALSE, sizeof (int));
  guint64 cur = 0;

  for (int j = 0; j < plan->n_jobs; j++)
    {
      guint64 b = bw_job_out_bytes (&plan->jobs[j]);
      if (j == 0 || (cur > 0 && cur + b > limit))
        {
          g_array_append_val (first, j);
          cur = 0;
        }
      cur += b;
      plan->jobs[j].shard = (int) first->len - 1;
      plan->total_tensor_bytes += b;
    }
  plan->n_shards = (int) first->len;
  g_array_append_val (first, plan->n_jobs);
  plan->shard_first = (int *) (void *) g_array_free (first, FALSE);
  plan->shard_names = g_new0 (char *, plan->n_shards + 1);
  plan->shard_bytes = g_new0 (guint64, plan->n_shards);
  for (int s = 0; s < plan->n_shards; s++)
    {
      plan->shard_names[s] = g_strdup_printf ("model-%05d-of-%05d.safetensors", s + 1,
                                              plan->n_shards);
      plan->shard_bytes[s] = shard_file_bytes (plan, s);
      plan->total_file_bytes += plan->shard_bytes[s];
    }
}

gboolean
bw_convert_plan_build (const BwCheckpoint *ck, const BwConvertOptions *opts,
                       BwConvertPlan *plan, GError **error)
{
  g_autoptr (GHashTable) companions = NULL;
  int n = 0;

  memset (plan, 0, sizeof *plan);
  /* gpt-oss reads MXFP4 experts only fused per layer, which a GGUF's per-expert slices
   * are not written back into */
  if (bw_gguf_is_gguf_path (ck->dir) && ck->family->fused_experts
      && opts->experts == BW_CONVERT_MXFP4)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: the experts of a GGUF %s model are written one tensor per expert, "
                   "which can be kept or written as INT4 or INT8, not as MXFP4", ck->dir,
                   ck->family->name);
      return FALSE;
    }
  companions = find_companions (ck);
  plan->group = opts->group;
  plan->experts = opts->experts;
  plan->dense = opts->dense;
  plan->jobs = g_new0 (BwJob, ck->n_tensors);
  for (int i = 0; i < ck->n_tensors; i++)
    if (!g_hash_table_contains (companions, ck->tensors[i].name))
      describe_job (ck, &ck->tensors[i], &plan->jobs[n++]);
  plan->n_jobs = n;
  plan->expert_group = pick_expert_group (plan, opts->group);
  for (int j = 0; j < n; j++)
    if (!decide_job (ck, opts, plan->expert_group, &plan->jobs[j], error))
      {
        g_prefix_error (error, "%s: ", ck->dir);
        return FALSE;
      }
  if (n == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: no tensors to convert", ck->dir);
      return FALSE;
    }
  plan_shards (plan, opts->shard_bytes > 0 ? opts->shard_bytes : DEFAULT_SHARD_BYTES);
  return TRUE;
}

void
bw_convert_plan_clear (BwConvertPlan *plan)
{
  for (int j = 0; j < plan->n_jobs; j++)
    {
      for (int k = 0; k < plan->jobs[j].n_out; k++)
        g_free (plan->jobs[j].out[k].name);
      g_free (plan->jobs[j].module);
    }
  g_free (plan->jobs);
  g_free (plan->shard_first);
  g_strfreev (plan->shard_names);
  g_free (plan->shard_bytes);
  memset (plan, 0, sizeof *plan);
}

void
bw_convert_plan_expert_bytes (const BwConvertPlan *plan, guint64 *in, guint64 *out)
{
  int layer = -1, expert = -2;

  *in = *out = 0;
  for (int j = 0; j < plan->n_jobs; j++)
    {
      const BwJob *job = &plan->jobs[j];
      const BwTensorInfo *t = job->src[0];
      if (!job->routed || job->module == NULL)
        continue;
      if (layer < 0)
        {
          layer = t->layer;
          expert = t->expert;
        }
      if (t->layer != layer || t->expert != expert)
        continue;
      *in += bw_job_in_bytes (job) / (guint64) job->n_experts;
      *out += bw_job_out_bytes (job) / (guint64) job->n_experts;
    }
}
