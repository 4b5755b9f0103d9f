/* --dense-bits auto (see dense-auto.h). */
#include "model/dense-auto.h"

#include "core/inspect.h"
#include "stream/cache-policy.h"

/* Whether a dense part of `dense` bytes leaves the expert cache at least `useful` bytes,
 * with the budget the store would choose (model/bind.c, stream/expert-store.c) out of the
 * room left after it. */
static gboolean
leaves_useful_cache (const BwModelOptions *opts, const BurrowModelInfo *info, guint64 room,
                     guint64 dense, guint64 useful)
{
  if (dense >= room)
    return FALSE;
  guint64 left = room - dense;
  if (opts->store.ram_budget > 0)
    return opts->store.ram_budget <= left;
  if (useful == 0)
    return TRUE;
  gboolean direct = opts->store.direct_io == BW_STORE_AUTO
                      ? bw_policy_prefer_direct (left, info->expert_bytes)
                      : opts->store.direct_io != FALSE;
  return bw_policy_default_budget (left, direct, info->expert_bytes) >= useful;
}

int
bw_dense_auto_bits (const BwCheckpoint *ckpt, const BwModelOptions *opts, guint64 room,
                    gboolean *for_memory)
{
  BurrowModelInfo info = { 0 };
  *for_memory = FALSE;
  if (room == 0)
    return 0;
  bw_checkpoint_tally (ckpt, &info);
  /* int8 must shrink the dense part by a tenth at least to be worth its rounding */
  if (info.resident_bytes_q8 / 9 >= info.resident_bytes / 10)
    return 0;
  guint64 useful = MIN (2 * info.read_per_token, info.expert_bytes);
  if (leaves_useful_cache (opts, &info, room, info.resident_bytes, useful))
    return 0;
  *for_memory = TRUE;
  return 8;
}
