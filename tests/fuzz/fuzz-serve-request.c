/* Fuzz target: a POST /v1/chat/completions body through the server's request parser. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "serve-request.h"

const char bw_fuzz_label[] = "";

/* An accepted request has what the worker relies on; a refused one an OpenAI error. */
static void
check_request (const ServeRequest *req)
{
  if (req->messages == NULL || req->messages->len == 0 || req->model == NULL
      || req->opts.max_tokens < 1)
    abort ();
  for (guint i = 0; i < req->messages->len; i++)
    if (g_array_index (req->messages, ServeMessage, i).content == NULL)
      abort ();
  if (g_array_index (req->messages, ServeMessage, req->messages->len - 1).role
      == BURROW_ROLE_ASSISTANT)
    abort ();
  for (guint i = 0; req->stop != NULL && req->stop[i] != NULL; i++)
    if (i >= 16)
      abort ();
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  ServeError err = { 0 };
  ServeRequest *req = serve_request_parse ((const char *) data, size, 256, &err);

  if (req == NULL)
    {
      if (err.status < 400 || err.status > 599 || err.message == NULL || err.type == NULL)
        abort ();
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%u %s", err.status,
                   err.message);
      serve_error_clear (&err);
      return FALSE;
    }
  check_request (req);
  serve_request_free (req);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    g_error_free (error);
  return 0;
}
