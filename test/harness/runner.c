/* main() for test executables: `prog <case>` runs one case in this process,
 * `prog --list` prints the case names, `prog --all` runs every case, each in
 * a forked child (for quick local runs; ctest uses one process per case). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "test.h"

#include "stall.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RT_MAX_CASES 512

static struct {
  const char *name;
  rt_test_fn fn;
} cases[RT_MAX_CASES];
static int n_cases;
static int expected_cases = -1;

void rt_register_test(const char *name, rt_test_fn fn) {
  if (n_cases >= RT_MAX_CASES) {
    fprintf(stderr, "too many TEST cases (max %d)\n", RT_MAX_CASES);
    abort(); /* runs before main: nothing to clean up yet */
  }
  cases[n_cases].name = name;
  cases[n_cases].fn = fn;
  n_cases++;
}

void rt_expect_case_count(int n) { expected_cases = n; }

static unsigned timeout_from_env(void) {
  const char *env = getenv("LK_TEST_TIMEOUT_S");
  if (env == NULL || *env == '\0')
    return 120;
  char *end = NULL;
  unsigned long v = strtoul(env, &end, 10);
  if (end == env || *end != '\0' || v > 86400) {
    fprintf(stderr, "warning: ignoring LK_TEST_TIMEOUT_S=\"%s\"\n", env);
    return 120;
  }
  return (unsigned)v; /* 0 turns the alarm off (debugger sessions) */
}

static int run_case(int i) {
  unsigned timeout = timeout_from_env();
  rt_safety_net_install(timeout);
  rt_stall_monitor_start();
  printf("[ RUN      ] %s\n", cases[i].name);
  int64_t t0 = rt_now_ms();
  cases[i].fn();
  int excused = rt_stall_excused_count();
  if (excused > 0) /* visible in the ctest log: a pass that a stall explains */
    printf("[  EXCUSED ] %s: %d hold expectation(s) excused by measured stalls\n",
           cases[i].name, excused);
  printf("[       OK ] %s (%" PRId64 " ms)\n", cases[i].name, rt_now_ms() - t0);
  return 0;
}

/* Sequential, one child per case; each child has its own alarm. */
static int run_all(void) {
  int failed = 0;
  for (int i = 0; i < n_cases; i++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      run_case(i);
      exit(0);
    }
    int status = 0;
    for (int tries = 0; waitpid(pid, &status, 0) < 0; tries++) {
      if (errno != EINTR || tries > 1000) {
        perror("waitpid");
        return 1;
      }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
      if (WIFSIGNALED(status))
        printf("[  FAILED  ] %s (signal %d)\n", cases[i].name, WTERMSIG(status));
      else
        printf("[  FAILED  ] %s (exit %d)\n", cases[i].name, WEXITSTATUS(status));
    }
  }
  printf("%d of %d cases passed\n", n_cases - failed, n_cases);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  /* Unbuffered so output interleaves correctly with stderr and survives
   * _exit() paths (sanitizer reports, forked children). */
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);

  if (argc != 2) {
    fprintf(stderr, "usage: %s <case> | --list | --all\n", argv[0]);
    return 2;
  }
  if (expected_cases >= 0 && expected_cases != n_cases) {
    fprintf(stderr,
            "FAIL: CMake found %d TEST( lines in this program's source but %d cases "
            "registered; write TEST( at the start of a line, outside #if blocks\n",
            expected_cases, n_cases);
    return 1;
  }
  if (strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < n_cases; i++)
      printf("%s\n", cases[i].name);
    return 0;
  }
  if (strcmp(argv[1], "--all") == 0)
    return run_all();
  for (int i = 0; i < n_cases; i++)
    if (strcmp(argv[1], cases[i].name) == 0)
      return run_case(i);
  fprintf(stderr, "FAIL: no case named \"%s\" (try --list)\n", argv[1]);
  return 2;
}
