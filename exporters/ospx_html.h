/* ospx_html.h — `<stem>.html`, the flame graph as one self-contained offline page: the VS Code
 * extension's viewer (vscode/src/webview, built into viewer-template.html at build time by
 * viewer-page.py) with the profile embedded. */
#ifndef OSPX_HTML_H
#define OSPX_HTML_H

#include "ospx.h"

/* Writes `<stem>.html` (atomically) from `<stem>.speedscope.json` and, when present,
 * `<stem>.profile.json`, both as the writers left them. Returns 0 or -errno with `err` filled
 * ("file:line:col: text" for a file that is not JSON). */
int ospx_html_write(const char *stem, struct ospx_error *err);

/* The same from files this process has just written (so not parsed again: the speedscope
 * file of a long run is over a hundred megabytes): `<stem>.profile.json` is embedded when
 * `with_summary`, else the summary is null (an older profile.json beside it is not this
 * run's). */
int ospx_html_write_fresh(const char *stem, int with_summary, struct ospx_error *err);

#endif /* OSPX_HTML_H */
