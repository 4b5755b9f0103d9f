/* Text-level comparison of two checkpoints and the quality report. */
#include "convert/quality.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/safetensors-writer.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "families/family.h"

/* Positions per forward call: bounds the logits buffer of one call. */
#define CHUNK 32

/* ids of text: the model's tokenizer, or the bytes mod vocab when the folder has none
 * (tiny test checkpoints). */
static GArray *
encode_text (const char *dir, const char *text, int vocab, gboolean *byte_ids,
             GError **error)
{
  g_autofree char *path = bw_tokenizer_find_in_dir (dir);
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));

  *byte_ids = path == NULL;
  if (path != NULL)
    {
      g_autoptr (BwTokenizer) tok = bw_tokenizer_open (path, NULL, error);
      if (tok == NULL || !bw_tokenizer_encode (tok, text, -1, FALSE, ids, error))
        {
          g_array_unref (ids);
          return NULL;
        }
      for (guint i = 0; i < ids->len; i++)
        if (g_array_index (ids, gint32, i) >= vocab)
          g_array_index (ids, gint32, i) = 0;
      return ids;
    }
  for (const guchar *p = (const guchar *) text; *p != '\0'; p++)
    {
      gint32 id = (gint32) (*p % (guint) vocab);
      g_array_append_val (ids, id);
    }
  return ids;
}

static void
log_softmax (float *x, int n)
{
  float m = x[0];
  double s = 0;
  for (int i = 1; i < n; i++)
    m = MAX (m, x[i]);
  for (int i = 0; i < n; i++)
    s += exp ((double) (x[i] - m));
  float lse = m + (float) log (s);
  for (int i = 0; i < n; i++)
    x[i] -= lse;
}

/* Where a comparison stands: units done of total, a position run through a model being one
 * unit and a model's load BW_COMPARE_LOAD_UNITS. */
typedef struct {
  BwCompareProgress func;
  gpointer data;
  guint64 done, total;
} Progress;

static void
report (const Progress *p, guint64 done)
{
  if (p->func != NULL)
    p->func (done, p->total, p->data);
}

static void
on_load_progress (double fraction, const char *phase, gpointer data)
{
  const Progress *p = data;
  (void) phase;
  if (fraction < 1)   /* the end of the load: run_model reports it */
    report (p, p->done + (guint64) (fraction * BW_COMPARE_LOAD_UNITS));
}

/* Log-probabilities [n][vocab] of the model in dir at every position of ids. */
static float *
run_model (const char *dir, const gint32 *ids, int n, int threads, Progress *progress,
           GCancellable *cancellable, int *vocab_out, GError **error)
{
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = threads;
  g_autoptr (BwModel) model = bw_model_load (dir, bw_families (), &opts, on_load_progress, progress,
                                             cancellable, error);
  if (model == NULL)
    return NULL;
  progress->done += BW_COMPARE_LOAD_UNITS;
  report (progress, progress->done);
  g_autoptr (BwState) state = bw_state_new (model);
  int vocab = bw_model_vocab_size (model);
  float *lp = g_try_malloc ((gsize) n * (gsize) vocab * sizeof (float));
  if (lp == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                   "%s: no memory for %d positions of %d logits", dir, n, vocab);
      return NULL;
    }
  for (int at = 0; at < n; at += CHUNK)
    {
      int len = MIN (CHUNK, n - at);
      float *out = lp + (gsize) at * (gsize) vocab;
      if (!bw_model_forward (model, state, ids + at, len, out, TRUE, cancellable, error))
        {
          g_free (lp);
          return NULL;
        }
      progress->done += (guint64) len;
      report (progress, progress->done);
    }
  for (int i = 0; i < n; i++)
    log_softmax (lp + (gsize) i * (gsize) vocab, vocab);
  *vocab_out = vocab;
  return lp;
}

static int
argmax (const float *x, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best])
      best = i;
  return best;
}

/* Vocabulary size from the checkpoint's config, for encoding before a model is loaded. */
static int
config_vocab (const char *dir, GError **error)
{
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, bw_families (), error);
  if (ck == NULL)
    return -1;
  JsonNode *v = json_object_get_member (ck->text_config, "vocab_size");
  return v != NULL && JSON_NODE_HOLDS_VALUE (v) ? (int) json_node_get_int (v) : 256;
}

