/* A compact copy off the main loop: the estimate on a GTask thread, the conversion on
 * another, its progress coalesced into one idle source on the starting context. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burrow-convert-job.h"

/* The main loop hears of progress at most this often. */
#define POST_INTERVAL_US (100 * 1000)

static const char *
format_suffix (BurrowConvertFormat f)
{
  switch (f)
    {
    case BURROW_CONVERT_INT4:
      return "int4";
    case BURROW_CONVERT_INT8:
      return "int8";
    case BURROW_CONVERT_MXFP4:
      return "mxfp4";
    case BURROW_CONVERT_KEEP:
    default:
      return NULL;
    }
}

/* The model's name: a folder's, or a GGUF file's without ".gguf" and a split set's
 * "-00001-of-00003". */
static char *
model_name (const char *canon)
{
  g_autofree char *name = g_path_get_basename (canon);
  gsize len = strlen (name);
  guint part, parts;
  char tail[2];

  if (len <= 5 || g_ascii_strcasecmp (name + len - 5, ".gguf") != 0)
    return g_steal_pointer (&name);
  len -= 5;
  name[len] = '\0';
  if (len > 15 && sscanf (name + len - 15, "-%5u-of-%5u%1s", &part, &parts, tail) == 2)
    name[len - 15] = '\0';
  return g_steal_pointer (&name);
}

char *
burrow_convert_default_out_dir (const char                 *dir,
                                const BurrowConvertOptions *options,
                                const char                 *in_parent,
                                const char                 *fallback_parent)
{
  g_autofree char *canon = g_canonicalize_filename (dir, NULL);
  g_autofree char *name = model_name (canon);
  g_autofree char *parent = in_parent != NULL ? g_strdup (in_parent) : g_path_get_dirname (canon);
  g_autoptr(GString) base = g_string_new (name);
  const char *experts = format_suffix (options->experts);

  if (experts != NULL)
    g_string_append_printf (base, "-%s", experts);
  if (options->dense == BURROW_CONVERT_INT8)
    g_string_append (base, "-dense-int8");
  if (experts == NULL && options->dense != BURROW_CONVERT_INT8)
    g_string_append (base, "-copy");
  if (in_parent == NULL && g_access (parent, W_OK) != 0 && fallback_parent != NULL)
    {
      g_free (parent);
      parent = g_strdup (fallback_parent);
    }

  for (guint n = 1;; n++)
    {
      g_autofree char *leaf = n == 1 ? g_strdup (base->str)
                                     : g_strdup_printf ("%s-%u", base->str, n);
      char *path = g_build_filename (parent, leaf, NULL);

      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        return path;
      g_free (path);
    }
}

/* ---- The estimate ---- */

typedef struct {
  char *dir;
  char *out_dir;
  BurrowConvertOptions options;
} EstimateData;

static void
estimate_data_free (gpointer data)
{
  EstimateData *d = data;

  g_free (d->dir);
  g_free (d->out_dir);
  g_free (d);
}

static void
estimate_thread (GTask        *task,
                 gpointer      source,
                 gpointer      task_data,
                 GCancellable *cancellable)
{
  EstimateData *d = task_data;
  BurrowConvertEstimate *est = g_new0 (BurrowConvertEstimate, 1);
  GError *error = NULL;

  if (!burrow_convert_estimate (d->dir, d->out_dir, &d->options, est, &error))
    {
      g_free (est);
      g_task_return_error (task, error);
      return;
    }
  g_task_return_pointer (task, est, g_free);
}

