/* Hostile and damaged GGUF files, each made from a valid one by patching one field or
 * cutting it short: every one fails with an error that names the file and says what is
 * wrong, and nothing crashes or reads out of bounds (the sanitized build checks that). */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/gguf.h"
#include "gguf-builder.h"
#include "tmp-dir.h"

typedef struct {
  const char *name;
  GgbOptions opts;
  void (*mutate) (GByteArray *b, const GgbLayout *l);
  const char *problem;       /* a phrase the message must hold */
} Hostile;

#define NO_SPLIT .split_no = -1

static void bad_magic (GByteArray *b, const GgbLayout *l) { b->data[0] = 'X'; }
static void version_1 (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->version, 1); }
static void version_4 (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->version, 4); }
static void big_endian (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u32 (b, l->version, 0x03000000);
}
static void huge_tensor_count (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->n_tensors, (guint64) 1 << 40);
}
static void extra_tensor (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->n_tensors, 4); }
static void huge_kv_count (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->n_kv, G_MAXUINT64);
}
static void extra_kv (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->n_kv, 8);
}
static void huge_string (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->arch_len, (guint64) 1 << 62);
}
static void huge_array (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->tokens_count, (guint64) 1 << 61);
}
static void huge_nested_array (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->nested_count, G_MAXUINT64);
}
/* 2^21 empty inner arrays (24 MiB of file): past the budget for arrays inside arrays */
static void many_nested_arrays (GByteArray *b, const GgbLayout *l)
{
  gsize outer = l->nested_count - 12;
  guint count = 1u << 21;
  g_byte_array_set_size (b, (guint) (outer + 8));
  ggb_patch_u64 (b, outer, count);
  g_byte_array_set_size (b, (guint) (outer + 8 + (gsize) count * 12));
  memset (b->data + outer + 8, 0, (gsize) count * 12);
  for (guint i = 0; i < count; i++)
    b->data[outer + 8 + (gsize) i * 12] = 5;    /* each: int32, 0 elements */
}
static void empty_key (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->first_key_len, 0); }
static void bad_utf8_key (GByteArray *b, const GgbLayout *l) { b->data[l->first_key_byte] = 0xff; }
static void unknown_value_type (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u32 (b, l->float_type, 13);
}
static void bad_bool (GByteArray *b, const GgbLayout *l) { b->data[l->flag_value] = 2; }
static void alignment_zero (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->alignment, 0); }
static void alignment_48 (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->alignment, 48); }
static void alignment_64 (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->alignment, 64); }
static void misaligned (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->offset[1], 33); }
static void past_end (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->offset[2], 4096); }
static void offset_wraps (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->offset[2], G_MAXUINT64 - 31);
}
static void overlap (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->offset[2], 160); }
static void same_offset (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->offset[0], 32); }
static void unknown_type (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->type[0], 41); }
static void removed_type (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->type[0], 4); }
static void too_many_dims (GByteArray *b, const GgbLayout *l) { ggb_patch_u32 (b, l->n_dims[2], 5); }
static void partial_block (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->ne0[1], 48); }
static void dims_overflow (GByteArray *b, const GgbLayout *l)
{
  ggb_patch_u64 (b, l->ne0[0], (guint64) 1 << 40);
  ggb_patch_u64 (b, l->ne1[0], (guint64) 1 << 40);
}
static void negative_dim (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->ne0[0], G_MAXUINT64); }
static void bigger_tensor (GByteArray *b, const GgbLayout *l) { ggb_patch_u64 (b, l->ne0[2], 4096); }
static void cut_data (GByteArray *b, const GgbLayout *l) { g_byte_array_set_size (b, b->len - 1); }
static void no_data (GByteArray *b, const GgbLayout *l)
{
  g_byte_array_set_size (b, (guint) l->header_end);
}

