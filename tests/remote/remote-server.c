/* Starting and stopping burrow-cli serve for the remote tests. */
#include "remote-server.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

/* A test that fails mid-way leaves no server behind. */
static void
die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

RemoteServer *
remote_server_start (const char        *cli,
                     const char *const *args,
                     const char *const *env)
{
  g_autoptr(GSubprocessLauncher) launcher =
    g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GDataInputStream) out = NULL;
  RemoteServer *server = g_new0 (RemoteServer, 1);
  char *line;

  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  for (gsize i = 0; env != NULL && env[i] != NULL; i++)
    {
      g_auto(GStrv) kv = g_strsplit (env[i], "=", 2);

      g_subprocess_launcher_setenv (launcher, kv[0], kv[1], TRUE);
    }
  g_ptr_array_add (argv, (gpointer) cli);
  g_ptr_array_add (argv, (gpointer) "serve");
  g_ptr_array_add (argv, (gpointer) "--port");
  g_ptr_array_add (argv, (gpointer) "0");
  for (gsize i = 0; args != NULL && args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);

  server->process = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata,
                                                  &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (server->process));
  while ((line = g_data_input_stream_read_line (out, NULL, NULL, &error)) != NULL)
    {
      g_autofree char *owned = line;
      const char *at = strstr (owned, "Listening on ");

      if (at != NULL)
        {
          /* "Listening on URL" and maybe " (API key required)" */
          server->url = g_strdup (at + strlen ("Listening on "));
          server->url[strcspn (server->url, " \t\r\n")] = '\0';
          break;
        }
    }
  if (server->url == NULL)
    g_error ("burrow-cli serve did not start (%s)", error ? error->message : "no address");
  server->port = (int) g_ascii_strtoll (strrchr (server->url, ':') + 1, NULL, 10);
  return server;
}

void
remote_server_signal (RemoteServer *server,
                      int           signum)
{
  g_subprocess_send_signal (server->process, signum);
}

void
remote_server_stop (RemoteServer *server)
{
  if (server == NULL)
    return;
  g_subprocess_send_signal (server->process, SIGCONT);
  g_subprocess_force_exit (server->process);
  g_subprocess_wait (server->process, NULL, NULL);
  g_object_unref (server->process);
  g_free (server->url);
  g_free (server);
}

int
remote_free_port (void)
{
  g_autoptr(GSocket) socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                            G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr(GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_autoptr(GSocketAddress) bound = NULL;

  g_assert_true (g_socket_bind (socket, any, FALSE, NULL));
  bound = g_socket_get_local_address (socket, NULL);
  return g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
}
