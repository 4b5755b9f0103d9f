/* --dense-bits auto (see dense-auto.h). */
#include "model/dense-auto.h"

#include "model/checkpoint-tally.h"
#include "kernels/dispatch.h"
#include "quant/intq.h"
#include "stream/cache-policy.h"

/* The expert cache the store would choose (model/bind.c, stream/expert-store.c) out of the
 * room left after a dense part of `dense` bytes; 0 when nothing is left. */
static guint64
cache_left (const BwModelOptions *opts, const BwCheckpointTally *info, guint64 room,
            guint64 dense)
{
  if (dense >= room)
    return 0;
  guint64 left = room - dense;
  if (opts->store.ram_budget > 0)
    return opts->store.ram_budget <= left ? opts->store.ram_budget : 0;
  gboolean direct = opts->store.direct_io == BW_STORE_AUTO
                      ? bw_policy_prefer_direct (left, info->expert_bytes)
                      : opts->store.direct_io != FALSE;
  return bw_policy_default_budget (left, direct, info->expert_bytes);
}

int
bw_dense_auto_bits (const BwCheckpoint *ckpt, const BwModelOptions *opts, guint64 room,
                    BwDenseReason *reason)
{
  BwCheckpointTally info;
  *reason = BW_DENSE_AS_ASKED;
  if (room == 0)
    return 0;
  bw_checkpoint_tally (ckpt, &info);
  /* int8 must shrink the dense part by a tenth at least to be worth its rounding */
  if (info.resident_bytes_q8 / 9 >= info.resident_bytes / 10)
    return 0;
  guint64 cache = cache_left (opts, &info, room, info.resident_bytes);
  guint64 useful = MIN (2 * info.read_per_token, info.expert_bytes);
  /* a budget the user gave only has to fit; the default one has to be useful */
  gboolean short_of_memory = info.resident_bytes >= room
                             || (opts->store.ram_budget > 0 ? cache == 0 : cache < useful);
  if (short_of_memory)
    {
      *reason = BW_DENSE_FOR_MEMORY;
      return 8;
    }
  /* the whole model fits in memory: the experts come from the disk once, or from the page
   * cache under a small budget the user chose, and the published precision stays */
  if (info.resident_bytes + info.expert_bytes <= room)
    return 0;
  if (info.expert_bytes > cache
      && bw_kernels_int_sums (opts->isa, BW_FMT_Q8, bw_intq_dense_group (8)))
    {
      *reason = BW_DENSE_FOR_SPEED;
      return 8;
    }
  return 0;
}
