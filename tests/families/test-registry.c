/* The family registry: every descriptor is complete and found by its names, aliases match
 * on model_type and architecture, saved-file numbers are distinct (and the first families
 * keep theirs), and a checkpoint that spells DeepSeek-V3 as kimi_k2 opens as DeepSeek-V3. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/checkpoint.h"
#include "families/family.h"
#include "text/chat-template.h"

static void
test_descriptors (void)
{
  gsize n;
  const BwFamily *const *all = bw_family_list (&n);
  g_autofree char *names = bw_family_names ();

  g_assert_cmpuint (n, >=, 3);
  for (gsize i = 0; i < n; i++)
    {
      const BwFamily *f = all[i];
      g_assert_nonnull (f->name);
      g_assert_nonnull (f->display_name);
      g_assert_nonnull (f->ops);
      g_assert_nonnull (f->experts_prefix);
      /* gate and down always; up may be fused into gate's tensor (gpt-oss's gate_up) */
      g_assert_nonnull (f->expert_names[0]);
      g_assert_nonnull (f->expert_names[2]);
      g_assert_true (f->expert_names[1] != NULL || f->fused_experts);
      g_assert_true (bw_family_lookup (f->name, NULL) == f);
      g_assert_true (bw_family_by_name (f->name) == f);
      g_assert_cmpstr (burrow_family_display_name (f->name), ==, f->display_name);
      g_assert_nonnull (strstr (names, f->name));
      g_assert_cmpuint (bw_family_id (f), !=, 0);
      for (gsize j = 0; j < i; j++)
        {
          g_assert_cmpstr (all[j]->name, !=, f->name);
          g_assert_cmpuint (bw_family_id (all[j]), !=, bw_family_id (f));
        }
      if (f->chat != NULL)
        g_assert_nonnull (f->chat->render);
    }
  /* Saved sessions and states name these families by these numbers. */
  g_assert_cmpuint (bw_family_id (bw_family_by_name ("kimi_linear")), ==, 1);
  g_assert_cmpuint (bw_family_id (bw_family_by_name ("kimi_k3")), ==, 2);
  g_assert_cmpuint (bw_family_id (bw_family_by_name ("glm_moe_dsa")), ==, 3);
}

static void
test_lookup (void)
{
  const BwFamily *ds = bw_family_by_name ("deepseek_v3");

  g_assert_nonnull (ds);
  g_assert_true (bw_family_lookup ("kimi_k2", "DeepseekV3ForCausalLM") == ds);
  g_assert_null (bw_family_lookup ("kimi_k2", "SomethingElse"));
  g_assert_true (bw_family_by_name ("kimi_k2") == ds);
  g_assert_true (bw_family_by_name ("glm52") == bw_family_by_name ("glm_moe_dsa"));
  g_assert_null (bw_family_lookup ("glm52", NULL));
  g_assert_null (bw_family_lookup ("llama", NULL));
  g_assert_null (bw_family_lookup (NULL, NULL));
  g_assert_null (bw_family_by_name ("llama"));
  g_assert_cmpstr (burrow_family_display_name ("llama"), ==, "llama");
  g_assert_cmpuint (bw_family_id (NULL), ==, 0);
}

/* The DeepSeek-V3 oracle with model_type kimi_k2, as Kimi K2's release spells it. */
static void
test_alias_checkpoint (void)
{
  static const char *const files[] = { "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors",
                                       "model.safetensors.index.json" };
  g_autofree char *src = g_build_filename (BURROW_ORACLES, "deepseek_v3", NULL);
  g_autofree char *cfg_path = g_build_filename (src, "config.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *dir = bw_test_tmp_dir ("bw-registry-XXXXXX");

  g_assert_no_error (error);
  g_assert_true (json_parser_load_from_file (parser, cfg_path, &error));
  g_assert_no_error (error);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  json_object_set_string_member (root, "model_type", "kimi_k2");
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *out = g_build_filename (dir, "config.json", NULL);
  json_generator_set_root (gen, json_parser_get_root (parser));
  g_assert_true (json_generator_to_file (gen, out, &error));
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *from = g_build_filename (src, files[i], NULL);
      g_autofree char *to = g_build_filename (dir, files[i], NULL);
      g_assert_cmpint (symlink (from, to), ==, 0);
    }
  {
    g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, bw_families (), &error);
    g_assert_no_error (error);
    g_assert_cmpstr (ck->family->name, ==, "deepseek_v3");
  }
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *p = g_build_filename (dir, files[i], NULL);
      g_unlink (p);
    }
  g_unlink (out);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/registry/descriptors", test_descriptors);
  g_test_add_func ("/registry/lookup", test_lookup);
  g_test_add_func ("/registry/alias-checkpoint", test_alias_checkpoint);
  return g_test_run ();
}
