#include "x-input.h"

#include <dlfcn.h>
#include <gdk/x11/gdkx.h>
#include <X11/keysym.h>

#include "iterate.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

/* libXtst's calls, looked up at run time: Debian ships its headers only in libxtst-dev
 * (its ABI is fixed). Keys and buttons share a signature: code, press, delay. */
typedef int (*FakeKeyFunc) (Display *, unsigned int, Bool, unsigned long);
typedef int (*FakeMotionFunc) (Display *, int, int, int, unsigned long);
static FakeKeyFunc fake_key;
static FakeKeyFunc fake_button;
static FakeMotionFunc fake_motion;
static XInputSettle settle;

void
x_input_init (XInputSettle settle_func)
{
  void *xtst;

  g_assert_true (GDK_IS_X11_DISPLAY (gdk_display_get_default ()));
  xtst = dlopen ("libXtst.so.6", RTLD_NOW);
  g_assert_nonnull (xtst);
  fake_key = (FakeKeyFunc) dlsym (xtst, "XTestFakeKeyEvent");
  fake_button = (FakeKeyFunc) dlsym (xtst, "XTestFakeButtonEvent");
  fake_motion = (FakeMotionFunc) dlsym (xtst, "XTestFakeMotionEvent");
  g_assert_nonnull (fake_key);
  g_assert_nonnull (fake_button);
  g_assert_nonnull (fake_motion);
  settle = settle_func;
}

static Display *
xdisplay (GtkWidget *widget)
{
  return gdk_x11_display_get_xdisplay (gtk_widget_get_display (widget));
}

/* Moves the pointer over (x, y) of widget. */
static void
move_to (GtkWidget *widget,
         double     x,
         double     y)
{
  GtkNative *native = gtk_widget_get_native (widget);
  Display *dpy = xdisplay (widget);
  graphene_point_t p;
  double sx, sy;
  int rx, ry;
  Window unused;

  settle (GTK_WIDGET (native));
  g_assert_true (gtk_widget_get_mapped (widget));
  g_assert_true (gtk_widget_compute_point (widget, GTK_WIDGET (native),
                                           &GRAPHENE_POINT_INIT ((float) x, (float) y), &p));
  gtk_native_get_surface_transform (native, &sx, &sy);
  XTranslateCoordinates (dpy, gdk_x11_surface_get_xid (gtk_native_get_surface (native)),
                         DefaultRootWindow (dpy), (int) (p.x + sx), (int) (p.y + sy), &rx, &ry,
                         &unused);
  fake_motion (dpy, -1, rx, ry, 0);
  XSync (dpy, False);
  settle (GTK_WIDGET (native));
}

/* Holds (or releases) the modifiers in mods: Shift and Control. */
static void
hold (Display         *dpy,
      GdkModifierType  mods,
      gboolean         down)
{
  if (mods & GDK_SHIFT_MASK)
    fake_key (dpy, XKeysymToKeycode (dpy, XK_Shift_L), down, 0);
  if (mods & GDK_CONTROL_MASK)
    fake_key (dpy, XKeysymToKeycode (dpy, XK_Control_L), down, 0);
}

static void
press_button (GtkWidget       *widget,
              unsigned int     button,
              GdkModifierType  mods)
{
  Display *dpy = xdisplay (widget);

  hold (dpy, mods, TRUE);
  fake_button (dpy, button, True, 0);
  fake_button (dpy, button, False, 0);
  hold (dpy, mods, FALSE);
  XSync (dpy, False);
  settle (GTK_WIDGET (gtk_widget_get_native (widget)));
}

void
x_input_hover (GtkWidget *widget)
{
  move_to (widget, gtk_widget_get_width (widget) / 2.0, gtk_widget_get_height (widget) / 2.0);
}

void
x_input_click (GtkWidget *widget)
{
  g_assert_nonnull (fake_button);
  g_assert_true (gtk_widget_is_sensitive (widget));
  x_input_hover (widget);
  press_button (widget, 1, 0);
}

void
x_input_wheel (GtkWidget       *widget,
               double           x,
               double           y,
               gboolean         up,
               GdkModifierType  mods)
{
  g_assert_nonnull (fake_button);
  move_to (widget, x, y);
  /* X11's wheel: button 4 up, 5 down. */
  press_button (widget, up ? 4 : 5, mods);
}

void
x_input_take_focus (GtkWindow *window)
{
  Display *dpy = xdisplay (GTK_WIDGET (window));

  XSetInputFocus (dpy, gdk_x11_surface_get_xid (gtk_native_get_surface (GTK_NATIVE (window))),
                  RevertToParent, CurrentTime);
  XSync (dpy, False);
  ITERATE_UNTIL (gtk_window_is_active (window));
}

void
x_input_press_with (GtkWidget       *widget,
                    guint            keysym,
                    GdkModifierType  mods)
{
  Display *dpy = xdisplay (widget);
  KeyCode code = XKeysymToKeycode (dpy, keysym);

  g_assert_nonnull (fake_key);
  g_assert_cmpuint (code, !=, 0);
  hold (dpy, mods, TRUE);
  fake_key (dpy, code, True, 0);
  fake_key (dpy, code, False, 0);
  hold (dpy, mods, FALSE);
  XSync (dpy, False);
  settle (GTK_WIDGET (gtk_widget_get_native (widget)));
}

void
x_input_press (GtkWidget *widget,
               guint      keysym,
               gboolean   shift)
{
  x_input_press_with (widget, keysym, shift ? GDK_SHIFT_MASK : 0);
}

void
x_input_type (GtkWidget  *widget,
              const char *text)
{
  /* Printable ASCII keysyms are the characters' codes. */
  for (const char *c = text; *c != '\0'; c++)
    {
      g_assert_true (g_ascii_isprint (*c));
      x_input_press_with (widget, g_ascii_tolower (*c), g_ascii_isupper (*c) ? GDK_SHIFT_MASK : 0);
    }
}
