/* JSON bodies of the server (see serve-json.h). */
#include "serve-json.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static char *
finish_builder (JsonBuilder *b)
{
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

static void
add_string (JsonBuilder *b, const char *name, const char *value)
{
  json_builder_set_member_name (b, name);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

static void
add_int (JsonBuilder *b, const char *name, gint64 value)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, value);
}

/* Rounded to `decimals` places: the profile is read by people and scripts alike, and 17
 * significant digits of a timer help neither. */
static void
add_rounded (JsonBuilder *b, const char *name, double value, int decimals)
{
  double scale = pow (10.0, decimals);
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, isfinite (value) ? round (value * scale) / scale : 0.0);
}

static void
add_seconds (JsonBuilder *b, const char *name, double value)
{
  add_rounded (b, name, value, 4);
}

char *
serve_json_error (const ServeError *err)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "error");
  json_builder_begin_object (b);
  add_string (b, "message", err->message);
  add_string (b, "type", err->type);
  add_string (b, "param", err->param);
  add_string (b, "code", err->code);
  json_builder_end_object (b);
  json_builder_end_object (b);
  return finish_builder (b);
}

const char *
serve_finish_reason (BurrowFinishReason finish)
{
  return finish == BURROW_FINISH_LENGTH ? "length" : "stop";
}

static void
add_token (JsonObject *o, BurrowEngine *engine, gint32 id, float logprob)
{
  gsize len = 0;
  const guint8 *bytes = burrow_engine_token_bytes (engine, id, &len);
  g_autofree char *text = g_utf8_make_valid (bytes ? (const char *) bytes : "",
                                             bytes ? (gssize) len : 0);
  JsonArray *arr = json_array_sized_new ((guint) len);
  for (gsize i = 0; i < len; i++)
    json_array_add_int_element (arr, bytes[i]);
  json_object_set_string_member (o, "token", text);
  json_object_set_double_member (o, "logprob", isfinite (logprob) ? logprob : -9999.0);
  json_object_set_array_member (o, "bytes", arr);
}

void
serve_json_add_logprob (JsonArray *content, BurrowEngine *engine, const BurrowToken *tok)
{
  JsonObject *entry = json_object_new ();
  JsonArray *top = json_array_new ();
  add_token (entry, engine, tok->id, tok->logprob);
  for (int k = 0; k < tok->n_top; k++)
    {
      JsonObject *alt = json_object_new ();
      add_token (alt, engine, tok->top_ids[k], tok->top_logprobs[k]);
      json_array_add_object_element (top, alt);
    }
  json_object_set_array_member (entry, "top_logprobs", top);
  json_array_add_object_element (content, entry);
}

/* "logprobs": {"content": [...]} or null. */
static void
add_logprobs (JsonBuilder *b, JsonArray *content)
{
  json_builder_set_member_name (b, "logprobs");
  if (content == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "content");
  JsonNode *node = json_node_new (JSON_NODE_ARRAY);
  json_node_set_array (node, content);
  json_builder_add_value (b, node);
  json_builder_end_object (b);
}

static void
begin_reply (JsonBuilder *b, const ServeReplyId *rid, const char *object)
{
  json_builder_begin_object (b);
  add_string (b, "id", rid->id);
  add_string (b, "object", object);
  add_int (b, "created", rid->created);
  add_string (b, "model", rid->model);
  add_string (b, "system_fingerprint", "burrow");
}

static void
add_usage (JsonBuilder *b, const BurrowTurnStats *st)
{
  json_builder_set_member_name (b, "usage");
  json_builder_begin_object (b);
  add_int (b, "prompt_tokens", st->prompt_tokens);
  add_int (b, "completion_tokens", st->generated_tokens);
  add_int (b, "total_tokens", (gint64) st->prompt_tokens + st->generated_tokens);
  json_builder_set_member_name (b, "prompt_tokens_details");
  json_builder_begin_object (b);
  add_int (b, "cached_tokens", st->cached_tokens);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

char *
serve_json_completion (const ServeReplyId *rid, const char *content, const char *reasoning,
                       JsonArray *logprobs, const BurrowTurnStats *stats)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  begin_reply (b, rid, "chat.completion");
  json_builder_set_member_name (b, "choices");
  json_builder_begin_array (b);
  json_builder_begin_object (b);
  add_int (b, "index", 0);
  json_builder_set_member_name (b, "message");
  json_builder_begin_object (b);
  add_string (b, "role", "assistant");
  add_string (b, "content", content);
  if (reasoning && *reasoning)
    add_string (b, "reasoning_content", reasoning);
  json_builder_end_object (b);
  add_logprobs (b, logprobs);
  add_string (b, "finish_reason", serve_finish_reason (stats->finish));
  json_builder_end_object (b);
  json_builder_end_array (b);
  add_usage (b, stats);
  json_builder_end_object (b);
  return finish_builder (b);
}

