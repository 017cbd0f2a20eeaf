/* Names, owner ids and owner notes are anyone's bytes: a human-readable
 * output of latchkey shows them escaped (docs/cli.md, "Escaping"), so a
 * key name cannot clear the operator's screen or forge a line of the
 * table. The data is real: made by the library and written to the server. */
#include <errno.h>

#include "lk_fixture.h"
#include "tool_util.h"

/* Control bytes (ESC, CR, LF, BEL, DEL, TAB), a C1 control (U+009B, CSI
 * for some terminals) and a byte that is not UTF-8. */
#define HOSTILE "\x1b[2J\rHOLDERS 0\n\a\x7f\t\xc2\x9b\xff"
/* The same as latchkey shows it. */
#define HOSTILE_SHOWN "\\x1b[2J\\rHOLDERS 0\\n\\x07\\x7f\\t\\u009b\\xff"
#define NAME "cli:esc" HOSTILE
#define OWNER_FIELD "evil\x1b]0;pwned\a:1"

/* No byte a terminal obeys, other than the lines' own LF; no forged
 * line; and every needle there. */
static void assert_clean(const char *path, const char *const *needles) {
  size_t n, i;
  char *s = slurp_n(path, &n);
  for (i = 0; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    if ((b < 0x20 && b != '\n') || b == 0x7F || b == 0xFF ||
        (b == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
         (unsigned char)s[i + 1] <= 0x9F))
      FAIL("%s: raw byte 0x%02x at %zu", path, b, i);
  }
  if (strstr(s, "\nHOLDERS 0") != NULL || strncmp(s, "HOLDERS 0", 9) == 0)
    FAIL("%s: a forged line", path);
  for (i = 0; needles[i] != NULL; i++)
    if (strstr(s, needles[i]) == NULL)
      FAIL("%s: no %s in:\n%s", path, needles[i], s);
  free(s);
}

static void wait_keys(rt_server_t *srv, const char *pattern) {
  int64_t until = rt_now_ms() + rt_scaled_ms(10000);
  while (rt_server_count_keys(srv, pattern) < 1) {
    if (rt_now_ms() > until)
      FAIL("no key %s", pattern);
    rt_sleep_ms(10);
  }
}

TEST(human_outputs_escape_names_owners_and_notes) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *l;
  char out[256], err[256];
  int port;
  dir_init();
  lk_client_opts_init(&o);
  o.describe_owner = 1;
  o.owner_note = "note" HOSTILE;
  fx_start_with(&fx, NULL, &o);
  port = rt_server_port(fx.srv);
  /* A lock held through the library, by a client whose note is hostile. */
  l = fx_lock(&fx, NAME);
  ASSERT_EQ(sx_acquire(&fx, l, 0, 60000), 0);
  wait_keys(fx.srv, "latchkey_client:*");
  /* A holder whose owner id is hostile, and a key with a NUL. */
  freeReplyObject(rt_cmd(fx.srv, "HSET cli:own %s 1", OWNER_FIELD));
  freeReplyObject(rt_cmd(fx.srv, "PEXPIRE cli:own 60000"));
  freeReplyObject(rt_cmd(fx.srv, "HSET %b x 1", "cli:nul\0\x1b[H", (size_t)11));
  {
    const char *ins[] = {"inspect", NAME, "cli:own", NULL};
    const char *lst[] = {"list", "cli:*", NULL};
    const char *busy[] = {"run", "--wait", "0", NAME, "--", "true", NULL};
    const char *json[] = {"inspect", "--json", NAME, NULL};
    const char *const ins_want[] = {"NAME      cli:esc" HOSTILE_SHOWN "\n",
                                    "note: note" HOSTILE_SHOWN "\n",
                                    "evil\\x1b]0;pwned\\x07:1", NULL};
    const char *const lst_want[] = {"cli:esc" HOSTILE_SHOWN "\n", NULL};
    const char *const busy_want[] = {"cli:esc" HOSTILE_SHOWN ": not acquired", NULL};
    const char *const json_want[] = {"\"name\":\"cli:esc\\u001b[2J\\rHOLDERS 0\\n\\u0007"
                                     "\\u007f\\t\\u009b\\ufffd\"",
                                     "\"note\":\"note\\u001b", NULL};
    const char *const none[] = {NULL};
    ASSERT_EQ(tool_run(port, "ins", ins), 0);
    path_of(out, sizeof(out), "ins.out");
    assert_clean(out, ins_want);
    ASSERT_EQ(tool_run(port, "lst", lst), 0);
    path_of(out, sizeof(out), "lst.out");
    assert_clean(out, lst_want);
    /* An error that names it, on stderr. */
    ASSERT_EQ(tool_run(port, "busy", busy), 75);
    path_of(err, sizeof(err), "busy.err");
    assert_clean(err, busy_want);
    path_of(out, sizeof(out), "busy.out");
    assert_clean(out, none);
    ASSERT_EQ(tool_run(port, "json", json), 0);
    path_of(out, sizeof(out), "json.out");
    assert_clean(out, json_want);
  }
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}
