#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-dashboard.h"
#include "burrow-expert-map.h"
#include "burrow-history-chart.h"
#include "burrow-layer-chart.h"
#include "burrow-message-row.h"
#include "burrow-palette.h"
#include "burrow-token-chart.h"
#include "burrow-value-label.h"
#include "burrow-percent.h"

#define NO_VALUE "—"

struct _BurrowDashboard {
  AdwBin parent_instance;

  BurrowPerfMonitor *monitor;
  gboolean compact;
  gboolean on_server;           /* the figures are a server's: what it cannot fill hides */

  AdwClamp *clamp;
  GtkFlowBox *tiles;
  GtkWidget *header;
  GtkFlowBox *sections;
  BurrowValueLabel *decode_value;
  BurrowValueLabel *ttft_value;
  BurrowValueLabel *prefill_value;
  BurrowValueLabel *hit_rate_value;
  BurrowValueLabel *read_rate_value;
  BurrowValueLabel *bytes_read_value;
  GtkLabel *backend_label;
  BurrowValueLabel *tier_labels[3];
  BurrowValueLabel *latest_label;
  GtkLabel *tier_swatches[3];
  GtkLabel *latest_swatch;
  GtkLabel *pin_note;
  GtkLabel *cap_note;
  GtkLabel *source_note;
  GtkWidget *speed_section;
  GtkWidget *token_section;
  GtkWidget *read_section;
  GtkWidget *read_rate_tile;
  GtkWidget *tier_legend;
  GtkWidget *layer_box;
  BurrowChart *charts[6];
  GtkBox *token_box;
  GtkWidget *map_zoom_in, *map_zoom_out, *map_zoom_reset;
};

G_DEFINE_FINAL_TYPE (BurrowDashboard, burrow_dashboard, ADW_TYPE_BIN)

static void
set_value (BurrowValueLabel *label,
           char             *text)
{
  burrow_value_label_set_text (label, text);
  g_free (text);
}

static char *
rate_text (double per_second)
{
  g_autofree char *size = g_format_size ((guint64) per_second);

  /* Translators: a disk read rate, e.g. "12 MB/s" */
  return g_strdup_printf (_("%s/s"), size);
}

static void
set_note (GtkLabel   *label,
          const char *text)
{
  if (g_strcmp0 (gtk_label_get_label (label), text != NULL ? text : "") != 0)
    gtk_label_set_label (label, text != NULL ? text : "");
  gtk_widget_set_visible (GTK_WIDGET (label), text != NULL);
}

/* Why Pinned shows no experts, when that needs saying. */
static const char *
pin_reason (const BurrowPerfSnapshot *s,
            guint64                   n_pinned)
{
  if (n_pinned > 0)
    return NULL;
  switch (s->cache.pins)
    {
    case BURROW_PINS_NO_HISTORY:
      return _("No experts are pinned yet: pins are chosen when the model is opened, from the "
               "experts earlier sessions used most, and no earlier session has used this model "
               "enough. This session’s use is recorded; pins take effect the next time the model "
               "is opened.");
    case BURROW_PINS_ACTIVE:
      return _("Pins were chosen from earlier sessions; each is read into memory the first time "
               "it is used.");
    case BURROW_PINS_DROPPED:
      return _("The pins were released: this session uses other experts than earlier sessions "
               "did, so the whole cache follows what is used now.");
    case BURROW_PINS_OFF:
    default:
      return NULL;
    }
}

static void
update_legend (BurrowDashboard          *self,
               const BurrowPerfSnapshot *s)
{
  guint64 counts[3], bytes[3], latest = 0;
  g_autofree char *cap = NULL;
  double share;

  burrow_perf_monitor_get_tiers (self->monitor, counts, bytes);
  for (guint t = 0; t < 3; t++)
    {
      g_autofree char *size = g_format_size (bytes[t]);

      set_value (self->tier_labels[t],
                 /* Translators: a number of experts, then how many bytes they take */
                 g_strdup_printf (ngettext ("%lu expert · %s", "%lu experts · %s",
                                            (gulong) counts[t]), (gulong) counts[t], size));
    }
  for (int l = 0; l < s->n_layers; l++)
    for (int e = 0; e < s->layer_experts[l]; e++)
      latest += burrow_perf_snapshot_recency (s, l, e) >= 1.0;
  set_value (self->latest_label,
             /* Translators: how many experts the latest token used */
             g_strdup_printf (ngettext ("%lu expert", "%lu experts", (gulong) latest),
                              (gulong) latest));
  set_note (self->pin_note, pin_reason (s, counts[BURROW_EXPERT_PINNED]));

  share = burrow_perf_monitor_get_cache_cap (self->monitor);
  if (share > 0)
    {
      g_autofree char *percent = burrow_percent_text (share, 0);

      cap = g_strdup_printf (/* Translators: %s is a percentage ("40%") */
                             _("The demo model keeps at most %s of its experts in memory, on "
                               "purpose: experts keep streaming from disk as they would for a "
                               "model larger than memory, so reads add up to more than the "
                               "model’s size."), percent);
    }
  set_note (self->cap_note, cap);
}

