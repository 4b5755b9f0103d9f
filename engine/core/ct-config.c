/* compressed-tensors quantization_config: parsing, validation and module matching. */
#include "core/ct-config.h"

#include <stdarg.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/json-load.h"

static gboolean fail (GError **error, int code, const char *file, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, int code, const char *file, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s: quantization_config.%s", file, msg);
  return FALSE;
}

static JsonNode *
member (JsonObject *o, const char *name)
{
  JsonNode *n = o && json_object_has_member (o, name) ? json_object_get_member (o, name) : NULL;
  return bw_json_node_is_missing (n) ? NULL : n;
}

static const char *
member_string (JsonObject *o, const char *name)
{
  return bw_json_node_get_string (member (o, name));
}

gboolean
bw_ct_config_is (JsonObject *q)
{
  return g_strcmp0 (member_string (q, "quant_method"), "compressed-tensors") == 0;
}

/* A list of strings (`where` names it in errors) split into plain names and compiled
 * "re:" patterns; either output may be NULL to refuse nothing but keep nothing. */
static gboolean
string_list (JsonNode *node, const char *file, const char *where, char ***plain,
             GRegex ***re, GError **error)
{
  JsonArray *a = bw_json_node_get_array (node);
  guint n = a ? json_array_get_length (a) : 0;
  GPtrArray *names = g_ptr_array_new_null_terminated (n, g_free, TRUE);
  GPtrArray *pats = g_ptr_array_new_null_terminated (n, (GDestroyNotify) g_regex_unref, TRUE);

  if (node != NULL && a == NULL)
    goto bad;
  for (guint i = 0; i < n; i++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (a, i));
      if (s == NULL)
        goto bad;
      if (g_str_has_prefix (s, "re:"))
        {
          g_autoptr (GError) rx_error = NULL;
          GRegex *rx = g_regex_new (s + 3, G_REGEX_OPTIMIZE, G_REGEX_MATCH_ANCHORED, &rx_error);
          if (rx == NULL)
            {
              fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s: pattern \"%s\" is invalid: %s",
                    where, s, rx_error->message);
              g_ptr_array_unref (names);
              g_ptr_array_unref (pats);
              return FALSE;
            }
          g_ptr_array_add (pats, rx);
        }
      else
        g_ptr_array_add (names, g_strdup (s));
    }
  *plain = (char **) g_ptr_array_free (names, FALSE);
  *re = (GRegex **) g_ptr_array_free (pats, FALSE);
  return TRUE;

bad:
  g_ptr_array_unref (names);
  g_ptr_array_unref (pats);
  return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s must be a list of strings", where);
}

/* A key that must be absent, null or false: a feature Burrow does not run (`where`: the
 * object's path, NULL at the top). */
static gboolean
must_be_off (JsonObject *o, const char *key, const char *file, const char *where, GError **error)
{
  JsonNode *n = member (o, key);
  if (n == NULL || (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_BOOLEAN
                    && !json_node_get_boolean (n)))
    return TRUE;
  return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file, "%s%s%s is set; it is not supported",
               where ? where : "", where ? "." : "", key);
}

static gboolean
parse_weights (JsonObject *w, const char *file, const char *where, BwCtGroup *g, GError **error)
{
  gint64 bits = 0, gsize_ = 0;
  const char *type = member_string (w, "type"), *strategy = member_string (w, "strategy");
  JsonNode *sym = member (w, "symmetric");

  if (w == NULL)
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s must be an object", where);
  if (g_strcmp0 (type, "int") != 0)
    return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file,
                 "%s.type \"%s\" is not supported (\"int\")", where, type ? type : "(missing)");
  if (!bw_json_node_get_int (member (w, "num_bits"), &bits) || (bits != 4 && bits != 8))
    return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file,
                 "%s.num_bits must be 4 or 8", where);
  if (sym != NULL && !(JSON_NODE_HOLDS_VALUE (sym)
                       && json_node_get_value_type (sym) == G_TYPE_BOOLEAN))
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s.symmetric must be a boolean", where);
  if (sym == NULL || !json_node_get_boolean (sym))
    return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file,
                 "%s.symmetric is false: asymmetric weights (zero points) are not supported", where);
  if (!must_be_off (w, "actorder", file, where, error)
      || !must_be_off (w, "dynamic", file, where, error)
      || !must_be_off (w, "block_structure", file, where, error))
    return FALSE;
  g->num_bits = (int) bits;
  if (g_strcmp0 (strategy, "channel") == 0)
    {
      g->group = 0;
      return TRUE;
    }
  if (g_strcmp0 (strategy, "group") != 0)
    return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file,
                 "%s.strategy \"%s\" is not supported (\"group\" or \"channel\")", where,
                 strategy ? strategy : "(missing)");
  if (!bw_json_node_get_int (member (w, "group_size"), &gsize_) || gsize_ < 1 || gsize_ > (1 << 20))
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file,
                 "%s.group_size must be a positive integer", where);
  g->group = (int) gsize_;
  return TRUE;
}

