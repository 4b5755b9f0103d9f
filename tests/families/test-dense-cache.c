/* The requantised dense part on disk (model/dense-cache.h) and --dense-bits auto
 * (model/dense-auto.h), on the Kimi Linear oracle fixture:
 *   round-trip: the second load reads the file and gives the same logits, bit for bit, as
 *               the first (which converted and wrote it) and as a load without the cache;
 *   damaged:    a flipped byte, a cut file and a foreign file are ignored, the load
 *               converts again and rewrites the file, which the next load reads;
 *   trim:       the folder is kept under its bound by removing the least recently used;
 *   auto:       under a small (fake) memory room auto holds the dense part as int8 for
 *               memory; where the experts stream, as int8 for speed on a CPU that sums
 *               int8 in integers; with room for every weight as stored (K3's fixture). */
#include <glib/gstdio.h>
#include <string.h>
#include <utime.h>

#include "burrow-engine.h"
#include "kernels/dispatch.h"
#include "model/dense-cache.h"
#include "model/model.h"
#include "quant/intq.h"
#include "stream/mem-limits.h"
#include "tmp-dir.h"
#include "families/family.h"

#define N_IDS 8

static char *
fixture_of (const char *family)
{
  char *dir = g_build_filename (BURROW_ORACLES, family, NULL);
  g_assert_true (g_file_test (dir, G_FILE_TEST_IS_DIR));
  return dir;
}

static void
remove_tree (const char *path)
{
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", path);
  g_assert_true (g_spawn_command_line_sync (rm, NULL, NULL, NULL, NULL));
}

static BwModel *
load_family (const char *family, const char *cache_dir, int dense_bits, guint64 max_bytes,
             guint64 ram_budget)
{
  g_autofree char *dir = fixture_of (family);
  g_autoptr (GError) error = NULL;
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.dense_bits = dense_bits;
  opts.dense_cache_dir = cache_dir;
  opts.dense_cache_max_bytes = max_bytes;
  opts.store.ram_budget = ram_budget;
  BwModel *model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static BwModel *
load (const char *cache_dir, int dense_bits, guint64 max_bytes)
{
  return load_family ("kimi_linear", cache_dir, dense_bits, max_bytes, 0);
}

/* Logits of every position of one forward over ids 1..N_IDS. */
static float *
logits_of (BwModel *model, gsize *bytes)
{
  int32_t ids[N_IDS];
  for (int i = 0; i < N_IDS; i++)
    ids[i] = i + 1;
  *bytes = (gsize) N_IDS * (gsize) bw_model_vocab_size (model) * sizeof (float);
  float *out = g_malloc (*bytes);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GError) error = NULL;
  g_assert_true (bw_model_forward (model, state, ids, N_IDS, out, TRUE, NULL, &error));
  g_assert_no_error (error);
  return out;
}

/* Loads with the cache in dir, checks its status starts with `status` (and, for a
 * rebuild, ends with "written"), and checks the logits against want. */
static void
load_and_check (const char *dir, const char *status, const float *want, gsize want_bytes)
{
  g_autoptr (BwModel) model = load (dir, 8, 0);
  const char *got = bw_model_dense_cache_status (model);
  g_test_message ("dense cache: %s", got);
  g_assert_nonnull (got);
  g_assert_true (g_str_has_prefix (got, status));
  if (g_str_has_prefix (status, "ignored"))
    g_assert_true (g_str_has_suffix (got, "written"));
  gsize n;
  g_autofree float *logits = logits_of (model, &n);
  g_assert_cmpmem (logits, n, want, want_bytes);
}

/* The one .bwdense file in dir. */
static char *
cache_file (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  char *found = NULL;
  g_assert_nonnull (d);
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".bwdense"))
      {
        g_assert_null (found);
        found = g_build_filename (dir, n, NULL);
      }
  g_assert_nonnull (found);
  return found;
}