static void
update_numbers (BurrowDashboard *self)
{
  const BurrowPerfSnapshot *s = self->monitor ? burrow_perf_monitor_get_snapshot (self->monitor) : NULL;
  guint64 lookups;

  if (s == NULL)
    {
      BurrowValueLabel *all[] = { self->decode_value, self->ttft_value, self->prefill_value,
                          self->hit_rate_value, self->read_rate_value, self->bytes_read_value };

      for (guint i = 0; i < G_N_ELEMENTS (all); i++)
        set_value (all[i], g_strdup (NO_VALUE));
      for (guint t = 0; t < 3; t++)
        set_value (self->tier_labels[t], g_strdup (NO_VALUE));
      set_value (self->latest_label, g_strdup (NO_VALUE));
      set_note (self->pin_note, NULL);
      set_note (self->cap_note, NULL);
      gtk_label_set_label (self->backend_label, "");
      return;
    }

  set_value (self->decode_value, s->turn.decode_tokens_per_second > 0
                                   ? g_strdup_printf ("%.1f", s->turn.decode_tokens_per_second)
                                   : g_strdup (NO_VALUE));
  set_value (self->ttft_value, s->turn.ttft_seconds > 0
                                 ? burrow_format_seconds (s->turn.ttft_seconds)
                                 : g_strdup (NO_VALUE));
  set_value (self->prefill_value, s->turn.prefill_tokens_per_second > 0
                                    ? g_strdup_printf ("%.0f", s->turn.prefill_tokens_per_second)
                                    : g_strdup (NO_VALUE));
  lookups = s->cache.hits + s->cache.misses;
  set_value (self->hit_rate_value, lookups > 0
                                     ? burrow_percent_text ((double) s->cache.hits / (double) lookups, 0)
                                     : g_strdup (NO_VALUE));
  set_value (self->read_rate_value, rate_text (burrow_perf_monitor_get_read_rate (self->monitor)));
  set_value (self->bytes_read_value, g_format_size (s->cache.bytes_read));
  update_legend (self, s);
  if (s->cache.backend[0] != '\0')
    {
      g_autofree char *backend = NULL;

      /* Translators: how experts are read from disk, e.g. "io_uring" */
      backend = g_strdup_printf (_("Read with %s"), s->cache.backend);
      if (g_strcmp0 (gtk_label_get_label (self->backend_label), backend) != 0)
        gtk_label_set_label (self->backend_label, backend);
    }
}

void
burrow_dashboard_set_source_note (BurrowDashboard *self,
                                  const char      *text)
{
  g_return_if_fail (BURROW_IS_DASHBOARD (self));

  set_note (self->source_note, text);
}

const char *
burrow_dashboard_get_value (BurrowDashboard *self,
                            const char      *name)
{
  const struct { const char *name; BurrowValueLabel *label; } values[] = {
    { "decode", self->decode_value }, { "ttft", self->ttft_value },
    { "prefill", self->prefill_value }, { "hit-rate", self->hit_rate_value },
    { "read-rate", self->read_rate_value }, { "bytes-read", self->bytes_read_value },
    { "latest", self->latest_label }, { "pinned", self->tier_labels[BURROW_EXPERT_PINNED] },
    { "cached", self->tier_labels[BURROW_EXPERT_CACHED] },
    { "on-disk", self->tier_labels[BURROW_EXPERT_ON_DISK] },
    { "pin-note", NULL }, { "cap-note", NULL }, { "source-note", NULL },
  };

  g_return_val_if_fail (BURROW_IS_DASHBOARD (self), NULL);

  if (g_str_equal (name, "pin-note") || g_str_equal (name, "cap-note") ||
      g_str_equal (name, "source-note"))
    {
      GtkLabel *note = name[0] == 'p' ? self->pin_note
                       : name[0] == 'c' ? self->cap_note : self->source_note;

      return gtk_widget_get_visible (GTK_WIDGET (note)) ? gtk_label_get_label (note) : NULL;
    }
  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    if (g_str_equal (values[i].name, name))
      return burrow_value_label_get_text (values[i].label);
  g_return_val_if_reached (NULL);
}