static const Hostile cases[] = {
  { "bad-magic", { NO_SPLIT }, bad_magic, "not a GGUF file" },
  { "version-1", { NO_SPLIT }, version_1, "GGUF version 1 is not supported" },
  { "version-4", { NO_SPLIT }, version_4, "GGUF version 4 is not supported" },
  { "big-endian", { NO_SPLIT }, big_endian, "big-endian" },
  { "huge-tensor-count", { NO_SPLIT }, huge_tensor_count, "claims 1099511627776 tensors" },
  { "extra-tensor", { NO_SPLIT }, extra_tensor, "tensor 3" },
  { "huge-kv-count", { NO_SPLIT }, huge_kv_count, "metadata entries" },
  { "extra-kv", { NO_SPLIT }, extra_kv, "the name of tensor 0 claims" },
  { "huge-string", { NO_SPLIT }, huge_string, "more than the" },
  { "huge-array", { NO_SPLIT }, huge_array, "'tokenizer.ggml.tokens' claims 2305843009213693952" },
  { "huge-nested-array", { NO_SPLIT }, huge_nested_array, "'test.nested' claims" },
  { "many-nested-arrays", { NO_SPLIT }, many_nested_arrays,
    "'test.nested' holds more than 1048576 arrays inside arrays" },
  { "empty-key", { NO_SPLIT }, empty_key, "metadata key 0 is 0 bytes long" },
  { "bad-utf8-key", { NO_SPLIT }, bad_utf8_key, "not valid UTF-8" },
  { "unknown-value-type", { NO_SPLIT }, unknown_value_type, "'test.f' has unknown value type 13" },
  { "bad-bool", { NO_SPLIT }, bad_bool, "'test.flag' is a bool stored as 2" },
  { "duplicate-key", { NO_SPLIT, .dup_key = TRUE }, NULL, "'general.architecture' appears twice" },
  { "alignment-zero", { NO_SPLIT }, alignment_zero, "'general.alignment' is 0" },
  { "alignment-48", { NO_SPLIT }, alignment_48, "48 is not a power of two" },
  { "alignment-64", { NO_SPLIT }, alignment_64, "not a multiple of the file's alignment 64" },
  { "misaligned", { NO_SPLIT }, misaligned, "starts at offset 33, not a multiple" },
  { "past-end", { NO_SPLIT }, past_end, "runs past the end" },
  { "offset-wraps", { NO_SPLIT }, offset_wraps, "runs past the end" },
  { "overlap", { NO_SPLIT }, overlap, "overlap" },
  { "same-offset", { NO_SPLIT }, same_offset, "overlap" },
  { "unknown-type", { NO_SPLIT }, unknown_type, "unknown ggml type 41" },
  { "removed-type", { NO_SPLIT }, removed_type, "unknown ggml type 4" },
  { "too-many-dims", { NO_SPLIT }, too_many_dims, "5 dimensions, more than ggml's 4" },
  { "partial-block", { NO_SPLIT }, partial_block, "not a whole number of Q8_0 blocks of 32" },
  { "dims-overflow", { NO_SPLIT }, dims_overflow, "overflows" },
  { "negative-dim", { NO_SPLIT }, negative_dim, "overflows" },
  { "bigger-tensor", { NO_SPLIT }, bigger_tensor, "runs past the end" },
  { "duplicate-tensor", { NO_SPLIT, .dup_tensor = TRUE }, NULL,
    "tensor name 'token_embd.weight' appears twice" },
  { "long-name", { NO_SPLIT, .long_name = TRUE }, NULL, "the name of tensor 1 is 64 bytes" },
  { "cut-data", { NO_SPLIT }, cut_data, "runs past the end" },
  { "no-data", { NO_SPLIT }, no_data, "truncated" },
};

static char *tmp_dir;

static void
assert_fails (const char *path, const char *problem, GError *error)
{
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_true (error->domain == BW_CHECKPOINT_ERROR);
  g_assert_nonnull (strstr (error->message, path));
  if (strstr (error->message, problem) == NULL)
    g_error ("'%s' does not say '%s'", error->message, problem);
}

static void
test_hostile (gconstpointer data)
{
  const Hostile *h = data;
  GgbLayout l;
  g_autoptr (GByteArray) b = ggb_build (&h->opts, &l);
  g_autofree char *base = g_strdup_printf ("%s.gguf", h->name);
  g_autofree char *path = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = NULL;

  if (h->mutate != NULL)
    h->mutate (b, &l);
  path = ggb_write (tmp_dir, base, b->data, b->len);
  g = bw_gguf_open (path, &error);
  g_assert_null (g);
  assert_fails (path, h->problem, error);
}

