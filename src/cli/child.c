/* The command `latchkey run` starts, in a process group of its own, tied
 * to latchkey's life (docs/cli.md, "run", "The command's processes").
 *
 * - The group: the command leads a new process group, so a lost lease,
 *   a forwarded signal or latchkey's death reaches everything the command
 *   started that stayed in it (`sh -c 'job; true'` included), not just
 *   the command's own process.
 * - Latchkey's death (kill -9, the OOM killer): on Linux the command gets
 *   SIGKILL from the kernel (PR_SET_PDEATHSIG), and on every system a
 *   guard process, blocked reading a pipe only latchkey holds, sees the
 *   pipe's end and kills the whole group. Latchkey tells the guard "done"
 *   before a normal exit. The command waits for a "go" from latchkey
 *   before it executes anything, and latchkey says it once the guard is
 *   forked: there is no moment when the command runs unguarded.
 * - A terminal: when latchkey runs in the foreground of its terminal, the
 *   command's group is made the terminal's foreground group, so Ctrl-C,
 *   Ctrl-Z and reading the terminal work as if the command ran alone; a
 *   stopped command stops latchkey too (its shell sees the job stop) and
 *   `fg` continues both.
 *
 * Between fork and exec only async-signal-safe calls are made: the
 * library's resolver threads may hold locks (malloc's among them) at the
 * fork. So the program is found in PATH and every string is built before. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "cli/child.h"

/* The program as execvp would find it: a name with a slash as is, else
 * the first executable regular file of that name in PATH. malloc'd, or
 * NULL with *err (ENOENT none, EACCES only ones not executable). */
static char *find_program(const char *file, int *err) {
  const char *path = getenv("PATH"), *p, *end;
  char *cand;
  int saw_eacces = 0;
  size_t flen = strlen(file);
  struct stat st;
  if (strchr(file, '/') != NULL) {
    if ((cand = strdup(file)) == NULL)
      *err = ENOMEM;
    return cand;
  }
  if (path == NULL || *path == '\0')
    path = "/usr/local/bin:/usr/bin:/bin";
  for (p = path;; p = end + 1) {
    size_t dlen;
    end = strchr(p, ':');
    if (end == NULL)
      end = p + strlen(p);
    dlen = (size_t)(end - p);
    if ((cand = malloc(dlen + flen + 3)) == NULL) {
      *err = ENOMEM;
      return NULL;
    }
    if (dlen == 0)
      memcpy(cand, ".", 2), dlen = 1; /* an empty entry is the current directory */
    else
      memcpy(cand, p, dlen);
    cand[dlen] = '/';
    memcpy(cand + dlen + 1, file, flen + 1);
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(cand, X_OK) == 0)
        return cand;
      saw_eacces = 1;
    }
    free(cand);
    if (*end == '\0')
      break;
  }
  *err = saw_eacces ? EACCES : ENOENT;
  return NULL;
}

/* In the child, before exec: signals as a fresh program expects them
 * (the library ignores SIGPIPE; latchkey's handlers are libuv's). */