void
burrow_dashboard_set_monitor (BurrowDashboard   *self,
                              BurrowPerfMonitor *monitor)
{
  g_return_if_fail (BURROW_IS_DASHBOARD (self));

  if (monitor == self->monitor)
    return;
  if (self->monitor != NULL)
    g_signal_handlers_disconnect_by_data (self->monitor, self);
  g_set_object (&self->monitor, monitor);
  for (guint i = 0; i < G_N_ELEMENTS (self->charts); i++)
    burrow_chart_set_monitor (self->charts[i], monitor);
  if (monitor != NULL)
    g_signal_connect_object (monitor, "updated", G_CALLBACK (update_numbers), self,
                             G_CONNECT_SWAPPED);
  /* Without one, every figure shows as none. */
  update_numbers (self);
}

/* A section in a flow box shows with the child the flow box wraps it in. */
static void
show_section (GtkWidget *section,
              gboolean   visible)
{
  GtkWidget *wrapper = gtk_widget_get_ancestor (section, GTK_TYPE_FLOW_BOX_CHILD);

  gtk_widget_set_visible (wrapper != NULL ? wrapper : section, visible);
}

/* What each dashboard shows: the panel leaves out the speed and layer charts; a server's
 * figures leave out what only a local model fills. A server's tokens reach this computer
 * in bursts, so per-token times and rates measured here are the network's, not the
 * server's (a chart reached 21,000 tokens/s for a server at 1,093); its per-token phase
 * clocks are its compute only, and its experts have no tiers or sizes on this disk. */
static void
update_sections (BurrowDashboard *self)
{
  gtk_widget_set_visible (self->header, self->compact);
  show_section (self->speed_section, !self->compact && !self->on_server);
  gtk_widget_set_visible (self->layer_box, !self->compact);
  show_section (self->token_section, !self->on_server);
  show_section (self->read_section, !self->on_server);
  show_section (self->read_rate_tile, !self->on_server);
  gtk_widget_set_visible (self->tier_legend, !self->on_server);
}

void
burrow_dashboard_set_on_server (BurrowDashboard *self,
                                gboolean         on_server)
{
  g_return_if_fail (BURROW_IS_DASHBOARD (self));

  self->on_server = on_server;
  update_sections (self);
}

void
burrow_dashboard_set_compact (BurrowDashboard *self,
                              gboolean         compact)
{
  g_return_if_fail (BURROW_IS_DASHBOARD (self));

  self->compact = compact;
  update_sections (self);
  gtk_flow_box_set_max_children_per_line (self->sections, compact ? 1 : 2);
  gtk_flow_box_set_max_children_per_line (self->tiles, compact ? 2 : 3);
  /* The panel keeps to a sidebar's width; the page uses what the window has. */
  adw_clamp_set_maximum_size (self->clamp, compact ? 320 : 1100);
  adw_clamp_set_tightening_threshold (self->clamp, compact ? 320 : 1100);
  /* The expert map sizes itself by the model's layer count. */
  for (guint i = 0; i + 1 < G_N_ELEMENTS (self->charts); i++)
    gtk_widget_set_size_request (GTK_WIDGET (self->charts[i]), -1, compact ? 110 : 170);
}

static void
set_swatch (GtkLabel      *label,
            const GdkRGBA *color)
{
  g_autofree char *markup = g_strdup_printf ("<span foreground=\"#%02x%02x%02x\">■</span>",
                                             (int) (color->red * 255), (int) (color->green * 255),
                                             (int) (color->blue * 255));

  gtk_label_set_markup (label, markup);
}

/* The legend's squares in the colours the map draws each tier and the highlight in. */
static void
build_tier_legend (BurrowDashboard *self)
{
  GdkRGBA color;

  for (guint t = 0; t < 3; t++)
    {
      burrow_palette_tier ((int) t, &color);
      set_swatch (self->tier_swatches[t], &color);
    }
  burrow_palette_flash (&color);
  set_swatch (self->latest_swatch, &color);
}

static void
burrow_dashboard_dispose (GObject *object)
{
  BurrowDashboard *self = BURROW_DASHBOARD (object);

  if (self->monitor != NULL)
    g_signal_handlers_disconnect_by_data (self->monitor, self);
  g_clear_object (&self->monitor);

  G_OBJECT_CLASS (burrow_dashboard_parent_class)->dispose (object);
}