void
burrow_convert_estimate_async (const char                 *dir,
                               const char                 *out_dir,
                               const BurrowConvertOptions *options,
                               GCancellable               *cancellable,
                               GAsyncReadyCallback         callback,
                               gpointer                    user_data)
{
  g_autoptr(GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  EstimateData *d = g_new0 (EstimateData, 1);

  d->dir = g_strdup (dir);
  d->out_dir = g_strdup (out_dir);
  d->options = *options;
  g_task_set_source_tag (task, burrow_convert_estimate_async);
  g_task_set_return_on_cancel (task, TRUE);
  g_task_set_task_data (task, d, estimate_data_free);
  g_task_run_in_thread (task, estimate_thread);
}

gboolean
burrow_convert_estimate_finish (GAsyncResult          *result,
                                BurrowConvertEstimate *estimate,
                                GError               **error)
{
  g_autofree BurrowConvertEstimate *est = g_task_propagate_pointer (G_TASK (result), error);

  if (est == NULL)
    return FALSE;
  *estimate = *est;
  return TRUE;
}

char *
burrow_convert_size_text (guint64 after,
                          guint64 before)
{
  g_autofree char *a = g_format_size (after);
  g_autofree char *b = g_format_size (before);

  /* Translators: a size after making a compact copy, then the model's size now */
  return g_strdup_printf (_("%s (now %s)"), a, b);
}

gboolean
burrow_convert_estimate_has_room (const BurrowConvertEstimate *estimate,
                                  char                      **reason)
{
  g_autofree char *need = NULL;
  g_autofree char *have = NULL;

  if (estimate->free_bytes >= estimate->needed_bytes)
    return TRUE;
  if (reason != NULL)
    {
      need = g_format_size (estimate->needed_bytes);
      have = g_format_size (estimate->free_bytes);
      /* Translators: two sizes: what a compact copy needs, and what the disk has free */
      *reason = g_strdup_printf (_("Not enough free space: the copy needs %s, the disk has %s free. Choose another folder or free some space."),
                                 need, have);
    }
  return FALSE;
}

double
burrow_convert_eta (guint64 done,
                    guint64 total,
                    double  elapsed_seconds)
{
  if (done == 0 || elapsed_seconds < 1.0 || done > total)
    return -1;
  return (double) (total - done) * elapsed_seconds / (double) done;
}

char *
burrow_convert_eta_text (double seconds)
{
  if (seconds < 1)
    return g_strdup (_("Less than a second left"));
  if (seconds < 90)
    {
      int s = (int) lround (seconds);
      /* Translators: time left converting */
      return g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "About %d second left",
                                           "About %d seconds left", s), s);
    }
  if (seconds < 90 * 60)
    {
      int m = (int) lround (seconds / 60);
      /* Translators: time left converting */
      return g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "About %d minute left",
                                           "About %d minutes left", m), m);
    }
  {
    int h = (int) lround (seconds / 3600);
    /* Translators: time left converting */
    return g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "About %d hour left",
                                         "About %d hours left", h), h);
  }
}

/* ---- The job ---- */

struct _BurrowConvertJob {
  GObject parent_instance;

  char *dir;
  char *out_dir;
  BurrowConvertOptions options;
  GCancellable *cancellable;
  GMainContext *context;
  gulong delay_us[2];           /* per BurrowConvertStage */

  /* Written by the converting thread, read on the main context; under lock. */
  GMutex lock;
  BurrowConvertStage stage;
  guint64 done, total, first_done;
  gint64 first_us, last_post_us;
  gboolean post_pending;

  /* Main context only. */
  BurrowConvertJobState state;
  double fraction;
  double eta;
  GError *error;
};

G_DEFINE_FINAL_TYPE (BurrowConvertJob, burrow_convert_job, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_STATE,
  PROP_FRACTION,
  PROP_ETA,
  N_PROPS
};

static GParamSpec *props[N_PROPS];

static void
set_state (BurrowConvertJob      *self,
           BurrowConvertJobState  state)
{
  if (self->state == state)
    return;
  self->state = state;
  g_object_notify_by_pspec (G_OBJECT (self), props[PROP_STATE]);
}

