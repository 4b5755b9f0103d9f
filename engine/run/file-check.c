/* Checking a file a person chose for a model (its chat template, its tokenizer) when it is
 * chosen, rather than at the next load. */
#include "burrow-engine.h"

#include "core/check.h"
#include "text/jinja.h"
#include "text/model-template.h"
#include "text/tokenizer.h"

gboolean
burrow_check_chat_template (const char *file, GError **error)
{
  g_autoptr (BwModelTemplate) mt = NULL;
  g_autoptr (BwJinjaTemplate) parsed = NULL;

  bw_return_error_if_fail (file != NULL, error, FALSE);

  mt = bw_model_template_load_file (file, NULL, error);
  if (mt == NULL)
    return FALSE;
  parsed = bw_jinja_parse (mt->origin, mt->source, -1, error);
  return parsed != NULL;
}

gboolean
burrow_check_tokenizer (const char *file, GError **error)
{
  g_autoptr (BwTokenizer) tok = NULL;

  bw_return_error_if_fail (file != NULL, error, FALSE);

  tok = bw_tokenizer_open (file, NULL, error);
  return tok != NULL;
}
