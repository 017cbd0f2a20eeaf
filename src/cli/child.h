/* The command of `latchkey run` in a process group of its own, killed with
 * latchkey (child.c, docs/cli.md "The command's processes"). */
#ifndef LK_CLI_CHILD_H
#define LK_CLI_CHILD_H

#include <sys/types.h>

typedef struct cli_child_s {
  pid_t pid;    /* the command, leader of its process group; 0 none */
  pid_t guard;  /* the guard process, 0 none */
  int guard_fd; /* our end of the guard's pipe, -1 none */
  int tty;      /* the command's group has our terminal (stdin) */
} cli_child_t;

/* Starts argv[0] (found in PATH) with env. 0, or -1 with *err an errno
 * (ENOENT: not found; anything else: could not be executed). */
int cli_child_spawn(cli_child_t *ch, char *const argv[], char *const env[], int *err);
/* sig to the command's whole process group. */
void cli_child_signal(cli_child_t *ch, int sig);
/* The command was stopped (Ctrl-Z): stop latchkey too, and continue the
 * command when latchkey is continued. */
void cli_child_stopped(cli_child_t *ch);
/* The command has ended: the terminal back to latchkey's group, and the
 * guard told to leave the group alone. Idempotent. */
void cli_child_done(cli_child_t *ch);

#endif /* LK_CLI_CHILD_H */
