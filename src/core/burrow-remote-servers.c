/* The servers list in GSettings, read and written whole: it holds a handful of entries. */
#include "burrow-remote-servers.h"

#define KEY "remote-servers"

void
burrow_remote_server_free (BurrowRemoteServer *server)
{
  if (server == NULL)
    return;
  g_free (server->url);
  g_free (server->name);
  g_free (server);
}

GPtrArray *
burrow_remote_servers_load (GSettings *settings)
{
  g_autoptr(GVariant) list = g_settings_get_value (settings, KEY);
  GPtrArray *servers = g_ptr_array_new_with_free_func ((GDestroyNotify) burrow_remote_server_free);
  GVariantIter iter;
  const char *url, *name;
  gboolean allow;

  g_variant_iter_init (&iter, list);
  while (g_variant_iter_next (&iter, "(&s&sb)", &url, &name, &allow))
    {
      BurrowRemoteServer *s = g_new0 (BurrowRemoteServer, 1);

      s->url = g_strdup (url);
      s->name = g_strdup (name);
      s->allow_plain_http = allow;
      g_ptr_array_add (servers, s);
    }
  return servers;
}

static void
save (GSettings *settings,
      GPtrArray *servers)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE ("a(ssb)"));
  for (guint i = 0; i < servers->len; i++)
    {
      BurrowRemoteServer *s = g_ptr_array_index (servers, i);

      g_variant_builder_add (&b, "(ssb)", s->url, s->name, s->allow_plain_http);
    }
  g_settings_set_value (settings, KEY, g_variant_builder_end (&b));
}

static guint
index_of (GPtrArray  *servers,
          const char *url)
{
  for (guint i = 0; i < servers->len; i++)
    if (g_strcmp0 (((BurrowRemoteServer *) g_ptr_array_index (servers, i))->url, url) == 0)
      return i;
  return G_MAXUINT;
}

void
burrow_remote_servers_put (GSettings  *settings,
                           const char *url,
                           const char *name,
                           gboolean    allow_plain_http)
{
  g_autoptr(GPtrArray) servers = burrow_remote_servers_load (settings);
  guint i = index_of (servers, url);
  BurrowRemoteServer *s;

  if (i == G_MAXUINT)
    {
      s = g_new0 (BurrowRemoteServer, 1);
      s->url = g_strdup (url);
      g_ptr_array_add (servers, s);
    }
  else
    s = g_ptr_array_index (servers, i);
  g_free (s->name);
  s->name = g_strdup (name && *name ? name : url);
  s->allow_plain_http = allow_plain_http;
  save (settings, servers);
}

void
burrow_remote_servers_remove (GSettings  *settings,
                              const char *url)
{
  g_autoptr(GPtrArray) servers = burrow_remote_servers_load (settings);
  guint i = index_of (servers, url);

  if (i == G_MAXUINT)
    return;
  g_ptr_array_remove_index (servers, i);
  save (settings, servers);
}

BurrowRemoteServer *
burrow_remote_servers_find (GSettings  *settings,
                            const char *url)
{
  g_autoptr(GPtrArray) servers = burrow_remote_servers_load (settings);
  guint i = index_of (servers, url);

  return i == G_MAXUINT ? NULL : g_ptr_array_steal_index (servers, i);
}
