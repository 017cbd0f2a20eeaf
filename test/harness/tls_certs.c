/* Test certificates made with the openssl tool (tls_certs.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "tls_certs.h"

#include "redis_server.h"

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EC_ARGS "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"

static int path_in(const rt_tls_certs_t *t, char *out, const char *name) {
  return (size_t)snprintf(out, RT_TLS_PATH_MAX, "%s/%s", t->dir, name) < RT_TLS_PATH_MAX ? 0 : -1;
}

static int write_file(const rt_tls_certs_t *t, const char *name, const char *text) {
  char p[RT_TLS_PATH_MAX];
  FILE *f;
  if (path_in(t, p, name) != 0 || (f = fopen(p, "w")) == NULL)
    return -1;
  fputs(text, f);
  return fclose(f) == 0 ? 0 : -1;
}

/* Resolved in the parent: after fork only async-signal-safe calls. */
static int find_openssl(char *out, size_t len) {
  const char *name = getenv("LK_OPENSSL");
  if (name == NULL || *name == '\0')
    name = "openssl";
  return rt_find_in_path(name, out, len);
}

static void print_log(const rt_tls_certs_t *t) {
  char p[RT_TLS_PATH_MAX], buf[2048];
  FILE *f;
  if (path_in(t, p, "openssl.log") != 0 || (f = fopen(p, "r")) == NULL)
    return;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "---- %s ----\n%s---- end ----\n", p, buf);
}

/* Runs openssl with args (NULL-terminated, without argv[0]) in the
 * directory, output to openssl.log. 0 when it exited 0. */
static int run(const rt_tls_certs_t *t, const char *const *args) {
  char bin[RT_TLS_PATH_MAX], log[RT_TLS_PATH_MAX];
  const char *argv[40];
  size_t n = 0;
  if (find_openssl(bin, sizeof bin) != 0) {
    fprintf(stderr, "rt_tls_certs: openssl not found (PATH or LK_OPENSSL)\n");
    return -1;
  }
  if (path_in(t, log, "openssl.log") != 0)
    return -1;
  argv[n++] = bin;
  for (; args[n - 1] != NULL && n < sizeof argv / sizeof argv[0] - 1; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "rt_tls_certs: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    int devnull = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    if (devnull >= 0)
      dup2(devnull, STDIN_FILENO);
    if (chdir(t->dir) != 0)
      _exit(126);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  int64_t deadline = rt_now_ms() + rt_scaled_ms(30000);
  for (long i = 0; i < 10000000L; i++) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
      fprintf(stderr, "rt_tls_certs: openssl %s %s failed\n", args[0], args[1] ? args[1] : "");
      print_log(t);
      return -1;
    }
    if (r < 0 && errno != EINTR)
      return -1;
    if (rt_now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fprintf(stderr, "rt_tls_certs: openssl %s timed out\n", args[0]);
      return -1;
    }
    rt_sleep_ms(1);
  }
  return -1;
}

