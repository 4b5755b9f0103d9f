#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-model-summary.h"

const char *
burrow_summary_group_title (BurrowSummaryGroup group)
{
  switch (group)
    {
    case BURROW_SUMMARY_MODEL:
      return _("Model");
    case BURROW_SUMMARY_MEMORY:
      return _("Memory");
    case BURROW_SUMMARY_EXPERTS:
      return _("Experts on Disk");
    case BURROW_SUMMARY_N_GROUPS:
    default:
      g_return_val_if_reached (NULL);
    }
}

const char *
burrow_summary_group_description (BurrowSummaryGroup group)
{
  switch (group)
    {
    case BURROW_SUMMARY_MODEL:
      return NULL;
    case BURROW_SUMMARY_MEMORY:
      return _("The dense part of the model stays in memory. Fewer bits need less memory.");
    case BURROW_SUMMARY_EXPERTS:
      return _("Routed experts stay on disk and are read when a token needs them.");
    case BURROW_SUMMARY_N_GROUPS:
    default:
      g_return_val_if_reached (NULL);
    }
}

void
burrow_summary_row_free (gpointer data)
{
  BurrowSummaryRow *row = data;

  g_free (row->title);
  g_free (row->subtitle);
  g_free (row->value);
  g_free (row);
}

static void
add_row (GPtrArray          *rows,
         BurrowSummaryGroup  group,
         const char         *title,
         const char         *subtitle,
         char               *value)
{
  BurrowSummaryRow *row = g_new0 (BurrowSummaryRow, 1);

  row->group = group;
  row->title = g_strdup (title);
  row->subtitle = g_strdup (subtitle);
  row->value = value;
  g_ptr_array_add (rows, row);
}

/* The stored dtypes, most bytes first: "BF16, F32". */
static char *
format_dtypes (const BurrowModelInfo *info)
{
  g_autoptr(GString) out = g_string_new (NULL);
  guint n = G_N_ELEMENTS (info->bytes_by_dtype);
  gboolean used[G_N_ELEMENTS (info->bytes_by_dtype)] = { FALSE };

  for (;;)
    {
      int best = -1;

      for (guint i = 0; i < n; i++)
        if (!used[i] && info->bytes_by_dtype[i] > 0 && burrow_dtype_name ((int) i) != NULL &&
            (best < 0 || info->bytes_by_dtype[i] > info->bytes_by_dtype[best]))
          best = (int) i;
      if (best < 0)
        break;

      used[best] = TRUE;
      if (out->len > 0)
        g_string_append (out, ", ");
      g_string_append (out, burrow_dtype_name (best));
    }

  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* A GGUF model's weight types, a row per tensor group ("Routed experts: IQ2_XXS, Q2_K"). */
static void
add_gguf_types (GPtrArray               *rows,
                const BurrowModelInfo   *info)
{
  static const struct {
    const char *group;
    const char *title;
  } titles[] = {
    { "routed experts", N_("Routed experts stored as") },
    { "shared experts", N_("Shared experts stored as") },
    { "attention", N_("Attention stored as") },
    { "dense FFN", N_("Dense layers stored as") },
    { "router", N_("Router stored as") },
    { "embeddings/output", N_("Embeddings stored as") },
    { "other", N_("Other tensors stored as") },
  };

  for (guint i = 0; info->types_by_group[i] != NULL && info->types_by_group[i + 1] != NULL; i += 2)
    for (guint k = 0; k < G_N_ELEMENTS (titles); k++)
      if (g_strcmp0 (info->types_by_group[i], titles[k].group) == 0)
        add_row (rows, BURROW_SUMMARY_MODEL, _(titles[k].title), NULL,
                 g_strdup (info->types_by_group[i + 1]));
}

GPtrArray *
burrow_model_summary_new (const BurrowModelInfo *info)
{
  GPtrArray *rows;

  g_return_val_if_fail (info != NULL, NULL);

  rows = g_ptr_array_new_with_free_func (burrow_summary_row_free);

  add_row (rows, BURROW_SUMMARY_MODEL, _("Family"), NULL,
           g_strdup (burrow_family_display_name (info->family)));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Layers"), NULL,
           g_strdup_printf ("%d", info->n_layers));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Layers with experts"), NULL,
           g_strdup_printf ("%d", info->n_moe_layers));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Experts per layer"), NULL,
           g_strdup_printf ("%d", info->n_experts));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Experts per token"),
           _("How many experts each layer uses for one token"),
           g_strdup_printf ("%d", info->n_experts_per_token));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Tensors"), NULL,
           g_strdup_printf (/* Translators: the number of tensors, then of files holding them */
                            ngettext ("%d in %d file", "%d in %d files", (gulong) info->n_shards),
                            info->n_tensors, info->n_shards));
  if (info->types_by_group != NULL)
    add_gguf_types (rows, info);
  else
    add_row (rows, BURROW_SUMMARY_MODEL, _("Stored as"), NULL, format_dtypes (info));
  add_row (rows, BURROW_SUMMARY_MODEL, _("Size on disk"), NULL,
           g_format_size (info->total_bytes));

  add_row (rows, BURROW_SUMMARY_MEMORY, _("As stored"), NULL,
           g_format_size (info->resident_bytes));
  /* a GGUF model's dense part is held as the file stores it: there is no smaller copy */
  if (info->types_by_group == NULL)
    {
      add_row (rows, BURROW_SUMMARY_MEMORY, _("At 8 bits"), NULL,
               g_format_size (info->resident_bytes_q8));
      add_row (rows, BURROW_SUMMARY_MEMORY, _("At 4 bits"), NULL,
               g_format_size (info->resident_bytes_q4));
    }

  add_row (rows, BURROW_SUMMARY_EXPERTS, _("All experts"), NULL,
           g_format_size (info->expert_bytes));
  add_row (rows, BURROW_SUMMARY_EXPERTS, _("One expert"), NULL,
           g_format_size (info->bytes_per_expert));
  add_row (rows, BURROW_SUMMARY_EXPERTS, _("Read per token"),
           _("At most, when no expert is in memory yet"),
           g_format_size (info->read_per_token));
  if (info->ignored_bytes > 0)
    add_row (rows, BURROW_SUMMARY_EXPERTS, _("Not used"),
             _("Vision tower and multi-token prediction layers"),
             g_format_size (info->ignored_bytes));

  return rows;
}

const BurrowSummaryRow *
burrow_model_summary_find (GPtrArray  *rows,
                           const char *title)
{
  g_return_val_if_fail (rows != NULL, NULL);

  for (guint i = 0; i < rows->len; i++)
    {
      const BurrowSummaryRow *row = g_ptr_array_index (rows, i);

      if (g_strcmp0 (row->title, title) == 0)
        return row;
    }

  return NULL;
}
