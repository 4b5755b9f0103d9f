#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-quality-summary.h"
#include "burrow-percent.h"

static void
add_row (GPtrArray  *rows,
         const char *title,
         char       *subtitle,
         char       *value)
{
  BurrowSummaryRow *row = g_new0 (BurrowSummaryRow, 1);

  row->title = g_strdup (title);
  row->subtitle = subtitle;
  row->value = value;
  g_ptr_array_add (rows, row);
}

const char *
burrow_quality_format_name (const char *format)
{
  if (g_strcmp0 (format, "int4") == 0)
    return "INT4";
  if (g_strcmp0 (format, "int8") == 0)
    return "INT8";
  if (g_strcmp0 (format, "mxfp4") == 0)
    return "MXFP4";
  if (g_strcmp0 (format, "keep") == 0)
    return _("as stored");
  return format != NULL ? format : "?";
}

static const char *
class_title (BurrowQualityClass c)
{
  switch (c)
    {
    case BURROW_QUALITY_ATTENTION:
      return _("Attention");
    case BURROW_QUALITY_DENSE_MLP:
      return _("Dense layers");
    case BURROW_QUALITY_SHARED_EXPERTS:
      return _("Shared experts");
    case BURROW_QUALITY_ROUTED_EXPERTS:
      return _("Routed experts");
    case BURROW_QUALITY_OTHER:
    case BURROW_QUALITY_N_CLASSES:
    default:
      return _("Other weights");
    }
}

GPtrArray *
burrow_quality_summary_new (const BurrowQualityReport *r)
{
  GPtrArray *rows = g_ptr_array_new_with_free_func (burrow_summary_row_free);
  char *scored;

  add_row (rows, _("Made with"),
           /* Translators: the columns that share one scale when weights are quantized */
           g_strdup_printf (_("Groups of %d columns"), r->group),
           /* Translators: two formats, e.g. "Experts INT4, dense layers as stored" */
           g_strdup_printf (_("Experts %s, dense layers %s"),
                            burrow_quality_format_name (r->experts),
                            burrow_quality_format_name (r->dense)));
  for (int c = 0; c < BURROW_QUALITY_N_CLASSES; c++)
    if (r->matrices[c] > 0)
      {
        guint n = (guint) MIN (r->matrices[c], G_MAXUINT);
        /* Translators: how many weight matrices were compared */
        char *over = g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "Relative RMS weight error, over %u matrix",
                                                   "Relative RMS weight error, over %u matrices", n), n);

        add_row (rows, class_title (c), over,
                 g_strdup_printf ("%.4f", r->relative_rms_error[c]));
      }
  if (!r->has_text)
    return rows;
  /* Translators: how many next-token predictions of a sample text were scored */
  scored = g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "Original, then the copy, over %d token of a sample text",
                                         "Original, then the copy, over %d tokens of a sample text",
                                         r->positions), r->positions);
  add_row (rows, _("Perplexity"), scored,
           g_strdup_printf ("%.3f → %.3f", r->perplexity_original, r->perplexity_converted));
  add_row (rows, _("Mean KL divergence"),
           g_strdup (_("Of the copy’s next-token predictions from the original’s")),
           /* Translators: a KL divergence in nats (natural-log units) */
           g_strdup_printf (_("%.4f nats"), r->kl_mean));
  add_row (rows, _("Top-1 agreement"),
           g_strdup (_("How often both predict the same next token")),
           burrow_percent_text (r->top1_agreement, 1));
  return rows;
}
