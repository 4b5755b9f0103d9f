/* Real input for the app tests under Xvfb: clicks and key presses sent through the X
 * server (XTest), as a mouse or a keyboard would, and the keyboard focus taken without a
 * window manager. */
#pragma once

#include <gtk/gtk.h>

/* How the test lets what changed be laid out and drawn, on the native of the widget
 * an event went to. */
typedef void (*XInputSettle) (GtkWidget *native);

/* Asserts the display is X11 and looks up XTest (Xvfb has it); settle runs after each
 * event sent. */
void x_input_init (XInputSettle settle);

/* Clicks the middle of widget with the first mouse button, asserting it mapped and
 * sensitive first. */
void x_input_click (GtkWidget *widget);

/* Moves the pointer over the middle of widget, asserting it mapped. */
void x_input_hover (GtkWidget *widget);

/* Turns the mouse wheel one step up or down with the pointer over (x, y) of widget, with
 * the modifiers in mods (Shift, Control) held. */
void x_input_wheel (GtkWidget *widget, double x, double y, gboolean up, GdkModifierType mods);

/* No window manager under Xvfb: the window takes the keyboard itself; returns once it
 * is active. */
void x_input_take_focus (GtkWindow *window);

/* Presses and releases keysym (with Shift held if asked) on the display of widget,
 * whichever window has the focus. */
void x_input_press (GtkWidget *widget, guint keysym, gboolean shift);
/* The same with the modifiers in mods (Shift, Control) held. */
void x_input_press_with (GtkWidget *widget, guint keysym, GdkModifierType mods);
/* Types printable ASCII @text, key by key. */
void x_input_type (GtkWidget *widget, const char *text);
