/* Shared burrow-cli pieces (see cli-common.h). */
#include "cli-common.h"

#include <stdio.h>
#include <string.h>

#include "burrow-config.h"

gboolean
bw_cli_resolve_model (BwCliModelArgs *a, GError **error)
{
  if (a->model_dir != NULL)
    return TRUE;
  a->model_dir = burrow_demo_model_dir ();
  if (a->model_dir == NULL)
    {
      const char *env = g_getenv ("BURROW_DEMO_MODEL");
      if (env != NULL && env[0] != '\0')
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                     "no --model given and BURROW_DEMO_MODEL=%s has no config.json", env);
      else
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                     "no --model given and no demo model at %s/demo-model or "
                     "%s/data/demo-model", BURROW_PKGDATADIR, BURROW_SOURCE_DIR);
      return FALSE;
    }
  fprintf (stderr, "burrow-cli: no --model given, using the demo model at %s\n", a->model_dir);
  return TRUE;
}

gboolean
bw_cli_parse_size (const char *text, guint64 *out, GError **error)
{
  static const char units[] = "KMGT";
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  guint64 mul = 1;

  if (end != text && *end != '\0')
    {
      const char *u = strchr (units, g_ascii_toupper (*end));
      mul = u != NULL ? (guint64) 1 << (10 * (u - units + 1)) : 0;
      if (mul && end[1] && g_ascii_strcasecmp (end + 1, "B") && g_ascii_strcasecmp (end + 1, "iB"))
        mul = 0;
    }
  if (end == text || mul == 0 || !(v >= 0) || v * (double) mul > 1e18)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "'%s' is not a size (e.g. 8G, 512M or a byte count)", text);
      return FALSE;
    }
  *out = (guint64) (v * (double) mul);
  return TRUE;
}

gboolean
bw_cli_parse_ids (const char *text, GArray *out, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  guint start = out->len;

  for (int i = 0; parts[i]; i++)
    {
      char *s = g_strstrip (parts[i]);
      gint64 v;
      if (!g_ascii_string_to_signed (s, 10, 0, G_MAXINT32, &v, NULL))
        {
          g_array_set_size (out, start);
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "'%s' is not a token id (expected comma-separated non-negative integers)",
                       s);
          return FALSE;
        }
      gint32 id = (gint32) v;
      g_array_append_val (out, id);
    }
  if (out->len == start)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "no token ids given");
      return FALSE;
    }
  return TRUE;
}

int
bw_cli_argmax (const float *v, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

int
bw_cli_fail (int status, const char *prefix, const char *message)
{
  g_autofree char *line = g_strdup (message);
  g_strdelimit (line, "\r\n", ' ');
  fprintf (stderr, "%s: %s\n", prefix, line);
  return status;
}

char *
bw_cli_read_line (gboolean prompt)
{
  if (prompt)
    {
      fputs ("> ", stderr);
      fflush (stderr);
    }
  GString *line = g_string_new (NULL);
  int c;
  while ((c = getchar ()) != EOF && c != '\n')
    g_string_append_c (line, (char) c);
  if (c == EOF && line->len == 0)
    return g_string_free (line, TRUE), NULL;
  if (line->len && line->str[line->len - 1] == '\r')
    g_string_truncate (line, line->len - 1);
  return g_string_free (line, FALSE);
}