/* The valid file opens, with every value type read back. */
static void
test_valid (void)
{
  g_autoptr (GByteArray) b = ggb_build (NULL, NULL);
  g_autofree char *path = ggb_write (tmp_dir, "valid.gguf", b->data, b->len);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
  const BwGgufValue *nested, *tokens;
  const BwGgufTensor *t;
  gboolean flag = FALSE;
  double f = 0;
  gsize len;

  g_assert_no_error (error);
  g_assert_cmpint (g->n_tensors, ==, 3);
  g_assert_cmpstr (g->name, ==, "valid");
  g_assert_cmpstr (bw_gguf_architecture (g), ==, "deepseek2");
  g_assert_cmpuint (bw_gguf_n_keys (g), ==, 7);
  g_assert_cmpstr (bw_gguf_key (g, 4), ==, "test.nested");
  g_assert_true (bw_gguf_get_float (g, "test.f", &f, &error));
  g_assert_cmpfloat (f, ==, 0.5);
  g_assert_true (bw_gguf_get_bool (g, "test.flag", &flag, &error));
  g_assert_true (flag);
  tokens = bw_gguf_get_array (g, "tokenizer.ggml.tokens", BW_GGUF_STRING, &error);
  g_assert_nonnull (tokens);
  g_assert_cmpuint (tokens->count, ==, 3);
  g_assert_cmpint (memcmp (bw_gguf_array_string (tokens, 2, &len), "def", 3), ==, 0);
  g_assert_cmpuint (len, ==, 3);
  nested = bw_gguf_get_array (g, "test.nested", BW_GGUF_ARRAY, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (nested->count, ==, 2);
  g_assert_cmpuint (nested->items[0].count, ==, 2);
  g_assert_cmpint (bw_gguf_array_int (&nested->items[0], 1), ==, 2);
  g_assert_cmpint (bw_gguf_array_int (&nested->items[1], 0), ==, -3);
  g_assert_null (bw_gguf_get_array (g, "test.nested", BW_GGUF_STRING, &error));
  g_assert_nonnull (strstr (error->message, "is an array of array, expected an array of "
                                            "string"));
  g_clear_error (&error);

  t = bw_gguf_find (g, "blk.0.ffn_up_exps.weight");
  g_assert_nonnull (t);
  g_assert_cmpint (t->type, ==, BW_GGML_Q8_0);
  g_assert_cmpint (t->n_dims, ==, 3);
  g_assert_cmpint (t->ne[3], ==, 1);
  g_assert_cmpuint (t->nbytes, ==, 136);
  g_assert_cmpuint (t->offset, ==, g->parts[0].data_offset + 32);
  guint8 byte;
  g_assert_true (bw_gguf_read_range (g, t, 135, 1, &byte, &error));
  g_assert_cmpuint (byte, ==, (guint8) ((32 + 135) * 7 + 1));
  g_assert_false (bw_gguf_read_range (g, t, 135, 2, &byte, &error));
  g_assert_nonnull (strstr (error->message, "outside"));
}

/* Cut at every byte of the header and at points in the data: a clear error each time. */
static void
test_truncated_everywhere (void)
{
  GgbLayout l;
  g_autoptr (GByteArray) b = ggb_build (NULL, &l);
  g_autofree char *path = g_build_filename (tmp_dir, "cut.gguf", NULL);

  for (gsize cut = 0; cut < b->len; cut += cut < l.data_offset ? 1 : 37)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (BwGguf) g = NULL;
      g_free (ggb_write (tmp_dir, "cut.gguf", b->data, cut));
      g = bw_gguf_open (path, &error);
      g_assert_null (g);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, path));
      if (strstr (error->message, "truncated") == NULL)
        g_test_message ("cut at %" G_GSIZE_FORMAT ": %s", cut, error->message);
      g_assert_true (strstr (error->message, "truncated") != NULL
                     || strstr (error->message, "runs past the end") != NULL
                     || strstr (error->message, "not a GGUF file") != NULL);
    }
}

