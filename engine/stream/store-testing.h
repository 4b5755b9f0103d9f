/* Test hooks of the expert store; not for families. */
#pragma once

#include "stream/expert-store.h"

/* The nth read the store starts from now on (1 = the next) fails with errno err. */
void bw_expert_store_inject_fault (BwExpertStore *store, int nth, int err);

/* Whether (layer, expert) is a learned pin of this store. */
gboolean bw_expert_store_is_pinned (BwExpertStore *store, int layer, int expert);

/* Where the store keeps its usage history (NULL when pinning is off). */
const char *bw_expert_store_history_path (BwExpertStore *store);