static BurrowExpertMap *
expert_map (BurrowDashboard *self)
{
  return BURROW_EXPERT_MAP (self->charts[5]);
}

static void
on_map_zoom_in (BurrowDashboard *self)
{
  burrow_expert_map_zoom (expert_map (self), 1);
}

static void
on_map_zoom_out (BurrowDashboard *self)
{
  burrow_expert_map_zoom (expert_map (self), -1);
}

static void
on_map_zoom_reset (BurrowDashboard *self)
{
  burrow_expert_map_zoom (expert_map (self), 0);
}

/* The zoom buttons are there only while they can do something. */
static void
update_map_zoom (BurrowDashboard *self)
{
  gtk_widget_set_sensitive (self->map_zoom_in, burrow_expert_map_can_zoom (expert_map (self), 1));
  gtk_widget_set_sensitive (self->map_zoom_out, burrow_expert_map_can_zoom (expert_map (self), -1));
  gtk_widget_set_sensitive (self->map_zoom_reset, burrow_expert_map_can_zoom (expert_map (self), 0));
}

static void
burrow_dashboard_class_init (BurrowDashboardClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_dashboard_dispose;

  g_type_ensure (BURROW_TYPE_TOKEN_CHART);
  g_type_ensure (BURROW_TYPE_HISTORY_CHART);
  g_type_ensure (BURROW_TYPE_LAYER_CHART);
  g_type_ensure (BURROW_TYPE_EXPERT_MAP);
  g_type_ensure (BURROW_TYPE_VALUE_LABEL);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-dashboard.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, clamp);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, tiles);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, header);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, sections);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, decode_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, ttft_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, prefill_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, hit_rate_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, read_rate_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, bytes_read_value);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, backend_label);
  gtk_widget_class_bind_template_child_full (widget_class, "disk_label", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_labels[0]));
  gtk_widget_class_bind_template_child_full (widget_class, "cached_label", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_labels[1]));
  gtk_widget_class_bind_template_child_full (widget_class, "pinned_label", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_labels[2]));
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, speed_section);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, token_section);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, read_section);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, read_rate_tile);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, tier_legend);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, layer_box);
  gtk_widget_class_bind_template_child_full (widget_class, "token_chart", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[0]));
  gtk_widget_class_bind_template_child_full (widget_class, "hit_rate_chart", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[1]));
  gtk_widget_class_bind_template_child_full (widget_class, "read_rate_chart", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[2]));
  gtk_widget_class_bind_template_child_full (widget_class, "decode_rate_chart", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[3]));
  gtk_widget_class_bind_template_child_full (widget_class, "layer_chart", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[4]));
  gtk_widget_class_bind_template_child_full (widget_class, "expert_map", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, charts[5]));
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, token_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, map_zoom_in);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, map_zoom_out);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, map_zoom_reset);
  gtk_widget_class_bind_template_callback (widget_class, on_map_zoom_in);
  gtk_widget_class_bind_template_callback (widget_class, on_map_zoom_out);
  gtk_widget_class_bind_template_callback (widget_class, on_map_zoom_reset);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, latest_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, latest_swatch);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, pin_note);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, cap_note);
  gtk_widget_class_bind_template_child (widget_class, BurrowDashboard, source_note);
  gtk_widget_class_bind_template_child_full (widget_class, "disk_swatch", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_swatches[0]));
  gtk_widget_class_bind_template_child_full (widget_class, "cached_swatch", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_swatches[1]));
  gtk_widget_class_bind_template_child_full (widget_class, "pinned_swatch", FALSE,
                                             G_STRUCT_OFFSET (BurrowDashboard, tier_swatches[2]));
  gtk_widget_class_set_css_name (widget_class, "dashboard");
}

static void
burrow_dashboard_init (BurrowDashboard *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  gtk_box_append (self->token_box, burrow_palette_phase_legend_new ());
  build_tier_legend (self);
  burrow_dashboard_set_compact (self, FALSE);
  g_signal_connect_object (expert_map (self), "notify::cell-size", G_CALLBACK (update_map_zoom),
                           self, G_CONNECT_SWAPPED);
  update_map_zoom (self);
  update_numbers (self);
}

GtkWidget *
burrow_dashboard_new (void)
{
  return g_object_new (BURROW_TYPE_DASHBOARD, NULL);
}