static int make_dir(rt_tls_certs_t *t) {
  const char *tmp = getenv("TMPDIR");
  for (int i = 0; i < 2; i++) {
    const char *base = (i == 0 && tmp != NULL && *tmp != '\0') ? tmp : "/tmp";
    /* "lk-redis-" with an owner file: redis_server.c's sweep removes it
     * when this process was killed before cleaning up. */
    if ((size_t)snprintf(t->dir, sizeof t->dir, "%s/lk-redis-certs-XXXXXX", base) >=
        sizeof t->dir - 64)
      continue;
    if (mkdtemp(t->dir) != NULL) {
      char owner[32];
      snprintf(owner, sizeof owner, "%ld\n", (long)getpid());
      return write_file(t, "owner", owner);
    }
  }
  t->dir[0] = '\0';
  return -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

void rt_tls_certs_free(rt_tls_certs_t *t) {
  if (t == NULL)
    return;
  const char *keep = getenv("LK_TEST_KEEP_DIRS");
  if (t->dir[0] != '\0') {
    if (keep != NULL && *keep != '\0' && strcmp(keep, "0") != 0)
      fprintf(stderr, "note: keeping %s (LK_TEST_KEEP_DIRS)\n", t->dir);
    else
      nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  free(t);
}

/* A CA-signed certificate for an existing CSR, with extensions from extfile. */
static int sign(const rt_tls_certs_t *t, const char *csr, const char *ext, const char *out) {
  const char *a[] = {"x509", "-req", "-in", csr, "-CA", "ca.crt", "-CAkey", "ca.key",
                     "-CAcreateserial", "-days", "365", "-sha256", "-extfile", ext,
                     "-out", out, NULL};
  return run(t, a);
}

static int make_all(rt_tls_certs_t *t) {
  static const char ca_cnf[] =
      "[ca]\ndefault_ca = lk\n"
      "[lk]\ndatabase = cadb/index.txt\nserial = cadb/serial\nnew_certs_dir = cadb\n"
      "default_md = sha256\npolicy = any\nunique_subject = no\ncopy_extensions = none\n"
      "[any]\ncommonName = supplied\n";
  const char *ca[] = {"req", "-x509", "-new", "-nodes", EC_ARGS, "-keyout", "ca.key", "-out",
                      "ca.crt", "-days", "3650", "-subj", "/CN=latchkey test CA", NULL};
  const char *other[] = {"req", "-x509", "-new", "-nodes", EC_ARGS, "-keyout", "other-ca.key",
                         "-out", "other-ca.crt", "-days", "3650", "-subj",
                         "/CN=latchkey other CA", NULL};
  const char *srv_csr[] = {"req", "-new", "-nodes", EC_ARGS, "-keyout", "server.key", "-out",
                           "server.csr", "-subj", "/CN=localhost", NULL};
  const char *cli_csr[] = {"req", "-new", "-nodes", EC_ARGS, "-keyout", "client.key", "-out",
                           "client.csr", "-subj", "/CN=latchkey test client", NULL};
  const char *wrong_csr[] = {"req", "-new", "-key", "server.key", "-out", "wrong.csr", "-subj",
                             "/CN=wrong.example", NULL};
  /* openssl ca takes a start date; x509 -req cannot before OpenSSL 3.4. */
  const char *expired[] = {"ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile",
                           "ca.key", "-startdate", "20200101000000Z", "-enddate",
                           "20200102000000Z", "-in", "server.csr", "-extfile", "server.ext",
                           "-notext", "-out", "expired.crt", NULL};
  char p[RT_TLS_PATH_MAX];
  if (write_file(t, "server.ext",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                 "extendedKeyUsage=serverAuth,clientAuth\n") != 0 ||
      write_file(t, "wrong.ext", "subjectAltName=DNS:wrong.example\n"
                                 "extendedKeyUsage=serverAuth\n") != 0 ||
      write_file(t, "client.ext", "extendedKeyUsage=clientAuth\n") != 0 ||
      write_file(t, "ca.cnf", ca_cnf) != 0 || path_in(t, p, "cadb") != 0 || mkdir(p, 0700) != 0 ||
      write_file(t, "cadb/index.txt", "") != 0 || write_file(t, "cadb/serial", "01\n") != 0)
    return -1;
  if (run(t, ca) != 0 || run(t, other) != 0 || run(t, srv_csr) != 0 ||
      sign(t, "server.csr", "server.ext", "server.crt") != 0 || run(t, cli_csr) != 0 ||
      sign(t, "client.csr", "client.ext", "client.crt") != 0 || run(t, wrong_csr) != 0 ||
      sign(t, "wrong.csr", "wrong.ext", "wrong-host.crt") != 0 || run(t, expired) != 0)
    return -1;
  if (path_in(t, t->ca, "ca.crt") || path_in(t, t->other_ca, "other-ca.crt") ||
      path_in(t, t->server_cert, "server.crt") || path_in(t, t->server_key, "server.key") ||
      path_in(t, t->expired_cert, "expired.crt") ||
      path_in(t, t->wrong_host_cert, "wrong-host.crt") ||
      path_in(t, t->client_cert, "client.crt") || path_in(t, t->client_key, "client.key"))
    return -1;
  return 0;
}

rt_tls_certs_t *rt_tls_certs_make(void) {
  rt_tls_certs_t *t = calloc(1, sizeof *t);
  if (t == NULL)
    FAIL("out of memory");
  if (make_dir(t) != 0) {
    fprintf(stderr, "rt_tls_certs: no temporary directory: %s\n", strerror(errno));
    rt_tls_certs_free(t);
    return NULL;
  }
  if (make_all(t) != 0) {
    fprintf(stderr, "rt_tls_certs: making the certificates in %s failed\n", t->dir);
    rt_tls_certs_free(t);
    return NULL;
  }
  return t;
}