static gboolean
parse_group (const char *name, JsonNode *node, const char *file, BwCtGroup *g, GError **error)
{
  JsonObject *o = bw_json_node_get_object (node);
  g_autofree char *where = g_strdup_printf ("config_groups.%s", name);
  g_autofree char *wwhere = g_strdup_printf ("%s.weights", where);
  g_autofree char *twhere = g_strdup_printf ("%s.targets", where);
  char **plain = NULL;
  GRegex **re = NULL;

  g->name = g_strdup (name);
  if (o == NULL)
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s must be an object", where);
  if (!must_be_off (o, "input_activations", file, where, error)
      || !must_be_off (o, "output_activations", file, where, error)
      || !parse_weights (bw_json_node_get_object (member (o, "weights")), file, wwhere, g, error))
    return FALSE;
  if (member (o, "targets") == NULL)
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file, "%s is missing", twhere);
  if (!string_list (member (o, "targets"), file, twhere, &plain, &re, error))
    return FALSE;
  g->targets = plain;
  g->target_re = re;
  return TRUE;
}

gboolean
bw_ct_config_parse (JsonObject *q, const char *file, BwCtConfig *out, GError **error)
{
  const char *format = member_string (q, "format");
  JsonObject *groups = bw_json_node_get_object (member (q, "config_groups"));

  memset (out, 0, sizeof *out);
  if (g_strcmp0 (format, "pack-quantized") != 0)
    return fail (error, BW_CHECKPOINT_ERROR_UNSUPPORTED, file,
                 "format \"%s\" is not supported (\"pack-quantized\")", format ? format : "(missing)");
  if (!must_be_off (q, "kv_cache_scheme", file, NULL, error))
    return FALSE;
  if (groups == NULL || json_object_get_size (groups) == 0)
    return fail (error, BW_CHECKPOINT_ERROR_CONFIG, file,
                 "config_groups must be an object with at least one group");
  g_autoptr (GList) names = json_object_get_members (groups);
  out->groups = g_new0 (BwCtGroup, g_list_length (names));
  for (GList *l = names; l; l = l->next)
    if (!parse_group (l->data, json_object_get_member (groups, l->data), file,
                      &out->groups[out->n_groups++], error))
      {
        bw_ct_config_clear (out);
        return FALSE;
      }
  if (!string_list (member (q, "ignore"), file, "ignore", &out->ignore, &out->ignore_re, error))
    {
      bw_ct_config_clear (out);
      return FALSE;
    }
  return TRUE;
}

static void
free_regexes (GRegex **re)
{
  for (GRegex **r = re; r && *r; r++)
    g_regex_unref (*r);
  g_free (re);
}

void
bw_ct_config_clear (BwCtConfig *c)
{
  for (int i = 0; i < c->n_groups; i++)
    {
      g_free (c->groups[i].name);
      g_strfreev (c->groups[i].targets);
      free_regexes (c->groups[i].target_re);
    }
  g_free (c->groups);
  g_strfreev (c->ignore);
  free_regexes (c->ignore_re);
  memset (c, 0, sizeof *c);
}

/* Whether a plain name equals module or a pattern matches from its start. */
static gboolean
listed (char **plain, GRegex **re, const char *module, gboolean linear_matches)
{
  for (char **p = plain; p && *p; p++)
    if (strcmp (*p, module) == 0 || (linear_matches && strcmp (*p, "Linear") == 0))
      return TRUE;
  for (GRegex **r = re; r && *r; r++)
    if (g_regex_match (*r, module, G_REGEX_MATCH_ANCHORED, NULL))
      return TRUE;
  return FALSE;
}

char *
bw_ct_config_describe (const BwCtConfig *c)
{
  GString *s = g_string_new ("compressed-tensors pack-quantized: ");
  guint n_ignore = (c->ignore ? g_strv_length (c->ignore) : 0)
                   + (c->ignore_re ? g_strv_length ((char **) c->ignore_re) : 0);

  for (int i = 0; i < c->n_groups; i++)
    {
      const BwCtGroup *g = &c->groups[i];
      g_string_append_printf (s, "%sINT%d symmetric, ", i ? "; " : "", g->num_bits);
      if (g->group > 0)
        g_string_append_printf (s, "groups of %d columns", g->group);
      else
        g_string_append (s, "one scale per row");
      g_string_append_printf (s, ", BF16 scales (%s)", g->name);
    }
  g_string_append_printf (s, "; %u ignore entr%s", n_ignore, n_ignore == 1 ? "y" : "ies");
  return g_string_free (s, FALSE);
}

const BwCtGroup *
bw_ct_config_group_for (const BwCtConfig *c, const char *module)
{
  if (listed (c->ignore, c->ignore_re, module, FALSE))
    return NULL;
  for (int i = 0; i < c->n_groups; i++)
    if (listed (c->groups[i].targets, c->groups[i].target_re, module, TRUE))
      return &c->groups[i];
  return NULL;
}
