/* The family registry: one BwFamily descriptor (core/family-desc.h) per family file, listed
 * in families/registry.c. The core reads the generic shape fields of config.json and asks
 * the descriptor for everything else; the rooms above the families hand the registry down
 * as bw_families (). Nothing outside engine/families/ names a family. */
#pragma once

#include <glib.h>

#include "core/family-desc.h"

G_BEGIN_DECLS

/* The family whose name or alias is model_type (architecture: the config's first
 * architectures entry, or NULL); NULL when none is. */
const BwFamily *bw_family_lookup (const char *model_type, const char *architecture);
/* By canonical name, short name or alias model_type; NULL when none. */
const BwFamily *bw_family_by_name (const char *name);
/* Every registered family; *n gets the count. */
const BwFamily *const *bw_family_list (gsize *n);
/* "a, b and c": the canonical names, for error messages. */
char *bw_family_names (void);
/* The registry as the core takes it: bw_family_lookup and bw_family_names. */
const BwFamilyLookup *bw_families (void);

G_END_DECLS
