#!/usr/bin/env python3
"""Every user-visible string in the app is marked for translation.

In .ui files: a text property (label, title, tooltip-text, ...) or a menu attribute with
words in it must carry translatable="yes". In C: a string literal handed to a call that
shows text to users (labels, titles, toasts, dialogs, tooltips, accessible labels, error
messages) must be wrapped in _(), N_(), C_() or ngettext (). A literal without letters
(a dash, an ellipsis, a "%s · %s" layout) is not text. Strings that are not text but carry
letters (icon names and the like) go in ALLOWED, with the reason.

Usage: unmarked-strings.py SOURCE_ROOT [FILE...]   (files default to src/*.c, src/core/*.c
and src/**/*.ui)
"""
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

UI_TEXT = {"label", "title", "subtitle", "description", "tooltip-text", "tooltip-markup",
           "placeholder-text", "text", "heading", "body", "button-label", "secondary-text",
           "accessible-label", "title-text"}
# <accessibility><property name="label">: what a screen reader says.
UI_ACCESSIBLE = {"label", "description"}

# Call name -> positions (0-based) of the arguments that are shown to users.
CALLS = {
    "gtk_label_new": [0], "gtk_label_new_with_mnemonic": [0],
    "gtk_label_set_text": [1], "gtk_label_set_label": [1], "gtk_label_set_markup": [1],
    "gtk_label_set_text_with_mnemonic": [1], "gtk_label_set_markup_with_mnemonic": [1],
    "gtk_button_new_with_label": [0], "gtk_button_new_with_mnemonic": [0],
    "gtk_button_set_label": [1], "gtk_check_button_new_with_label": [0],
    "gtk_check_button_set_label": [1], "gtk_menu_button_set_label": [1],
    "gtk_widget_set_tooltip_text": [1], "gtk_widget_set_tooltip_markup": [1],
    "gtk_window_set_title": [1], "gtk_entry_set_placeholder_text": [1],
    "gtk_text_set_placeholder_text": [1], "gtk_search_entry_set_placeholder_text": [1],
    "gtk_file_dialog_set_title": [1], "gtk_file_dialog_set_accept_label": [1],
    "gtk_file_filter_set_name": [1], "gtk_alert_dialog_new": [0],
    "gtk_alert_dialog_set_message": [1], "gtk_alert_dialog_set_detail": [1],
    "gtk_progress_bar_set_text": [1], "gtk_shortcut_label_new": [],
    "adw_toast_new": [0], "adw_toast_new_format": [0], "adw_toast_set_title": [1],
    "adw_toast_set_button_label": [1], "adw_banner_new": [0],
    "adw_message_dialog_new": [1, 2], "adw_message_dialog_set_heading": [1],
    "adw_message_dialog_set_body": [1], "adw_message_dialog_format_heading": [1],
    "adw_message_dialog_format_body": [1], "adw_message_dialog_add_response": [2],
    "adw_status_page_set_title": [1], "adw_status_page_set_description": [1],
    "adw_window_title_new": [0, 1], "adw_button_content_set_label": [1],
    "adw_split_button_set_label": [1], "adw_tab_page_set_title": [1],
    "adw_view_stack_add_titled": [3], "adw_view_stack_page_set_title": [1],
    "g_menu_append": [1], "g_menu_insert": [2], "g_menu_prepend": [1],
    "g_menu_item_new": [0], "g_menu_item_set_label": [1],
    "g_notification_new": [0], "g_notification_set_body": [1],
    "g_set_error": [3], "g_set_error_literal": [3], "g_error_new": [2],
    "g_error_new_literal": [2], "g_task_return_new_error": [3], "g_prefix_error": [1],
    "g_propagate_prefixed_error": [2],
}
# adw_*_set_title, adw_*_set_subtitle, ...: any Adwaita setter of a text property.
ADW_SETTER = re.compile(r"adw_[a-z_]+_set_(title|subtitle|description|heading|body|"
                        r"button_label|label|tooltip)$")
# Properties named in g_object_set/g_object_new/etc. whose value is shown to users.
PROPS = {"title", "subtitle", "label", "tooltip-text", "description", "heading", "body",
         "placeholder-text", "comments", "button-label", "text"}
PROP_CALLS = {"g_object_set", "g_object_new", "gtk_widget_class_install_action"}
# Calls that translate their string arguments.
MARKS = {"_", "N_", "C_", "NC_", "ngettext", "g_dngettext", "g_dpgettext2", "gettext",
         "dgettext", "Q_"}
# Literals with letters that are not words for users, each with why. Empty: icon names,
# action names and the like go to calls and properties this scan does not look at.
ALLOWED = {
}

C_TOKEN = re.compile(r'''
    (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])+')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[(),;{}?:\[\]])
  | (?P<other>\S)
''', re.S | re.X)
FORMAT = re.compile(r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|z|j|t|G_GINT64_MODIFIER)?[a-zA-Z%]")