static void child_signals_default(void) {
  struct sigaction sa;
  sigset_t none;
  int s;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      (void)sigaction(s, &sa, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static void write_errno_and_exit(int fd, int err) {
  ssize_t n;
  do
    n = write(fd, &err, sizeof(err));
  while (n < 0 && errno == EINTR);
  _exit(127);
}

/* The guard (see the top): closes what it inherited but its pipe, then
 * waits. "d" from latchkey: a normal end, nothing to do. The pipe's end
 * without it: latchkey died, the group is killed. */
static void guard_main(int rfd, pid_t group) {
  struct sigaction sa;
  int s, fd;
  char b;
  ssize_t n;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  /* It shares latchkey's group: a Ctrl-C, a hang-up or `kill %1` meant
   * for latchkey must not end it. SIGCHLD and SIGCONT back to their
   * defaults (libuv's handler for SIGCHLD is latchkey's, not ours). */
  for (s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP)
      continue;
    sa.sa_handler = s == SIGCHLD || s == SIGCONT ? SIG_DFL : SIG_IGN;
    (void)sigaction(s, &sa, NULL);
  }
  {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
  }
  if (rfd != 3) {
    dup2(rfd, 3);
    close(rfd);
  }
  /* No copy of latchkey's sockets or terminal may outlive it here. */
  fd = open("/dev/null", O_RDWR);
  if (fd >= 0) {
    dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
    if (fd > 3)
      close(fd);
  }
#if defined(__linux__) && defined(SYS_close_range)
  if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
  {
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
      max = 65536;
    for (fd = 4; fd < max; fd++)
      close(fd);
  }
  for (;;) {
    n = read(3, &b, 1);
    if (n == 1 && b == 'd')
      _exit(0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != 1)
      break;
  }
  kill(-group, SIGKILL);
  _exit(0);
}

/* tcsetpgrp from a process that may be in the background: SIGTTOU
 * blocked, or it would stop us. */
static void give_terminal(pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  (void)tcsetpgrp(STDIN_FILENO, pgrp);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

int cli_child_spawn(cli_child_t *ch, char *const argv[], char *const env[], int *err) {
  int errpipe[2] = {-1, -1}, gpipe[2] = {-1, -1}, gopipe[2] = {-1, -1}, child_err = 0;
  sigset_t all, old;
  pid_t parent = getpid(), pid;
  char *prog, **sh_argv = NULL;
  size_t argc = 0;
  ssize_t n;
  memset(ch, 0, sizeof(*ch));
  ch->guard_fd = -1;
  *err = 0;
  if ((prog = find_program(argv[0], err)) == NULL)
    return -1;
  while (argv[argc] != NULL)
    argc++;
  if ((sh_argv = calloc(argc + 2, sizeof(*sh_argv))) != NULL) {
    sh_argv[0] = "sh";
    sh_argv[1] = prog;
    memcpy(sh_argv + 2, argv + 1, (argc - 1) * sizeof(*sh_argv));
  }
  /* Ours to give only when we are the terminal's foreground. We write to
   * the terminal from the background then (a lost lease's message):
   * with TOSTOP set that would stop us, so SIGTTOU is ignored. */
  ch->tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  if (ch->tty)
    signal(SIGTTOU, SIG_IGN);
  if (pipe(errpipe) != 0 || fcntl(errpipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(errpipe[1], F_SETFD, FD_CLOEXEC) != 0 || pipe(gpipe) != 0 ||
      fcntl(gpipe[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(gpipe[1], F_SETFD, FD_CLOEXEC) != 0 ||
      pipe(gopipe) != 0 || fcntl(gopipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(gopipe[1], F_SETFD, FD_CLOEXEC) != 0) {
    *err = errno;
    goto fail;
  }
  /* Every signal blocked across the forks: a signal landing in a child
   * before it resets its handlers would run libuv's handler there, which
   * writes to the pipe latchkey's loop reads. */
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid = fork();
  if (pid == 0) {
    char go;
    ssize_t got;
    close(errpipe[0]);
    close(gpipe[0]);
    close(gpipe[1]);
    close(gopipe[1]);
    setpgid(0, 0);
#ifdef __linux__
    /* Killed when the thread that forked it ends: latchkey's main thread,
     * which runs the loop and lives as long as latchkey. If latchkey died
     * before this line, the parent is already someone else. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(127);
#endif
    /* Nothing runs before the guard is in place: if latchkey dies first,
     * the pipe ends without "g". */
    do
      got = read(gopipe[0], &go, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1)
      _exit(127);
    if (ch->tty)
      (void)tcsetpgrp(STDIN_FILENO, getpid()); /* SIGTTOU still blocked */
    child_signals_default();
    execve(prog, argv, env);
    if (errno == ENOEXEC && sh_argv != NULL)
      execve("/bin/sh", sh_argv, env); /* a script without #!, as execvp does */
    write_errno_and_exit(errpipe[1], errno);
  }
  if (pid < 0) {
    *err = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    goto fail;
  }
  /* Both sides set the group and the terminal: whichever runs first. */
  (void)setpgid(pid, pid);
  if (ch->tty)
    (void)tcsetpgrp(STDIN_FILENO, pid);
  ch->pid = pid;
  close(errpipe[1]);
  errpipe[1] = -1;
  ch->guard = fork();
  if (ch->guard == 0) {
    close(gpipe[1]);
    guard_main(gpipe[0], pid);
  }
  close(gopipe[0]);
  gopipe[0] = -1;
  do
    n = write(gopipe[1], "g", 1); /* the guard is there (or could not be): go */
  while (n < 0 && errno == EINTR);
  close(gopipe[1]);
  gopipe[1] = -1;
  sigprocmask(SIG_SETMASK, &old, NULL);
  close(gpipe[0]);
  gpipe[0] = -1;
  if (ch->guard > 0) {
    ch->guard_fd = gpipe[1];
  } else {
    ch->guard = 0; /* no guard: the kernel's PDEATHSIG alone (Linux) */
    close(gpipe[1]);
  }
  gpipe[1] = -1;
  /* The exec's outcome: the pipe closes on success, or carries errno. */
  do
    n = read(errpipe[0], &child_err, sizeof(child_err));
  while (n < 0 && errno == EINTR);
  close(errpipe[0]);
  free(prog);
  free(sh_argv);
  if (n == (ssize_t)sizeof(child_err)) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    ch->pid = 0;
    cli_child_done(ch);
    *err = child_err;
    return -1;
  }
  return 0;
fail:
  if (errpipe[0] >= 0)
    close(errpipe[0]), close(errpipe[1]);
  if (gpipe[0] >= 0)
    close(gpipe[0]), close(gpipe[1]);
  if (gopipe[0] >= 0)
    close(gopipe[0]), close(gopipe[1]);
  ch->tty = 0;
  free(prog);
  free(sh_argv);
  return -1;
}

void cli_child_signal(cli_child_t *ch, int sig) {
  if (ch->pid > 0)
    (void)kill(-ch->pid, sig);
}

void cli_child_stopped(cli_child_t *ch) {
  if (ch->tty) {
    /* The terminal back to our group, then stop as the command did: the
     * shell sees the job stop. `fg` continues us here. */
    give_terminal(getpgrp());
    raise(SIGSTOP);
    if (tcgetpgrp(STDIN_FILENO) == getpgrp())
      give_terminal(ch->pid); /* fg; after bg the terminal is not ours to give */
  }
  cli_child_signal(ch, SIGCONT);
}

void cli_child_done(cli_child_t *ch) {
  if (ch->tty && tcgetpgrp(STDIN_FILENO) == ch->pid)
    give_terminal(getpgrp());
  ch->tty = 0;
  if (ch->guard_fd >= 0) {
    ssize_t n;
    do
      n = write(ch->guard_fd, "d", 1);
    while (n < 0 && errno == EINTR);
    close(ch->guard_fd);
    ch->guard_fd = -1;
  }
}
