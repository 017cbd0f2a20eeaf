/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* What the connection's own files share (core/conn.c, core/handshake.c,
 * core/conn_scripts.c): nothing above layer 1 includes this. */
#ifndef LK_CORE_CONN_PARTS_H
#define LK_CORE_CONN_PARTS_H

#include "core/internal.h"

/* core/conn.c */
/* "command", "pub/sub" or "sentinel": for log lines. */
const char *lk__conn_label(const lk__conn_t *conn);
/* Appends op to conn's output and its in-flight list (written at once
 * unless the client is corked); no state check: the caller knows. */
void lk__conn_send(lk__conn_t *conn, lk__op_t *op);
/* The handshake's last reply was good: queued commands go out. */
void lk__conn_become_ready(lk__conn_t *conn);

/* core/handshake.c */
/* Sends a connection's handshake (state LK__CONN_HANDSHAKE); its last
 * reply makes it ready or drops it. */
void lk__handshake_start(lk__conn_t *conn);

/* core/conn_scripts.c */
/* Before op is sent on conn: the SCRIPT LOAD to send just before it (the
 * script's first call here), or NULL; right after ASKING, a script not
 * loaded here is rewritten as EVAL instead. */
lk__op_t *lk__conn_script_load_first(lk__conn_t *conn, lk__op_t *op);
/* r answers op with NOSCRIPT: 1 when op was rewritten as EVAL to be sent
 * again (once), 0 when r stands as the reply. */
int lk__conn_script_missing(lk__conn_t *conn, lk__op_t *op, const redisReply *r);

#endif /* LK_CORE_CONN_PARTS_H */
