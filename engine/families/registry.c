/* The family registry: every family file's descriptor, bw_<name>_family. Adding a family
 * adds its name to FAMILIES. */
#include "families/family.h"

#include "burrow-engine.h"

#include <string.h>

#include "families/gguf-checkpoint.h"

#define FAMILIES(X) \
  X (kimi_linear) \
  X (kimi_k3) \
  X (glm52) \
  X (deepseek_v3) \
  X (qwen3_moe) \
  X (glm4_moe) \
  X (qwen3_next) \
  X (gpt_oss)

#define DECLARE(name) extern const BwFamily bw_##name##_family;
#define ENTRY(name) &bw_##name##_family,

FAMILIES (DECLARE)

static const BwFamily *const families[] = { FAMILIES (ENTRY) };

const BwFamily *const *
bw_family_list (gsize *n)
{
  *n = G_N_ELEMENTS (families);
  return families;
}

static gboolean
alias_matches (const BwFamilyName *a, const char *model_type, const char *architecture)
{
  return g_strcmp0 (a->model_type, model_type) == 0
         && (a->architecture == NULL || g_strcmp0 (a->architecture, architecture) == 0);
}

const BwFamily *
bw_family_lookup (const char *model_type, const char *architecture)
{
  if (model_type == NULL)
    return NULL;
  for (gsize i = 0; i < G_N_ELEMENTS (families); i++)
    {
      const BwFamily *f = families[i];
      if (strcmp (f->name, model_type) == 0)
        return f;
      for (const BwFamilyName *a = f->aliases; a != NULL && a->model_type != NULL; a++)
        if (alias_matches (a, model_type, architecture))
          return f;
    }
  return NULL;
}

const BwFamily *
bw_family_by_name (const char *name)
{
  if (name == NULL)
    return NULL;
  for (gsize i = 0; i < G_N_ELEMENTS (families); i++)
    {
      const BwFamily *f = families[i];
      if (strcmp (f->name, name) == 0 || g_strcmp0 (f->short_name, name) == 0)
        return f;
      for (const BwFamilyName *a = f->aliases; a != NULL && a->model_type != NULL; a++)
        if (strcmp (a->model_type, name) == 0)
          return f;
    }
  return NULL;
}

char *
bw_family_names (void)
{
  GString *s = g_string_new (NULL);
  gsize n = G_N_ELEMENTS (families);
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                            families[i]->name);
  return g_string_free (s, FALSE);
}

const BwFamilyLookup *
bw_families (void)
{
  static const BwFamilyLookup lookup = {
    bw_family_lookup, bw_family_names, bw_gguf_checkpoint_open,
  };
  return &lookup;
}

const char *
burrow_family_display_name (const char *family)
{
  const BwFamily *f = bw_family_by_name (family);
  return f != NULL ? f->display_name : family;
}
