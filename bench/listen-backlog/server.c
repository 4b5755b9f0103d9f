/* The smallest libsoup 3 server that shows a lost first byte: it answers every request
 * with the method it parsed. Clients that send "POST" a byte at a time, 50 at once, get
 * "OST" back now and then, or a reset, while the listen backlog is GLib's default of 10;
 * with a wider one (the second argument), never. See slow-clients.mjs.
 *
 *   cc -o server server.c $(pkg-config --cflags --libs libsoup-3.0)
 *   ./server PORT [BACKLOG] */
#include <libsoup/soup.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

static void
echo_method (SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
             gpointer data)
{
  const char *method = soup_server_message_get_method (msg);
  soup_server_message_set_status (msg, 200, NULL);
  soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_COPY, method,
                                    strlen (method));
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "usage: %s PORT [BACKLOG]\n", argv[0]);
      return 2;
    }
  SoupServer *soup = soup_server_new (NULL, NULL);
  soup_server_add_handler (soup, NULL, echo_method, NULL, NULL);
  GError *error = NULL;
  if (!soup_server_listen_local (soup, (guint) atoi (argv[1]), SOUP_SERVER_LISTEN_IPV4_ONLY,
                                 &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  /* GSocket cannot change the backlog of a listening socket; listen() again can. */
  GSList *listeners = soup_server_get_listeners (soup);
  for (GSList *l = listeners; l && argc > 2; l = l->next)
    listen (g_socket_get_fd (l->data), atoi (argv[2]));
  g_slist_free (listeners);
  g_main_loop_run (g_main_loop_new (NULL, FALSE));
  return 0;
}