char *
serve_json_chunk (const ServeReplyId *rid, const char *role, const char *content,
                  const char *reasoning, JsonArray *logprobs, const char *finish)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  begin_reply (b, rid, "chat.completion.chunk");
  json_builder_set_member_name (b, "choices");
  json_builder_begin_array (b);
  json_builder_begin_object (b);
  add_int (b, "index", 0);
  json_builder_set_member_name (b, "delta");
  json_builder_begin_object (b);
  if (role)
    add_string (b, "role", role);
  if (content)
    add_string (b, "content", content);
  if (reasoning)
    add_string (b, "reasoning_content", reasoning);
  json_builder_end_object (b);
  add_logprobs (b, logprobs);
  add_string (b, "finish_reason", finish);
  json_builder_end_object (b);
  json_builder_end_array (b);
  json_builder_end_object (b);
  return finish_builder (b);
}

char *
serve_json_usage_chunk (const ServeReplyId *rid, const BurrowTurnStats *stats)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  begin_reply (b, rid, "chat.completion.chunk");
  json_builder_set_member_name (b, "choices");
  json_builder_begin_array (b);
  json_builder_end_array (b);
  add_usage (b, stats);
  json_builder_end_object (b);
  return finish_builder (b);
}

char *
serve_json_models (const char *const *names, const char *family, gint64 created)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_string (b, "object", "list");
  json_builder_set_member_name (b, "data");
  json_builder_begin_array (b);
  for (gsize i = 0; names[i] != NULL; i++)
    {
      json_builder_begin_object (b);
      add_string (b, "id", names[i]);
      add_string (b, "object", "model");
      add_int (b, "created", created);
      add_string (b, "owned_by", "burrow");
      add_string (b, "family", family);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  return finish_builder (b);
}

static void
add_turn (JsonBuilder *b, const BurrowTurnStats *st)
{
  static const char *const finish[] = { "none", "stop", "length", "cancelled", "error" };
  static const char *const phases[BURROW_N_PHASES] = { "attention", "expert_wait",
                                                       "expert_matmul", "other", "lm_head" };
  json_builder_begin_object (b);
  add_string (b, "finish", finish[st->finish]);
  json_builder_set_member_name (b, "stop_token");
  if (st->stop_token >= 0)
    json_builder_add_int_value (b, st->stop_token);
  else
    json_builder_add_null_value (b);
  add_int (b, "prompt_tokens", st->prompt_tokens);
  add_int (b, "cached_tokens", st->cached_tokens);
  add_int (b, "prefill_tokens", st->prefill_tokens);
  add_int (b, "prefill_done", st->prefill_done);
  add_int (b, "generated_tokens", st->generated_tokens);
  add_seconds (b, "prefill_seconds", st->prefill_seconds);
  add_rounded (b, "prefill_tokens_per_second", st->prefill_tokens_per_second, 2);
  add_seconds (b, "ttft_seconds", st->ttft_seconds);
  add_seconds (b, "decode_seconds", st->decode_seconds);
  add_rounded (b, "decode_tokens_per_second", st->decode_tokens_per_second, 2);
  json_builder_set_member_name (b, "phase_seconds");
  json_builder_begin_object (b);
  for (int p = 0; p < BURROW_N_PHASES; p++)
    add_seconds (b, phases[p], st->phase_seconds[p]);
  json_builder_end_object (b);
  add_int (b, "expert_hits", (gint64) st->expert_hits);
  add_int (b, "expert_misses", (gint64) st->expert_misses);
  add_rounded (b, "hit_rate", st->hit_rate, 4);
  add_int (b, "bytes_read", (gint64) st->bytes_read);
  add_int (b, "state_bytes", (gint64) st->state_bytes);
  json_builder_end_object (b);
}

