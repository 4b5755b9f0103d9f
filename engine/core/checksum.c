/* The session checksum (see checksum.h): 32-byte stripes over four lanes, then a tail and
 * an avalanche so that every input bit reaches every output bit. */
#include "core/checksum.h"

#include <string.h>

#define P1 0x9e3779b185ebca87ull
#define P2 0xc2b2ae3d27d4eb4full
#define P3 0x165667b19e3779f9ull

static inline guint64
rotl (guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline guint64
load64 (const guint8 *p)
{
  guint64 v;
  memcpy (&v, p, 8);
  return GUINT64_FROM_LE (v);
}

static inline guint64
mix (guint64 acc, guint64 word)
{
  return rotl (acc + word * P2, 31) * P1;
}

static void
stripe (BwChecksum *sum, const guint8 *p)
{
  for (int i = 0; i < 4; i++)
    sum->lane[i] = mix (sum->lane[i], load64 (p + 8 * i));
}

void
bw_checksum_init (BwChecksum *sum)
{
  memset (sum, 0, sizeof *sum);
  sum->lane[0] = P1 + P2;
  sum->lane[1] = P2;
  sum->lane[2] = 0;
  sum->lane[3] = -P1;
}

void
bw_checksum_update (BwChecksum *sum, const void *data, gsize len)
{
  const guint8 *p = data;
  if (len == 0)
    return;
  sum->total += len;
  if (sum->n_buf > 0)
    {
      gsize take = MIN (len, 32 - sum->n_buf);
      memcpy (sum->buf + sum->n_buf, p, take);
      sum->n_buf += take;
      p += take;
      len -= take;
      if (sum->n_buf < 32)
        return;
      stripe (sum, sum->buf);
      sum->n_buf = 0;
    }
  for (; len >= 32; p += 32, len -= 32)
    stripe (sum, p);
  memcpy (sum->buf, p, len);
  sum->n_buf = len;
}

guint64
bw_checksum_finish (const BwChecksum *sum)
{
  guint64 h = rotl (sum->lane[0], 1) + rotl (sum->lane[1], 7) + rotl (sum->lane[2], 12)
              + rotl (sum->lane[3], 18);
  for (int i = 0; i < 4; i++)
    h = (h ^ mix (0, sum->lane[i])) * P1 + P3;
  h += sum->total;
  gsize i = 0;
  for (; i + 8 <= sum->n_buf; i += 8)
    h = rotl (h ^ mix (0, load64 (sum->buf + i)), 27) * P1 + P3;
  for (; i < sum->n_buf; i++)
    h = rotl (h ^ (sum->buf[i] * P3), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}

guint64
bw_checksum64 (const void *data, gsize len)
{
  BwChecksum sum;
  bw_checksum_init (&sum);
  bw_checksum_update (&sum, data, len);
  return bw_checksum_finish (&sum);
}
