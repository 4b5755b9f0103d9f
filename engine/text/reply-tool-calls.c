/* Tool calls in a finished or streaming reply's text, for display (burrow-engine.h): each
 * syntax the parser knows is tried in turn, the most particular markers first (GLM's
 * <tool_call>NAME would read a Qwen3 <tool_call>{json} as a name), and the first that finds
 * a call wins. */
#include "burrow-engine.h"

#include <string.h>

#include "text/tool-calls.h"

void
burrow_tool_call_free (BurrowToolCall *call)
{
  if (call == NULL)
    return;
  g_free (call->name);
  g_free (call->arguments);
  g_free (call);
}

/* Every syntax names its calls with one of these; most text has none of them. */
static gboolean
may_hold_calls (const char *text)
{
  return strstr (text, "tool_call") != NULL || strstr (text, "tool\xe2\x96\x81" "call") != NULL
         || strstr (text, "to=functions.") != NULL;
}

/* OpenAI's function names: what a syntax that reads the name as free text (GLM's) found
 * is only a call if its name is one. */
static gboolean
names_ok (const GPtrArray *found)
{
  for (guint i = 0; i < found->len; i++)
    {
      const BwToolEvent *ev = found->pdata[i];
      gsize n = ev->name ? strlen (ev->name) : 0;
      if (n == 0 || n > 64 || strspn (ev->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                "0123456789_-.") != n)
        return FALSE;
    }
  return TRUE;
}

char *
burrow_reply_split_tool_calls (const char *text, GPtrArray *calls)
{
  g_return_val_if_fail (text != NULL && calls != NULL, NULL);
  if (!may_hold_calls (text))
    return g_strdup (text);
  static const BwToolFormat order[] = { BW_TOOL_FORMAT_KIMI, BW_TOOL_FORMAT_DEEPSEEK,
                                        BW_TOOL_FORMAT_HARMONY, BW_TOOL_FORMAT_XML,
                                        BW_TOOL_FORMAT_JSON, BW_TOOL_FORMAT_GLM };
  for (gsize k = 0; k < G_N_ELEMENTS (order); k++)
    {
      BwToolParserOptions opts = { .format = order[k] };
      g_autoptr (GPtrArray) found = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
      g_autofree char *reasoning = NULL;
      char *content = NULL;
      bw_tool_parse_all (&opts, text, &content, &reasoning, found);
      if (found->len == 0 || !names_ok (found))
        {
          g_free (content);
          continue;
        }
      for (guint i = 0; i < found->len; i++)
        {
          BwToolEvent *ev = found->pdata[i];
          BurrowToolCall *call = g_new (BurrowToolCall, 1);
          call->name = g_steal_pointer (&ev->name);
          call->arguments = g_steal_pointer (&ev->arguments);
          g_ptr_array_add (calls, call);
        }
      return content;
    }
  return g_strdup (text);
}