/* A header read in pieces: each short read asks for more until the whole header is in. */
static void
test_partial_head (void)
{
  GgbLayout l;
  g_autoptr (GByteArray) b = ggb_build (NULL, &l);
  gsize head_len = 16;
  int rounds = 0;

  for (;;)
    {
      g_autoptr (GBytes) head = g_bytes_new (b->data, head_len);
      g_autoptr (GError) error = NULL;
      guint64 need = 0;
      BwGgufFile *f = bw_gguf_file_parse ("piece.gguf", head, b->len, &need, &error);
      rounds++;
      if (f != NULL)
        {
          g_assert_cmpuint (f->n_tensors, ==, 3);
          bw_gguf_file_free (f);
          break;
        }
      g_assert_nonnull (error);
      g_assert_cmpuint (need, >, head_len);
      g_assert_cmpuint (need, <=, b->len);
      head_len = (gsize) need;
    }
  g_assert_cmpint (rounds, >, 2);
  g_assert_cmpuint (head_len, >=, l.header_end);
}

/* ---- Split sets ---- */

static char *
write_part (const char *dir, const char *prefix, int no, int count, const GgbOptions *o)
{
  g_autoptr (GByteArray) b = ggb_build (o, NULL);
  g_autofree char *base = g_strdup_printf ("%s-%05d-of-%05d.gguf", prefix, no, count);
  return ggb_write (dir, base, b->data, b->len);
}

/* A valid 2-part set in a fresh folder, its tensors named p0. and p1. */
static char *
make_set (const char *name)
{
  g_autofree char *tmpl = g_strdup_printf ("gguf-%s-XXXXXX", name);
  char *dir = bw_test_tmp_dir (tmpl);
  GgbOptions o0 = { .split_no = 0, .split_count = 2, .split_tensors = 6, .name_prefix = "p0." };
  GgbOptions o1 = { .split_no = 1, .split_count = 2, .split_tensors = 6, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 1, 2, &o0));
  g_free (write_part (dir, "m", 2, 2, &o1));
  return dir;
}

static void
test_split_valid (void)
{
  g_autofree char *dir = make_set ("valid");
  g_autofree char *part2 = g_build_filename (dir, "m-00002-of-00002.gguf", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (part2, &error);
  g_autoptr (BwGguf) from_dir = NULL;

  g_assert_no_error (error);
  g_assert_cmpint (g->n_parts, ==, 2);
  g_assert_cmpint (g->n_tensors, ==, 6);
  g_assert_cmpstr (g->name, ==, "m");
  g_assert_cmpint (bw_gguf_find (g, "p1.token_embd.weight")->part, ==, 1);
  from_dir = bw_gguf_open (dir, &error);
  g_assert_no_error (error);
  g_assert_cmpint (from_dir->n_tensors, ==, 6);
}

typedef struct {
  const char *name;
  void (*damage) (const char *dir);
  const char *file;          /* the file the message names */
  const char *problem;
} SplitCase;

static void
missing_part (const char *dir)
{
  g_autofree char *p = g_build_filename (dir, "m-00002-of-00002.gguf", NULL);
  g_assert_cmpint (g_unlink (p), ==, 0);
}

static void
missing_first (const char *dir)
{
  g_autofree char *p = g_build_filename (dir, "m-00001-of-00002.gguf", NULL);
  g_assert_cmpint (g_unlink (p), ==, 0);
}

static void
wrong_count (const char *dir)
{
  GgbOptions o = { .split_no = 1, .split_count = 3, .split_tensors = 6, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 2, 2, &o));
}

static void
wrong_no (const char *dir)
{
  GgbOptions o = { .split_no = 0, .split_count = 2, .split_tensors = 6, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 2, 2, &o));
}

static void
wrong_total (const char *dir)
{
  GgbOptions o = { .split_no = 1, .split_count = 2, .split_tensors = 9, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 2, 2, &o));
}

static void
total_disagrees (const char *dir)
{
  GgbOptions o0 = { .split_no = 0, .split_count = 2, .split_tensors = 7, .name_prefix = "p0." };
  GgbOptions o1 = { .split_no = 1, .split_count = 2, .split_tensors = 7, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 1, 2, &o0));
  g_free (write_part (dir, "m", 2, 2, &o1));
}

static void
same_tensor_twice (const char *dir)
{
  GgbOptions o = { .split_no = 1, .split_count = 2, .split_tensors = 6, .name_prefix = "p0." };
  g_free (write_part (dir, "m", 2, 2, &o));
}

static void
no_split_keys (const char *dir)
{
  GgbOptions o = { .split_no = -1, .name_prefix = "p1." };
  g_free (write_part (dir, "m", 2, 2, &o));
}

