/* How one inspection is shown: a table for people, a JSON object for
 * scripts (docs/cli.md, "inspect"). */
#include <inttypes.h>
#include <string.h>

#include "cli/cli.h"

static const char *kind_text(lk_inspect_kind_t k) {
  switch (k) {
  case LK_INSPECT_NONE: return "nothing";
  case LK_INSPECT_LOCK: return "lock";
  case LK_INSPECT_FAIR: return "fair lock";
  case LK_INSPECT_RWLOCK: return "read/write lock";
  case LK_INSPECT_COUNT: return "count (semaphore permits or latch count)";
  case LK_INSPECT_PSEM: return "expirable semaphore";
  case LK_INSPECT_LATCH: return "latch";
  case LK_INSPECT_TOKEN: return "free fenced lock (token counter only)";
  default: return "not a latchkey structure";
  }
}

static const char *mode_text(int mode) {
  return mode == LK_RW_READ ? "read" : mode == LK_RW_WRITE ? "write" : "-";
}

/* "12.3s", "450ms", "2m05s", "none" (no expiry), "-" (absent). */
static const char *dur(char *buf, size_t cap, int64_t ms) {
  if (ms == -1)
    snprintf(buf, cap, "no expiry");
  else if (ms == -2 || ms == LK_INSPECT_NO_DEADLINE)
    snprintf(buf, cap, "-");
  else if (ms < 0)
    snprintf(buf, cap, "passed %" PRId64 "ms ago", -ms);
  else if (ms < 1000)
    snprintf(buf, cap, "%" PRId64 "ms", ms);
  else if (ms < 60000)
    snprintf(buf, cap, "%" PRId64 ".%01" PRId64 "s", ms / 1000, (ms % 1000) / 100);
  else
    snprintf(buf, cap, "%" PRId64 "m%02" PRId64 "s", ms / 60000, (ms % 60000) / 1000);
  return buf;
}

/* "    = host pid 1234 program (client_name) note: ..." under an owner. */
static void owner_line(FILE *f, const cli_owner_t *owners, size_t i) {
  const cli_owner_t *o;
  if (owners == NULL || !owners[i].known)
    return;
  o = &owners[i];
  fprintf(f, "    = %s", o->host[0] != '\0' ? cli_safe(o->host) : "?");
  if (o->pid >= 0)
    fprintf(f, " pid %" PRId64, o->pid);
  if (o->program[0] != '\0')
    fprintf(f, " %s", cli_safe(o->program));
  if (o->client_name[0] != '\0')
    fprintf(f, " (%s)", cli_safe(o->client_name));
  if (o->note[0] != '\0')
    fprintf(f, " note: %s", cli_safe(o->note));
  fputc('\n', f);
}

static void owner_json(cli_json_t *j, const cli_owner_t *owners, size_t i) {
  const cli_owner_t *o;
  if (owners == NULL || !owners[i].known)
    return;
  o = &owners[i];
  cli_json_obj_begin(j, "owner_desc");
  cli_json_str(j, "id", o->id);
  cli_json_str(j, "host", o->host);
  cli_json_int_or_null(j, "pid", o->pid >= 0, o->pid);
  cli_json_str(j, "program", o->program);
  cli_json_str(j, "client_name", o->client_name);
  cli_json_str(j, "version", o->version);
  cli_json_int(j, "started_ms", o->started_ms);
  cli_json_str(j, "note", o->note);
  cli_json_obj_end(j);
}

/* One entry of an inspection's list, as the fields of its JSON object. */
typedef void (*json_entry_fn)(cli_json_t *j, const lk_inspect_t *in, const cli_owner_t *owners,
                              size_t i);

static void holder_json(cli_json_t *j, const lk_inspect_t *in, const cli_owner_t *owners,
                        size_t i) {
  cli_json_str(j, "owner", in->holders[i].owner);
  cli_json_int(j, "count", in->holders[i].count);
  cli_json_str_or_null(j, "mode", in->holders[i].mode != 0 ? mode_text(in->holders[i].mode) : NULL);
  cli_json_int(j, "ttl_ms", in->holders[i].ttl_ms);
  owner_json(j, owners, i);
}

static void waiter_json(cli_json_t *j, const lk_inspect_t *in, const cli_owner_t *owners,
                        size_t i) {
  cli_json_str(j, "owner", in->waiters[i].owner);
  cli_json_int_or_null(j, "deadline_ms", in->waiters[i].deadline_ms != LK_INSPECT_NO_DEADLINE,
                       in->waiters[i].deadline_ms);
  owner_json(j, owners, in->n_holders + i); /* owners lists the holders first */
}

static void permit_json(cli_json_t *j, const lk_inspect_t *in, const cli_owner_t *owners,
                        size_t i) {
  (void)owners;
  cli_json_str(j, "id", in->permits[i].id);
  cli_json_int_or_null(j, "lease_ms", !in->permits[i].no_lease, in->permits[i].lease_ms);
}

/* A list as the inspection read it: its first n entries under key, and
 * how many there are in all under total_key. */