static void
test_round_trip_and_damage (void)
{
  g_autofree char *tmp = bw_test_tmp_dir ("bw-dense-cache-XXXXXX");
  g_autofree char *dir = g_build_filename (tmp, "dense", NULL);
  gsize n_plain, n_first;

  /* the reference: int8 without any cache */
  g_autoptr (BwModel) plain = load ("", 8, 0);
  g_assert_null (bw_model_dense_cache_status (plain));
  g_autofree float *want = logits_of (plain, &n_plain);
  g_clear_pointer (&plain, bw_model_free);
  {
    g_autoptr (BwModel) first = load (dir, 8, 0);
    g_assert_cmpstr (bw_model_dense_cache_status (first), ==, "written");
    g_autofree float *got = logits_of (first, &n_first);
    g_assert_cmpmem (got, n_first, want, n_plain);
  }
  load_and_check (dir, "read", want, n_plain);
  g_autofree char *file = cache_file (dir);

  /* a flipped byte in the last matrix */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (file, &bytes, &len, NULL));
  bytes[len - 3] ^= 0x40;
  g_assert_true (g_file_set_contents (file, bytes, (gssize) len, NULL));
  load_and_check (dir, "ignored", want, n_plain);
  load_and_check (dir, "read", want, n_plain);
  /* cut short */
  g_assert_true (g_file_set_contents (file, bytes, (gssize) (len / 2), NULL));
  load_and_check (dir, "ignored", want, n_plain);
  load_and_check (dir, "read", want, n_plain);
  /* not a cache file at all */
  g_assert_true (g_file_set_contents (file, "hello", 5, NULL));
  load_and_check (dir, "ignored", want, n_plain);
  load_and_check (dir, "read", want, n_plain);
  /* as stored: no cache */
  g_autoptr (BwModel) stored = load (dir, 0, 0);
  g_assert_null (bw_model_dense_cache_status (stored));
  remove_tree (tmp);
}

static void
put_old_file (const char *dir, const char *name, gsize size, time_t age)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *data = g_malloc0 (size);
  g_assert_true (g_file_set_contents (path, data, (gssize) size, NULL));
  struct utimbuf t = { time (NULL) - age, time (NULL) - age };
  g_assert_cmpint (utime (path, &t), ==, 0);
}

static void
test_trim (void)
{
  g_autofree char *tmp = bw_test_tmp_dir ("bw-dense-trim-XXXXXX");
  g_autofree char *dir = g_build_filename (tmp, "dense", NULL);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  const gsize MB = 1 << 20;
  put_old_file (dir, "oldest-q8.bwdense", MB, 300);
  put_old_file (dir, "older-q8.bwdense", MB, 200);
  put_old_file (dir, "newer-q8.bwdense", MB, 100);
  put_old_file (dir, "stale-q8.bwdense.tmp-1", MB, 7200);
  put_old_file (dir, "unrelated.txt", MB, 400);
  {
    /* room for the new file and one of the old ones */
    g_autoptr (BwModel) model = load (dir, 8, MB + MB / 2);
    g_assert_cmpstr (bw_model_dense_cache_status (model), ==, "written");
  }
  const char *gone[] = { "oldest-q8.bwdense", "older-q8.bwdense", "stale-q8.bwdense.tmp-1" };
  const char *kept[] = { "newer-q8.bwdense", "unrelated.txt" };
  for (gsize i = 0; i < G_N_ELEMENTS (gone); i++)
    {
      g_autofree char *p = g_build_filename (dir, gone[i], NULL);
      g_assert_false (g_file_test (p, G_FILE_TEST_EXISTS));
    }
  for (gsize i = 0; i < G_N_ELEMENTS (kept); i++)
    {
      g_autofree char *p = g_build_filename (dir, kept[i], NULL);
      g_assert_true (g_file_test (p, G_FILE_TEST_EXISTS));
    }
  remove_tree (tmp);
}

/* A fake /proc with `room` bytes available and no other limit. */
static char *
fake_root (guint64 room)
{
  char *root = bw_test_tmp_dir ("bw-dense-root-XXXXXX");
  g_autofree char *proc = g_build_filename (root, "proc", "self", NULL);
  g_assert_cmpint (g_mkdir_with_parents (proc, 0755), ==, 0);
  g_autofree char *meminfo = g_build_filename (root, "proc", "meminfo", NULL);
  g_autofree char *text = g_strdup_printf ("MemTotal:  %" G_GUINT64_FORMAT " kB\n"
                                           "MemAvailable:  %" G_GUINT64_FORMAT " kB\n",
                                           room / 512, room / 1024);
  g_assert_true (g_file_set_contents (meminfo, text, -1, NULL));
  return root;
}