static void
add_cache (JsonBuilder *b, const BurrowCacheStats *c)
{
  json_builder_set_member_name (b, "cache");
  json_builder_begin_object (b);
  add_string (b, "backend", c->backend);
  add_int (b, "hits", (gint64) c->hits);
  add_int (b, "misses", (gint64) c->misses);
  add_int (b, "prefetch_hits", (gint64) c->prefetch_hits);
  add_rounded (b, "hit_rate",
               c->hits + c->misses ? (double) c->hits / (double) (c->hits + c->misses) : 0, 4);
  add_int (b, "bytes_read", (gint64) c->bytes_read);
  add_int (b, "experts_cached", (gint64) c->n_cached);
  add_int (b, "bytes_cached", (gint64) c->bytes_cached);
  add_int (b, "experts_pinned", (gint64) c->n_pinned);
  add_int (b, "bytes_pinned", (gint64) c->bytes_pinned);
  add_int (b, "ram_budget", (gint64) c->ram_budget);
  add_int (b, "resident_bytes", (gint64) c->resident_bytes);
  json_builder_end_object (b);
}

static void
add_ints (JsonBuilder *b, const char *name, gsize n, gint64 (*get) (gconstpointer, gsize),
          gconstpointer values)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_array (b);
  for (gsize i = 0; i < n; i++)
    json_builder_add_int_value (b, get (values, i));
  json_builder_end_array (b);
}

static gint64 get_int (gconstpointer v, gsize i) { return ((const int *) v)[i]; }
static gint64 get_u64 (gconstpointer v, gsize i) { return (gint64) ((const guint64 *) v)[i]; }
static gint64 get_u8 (gconstpointer v, gsize i) { return ((const guint8 *) v)[i]; }
static gint64 get_u32 (gconstpointer v, gsize i) { return ((const guint32 *) v)[i]; }
/* Never routed to: -1. */
static gint64
get_age (gconstpointer v, gsize i)
{
  guint32 age = ((const guint32 *) v)[i];
  return age == G_MAXUINT32 ? -1 : (gint64) age;
}

static void
add_experts (JsonBuilder *b, const ServeExpertMap *m)
{
  gsize cells = (gsize) m->n_layers * (gsize) m->n_experts;
  json_builder_set_member_name (b, "experts");
  json_builder_begin_object (b);
  add_int (b, "layers", m->n_layers);
  add_int (b, "experts", m->n_experts);
  add_ints (b, "layer_experts", (gsize) m->n_layers, get_int, m->layer_experts);
  add_ints (b, "layer_hits", (gsize) m->n_layers, get_u64, m->layer_hits);
  add_ints (b, "layer_misses", (gsize) m->n_layers, get_u64, m->layer_misses);
  add_ints (b, "tiers", cells, get_u8, m->tiers);
  add_ints (b, "uses", cells, get_u32, m->uses);
  add_ints (b, "ages", cells, get_age, m->ages);
  json_builder_end_object (b);
}

char *
serve_json_add_counters (const char *chunk, BurrowEngine *engine)
{
  BurrowCacheStats c;
  double phases[BURROW_N_PHASES];
  gsize len = strlen (chunk);
  GString *out = g_string_new_len (chunk, len && chunk[len - 1] == '}' ? (gssize) len - 1
                                                                      : (gssize) len);
  burrow_engine_get_cache_stats (engine, &c);
  burrow_engine_get_phase_seconds (engine, phases);
  g_string_append_printf (out, ",\"burrow\":{\"hits\":%" G_GUINT64_FORMAT ",\"misses\":%"
                          G_GUINT64_FORMAT ",\"bytes_read\":%" G_GUINT64_FORMAT
                          ",\"phase_seconds\":[", c.hits, c.misses, c.bytes_read);
  for (int p = 0; p < BURROW_N_PHASES; p++)
    {
      char num[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_formatd (num, sizeof num, "%.6f", isfinite (phases[p]) ? phases[p] : 0.0);
      g_string_append_printf (out, "%s%s", p ? "," : "", num);
    }
  g_string_append (out, "]}}");
  return g_string_free (out, FALSE);
}

char *
serve_json_profile (const char *model, const char *family, const BurrowTurnStats *turns,
                    guint n_turns, const BurrowTurnStats *current, const BurrowCacheStats *cache,
                    const ServeExpertMap *experts, guint queued)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_string (b, "model", model);
  add_string (b, "family", family);
  add_int (b, "queued", queued);
  json_builder_set_member_name (b, "turns");
  json_builder_begin_array (b);
  for (guint i = 0; i < n_turns; i++)
    add_turn (b, &turns[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "current");
  if (current->running)
    add_turn (b, current);
  else
    json_builder_add_null_value (b);
  add_cache (b, cache);
  if (experts->n_layers > 0)
    add_experts (b, experts);
  json_builder_end_object (b);
  return finish_builder (b);
}