static gboolean
apply_progress (gpointer data)
{
  BurrowConvertJob *self = data;
  BurrowConvertStage stage;
  guint64 done, total, first_done;
  gint64 first_us;

  g_mutex_lock (&self->lock);
  self->post_pending = FALSE;
  stage = self->stage;
  done = self->done;
  total = self->total;
  first_done = self->first_done;
  first_us = self->first_us;
  g_mutex_unlock (&self->lock);

  /* A late post after the end changes nothing. */
  if (self->state != BURROW_CONVERT_JOB_WRITING && self->state != BURROW_CONVERT_JOB_COMPARING)
    return G_SOURCE_REMOVE;

  g_object_freeze_notify (G_OBJECT (self));
  if (stage == BURROW_CONVERT_STAGE_COMPARING)
    {
      self->fraction = total > 0 ? (double) MIN (done, total) / (double) total : 0;
      self->eta = -1;
      set_state (self, BURROW_CONVERT_JOB_COMPARING);
    }
  else
    {
      /* A resumed run: only what this run writes tells its speed. */
      self->fraction = total > 0 ? (double) done / (double) total : 0;
      self->eta = burrow_convert_eta (done - first_done, total - first_done,
                                      (double) (g_get_monotonic_time () - first_us) / G_USEC_PER_SEC);
    }
  g_object_notify_by_pspec (G_OBJECT (self), props[PROP_FRACTION]);
  g_object_notify_by_pspec (G_OBJECT (self), props[PROP_ETA]);
  g_object_thaw_notify (G_OBJECT (self));
  return G_SOURCE_REMOVE;
}

/* On the converting thread. */
static void
on_progress (BurrowConvertStage stage,
             guint64            done,
             guint64            total,
             gpointer           user_data)
{
  BurrowConvertJob *self = user_data;
  gint64 now = g_get_monotonic_time ();
  gboolean post;

  g_mutex_lock (&self->lock);
  if (self->first_us == 0)
    {
      self->first_us = now;
      self->first_done = done;
    }
  post = !self->post_pending &&
         (stage != self->stage || now - self->last_post_us >= POST_INTERVAL_US);
  self->stage = stage;
  self->done = done;
  self->total = total;
  if (post)
    {
      self->post_pending = TRUE;
      self->last_post_us = now;
    }
  g_mutex_unlock (&self->lock);

  if (post)
    g_main_context_invoke_full (self->context, G_PRIORITY_DEFAULT, apply_progress,
                                g_object_ref (self), g_object_unref);
  if (self->delay_us[stage] > 0)
    g_usleep (self->delay_us[stage]);
}

static void
convert_thread (GTask        *task,
                gpointer      source,
                gpointer      task_data,
                GCancellable *cancellable)
{
  BurrowConvertJob *self = source;
  GError *error = NULL;

  if (!burrow_convert (self->dir, self->out_dir, &self->options, on_progress, self,
                       self->cancellable, &error))
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

static void
on_converted (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  BurrowConvertJob *self = BURROW_CONVERT_JOB (source);
  GError *error = NULL;

  if (g_task_propagate_boolean (G_TASK (result), &error))
    {
      self->fraction = 1;
      self->eta = 0;
      g_object_notify_by_pspec (G_OBJECT (self), props[PROP_FRACTION]);
      set_state (self, BURROW_CONVERT_JOB_DONE);
      return;
    }
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_error_free (error);
      set_state (self, BURROW_CONVERT_JOB_CANCELLED);
      return;
    }
  self->error = error;
  set_state (self, BURROW_CONVERT_JOB_FAILED);
}

void
burrow_convert_job_start (BurrowConvertJob *self)
{
  g_autoptr(GTask) task = NULL;

  g_return_if_fail (BURROW_IS_CONVERT_JOB (self));
  g_return_if_fail (self->state == BURROW_CONVERT_JOB_READY);

  self->context = g_main_context_ref_thread_default ();
  /* No cancellable on the task itself: GTask would report the cancel at once, while the
   * engine is still removing what it wrote; the engine reports it when that is done. */
  task = g_task_new (self, NULL, on_converted, NULL);
  set_state (self, BURROW_CONVERT_JOB_WRITING);
  g_task_run_in_thread (task, convert_thread);
}

