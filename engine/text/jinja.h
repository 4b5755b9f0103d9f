/* A strict interpreter of the Jinja2 subset that chat templates use, with the semantics of
 * Hugging Face transformers' apply_chat_template: Jinja2 3.1 with trim_blocks and
 * lstrip_blocks, the loopcontrols extension, a {% generation %} block that renders its body,
 * tojson as Python's json.dumps, raise_exception() and strftime_now().
 *
 * Templates come from downloaded folders, so everything here treats them as hostile:
 * recursion, loop iterations, output and value sizes are bounded, nothing reads files or
 * the environment, and every error names the template and the line and column at fault. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

#define BW_JINJA_ERROR (bw_jinja_error_quark ())
GQuark bw_jinja_error_quark (void);

typedef enum {
  BW_JINJA_ERROR_SYNTAX,    /* the template does not parse */
  BW_JINJA_ERROR_RUNTIME,   /* a type error, an unknown filter, a failed call */
  BW_JINJA_ERROR_LIMIT,     /* recursion, iterations or output over their bounds */
  BW_JINJA_ERROR_RAISED,    /* the template called raise_exception() */
} BwJinjaError;

typedef struct {
  guint max_depth;          /* nested macro calls, blocks and expressions */
  guint64 max_iterations;   /* loop iterations and macro calls over the whole render */
  gsize max_output;         /* bytes of output, and of any one string value */
} BwJinjaLimits;

/* The defaults: depth 200, 1,000,000 iterations, 16 MiB. */
void bw_jinja_limits_default (BwJinjaLimits *limits);

typedef struct _BwJinjaTemplate BwJinjaTemplate;

/* Parses a template; name appears in every error (a file name, say). */
BwJinjaTemplate *bw_jinja_parse (const char *name, const char *source, gssize len,
                                 GError **error);
void bw_jinja_free (BwJinjaTemplate *tpl);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwJinjaTemplate, bw_jinja_free)

/* Renders with the members of vars (a JSON object; may be NULL) as the template's
 * variables. now is what strftime_now() formats (NULL: the current local time); limits
 * NULL means the defaults. Returns the text, or NULL with error set. */
char *bw_jinja_render (const BwJinjaTemplate *tpl, JsonObject *vars, GDateTime *now,
                       const BwJinjaLimits *limits, GError **error);

/* Renders with client data: the members of client (may be NULL) are variables as well, and
 * every byte of the text that came from them, however the template changed it (cut,
 * stripped, case-changed, escaped, joined, formatted), is in client_spans (BurrowTextSpan,
 * appended in order, disjoint, within the text up to its first NUL byte; may be NULL).
 * Only the other bytes, the template's text and the values of vars, may be read as special
 * tokens. A client member that vars or the interpreter defines (bos_token, range, ...) is
 * refused. */
char *bw_jinja_render_marked (const BwJinjaTemplate *tpl, JsonObject *vars, JsonObject *client,
                              GDateTime *now, const BwJinjaLimits *limits, GArray *client_spans,
                              GError **error);

/* TRUE for the global functions the interpreter defines (range, namespace, dict, ...). */
gboolean bw_jinja_is_global (const char *name);

G_END_DECLS
