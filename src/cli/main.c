/* latchkey: run a command under a lock, and see who holds what
 * (docs/cli.md). Subcommands live in run.c and show.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const char *cli_prog = "latchkey";

static const struct {
  const char *name;
  const char *usage;
  int (*fn)(int, char **);
} cmds[] = {
    {"run",
     "latchkey run [--wait DUR|forever] [--lease DUR] [--kill-after DUR] [--fair | --read | "
     "--write | --permits N | --semaphore [--permits N]] [--no-token] [--redis URL] NAME -- "
     "CMD [ARGS...]",
     cli_run},
    {"inspect", "latchkey inspect [--json] [--redis URL] NAME...", cli_inspect},
    {"list", "latchkey list [--json] [--count N] [--redis URL] [PATTERN]", cli_list},
    {"release", "latchkey release --force [--yes] [--redis URL] NAME", cli_release},
    {"ping", "latchkey ping [--json] [--redis URL]", cli_ping},
    {"watch", "latchkey watch [--interval DUR] [--redis URL] NAME", cli_watch},
    {"stats",
     "latchkey stats [--duration DUR] [--contenders N] [--fair] [--json] [--redis URL] NAME",
     cli_stats},
};
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

void cli_print_usage_line(FILE *f, const char *cmd) {
  size_t i;
  for (i = 0; i < N_CMDS; i++)
    if (cmd != NULL && strcmp(cmd, cmds[i].name) == 0) {
      fprintf(f, "usage: %s\n", cmds[i].usage);
      return;
    }
  fprintf(f, "usage: latchkey COMMAND [OPTIONS] ... (latchkey --help)\n");
}

static void help(FILE *f) {
  size_t i;
  fputs("latchkey: Redisson-compatible distributed locks from the shell (docs/cli.md)\n\n"
        "Commands:\n",
        f);
  for (i = 0; i < N_CMDS; i++)
    fprintf(f, "  %s\n", cmds[i].usage);
  fputs("\n"
        "  run      take NAME (a lock; --fair a fair lock; --read/--write a read/write lock;\n"
        "           --semaphore N permits of an expirable semaphore), run CMD with\n"
        "           LATCHKEY_NAME, LATCHKEY_OWNER and LATCHKEY_TOKEN in its environment,\n"
        "           renew the lease while it runs, forward SIGINT/SIGTERM/SIGHUP to it,\n"
        "           release when it exits and exit with its status. CMD runs in a process\n"
        "           group of its own: a lost lease sends the group SIGTERM, then SIGKILL\n"
        "           after --kill-after (default 10s); a killed latchkey takes it along.\n"
        "           --wait: how long to wait for NAME (default forever; 0 = try once).\n"
        "           --lease: the lease the watchdog keeps renewing (default 30s): how long\n"
        "           NAME outlives a latchkey that died.\n"
        "  inspect  who holds NAME, hold counts, TTL, the fair queue, permits, the last\n"
        "           fencing token; a table, or one JSON object per line with --json\n"
        "  list     lock-like names matching PATTERN (default *), by SCAN\n"
        "  release  --force: delete NAME whoever holds it and wake its waiters; asks on a\n"
        "           terminal unless --yes (without a terminal, --yes is required)\n"
        "  ping     server version, mode (standalone/cluster) and round trip\n"
        "  watch    a live view of NAME, redrawn when its pub/sub channels announce a\n"
        "           change and at least every --interval (default 500ms)\n"
        "  stats    a short run on NAME (--duration, default 5s): half of it one worker\n"
        "           takes and gives back NAME (acquire and release round trips, p50/p99),\n"
        "           half of it --contenders workers (default 4) at once (holds/s, acquire\n"
        "           time with waits, hand-off from a release to the next grant); then the\n"
        "           client's counters. Each hold is given back at once (lease 10s)\n\n"
        "Connection: --redis URL, else $LATCHKEY_REDIS, else redis://127.0.0.1:6379 (an empty\n"
        "  one is refused)\n"
        "  (redis://[user:pass@]host[:port][/db], rediss://..., unix:///path, host:port)\n"
        "Durations: 500ms, 10s, 2m, 1h (a unit is required; 0 alone is allowed)\n\n"
        "Exit status:\n"
        "  0    success (run: the command's own status; 128+N if it died of signal N)\n"
        "  1    failure (a server error, NAME not a lock for release, refused...)\n"
        "  2    usage: bad arguments\n"
        "  69   could not reach the server\n"
        "  75   run: NAME not acquired within --wait; stats: NAME never acquired\n"
        "  79   run: the lease was lost while the command ran (it was terminated)\n"
        "  80   run: the command ended but NAME could not be released (it stays held\n"
        "       until its lease runs out)\n"
        "  126  run: the command could not be executed\n"
        "  127  run: the command was not found\n",
        f);
}

int main(int argc, char **argv) {
  size_t i;
  if (argc < 2)
    return cli_usage(NULL, "a command is required");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    help(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("latchkey %s\n", lk_version_string());
    return CLI_EXIT_OK;
  }
  for (i = 0; i < N_CMDS; i++)
    if (strcmp(argv[1], cmds[i].name) == 0)
      return cmds[i].fn(argc - 1, argv + 1);
  return cli_usage(NULL, "unknown command: %s", argv[1]);
}
