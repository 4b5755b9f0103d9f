/* What a model folder holds, in words a person can read: the rows the model view shows.
 * Pure functions of BurrowModelInfo, so tests check them without a display. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef enum {
  BURROW_SUMMARY_MODEL,
  BURROW_SUMMARY_MEMORY,
  BURROW_SUMMARY_EXPERTS,
  BURROW_SUMMARY_N_GROUPS
} BurrowSummaryGroup;

typedef struct {
  BurrowSummaryGroup group;
  char *title;
  char *subtitle;   /* NULL when the title says it all */
  char *value;
} BurrowSummaryRow;

/* The free function of a row array (rows are owned by their array). */
void burrow_summary_row_free (gpointer data);

const char *burrow_summary_group_title (BurrowSummaryGroup group);
const char *burrow_summary_group_description (BurrowSummaryGroup group);

/* The rows in display order, grouped. Free with g_ptr_array_unref. */
GPtrArray *burrow_model_summary_new (const BurrowModelInfo *info);

/* The row titled @title, or NULL. */
const BurrowSummaryRow *burrow_model_summary_find (GPtrArray  *rows,
                                                   const char *title);

G_END_DECLS
