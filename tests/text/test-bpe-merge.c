/* The heap-based merge against tiktoken's own algorithm (rescan every pair, merge the
 * lowest rank, leftmost on ties), written out plainly here, on random rank tables. */
#include <string.h>

#include "text/bpe-merge.h"
#include "text/byte-map.h"

static gint32
rank_of (gconstpointer model, const guint8 *piece, const BwBpeSymbol *left,
         const BwBpeSymbol *right, gint32 *merged_id)
{
  gint32 r = bw_byte_map_lookup (model, piece + left->start, (gsize) (right->end - left->start));

  *merged_id = r;
  return r;
}

/* tiktoken's byte_pair_merge, quadratic and obviously right. */
static void
naive_merge (const BwByteMap *ranks, const guint8 *piece, gsize n, GArray *out)
{
  g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gsize));

  for (gsize i = 0; i <= n; i++)
    g_array_append_val (starts, i);
  for (;;)
    {
      gint32 best = -1;
      guint at = 0;
      for (guint i = 0; i + 2 < starts->len; i++)
        {
          gsize a = g_array_index (starts, gsize, i), c = g_array_index (starts, gsize, i + 2);
          gint32 r = bw_byte_map_lookup (ranks, piece + a, c - a);
          if (r >= 0 && (best < 0 || r < best))
            {
              best = r;
              at = i;
            }
        }
      if (best < 0)
        break;
      g_array_remove_index (starts, at + 1);
    }
  for (guint i = 0; i + 1 < starts->len; i++)
    {
      gsize a = g_array_index (starts, gsize, i), b = g_array_index (starts, gsize, i + 1);
      gint32 r = bw_byte_map_lookup (ranks, piece + a, b - a);
      g_array_append_val (out, r);
    }
}

static void
test_matches_naive (void)
{
  GRand *rand = g_rand_new_with_seed (1234);
  BwBpeScratch scratch;

  bw_bpe_scratch_init (&scratch);
  for (int table = 0; table < 40; table++)
    {
      g_autoptr (BwByteMap) ranks = bw_byte_map_new (64);
      gint32 byte_ids[256];
      int alphabet = g_rand_int_range (rand, 2, 5);
      gint32 next = 0;

      for (int b = 0; b < 256; b++)
        byte_ids[b] = -1;
      for (int b = 0; b < alphabet; b++)
        {
          guint8 c = (guint8) ('a' + b);
          bw_byte_map_insert (ranks, &c, 1, next);
          byte_ids[c] = next++;
        }
      /* Random multi-byte tokens, ranks in random order of insertion. */
      for (int k = 0; k < 60; k++)
        {
          guint8 tok[6];
          int len = g_rand_int_range (rand, 2, 7);
          for (int i = 0; i < len; i++)
            tok[i] = (guint8) ('a' + g_rand_int_range (rand, 0, alphabet));
          if (bw_byte_map_insert (ranks, tok, (gsize) len, next))
            next++;
        }
      for (int trial = 0; trial < 50; trial++)
        {
          g_autoptr (GArray) fast = g_array_new (FALSE, FALSE, sizeof (gint32));
          g_autoptr (GArray) slow = g_array_new (FALSE, FALSE, sizeof (gint32));
          guint8 piece[64];
          gsize n = (gsize) g_rand_int_range (rand, 1, 64);

          for (gsize i = 0; i < n; i++)
            piece[i] = (guint8) ('a' + g_rand_int_range (rand, 0, alphabet));
          g_assert_true (bw_bpe_merge (&scratch, piece, n, byte_ids, rank_of, ranks, fast));
          naive_merge (ranks, piece, n, slow);
          g_assert_cmpmem (fast->data, fast->len * sizeof (gint32), slow->data,
                           slow->len * sizeof (gint32));
        }
    }
  bw_bpe_scratch_clear (&scratch);
  g_rand_free (rand);
}

/* A byte with no token stays a lone symbol of id -1 and is reported. */
static void
test_missing_byte (void)
{
  g_autoptr (BwByteMap) ranks = bw_byte_map_new (4);
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (gint32));
  gint32 byte_ids[256];
  BwBpeScratch scratch;

  for (int b = 0; b < 256; b++)
    byte_ids[b] = -1;
  bw_byte_map_insert (ranks, "a", 1, 0);
  bw_byte_map_insert (ranks, "aa", 2, 1);
  byte_ids['a'] = 0;
  bw_bpe_scratch_init (&scratch);
  g_assert_false (bw_bpe_merge (&scratch, (const guint8 *) "aaxa", 4, byte_ids, rank_of, ranks, out));
  g_assert_cmpuint (out->len, ==, 3);
  g_assert_cmpint (g_array_index (out, gint32, 0), ==, 1);
  g_assert_cmpint (g_array_index (out, gint32, 1), ==, -1);
  g_assert_cmpint (g_array_index (out, gint32, 2), ==, 0);
  bw_bpe_scratch_clear (&scratch);
}

/* Long pieces stay fast: 200 KB of one repeated pair. */
static void
test_long_piece (void)
{
  g_autoptr (BwByteMap) ranks = bw_byte_map_new (4);
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (gint32));
  gsize n = 200000;
  g_autofree guint8 *piece = g_malloc (n);
  gint32 byte_ids[256];
  BwBpeScratch scratch;
  gint64 t0;

  for (int b = 0; b < 256; b++)
    byte_ids[b] = -1;
  memset (piece, 'a', n);
  bw_byte_map_insert (ranks, "a", 1, 0);
  bw_byte_map_insert (ranks, "aa", 2, 1);
  bw_byte_map_insert (ranks, "aaaa", 4, 2);
  byte_ids['a'] = 0;
  bw_bpe_scratch_init (&scratch);
  t0 = g_get_monotonic_time ();
  g_assert_true (bw_bpe_merge (&scratch, piece, n, byte_ids, rank_of, ranks, out));
  g_test_message ("200000-byte piece merged in %.1f ms", (g_get_monotonic_time () - t0) / 1000.0);
  g_assert_cmpuint (out->len, ==, n / 4);
  bw_bpe_scratch_clear (&scratch);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/bpe-merge/matches-naive", test_matches_naive);
  g_test_add_func ("/text/bpe-merge/missing-byte", test_missing_byte);
  g_test_add_func ("/text/bpe-merge/long-piece", test_long_piece);
  return g_test_run ();
}