gboolean
bw_compare_text (const char *dir_a, const char *dir_b, const char *text, int max_tokens,
                 int threads, BwCompareProgress progress, gpointer progress_data,
                 GCancellable *cancellable, BwTextCompare *out, GError **error)
{
  Progress p = { .func = progress, .data = progress_data };
  g_autoptr (GArray) ids = NULL;
  g_autofree float *a = NULL, *b = NULL;
  int va = 0, vb = 0, vocab = config_vocab (dir_a, error);
  double nll_a = 0, nll_b = 0, kl = 0;
  int agree = 0;

  memset (out, 0, sizeof *out);
  if (vocab <= 0 || (ids = encode_text (dir_a, text, vocab, &out->byte_ids, error)) == NULL)
    return FALSE;
  int n = MIN ((int) ids->len, max_tokens > 0 ? max_tokens : G_MAXINT);
  if (n < 2)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                           "the text is shorter than two tokens");
      return FALSE;
    }
  const gint32 *id = (const gint32 *) (const void *) ids->data;
  p.total = 2 * ((guint64) BW_COMPARE_LOAD_UNITS + (guint64) n);
  report (&p, 0);
  if (g_cancellable_set_error_if_cancelled (cancellable, error)
      || (a = run_model (dir_a, id, n, threads, &p, cancellable, &va, error)) == NULL
      || (b = run_model (dir_b, id, n, threads, &p, cancellable, &vb, error)) == NULL)
    return FALSE;
  if (va != vb)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s and %s have different vocabularies (%d, %d)", dir_a, dir_b, va, vb);
      return FALSE;
    }
  for (int i = 0; i + 1 < n; i++)
    {
      const float *pa = a + (gsize) i * (gsize) va, *pb = b + (gsize) i * (gsize) va;
      double k = 0;
      nll_a -= pa[id[i + 1]];
      nll_b -= pb[id[i + 1]];
      for (int v = 0; v < va; v++)
        k += exp ((double) pa[v]) * ((double) pa[v] - (double) pb[v]);
      kl += k;
      agree += argmax (pa, va) == argmax (pb, va);
    }
  out->n_tokens = n - 1;
  out->ppl_a = exp (nll_a / (n - 1));
  out->ppl_b = exp (nll_b / (n - 1));
  out->kl_mean = kl / (n - 1);
  out->top1_agreement = (double) agree / (n - 1);
  return TRUE;
}

static void
add_weights_json (JsonBuilder *b, const BwConvertReport *w)
{
  json_builder_set_member_name (b, "weights");
  json_builder_begin_object (b);
  for (int c = 0; c < BW_CLASS_COUNT; c++)
    {
      json_builder_set_member_name (b, bw_tensor_class_name ((BwTensorClass) c));
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "matrices");
      json_builder_add_int_value (b, (gint64) w->n_matrices[c]);
      json_builder_set_member_name (b, "relative_rms_error");
      json_builder_add_double_value (b, bw_convert_report_rel_rms (w, (BwTensorClass) c));
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "bytes");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "tensors_in");
  json_builder_add_int_value (b, (gint64) w->in_bytes);
  json_builder_set_member_name (b, "files_out");
  json_builder_add_int_value (b, (gint64) w->out_bytes);
  json_builder_set_member_name (b, "expert_in");
  json_builder_add_int_value (b, (gint64) w->expert_bytes_in);
  json_builder_set_member_name (b, "expert_out");
  json_builder_add_int_value (b, (gint64) w->expert_bytes_out);
  json_builder_end_object (b);
}

static void
add_text_json (JsonBuilder *b, const BwTextCompare *t, const char *source)
{
  json_builder_set_member_name (b, "text");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "source");
  json_builder_add_string_value (b, source != NULL ? source : "bundled English sample");
  json_builder_set_member_name (b, "ids");
  json_builder_add_string_value (b, t->byte_ids ? "bytes (no tokenizer)" : "tokenizer");
  json_builder_set_member_name (b, "positions");
  json_builder_add_int_value (b, t->n_tokens);
  json_builder_set_member_name (b, "perplexity_original");
  json_builder_add_double_value (b, t->ppl_a);
  json_builder_set_member_name (b, "perplexity_converted");
  json_builder_add_double_value (b, t->ppl_b);
  json_builder_set_member_name (b, "kl_mean");
  json_builder_add_double_value (b, t->kl_mean);
  json_builder_set_member_name (b, "top1_agreement");
  json_builder_add_double_value (b, t->top1_agreement);
  json_builder_end_object (b);
}

JsonNode *
bw_quality_json (const BwConvertOptions *opts, const BwConvertReport *weights,
                 const BwTextCompare *text, const char *text_source)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  if (opts != NULL)
    {
      json_builder_set_member_name (b, "experts");
      json_builder_add_string_value (b, bw_convert_format_name (opts->experts));
      json_builder_set_member_name (b, "dense");
      json_builder_add_string_value (b, bw_convert_format_name (opts->dense));
      json_builder_set_member_name (b, "group");
      json_builder_add_int_value (b, opts->group);
    }
  if (weights != NULL)
    add_weights_json (b, weights);
  if (text != NULL)
    add_text_json (b, text, text_source);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_quality_save (JsonNode *report, const char *dir, GError **error)
{
  g_autofree char *path = g_build_filename (dir, "quality.json", NULL);
  return bw_json_save_file (report, path, error);
}

void
bw_quality_print (const BwConvertReport *w, const BwTextCompare *t, FILE *stream)
{
  if (w != NULL)
    for (int c = 0; c < BW_CLASS_COUNT; c++)
      if (w->n_matrices[c] > 0)
        fprintf (stream, "  %-16s relative RMS error %.4f over %" G_GUINT64_FORMAT
                 " matrices\n", bw_tensor_class_name ((BwTensorClass) c),
                 bw_convert_report_rel_rms (w, (BwTensorClass) c), w->n_matrices[c]);
  if (t != NULL)
    fprintf (stream, "  over %d positions: perplexity %.4f -> %.4f, mean KL %.6f nats, "
             "top-1 agreement %.1f%%\n", t->n_tokens, t->ppl_a, t->ppl_b, t->kl_mean,
             100.0 * t->top1_agreement);
}
