/* The latchkey command-line tool (docs/cli.md): shared pieces. Built on the
 * public API only, like any program using the library. */
#ifndef LK_CLI_H
#define LK_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <latchkey.h>

/* Exit statuses (docs/cli.md, "Exit status"; --help lists them). `run`
 * exits with its child's status otherwise (128+N when the child died of
 * signal N), so these sit where commands rarely exit. */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAIL = 1,     /* an error the message names (a server error...) */
  CLI_EXIT_USAGE = 2,    /* bad arguments: a usage line on stderr */
  CLI_EXIT_CONN = 69,    /* could not reach the server (EX_UNAVAILABLE) */
  CLI_EXIT_TIMEOUT = 75, /* run: not acquired within --wait (EX_TEMPFAIL) */
  CLI_EXIT_LOST = 79,    /* run: the lease was lost while the child ran */
  CLI_EXIT_UNRELEASED = 80, /* run: the command ended, NAME could not be released */
  CLI_EXIT_NOEXEC = 126, /* run: the command could not be executed */
  CLI_EXIT_NOTFOUND = 127 /* run: the command was not found */
};

/* Options every subcommand shares. */
typedef struct cli_common_s {
  const char *redis; /* --redis, else $LATCHKEY_REDIS, else NULL (default) */
  int verbose;
} cli_common_t;

extern const char *cli_prog;

/* Usage error: prints "latchkey: msg" and the subcommand's usage line on
 * stderr, returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_print_usage_line(FILE *f, const char *cmd);

/* "500ms", "10s", "2m", "1h" (and "0") into ms; "forever" into -1 when
 * allow_forever. Returns 0, or -1 for anything else (bare numbers other
 * than 0 included: a unit is required). */
int cli_parse_duration(const char *s, int allow_forever, int64_t *out_ms);
/* A positive decimal integer up to max. 0 or -1. */
int cli_parse_count(const char *s, int64_t max, int64_t *out);

/* Takes --redis URL / --redis=URL and -v at argv[*i]; 1 taken (i moved on),
 * 0 not one of them, -1 a usage error (already printed). */
int cli_common_arg(const char *cmd, int argc, char **argv, int *i, cli_common_t *co);
/* Steps *i on to the subcommand's next own argument, taking the common
 * options (cli_common_arg) on the way; start with *i = 0. 1: argv[*i] is
 * the next one, 0: none is left, -1: a usage error (already printed). */
int cli_next_arg(const char *cmd, int argc, char **argv, int *i, cli_common_t *co);

/* Client options from the common options (URL or host:port). 0, or
 * CLI_EXIT_USAGE after printing. storage is freed with
 * lk_client_opts_free_url after lk_client_new. */
int cli_client_opts(const char *cmd, const cli_common_t *co, lk_client_opts_t *o,
                    char **storage);

/* cli_client_opts, then a loop (initialised here) and a client on it. 0,
 * or the exit status after printing why (the loop is closed again). */
int cli_open_client(const char *cmd, const cli_common_t *co, uv_loop_t *loop,
                    lk_client_t **out);

/* Exit status for a library code met while talking to the server. */
int cli_exit_for(int status, lk_client_t *c);
/* Prints "latchkey CMD: what: <error> (<client error text>)". */
void cli_report(const char *cmd, const char *what, int status, lk_client_t *c);

/* Escaping for people (escape.c, docs/cli.md "Escaping"): every name,
 * owner id, note, host or server text a human-readable output shows goes
 * through these. Backslash, control characters (C0, DEL), C1 and a few
 * invisible reordering code points, and bytes that are not valid UTF-8
 * come out as \\, \n, \r, \t, \xHH (a byte) or \uXXXX (a code point). */
void cli_escape(FILE *f, const char *s);
/* s escaped, in storage that stays valid for the next 15 calls (enough
 * for the arguments of one printf); NULL gives "(null)". */
const char *cli_safe(const char *s);
/* Length of a valid UTF-8 sequence at s (1..4) with its code point, or 0. */
int cli_utf8_len(const unsigned char *s, uint32_t *cp);

/* Subcommands: each returns its exit status. */
int cli_run(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_release(int argc, char **argv);
int cli_ping(int argc, char **argv);
int cli_watch(int argc, char **argv);
int cli_stats(int argc, char **argv);

/* Who an owner is (docs/owners.md), copied out of lk_owner_desc_t so it
 * outlives the callback; known 0: nothing to show for that owner. */
typedef struct cli_owner_s {
  int known;
  char id[72], host[256], program[256], client_name[256], version[64], note[260];
  int64_t pid, started_ms;
} cli_owner_t;

/* Rendering of one inspection (render.c): a table for people, JSON.
 * owners, when not NULL, has one entry per holder then one per waiter
 * (in->n_holders + in->n_waiters), shown under each owner id. */
void cli_render_table(FILE *f, const lk_inspect_t *in);
void cli_render_json(FILE *f, const lk_inspect_t *in);
void cli_render_table_owners(FILE *f, const lk_inspect_t *in, const cli_owner_t *owners);
void cli_render_json_owners(FILE *f, const lk_inspect_t *in, const cli_owner_t *owners);

/* ---- a small JSON emitter (json.c): strings escaped per RFC 8259 ---- */
typedef struct cli_json_s {
  FILE *f;
  int depth;
  int first[16]; /* per depth: nothing written yet at this level */
} cli_json_t;

void cli_json_init(cli_json_t *j, FILE *f);
void cli_json_obj_begin(cli_json_t *j, const char *key);
void cli_json_obj_end(cli_json_t *j);
void cli_json_arr_begin(cli_json_t *j, const char *key);
void cli_json_arr_end(cli_json_t *j);
void cli_json_str(cli_json_t *j, const char *key, const char *v);
void cli_json_int(cli_json_t *j, const char *key, int64_t v);
void cli_json_bool(cli_json_t *j, const char *key, int v);
void cli_json_null(cli_json_t *j, const char *key);
/* key's value, or null where there is none: v when `has`, else null; the
 * string v, else null where v is NULL. */
void cli_json_int_or_null(cli_json_t *j, const char *key, int has, int64_t v);
void cli_json_str_or_null(cli_json_t *j, const char *key, const char *v);
/* Writes s as a JSON string literal (quotes and escapes included). */
void cli_json_escape(FILE *f, const char *s);

#endif /* LK_CLI_H */
