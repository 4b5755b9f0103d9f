/* Fuzz target: a whole safetensors file in memory through the header parser. */
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "fuzz.h"

const char bw_fuzz_label[] = "fuzz.safetensors";

/* Accepted entries lie inside the data section, sorted, disjoint, sized by their dtype. */
static void
check_entries (GArray *entries, guint64 data_size)
{
  guint64 prev_end = 0;

  for (guint i = 0; i < entries->len; i++)
    {
      const BwSafetensorsEntry *e = &g_array_index (entries, BwSafetensorsEntry, i);
      if (e->begin < prev_end || e->end < e->begin || e->end > data_size
          || e->n_dims < 0 || e->n_dims > BW_MAX_DIMS || e->n_elements < 0
          || (guint64) e->n_elements * bw_dtype_size (e->dtype) != e->end - e->begin
          || e->name == NULL || e->name[0] == '\0')
        abort ();
      prev_end = e->end;
    }
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  GArray *entries = bw_safetensors_parse (bw_fuzz_label, data, size, size, error);

  if (entries == NULL)
    return FALSE;
  check_entries (entries, size - 8 - (data[0] | (guint64) data[1] << 8
                                      | (guint64) data[2] << 16 | (guint64) data[3] << 24
                                      | (guint64) data[4] << 32 | (guint64) data[5] << 40
                                      | (guint64) data[6] << 48 | (guint64) data[7] << 56));
  g_array_unref (entries);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