static int
auto_bits_with_room (guint64 room, guint64 ram_budget, BwDenseReason *why)
{
  g_autofree char *root = fake_root (room);
  bw_mem_limits_set_default_root (root);
  /* K3's fixture: two tokens' experts are half of them, so a useful cache may still leave
   * the experts streaming */
  g_autoptr (BwModel) model = load_family ("kimi_k3", "", BW_DENSE_BITS_AUTO, 0, ram_budget);
  bw_mem_limits_set_default_root (NULL);
  remove_tree (root);
  return bw_model_dense_bits (model, why);
}

static void
test_auto (void)
{
  g_autofree char *dir = fixture_of ("kimi_k3");
  BurrowModelInfo info;
  g_autoptr (GError) error = NULL;
  g_assert_true (burrow_inspect (dir, &info, &error));
  /* With a small room the store's default budget is about half of what the dense part
   * leaves; a useful cache is two tokens' experts. This room leaves that much beside the
   * int8 dense part, not beside the stored one. */
  guint64 useful = MIN (2 * info.read_per_token, info.expert_bytes);
  guint64 room = info.resident_bytes_q8 + 2 * useful
                 + (info.resident_bytes - info.resident_bytes_q8) / 2;
  g_test_message ("dense %" G_GUINT64_FORMAT " B as stored, %" G_GUINT64_FORMAT
                  " B as int8, useful cache %" G_GUINT64_FORMAT " B, room %" G_GUINT64_FORMAT
                  " B", info.resident_bytes, info.resident_bytes_q8, useful, room);
  g_assert_cmpuint (room / 1024 * 1024, >=, info.resident_bytes_q8 + 2 * useful + 16);
  /* A room the model does not fit in, with a useful cache of half the experts given: the
   * experts stream. */
  g_assert_cmpuint (useful, <, info.expert_bytes);
  guint64 streaming = info.resident_bytes + info.expert_bytes - 4096;
  guint64 half = useful;
  burrow_model_info_clear (&info);

  BwDenseReason why = BW_DENSE_AS_ASKED;
  g_assert_cmpint (auto_bits_with_room (room, 0, &why), ==, 8);
  g_assert_cmpint (why, ==, BW_DENSE_FOR_MEMORY);
  /* int8 for speed only where this CPU sums int8 products in integers (AVX2 and up) */
  gboolean int8_fast = bw_kernels_int_sums (BW_ISA_AUTO, BW_FMT_Q8, bw_intq_dense_group (8));
  g_assert_true (int8_fast || !bw_isa_supported (BW_ISA_AVX2));
  g_assert_cmpint (auto_bits_with_room (streaming, half, &why), ==, int8_fast ? 8 : 0);
  g_assert_cmpint (why, ==, int8_fast ? BW_DENSE_FOR_SPEED : BW_DENSE_AS_ASKED);
  /* the same small cache in a room the whole model fits in (the experts then come from the
   * page cache, not the disk): as stored */
  g_assert_cmpint (auto_bits_with_room ((guint64) 64 << 30, half, &why), ==, 0);
  g_assert_cmpint (why, ==, BW_DENSE_AS_ASKED);
  /* every expert fits beside the stored dense part: as stored */
  g_assert_cmpint (auto_bits_with_room ((guint64) 64 << 30, 0, &why), ==, 0);
  g_assert_cmpint (why, ==, BW_DENSE_AS_ASKED);
  /* the real machine has room for a 366 kB checkpoint: as stored, token-exact */
  g_autoptr (BwModel) model = load_family ("kimi_k3", "", BW_DENSE_BITS_AUTO, 0, 0);
  g_assert_cmpint (bw_model_dense_bits (model, &why), ==, 0);
  g_assert_cmpint (why, ==, BW_DENSE_AS_ASKED);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dense-cache/round-trip-and-damage", test_round_trip_and_damage);
  g_test_add_func ("/dense-cache/trim", test_trim);
  g_test_add_func ("/dense-cache/auto", test_auto);
  return g_test_run ();
}