static void json_list(cli_json_t *j, const char *key, size_t n, const char *total_key,
                      size_t total, json_entry_fn entry, const lk_inspect_t *in,
                      const cli_owner_t *owners) {
  cli_json_arr_begin(j, key);
  for (size_t i = 0; i < n; i++) {
    cli_json_obj_begin(j, NULL);
    entry(j, in, owners, i);
    cli_json_obj_end(j);
  }
  cli_json_arr_end(j);
  cli_json_int(j, total_key, (int64_t)total);
}

/* Under a table's list of n entries out of total: how many are not shown. */
static void more_line(FILE *f, size_t n, size_t total) {
  if (n < total)
    fprintf(f, "  ... %zu more\n", total - n);
}

void cli_render_table(FILE *f, const lk_inspect_t *in) { cli_render_table_owners(f, in, NULL); }
void cli_render_json(FILE *f, const lk_inspect_t *in) { cli_render_json_owners(f, in, NULL); }

void cli_render_table_owners(FILE *f, const lk_inspect_t *in, const cli_owner_t *owners) {
  char b[48];
  size_t i;
  fprintf(f, "%-9s %s\n", "NAME", cli_safe(in->name));
  fprintf(f, "%-9s %s (%s)\n", "KIND", kind_text(in->kind), cli_safe(in->redis_type));
  if (in->kind == LK_INSPECT_NONE)
    return;
  if (in->kind == LK_INSPECT_RWLOCK)
    fprintf(f, "%-9s %s\n", "MODE", mode_text(in->mode));
  if (in->ttl_ms != -2)
    fprintf(f, "%-9s %s\n", "TTL", dur(b, sizeof(b), in->ttl_ms));
  if (in->has_count)
    fprintf(f, "%-9s %" PRId64 "\n",
            in->kind == LK_INSPECT_LATCH ? "COUNT" : "AVAILABLE", in->count);
  if (in->token > 0)
    fprintf(f, "%-9s %" PRId64 "\n", "TOKEN", in->token);
  if (in->kind == LK_INSPECT_LOCK || in->kind == LK_INSPECT_FAIR ||
      in->kind == LK_INSPECT_RWLOCK) {
    fprintf(f, "%-9s %zu%s\n", "HOLDERS", in->total_holders,
            in->total_holders == 0 ? " (free)" : "");
    if (in->n_holders > 0)
      fprintf(f, "  %-48s %6s %-5s %s\n", "OWNER", "COUNT", "MODE", "TTL");
    for (i = 0; i < in->n_holders; i++) {
      fprintf(f, "  %-48s %6" PRId64 " %-5s %s\n", cli_safe(in->holders[i].owner), in->holders[i].count,
              mode_text(in->holders[i].mode), dur(b, sizeof(b), in->holders[i].ttl_ms));
      owner_line(f, owners, i);
    }
    more_line(f, in->n_holders, in->total_holders);
  }
  if (in->kind == LK_INSPECT_FAIR || in->total_waiters > 0) {
    fprintf(f, "%-9s %zu waiting\n", "QUEUE", in->total_waiters);
    if (in->n_waiters > 0)
      fprintf(f, "  %3s %-48s %s\n", "#", "OWNER", "DEADLINE IN");
    for (i = 0; i < in->n_waiters; i++) {
      fprintf(f, "  %3zu %-48s %s\n", i + 1, cli_safe(in->waiters[i].owner),
              dur(b, sizeof(b), in->waiters[i].deadline_ms));
      owner_line(f, owners, in->n_holders + i);
    }
    more_line(f, in->n_waiters, in->total_waiters);
  }
  if (in->kind == LK_INSPECT_PSEM) {
    fprintf(f, "%-9s %zu leased\n", "PERMITS", in->total_permits);
    if (in->n_permits > 0)
      fprintf(f, "  %-32s %s\n", "ID", "LEASE LEFT");
    for (i = 0; i < in->n_permits; i++)
      fprintf(f, "  %-32s %s\n", cli_safe(in->permits[i].id),
              in->permits[i].no_lease ? "never ends" : dur(b, sizeof(b), in->permits[i].lease_ms));
    more_line(f, in->n_permits, in->total_permits);
  }
}

void cli_render_json_owners(FILE *f, const lk_inspect_t *in, const cli_owner_t *owners) {
  cli_json_t j;
  cli_json_init(&j, f);
  cli_json_obj_begin(&j, NULL);
  cli_json_str(&j, "name", in->name);
  cli_json_str(&j, "kind", lk_inspect_kind_name(in->kind));
  cli_json_str(&j, "redis_type", in->redis_type);
  cli_json_int(&j, "ttl_ms", in->ttl_ms);
  cli_json_int(&j, "server_time_ms", in->server_time_ms);
  cli_json_str_or_null(&j, "mode", in->kind == LK_INSPECT_RWLOCK ? mode_text(in->mode) : NULL);
  cli_json_int_or_null(&j, "count", in->has_count, in->count);
  cli_json_int_or_null(&j, "token", in->token > 0, in->token);
  json_list(&j, "holders", in->n_holders, "holders_total", in->total_holders, holder_json, in,
            owners);
  json_list(&j, "waiters", in->n_waiters, "waiters_total", in->total_waiters, waiter_json, in,
            owners);
  json_list(&j, "permits", in->n_permits, "permits_total", in->total_permits, permit_json, in,
            owners);
  cli_json_obj_end(&j);
  fputc('\n', f);
}
