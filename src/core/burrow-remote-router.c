/* The router: loads go to the backend the model's name points at, replies to the one that
 * loaded the model. */
#include "burrow-config.h"

#include "burrow-remote-backend.h"
#include "burrow-remote-router.h"

struct _BurrowRemoteRouter {
  GObject parent_instance;
  BurrowBackend *local;
  BurrowBackend *remote;
  BurrowBackend *current;       /* one of the two (not a reference) */
};

static void burrow_remote_router_iface_init (BurrowBackendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (BurrowRemoteRouter, burrow_remote_router, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (BURROW_TYPE_BACKEND,
                                                      burrow_remote_router_iface_init))

static void
burrow_remote_router_finalize (GObject *object)
{
  BurrowRemoteRouter *self = BURROW_REMOTE_ROUTER (object);

  g_clear_object (&self->local);
  g_clear_object (&self->remote);
  G_OBJECT_CLASS (burrow_remote_router_parent_class)->finalize (object);
}

static void
burrow_remote_router_class_init (BurrowRemoteRouterClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = burrow_remote_router_finalize;
}

static void
burrow_remote_router_init (BurrowRemoteRouter *self)
{
}

BurrowRemoteRouter *
burrow_remote_router_new (BurrowBackend *local,
                          BurrowBackend *remote)
{
  BurrowRemoteRouter *self = g_object_new (BURROW_TYPE_REMOTE_ROUTER, NULL);

  self->local = g_object_ref (local);
  self->remote = g_object_ref (remote);
  self->current = self->local;
  return self;
}

BurrowBackend *
burrow_remote_router_get_remote (BurrowRemoteRouter *self)
{
  return self->remote;
}

static BurrowBackendFlags
router_get_flags (BurrowBackend *backend)
{
  return burrow_backend_get_flags (BURROW_REMOTE_ROUTER (backend)->current) |
         BURROW_BACKEND_LOCAL_FOLDERS;
}

static guint64
router_load (BurrowBackend             *backend,
             const char                *model,
             const BurrowEngineOptions *options,
             GCancellable              *cancellable,
             GObject                   *owner,
             BurrowBackendCallback      callback,
             gpointer                   user_data)
{
  BurrowRemoteRouter *self = BURROW_REMOTE_ROUTER (backend);

  self->current = burrow_remote_model_id_parse (model, NULL, NULL) ? self->remote : self->local;
  return burrow_backend_load (self->current, model, options, cancellable, owner, callback,
                              user_data);
}

static guint64
router_generate (BurrowBackend         *backend,
                 BurrowGenerateRequest *request,
                 GCancellable          *cancellable,
                 GObject               *owner,
                 BurrowBackendCallback  callback,
                 gpointer               user_data)
{
  BurrowRemoteRouter *self = BURROW_REMOTE_ROUTER (backend);

  return burrow_backend_generate (self->current, request, cancellable, owner, callback,
                                  user_data);
}

static void
burrow_remote_router_iface_init (BurrowBackendInterface *iface)
{
  iface->get_flags = router_get_flags;
  iface->load = router_load;
  iface->generate = router_generate;
}
