/* Input for unmarked-strings-planted: each line ending in "planted" must be reported, no
 * other line. Never compiled. */
static void
planted (GtkLabel *label, GtkWidget *button, AdwToastOverlay *overlay, GError **error)
{
  gtk_label_set_label (label, "Loading the model"); /* planted */
  gtk_label_set_label (label, _("Loading the model"));
  gtk_label_set_label (label, "…");
  gtk_widget_set_tooltip_text (button,
                               "Stop the reply"); /* planted */
  adw_toast_overlay_add_toast (overlay, adw_toast_new ("Chat deleted")); /* planted */
  adw_toast_overlay_add_toast (overlay, adw_toast_new (_("Chat deleted")));
  adw_action_row_set_subtitle (row, "Not loaded"); /* planted */
  adw_action_row_set_subtitle (row, count > 1 ? _("Several") : "One"); /* planted */
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: not a model", path); /* planted */
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, _("%s: not a model"), path);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", path, reason);
  g_object_set (button, "label", "Send", "icon-name", "go-up-symbolic", NULL); /* planted */
  gtk_accessible_update_property (GTK_ACCESSIBLE (button),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, "Send message", /* planted */
                                  -1);
  gtk_button_set_icon_name (GTK_BUTTON (button), "edit-copy-symbolic");
  gtk_label_set_text (label, ngettext ("%d chat", "%d chats", n));
}
