/* gpt-oss's chat format (Harmony), beside gpt-oss.c. */
#include "families/family-parts.h"

#include <string.h>

#include "text/chat-template.h"

/* Harmony: <|start|>role<|message|>...<|end|>; the reply's analysis channel is the reasoning,
 * the final channel the answer. */

/* The system message of gpt-oss's template: identity, knowledge cutoff, today's date and
 * the reasoning effort (the template's default, medium, unless asked; max is high). */
static void
render_system (BwChatRender *r, const BwChatOptions *opts)
{
  const char *effort = opts->thinking_effort ? opts->thinking_effort : "medium";
  g_autofree char *today = NULL, *text = NULL;

  if (g_strcmp0 (effort, "low") != 0 && g_strcmp0 (effort, "medium") != 0)
    effort = "high";
  if (opts->date == NULL)
    {
      g_autoptr (GDateTime) now = g_date_time_new_now_local ();
      today = g_date_time_format (now, "%Y-%m-%d");
    }
  text = g_strdup_printf ("<|start|>system<|message|>You are ChatGPT, a large language model "
                          "trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: %s\n\n"
                          "Reasoning: %s\n\n# Valid channels: analysis, commentary, final. "
                          "Channel must be included for every message.<|end|>",
                          today ? today : opts->date, effort);
  bw_chat_structure (r, text);
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  if (!opts->continuation)
    render_system (r, opts);
  for (gsize i = 0; i < n; i++)
    {
      const char *text = msgs[i].content ? msgs[i].content : "";
      switch (msgs[i].role)
        {
        case BW_CHAT_SYSTEM:
          if (*text == '\0')
            break;
          bw_chat_structure (r, "<|start|>developer<|message|># Instructions\n\n");
          bw_chat_content (r, text);
          bw_chat_structure (r, "\n\n<|end|>");
          break;
        case BW_CHAT_USER:
          bw_chat_structure (r, "<|start|>user<|message|>");
          bw_chat_content (r, text);
          bw_chat_structure (r, "<|end|>");
          break;
        case BW_CHAT_ASSISTANT:
          bw_chat_structure (r, "<|start|>assistant<|channel|>final<|message|>");
          bw_chat_content (r, text);
          /* <|return|> ends the conversation's last reply, <|end|> any other message. */
          bw_chat_structure (r, i + 1 == n && !opts->add_generation_prompt ? "<|return|>"
                                                                            : "<|end|>");
          break;
        }
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|start|>assistant"
                                         : "<|start|>assistant<|channel|>final<|message|>");
}

/* As generation_config.json: <|end|> closes the analysis message, after which the model
 * goes on to the final channel, so it is not a stop. */
static const char *const stop_tokens[] = { "<|return|>", "<|call|>", NULL };
static const char *const reply_markup[] = { "<|channel|>", "<|message|>", "<|end|>",
                                            "<|start|>", NULL };

const BwChatFormat bw_gpt_oss_chat = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_open = "<|channel|>analysis<|message|>",
  .reasoning_end = "<|end|>",
  .answer_open = "<|start|>assistant<|channel|>final<|message|>",
  .reply_markup = reply_markup,
};
