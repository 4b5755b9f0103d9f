/* A real burrow-cli serve for the remote tests: started on a free loopback port with the
 * demo model, stopped (or killed, or paused) by the test. */
#pragma once

#include <gio/gio.h>

typedef struct {
  GSubprocess *process;
  char *url;                  /* http://127.0.0.1:PORT/ */
  int port;
} RemoteServer;

/* Starts @cli ("serve --port 0" and @args, NULL-terminated) with the extra environment
 * @env (NULL-terminated KEY=VALUE, may be NULL) and waits for its address. Aborts the
 * test when it does not come up. */
RemoteServer *remote_server_start (const char        *cli,
                                   const char *const *args,
                                   const char *const *env);
/* SIGKILL, SIGSTOP or SIGCONT. */
void remote_server_signal (RemoteServer *server,
                           int           signum);
void remote_server_stop (RemoteServer *server);
/* A loopback port nothing listens on (bound, then closed). */
int remote_free_port (void);