static void
damaged_part (const char *dir)
{
  g_autofree char *p = g_build_filename (dir, "m-00002-of-00002.gguf", NULL);
  g_assert_cmpint (truncate (p, 100), ==, 0);
}

static const SplitCase split_cases[] = {
  { "missing-part", missing_part, "m-00002-of-00002.gguf", "part 2 of the 2-part set is missing" },
  { "missing-first", missing_first, "m-00001-of-00002.gguf", "part 1 of the 2-part set is missing" },
  { "wrong-count", wrong_count, "m-00002-of-00002.gguf", "says it is part 2 of 3" },
  { "wrong-no", wrong_no, "m-00002-of-00002.gguf", "says it is part 1 of 2" },
  { "wrong-total", wrong_total, "m-00002-of-00002.gguf", "split.tensors.count is 9" },
  { "total-disagrees", total_disagrees, "m-00001-of-00002.gguf", "hold 6 tensors but" },
  { "same-tensor-twice", same_tensor_twice, "m-00002-of-00002.gguf",
    "'p0.token_embd.weight' is also in an earlier part" },
  { "no-split-keys", no_split_keys, "m-00002-of-00002.gguf", "'split.count' is missing" },
  { "damaged-part", damaged_part, "m-00002-of-00002.gguf", "truncated" },
};

static void
test_split_hostile (gconstpointer data)
{
  const SplitCase *c = data;
  g_autofree char *dir = make_set (c->name);
  g_autofree char *file = g_build_filename (dir, c->file, NULL);
  const char *opens[] = { "m-00001-of-00002.gguf", "m-00002-of-00002.gguf", "" };

  c->damage (dir);
  for (gsize k = 0; k < G_N_ELEMENTS (opens); k++)
    {
      g_autofree char *path = g_build_filename (dir, opens[k], NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (BwGguf) g = NULL;
      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        continue;
      g = bw_gguf_open (path, &error);
      g_assert_null (g);
      assert_fails (file, c->problem, error);
    }
}

/* A part renamed to a plain name cannot find its siblings, and says so. */
static void
test_split_renamed (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("gguf-renamed-XXXXXX");
  GgbOptions o = { .split_no = 0, .split_count = 3, .split_tensors = 9 };
  g_autoptr (GByteArray) b = ggb_build (&o, NULL);
  g_autofree char *path = ggb_write (dir, "model.gguf", b->data, b->len);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);

  g_assert_null (g);
  assert_fails (path, "is part 1 of a 3-part split set, but its name is not", error);
}

static void
test_folders (void)
{
  g_autofree char *empty = bw_test_tmp_dir ("gguf-empty-XXXXXX");
  g_autofree char *two = make_set ("two");
  g_autoptr (GByteArray) b = ggb_build (NULL, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (empty, &error);

  g_assert_null (g);
  assert_fails (empty, "holds no .gguf file", error);
  g_clear_error (&error);
  g_free (ggb_write (two, "other.gguf", b->data, b->len));
  g = bw_gguf_open (two, &error);
  g_assert_null (g);
  assert_fails (two, "holds 2 GGUF models (m, other.gguf)", error);
  g_assert_false (bw_gguf_is_gguf_path (empty));
  g_assert_true (bw_gguf_is_gguf_path (two));
  g_assert_true (bw_gguf_is_gguf_path ("/nonexistent/x.gguf"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = bw_test_tmp_dir ("gguf-hostile-XXXXXX");
  g_test_add_func ("/gguf-hostile/valid", test_valid);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/gguf-hostile/file/%s", cases[i].name);
      g_test_add_data_func (name, &cases[i], test_hostile);
    }
  g_test_add_func ("/gguf-hostile/truncated-everywhere", test_truncated_everywhere);
  g_test_add_func ("/gguf-hostile/partial-head", test_partial_head);
  g_test_add_func ("/gguf-hostile/split/valid", test_split_valid);
  for (gsize i = 0; i < G_N_ELEMENTS (split_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/gguf-hostile/split/%s", split_cases[i].name);
      g_test_add_data_func (name, &split_cases[i], test_split_hostile);
    }
  g_test_add_func ("/gguf-hostile/split/renamed", test_split_renamed);
  g_test_add_func ("/gguf-hostile/folders", test_folders);
  return g_test_run ();
}
