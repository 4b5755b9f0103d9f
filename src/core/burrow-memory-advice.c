/* The words of a loaded model's memory advice (see burrow-memory-advice.h). */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-memory-advice.h"

char *
burrow_memory_gib_text (guint64 bytes)
{
  double gib = (double) bytes / (1024.0 * 1024.0 * 1024.0);

  /* Translators: an amount of memory in gibibytes (1 GiB is 1,024 MiB), with the digits
   * after the point given first; keep the no-break space before the unit */
  return g_strdup_printf (_("%.*f\302\240GiB"), gib > 0 && gib < 0.095 ? 2 : 1, gib);
}

char *
burrow_memory_advice (const BurrowCacheStats *cache,
                      gboolean                budget_set,
                      const char            **setting)
{
  g_autofree char *budget = NULL, *token = NULL, *dense = NULL;

  *setting = NULL;
  if (!cache->budget_too_small)
    return NULL;
  /* A budget from Preferences in the unit it was set in there. */
  budget = budget_set ? burrow_memory_gib_text (cache->ram_budget) : g_format_size (cache->ram_budget);
  token = g_format_size (cache->token_expert_bytes);
  dense = g_format_size (cache->resident_bytes);
  if (budget_set)
    {
      *setting = "ram-budget";
      /* Translators: the first %s is an amount of memory ("1.2 GB"), the second the
       * memory one token's experts take */
      return g_strdup_printf (_("The memory for experts set in Preferences (%s) holds less "
                                "than two tokens’ experts (%s each), so almost every expert "
                                "is read from the disk and replies come slowly."),
                              budget, token);
    }
  *setting = "dense-format";
  if (cache->dense_bits == 0)
    /* Translators: amounts of memory: the dense part, the cache, one token's experts */
    return g_strdup_printf (_("The model’s dense part takes %s of memory and leaves the "
                              "expert cache %s, less than two tokens’ experts (%s each), so "
                              "almost every expert is read from the disk. Dense weights at "
                              "8 bits leave more room."),
                            dense, budget, token);
  /* Translators: amounts of memory: the dense part, the cache, one token's experts */
  return g_strdup_printf (_("Even with fewer bits the model’s dense part takes %s of memory "
                            "and leaves the expert cache %s, less than two tokens’ experts "
                            "(%s each), so almost every expert is read from the disk. "
                            "Closing other programs frees memory for it."),
                          dense, budget, token);
}