def is_words(text):
    """Whether a literal holds something a person reads: letters left once format
    directives and escapes are gone."""
    text = FORMAT.sub("", text.replace("\\n", " ").replace("\\t", " "))
    text = re.sub(r"\\.", "", text)
    return re.search(r"[^\W\d_]", text) is not None


def tokens(source):
    for m in C_TOKEN.finditer(source):
        kind = m.lastgroup
        if kind == "comment":
            continue
        yield kind, m.group(), source.count("\n", 0, m.start()) + 1


def split_args(toks, start):
    """The arguments of the call whose '(' is toks[start]: lists of tokens, and the index
    after the closing ')'."""
    args, cur, depth, i = [], [], 0, start + 1
    while i < len(toks):
        kind, text, _ = toks[i]
        if text in "([{" and kind == "punct":
            depth += 1
        elif text in ")]}" and kind == "punct":
            if depth == 0:
                args.append(cur)
                return args, i + 1
            depth -= 1
        elif text == "," and kind == "punct" and depth == 0:
            args.append(cur)
            cur = []
            i += 1
            continue
        cur.append(toks[i])
        i += 1
    return args, i


def unmarked_in(arg):
    """String literals in an argument that no translation call encloses."""
    found, stack, pending, previous = [], [], None, None
    for kind, text, line in arg:
        if kind == "ident":
            pending, previous = text, kind
            continue
        if kind == "punct" and text == "(":
            stack.append(pending)
        elif kind == "punct" and text == ")" and stack:
            stack.pop()
        elif kind == "string" and not any(s in MARKS for s in stack):
            if previous == "string" and found:
                # Adjacent literals are one string.
                found[-1] = (found[-1][0] + text[1:-1], found[-1][1])
            else:
                found.append((text[1:-1], line))
        pending, previous = None, kind
    return [(t, l) for t, l in found if is_words(t) and t not in ALLOWED]


def check_c(path, rel):
    toks = list(tokens(path.read_text(encoding="utf-8")))
    problems = []
    for i, (kind, name, line) in enumerate(toks):
        if kind != "ident" or i + 1 >= len(toks) or toks[i + 1][1] != "(":
            continue
        if i > 0 and toks[i - 1][1] in ("void", "static") or name in MARKS:
            continue
        args, _ = split_args(toks, i + 1)
        where = []
        if name in CALLS:
            where = CALLS[name]
        elif ADW_SETTER.match(name):
            where = [1]
        for n in where:
            if n < len(args):
                for text, l in unmarked_in(args[n]):
                    problems.append(f"{rel}:{l}: \"{text}\" is shown by {name} () but not marked for translation")
        if name in PROP_CALLS or name == "gtk_accessible_update_property":
            for n, arg in enumerate(args[:-1]):
                key = "".join(t for _, t, _ in arg).strip()
                shown = (key.strip('"') in PROPS if key.startswith('"')
                         else key in ("GTK_ACCESSIBLE_PROPERTY_LABEL",
                                      "GTK_ACCESSIBLE_PROPERTY_DESCRIPTION"))
                if shown:
                    for text, l in unmarked_in(args[n + 1]):
                        problems.append(f"{rel}:{l}: \"{text}\" is shown as {key} by {name} () but not marked for translation")
    return problems


def check_ui(path, rel):
    problems = []
    source = path.read_text(encoding="utf-8")
    root = ET.fromstring(source)
    parents = {c: p for p in root.iter() for c in p}
    for el in root.iter():
        if el.tag not in ("property", "attribute", "item", "col", "mime-type"):
            continue
        name = el.get("name")
        in_accessibility = parents.get(el) is not None and parents[el].tag == "accessibility"
        if el.tag == "property" and not (name in UI_TEXT or in_accessibility and name in UI_ACCESSIBLE):
            continue
        if el.tag == "attribute" and name != "label":
            continue
        if el.tag == "mime-type":
            continue
        text = el.text or ""
        if el.get("translatable") == "yes" or not is_words(text) or text in ALLOWED:
            continue
        # ElementTree keeps no line numbers: find the element's text in the file.
        needle = f'name="{name}"' if name else f"<{el.tag}"
        line = next((n for n, l in enumerate(source.splitlines(), 1)
                     if needle in l and text.split("\n")[0] in l), 0)
        problems.append(f"{rel}:{line}: <{el.tag} name=\"{name}\">{text}</{el.tag}> lacks translatable=\"yes\"")
    return problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    paths = [pathlib.Path(p).resolve() for p in sys.argv[2:]]
    if not paths:
        paths = sorted(root.glob("src/*.c")) + sorted(root.glob("src/core/*.c")) \
            + sorted(root.glob("src/**/*.ui"))
    problems = []
    for path in paths:
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        check = check_ui if path.suffix == ".ui" else check_c
        problems += check(path, rel)
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(paths)} files: every user-visible string is marked for translation")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
