/* What the core computes from a family descriptor alone. */
#include "core/family-desc.h"

guint32
bw_family_id (const BwFamily *family)
{
  guint32 h = 2166136261u;   /* FNV-1a */
  if (family == NULL)
    return 0;
  if (family->file_id != 0)
    return family->file_id;
  for (const char *p = family->name; *p; p++)
    h = (h ^ (guint8) *p) * 16777619u;
  return h;
}
