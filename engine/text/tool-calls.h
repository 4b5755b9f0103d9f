/* Tool calls and reasoning in what a model generates, split incrementally (token by token)
 * into OpenAI's pieces: content, reasoning_content and tool_calls with JSON arguments.
 * Which syntax to expect is data: detected from the checkpoint's chat template, never from
 * a family name. Output that starts like a tool call but does not parse stays content. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef enum {
  BW_TOOL_FORMAT_NONE,
  BW_TOOL_FORMAT_KIMI,        /* <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0... */
  BW_TOOL_FORMAT_GLM,         /* <tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call> */
  BW_TOOL_FORMAT_JSON,        /* <tool_call>{"name": f, "arguments": {...}}</tool_call> */
  BW_TOOL_FORMAT_XML,         /* <tool_call><function=f><parameter=k>v</parameter></function></tool_call> */
  BW_TOOL_FORMAT_DEEPSEEK,    /* <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜> */
  BW_TOOL_FORMAT_HARMONY,     /* <|channel|>commentary to=functions.f<|message|>{...}<|call|> */
} BwToolFormat;

/* The syntax a chat template teaches its model, from the markers it prints. */
BwToolFormat bw_tool_format_detect (const char *template_source);
const char *bw_tool_format_name (BwToolFormat format);

typedef struct {
  BwToolFormat format;
  const char *think_open;        /* "<think>"; NULL: no reasoning tags */
  const char *think_close;       /* "</think>" */
  gboolean starts_in_reasoning;  /* the prompt ended inside an open think block */
  JsonArray *tools;              /* optional: parameter types for XML-style values */
} BwToolParserOptions;

typedef enum {
  BW_TOOL_EVENT_CONTENT,
  BW_TOOL_EVENT_REASONING,
  BW_TOOL_EVENT_CALL,
} BwToolEventKind;

typedef struct {
  BwToolEventKind kind;
  char *text;        /* content and reasoning pieces */
  guint index;       /* calls: 0, 1, ... in the reply */
  char *id;
  char *name;
  char *arguments;   /* a JSON object, as text */
} BwToolEvent;

void bw_tool_event_free (BwToolEvent *ev);

typedef struct _BwToolParser BwToolParser;

BwToolParser *bw_tool_parser_new (const BwToolParserOptions *opts);
void bw_tool_parser_free (BwToolParser *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwToolParser, bw_tool_parser_free)

/* Feeds generated text; appends the events it completes to events (BwToolEvent *, owned by
 * the array, which should free them with bw_tool_event_free). Text that may still turn out
 * to be a marker is held back until more arrives or the reply ends. */
void bw_tool_parser_push (BwToolParser *p, const char *text, gsize len, GPtrArray *events);
/* The reply ended: flushes what was held back. */
void bw_tool_parser_finish (BwToolParser *p, GPtrArray *events);

/* A whole reply at once: content, reasoning (both never NULL) and the calls
 * (BwToolEvent *). */
void bw_tool_parse_all (const BwToolParserOptions *opts, const char *text, char **content,
                        char **reasoning, GPtrArray *calls);

G_END_DECLS