void
burrow_convert_job_set_step_delay (BurrowConvertJob   *self,
                                   BurrowConvertStage  stage,
                                   gulong              delay_us)
{
  g_return_if_fail (BURROW_IS_CONVERT_JOB (self));
  g_return_if_fail ((guint) stage < G_N_ELEMENTS (self->delay_us));
  self->delay_us[stage] = delay_us;
}

void
burrow_convert_job_cancel (BurrowConvertJob *self)
{
  g_return_if_fail (BURROW_IS_CONVERT_JOB (self));
  g_cancellable_cancel (self->cancellable);
}

BurrowConvertJobState
burrow_convert_job_get_state (BurrowConvertJob *self)
{
  g_return_val_if_fail (BURROW_IS_CONVERT_JOB (self), BURROW_CONVERT_JOB_FAILED);
  return self->state;
}

double
burrow_convert_job_get_fraction (BurrowConvertJob *self)
{
  g_return_val_if_fail (BURROW_IS_CONVERT_JOB (self), 0);
  return self->fraction;
}

double
burrow_convert_job_get_eta (BurrowConvertJob *self)
{
  g_return_val_if_fail (BURROW_IS_CONVERT_JOB (self), -1);
  return self->eta;
}

const char *
burrow_convert_job_get_out_dir (BurrowConvertJob *self)
{
  g_return_val_if_fail (BURROW_IS_CONVERT_JOB (self), NULL);
  return self->out_dir;
}

const GError *
burrow_convert_job_get_error (BurrowConvertJob *self)
{
  g_return_val_if_fail (BURROW_IS_CONVERT_JOB (self), NULL);
  return self->error;
}

static void
burrow_convert_job_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  BurrowConvertJob *self = BURROW_CONVERT_JOB (object);

  switch (prop_id)
    {
    case PROP_STATE:
      g_value_set_int (value, self->state);
      break;
    case PROP_FRACTION:
      g_value_set_double (value, self->fraction);
      break;
    case PROP_ETA:
      g_value_set_double (value, self->eta);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_convert_job_finalize (GObject *object)
{
  BurrowConvertJob *self = BURROW_CONVERT_JOB (object);

  g_free (self->dir);
  g_free (self->out_dir);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->context, g_main_context_unref);
  g_clear_error (&self->error);
  g_mutex_clear (&self->lock);

  G_OBJECT_CLASS (burrow_convert_job_parent_class)->finalize (object);
}

static void
burrow_convert_job_class_init (BurrowConvertJobClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = burrow_convert_job_finalize;
  object_class->get_property = burrow_convert_job_get_property;

  props[PROP_STATE] = g_param_spec_int ("state", NULL, NULL, BURROW_CONVERT_JOB_READY,
                                        BURROW_CONVERT_JOB_CANCELLED, BURROW_CONVERT_JOB_READY,
                                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  props[PROP_FRACTION] = g_param_spec_double ("fraction", NULL, NULL, 0, 1, 0,
                                              G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  props[PROP_ETA] = g_param_spec_double ("eta", NULL, NULL, -1, G_MAXDOUBLE, -1,
                                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, props);
}

static void
burrow_convert_job_init (BurrowConvertJob *self)
{
  g_mutex_init (&self->lock);
  self->cancellable = g_cancellable_new ();
  self->eta = -1;
}

BurrowConvertJob *
burrow_convert_job_new (const char                 *dir,
                        const char                 *out_dir,
                        const BurrowConvertOptions *options)
{
  BurrowConvertJob *self;
  const char *delay = g_getenv ("BURROW_TEST_CONVERT_DELAY_US");

  g_return_val_if_fail (dir != NULL && out_dir != NULL && options != NULL, NULL);

  self = g_object_new (BURROW_TYPE_CONVERT_JOB, NULL);
  self->delay_us[BURROW_CONVERT_STAGE_WRITING] = delay != NULL ? strtoul (delay, NULL, 10) : 0;
  self->dir = g_strdup (dir);
  self->out_dir = g_strdup (out_dir);
  self->options = *options;
  return self;
}
