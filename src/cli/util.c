/* Argument helpers shared by the subcommands: durations, counts, the
 * connection options, and how library codes become exit statuses. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  char msg[1024];
  fprintf(stderr, "%s: ", cli_prog);
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cli_escape(stderr, msg); /* it echoes arguments */
  fputc('\n', stderr);
  cli_print_usage_line(stderr, cmd);
  return CLI_EXIT_USAGE;
}

int cli_parse_duration(const char *s, int allow_forever, int64_t *out_ms) {
  char *end;
  long long v;
  int64_t mul;
  if (s == NULL || *s == '\0')
    return -1;
  if (allow_forever && strcmp(s, "forever") == 0) {
    *out_ms = -1;
    return 0;
  }
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || v < 0)
    return -1;
  if (strcmp(end, "ms") == 0)
    mul = 1;
  else if (strcmp(end, "s") == 0)
    mul = 1000;
  else if (strcmp(end, "m") == 0)
    mul = 60000;
  else if (strcmp(end, "h") == 0)
    mul = 3600000;
  else if (*end == '\0' && v == 0)
    mul = 1; /* "0" needs no unit */
  else
    return -1;
  /* The library's times stop at LK_MAX_TIME_MS; a larger one is refused
   * here rather than later. */
  if (v > (long long)(INT64_MAX / 3600000) || v * mul > (long long)LK_MAX_TIME_MS)
    return -1;
  *out_ms = (int64_t)v * mul;
  return 0;
}

int cli_parse_count(const char *s, int64_t max, int64_t *out) {
  char *end;
  long long v;
  if (s == NULL || *s < '1' || *s > '9')
    return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > max)
    return -1;
  *out = v;
  return 0;
}

int cli_common_arg(const char *cmd, int argc, char **argv, int *i, cli_common_t *co) {
  const char *a = argv[*i];
  if (strcmp(a, "--redis") == 0) {
    if (*i + 1 >= argc) {
      cli_usage(cmd, "--redis needs a URL");
      return -1;
    }
    co->redis = argv[++*i];
    return 1;
  }
  if (strncmp(a, "--redis=", 8) == 0) {
    co->redis = a + 8;
    return 1;
  }
  if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
    co->verbose = 1;
    return 1;
  }
  return 0;
}

int cli_next_arg(const char *cmd, int argc, char **argv, int *i, cli_common_t *co) {
  while (++*i < argc) {
    int rc = cli_common_arg(cmd, argc, argv, i, co);
    if (rc <= 0)
      return rc < 0 ? -1 : 1;
  }
  return 0;
}

int cli_client_opts(const char *cmd, const cli_common_t *co, lk_client_opts_t *o,
                    char **storage) {
  const char *url = co->redis;
  int rc;
  *storage = NULL;
  lk_client_opts_init(o);
  /* An empty one is refused, never taken for "the default": with
   * --redis "$URL" or LATCHKEY_REDIS=$URL and URL unset by mistake, the
   * default server is the wrong one to lock on. */
  if (url != NULL && *url == '\0')
    return cli_usage(cmd, "--redis: an empty URL (leave the option out for the default)");
  if (url == NULL) {
    url = getenv("LATCHKEY_REDIS");
    if (url != NULL && *url == '\0')
      return cli_usage(cmd, "LATCHKEY_REDIS is set but empty (unset it for the default)");
  }
  if (url == NULL)
    return 0; /* redis://127.0.0.1:6379 */
  rc = lk_client_opts_apply_url(o, url, storage);
  if (rc == LK_EINVAL)
    return cli_usage(cmd, "not a connection URL or host:port: %s", url);
  if (rc < 0) {
    fprintf(stderr, "%s: %s\n", cli_prog, lk_strerror(rc));
    return CLI_EXIT_FAIL;
  }
  return 0;
}

int cli_open_client(const char *cmd, const cli_common_t *co, uv_loop_t *loop,
                    lk_client_t **out) {
  lk_client_opts_t o;
  char *storage = NULL;
  int rc;
  *out = NULL;
  if ((rc = cli_client_opts(cmd, co, &o, &storage)) != 0)
    return rc;
  if (uv_loop_init(loop) != 0) {
    lk_client_opts_free_url(storage);
    return CLI_EXIT_FAIL;
  }
  rc = lk_client_new(loop, &o, out);
  lk_client_opts_free_url(storage);
  if (rc < 0) {
    cli_report(cmd, "client", rc, NULL);
    uv_loop_close(loop);
    return CLI_EXIT_FAIL;
  }
  return 0;
}

int cli_exit_for(int status, lk_client_t *c) {
  switch (status) {
  case 0:
    return CLI_EXIT_OK;
  case LK_ECONN:
  case LK_EAUTH:
  case LK_ETLS:
    return CLI_EXIT_CONN;
  case LK_ETIMEDOUT:
  case LK_EUNKNOWN:
    /* A wait that never reached the server is a connection failure. */
    return c != NULL && !lk_client_is_connected(c) ? CLI_EXIT_CONN
                                                    : (status == LK_ETIMEDOUT ? CLI_EXIT_TIMEOUT
                                                                              : CLI_EXIT_FAIL);
  default:
    return CLI_EXIT_FAIL;
  }
}

void cli_report(const char *cmd, const char *what, int status, lk_client_t *c) {
  const char *why = c != NULL ? lk_client_error_text(c) : "";
  fprintf(stderr, "%s %s: %s: %s (%s)%s%s\n", cli_prog, cmd, cli_safe(what), lk_err_name(status),
          lk_strerror(status), *why ? ": " : "", cli_safe(why));
}
