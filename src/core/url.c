/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Connection URLs (docs/client.md, "Connection URL"): one strict parser for
 * every form, so a typo is LK_EINVAL here instead of a connection that
 * silently goes somewhere else.
 *
 * The URL is parsed into a parts_t first and applied to the options only
 * when all of it is well formed: a refused URL changes nothing. */
#include "core/url.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "core/alloc.h"
#include "core/internal.h"

#define URL_MAX 4096        /* longer is a mistake (or an attack), not an address */
#define HOST_MAX 253        /* a DNS name */
#define UNIX_PATH_MAX 107   /* sockaddr_un.sun_path holds 108 bytes with the NUL */
#define CLIENT_NAME_MAX 128 /* as lk_client_new checks client_name */
#define SENTINEL_PORT 26379

/* The forms, as bits so a query parameter can say where it is allowed. */
enum {
  F_BARE = 1,      /* host[:port] */
  F_REDIS = 2,     /* redis:// */
  F_REDISS = 4,    /* rediss:// */
  F_SENT = 8,      /* redis+sentinel:// */
  F_SENTS = 16,    /* rediss+sentinel:// */
  F_UNIX = 32      /* unix:// */
};
#define F_SCHEMES (F_REDIS | F_REDISS | F_SENT | F_SENTS | F_UNIX)
#define F_TLS (F_REDISS | F_SENTS)
#define F_SENTINEL (F_SENT | F_SENTS)

static const struct {
  const char *name;
  int form;
} schemes[] = {
    {"redis", F_REDIS},          {"rediss", F_REDISS}, {"redis+sentinel", F_SENT},
    {"rediss+sentinel", F_SENTS}, {"unix", F_UNIX},
};

/* Query parameters: each sets one field. Grouped by the forms they are
 * allowed in: param_forms reads the group from the position, so a new
 * parameter goes inside its group, never at the end. */
enum {
  /* every scheme */
  Q_DB, Q_USERNAME, Q_PASSWORD, Q_CLIENT_NAME, Q_PUBSUB_MODE,
  /* the TLS forms */
  Q_CA_FILE, Q_CA_DIR, Q_CERT_FILE, Q_KEY_FILE, Q_SERVER_NAME, Q_VERIFY_PEER,
  /* the sentinel forms */
  Q_SENTINEL_USERNAME, Q_SENTINEL_PASSWORD,
  Q_COUNT
};

static const char *const params[Q_COUNT] = {
    [Q_DB] = "db", [Q_USERNAME] = "username", [Q_PASSWORD] = "password",
    [Q_CLIENT_NAME] = "client_name", [Q_PUBSUB_MODE] = "pubsub_mode",
    [Q_CA_FILE] = "ca_file", [Q_CA_DIR] = "ca_dir", [Q_CERT_FILE] = "cert_file",
    [Q_KEY_FILE] = "key_file", [Q_SERVER_NAME] = "server_name", [Q_VERIFY_PEER] = "verify_peer",
    [Q_SENTINEL_USERNAME] = "sentinel_username", [Q_SENTINEL_PASSWORD] = "sentinel_password",
};

/* The forms query parameter k is allowed in, by its group. */
static int param_forms(int k) {
  return k >= Q_SENTINEL_USERNAME ? F_SENTINEL : k >= Q_CA_FILE ? F_TLS : F_SCHEMES;
}

/* pubsub_mode's values, indexed by lk_pubsub_mode_t. */
static const char *const pubsub_modes[] = {"auto", "sharded", "classic"};

static int pubsub_mode_of(const char *v) {
  for (int i = 0; i < (int)(sizeof(pubsub_modes) / sizeof(pubsub_modes[0])); i++)
    if (strcmp(v, pubsub_modes[i]) == 0)
      return i;
  return -1;
}

/* What the URL names, its strings in the storage; NULL: not named. */
typedef struct {
  int form;
  const char *host; /* without brackets */
  int port;
  const char *unix_path;
  const char *sentinels, *sentinel_master;
  int userinfo; /* user:password@ was given */
  const char *user, *pass;
  const char *db_path; /* the /db part, digits */
  const char *q[Q_COUNT];
} parts_t;

/* Bump allocation in the one block handed to the caller. */
typedef struct {
  char *p;
  size_t used, cap;
} buf_t;

static char *buf_take(buf_t *b, size_t n) {
  char *r;
  if (n > b->cap - b->used)
    return NULL; /* cannot happen: the block is sized for the worst case */
  r = b->p + b->used;
  b->used += n;
  return r;
}

/* s[0..n) percent-decoded into the storage and NUL-terminated; NULL for a
 * bad escape or an encoded NUL (the result is a C string). */
static const char *decode(buf_t *b, const char *s, size_t n) {
  char *d = buf_take(b, n + 1), *w = d;
  size_t i;
  if (d == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    if (s[i] == '%') {
      int hi, lo;
      if (i + 2 >= n)
        return NULL;
      hi = lk__hex_digit(s[i + 1]);
      lo = lk__hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0 || (hi | lo) == 0)
        return NULL;
      *w++ = (char)(hi * 16 + lo);
      i += 2;
    } else {
      *w++ = s[i];
    }
  }
  *w = '\0';
  return d;
}

static int is_digits(const char *s, size_t n) {
  size_t i;
  if (n == 0)
    return 0;
  for (i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return 1;
}

/* Decimal digits only (no sign, no space) within [min, max]; -1 otherwise. */
static long long number(const char *s, size_t n, long long min, long long max) {
  long long v = 0;
  size_t i;
  if (!is_digits(s, n) || n > 10)
    return -1;
  for (i = 0; i < n; i++)
    v = v * 10 + (s[i] - '0');
  return v < min || v > max ? -1 : v;
}

static int host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_';
}

/* One address: "name", "name:port", "[v6]" or "[v6]:port" in s[0..n). Sets
 * *h and *hn to the host without brackets (pointing into s), *port (or
 * default_port), *bracketed. 0, or -1 when malformed. */
static int parse_hostport(const char *s, size_t n, int default_port, const char **h,
                          size_t *hn, int *port, int *bracketed) {
  const char *rest;
  size_t restn;
  *port = default_port;
  *bracketed = 0;
  if (n > 0 && s[0] == '[') {
    const char *rb = memchr(s, ']', n);
    char v6[64];
    unsigned char addr[16];
    if (rb == NULL)
      return -1;
    *h = s + 1;
    *hn = (size_t)(rb - s) - 1;
    if (*hn == 0 || *hn >= sizeof(v6))
      return -1;
    memcpy(v6, *h, *hn);
    v6[*hn] = '\0';
    if (inet_pton(AF_INET6, v6, addr) != 1)
      return -1;
    *bracketed = 1;
    rest = rb + 1;
  } else {
    size_t i;
    const char *colon = memchr(s, ':', n);
    *h = s;
    *hn = colon != NULL ? (size_t)(colon - s) : n;
    if (*hn == 0 || *hn > HOST_MAX)
      return -1;
    for (i = 0; i < *hn; i++)
      if (!host_char(s[i]))
        return -1; /* also a second ':' (an IPv6 address wants brackets) */
    rest = s + *hn;
  }
  restn = n - (size_t)(rest - s);
  if (restn == 0)
    return 0;
  if (rest[0] != ':')
    return -1;
  *port = (int)number(rest + 1, restn - 1, 1, 65535);
  return *port < 0 ? -1 : 0;
}

/* A host copied out of the URL (no decoding: hosts take none). */
static const char *host_copy(buf_t *b, const char *h, size_t hn) {
  char *d = buf_take(b, hn + 1);
  if (d == NULL)
    return NULL;
  memcpy(d, h, hn);
  d[hn] = '\0';
  return d;
}

/* "h1[:p1],h2[:p2],..." into "h1:p1,h2:p2" with the sentinel port filled
 * in; an IPv6 host keeps its brackets, so the list splits unambiguously. */
static int parse_sentinels(buf_t *b, const char *s, size_t n, parts_t *p) {
  /* Each entry grows by at most ":26379" (6 bytes) when its port is filled
   * in; the storage was sized for that. */
  char *out = b->p + b->used, *w = out;
  const char *e = s, *end = s + n;
  while (e <= end) {
    const char *comma = memchr(e, ',', (size_t)(end - e));
    size_t en = comma != NULL ? (size_t)(comma - e) : (size_t)(end - e);
    const char *h;
    size_t hn;
    int port, br;
    size_t need;
    if (parse_hostport(e, en, SENTINEL_PORT, &h, &hn, &port, &br) != 0)
      return -1;
    need = hn + (size_t)(br ? 2 : 0) + 1 + 5 + 1 + 1; /* [h]:port, or NUL */
    if (need > b->cap - (size_t)(w - b->p))
      return -1; /* cannot happen (sized for the worst case) */
    if (w != out)
      *w++ = ',';
    if (br)
      *w++ = '[';
    memcpy(w, h, hn);
    w += hn;
    if (br)
      *w++ = ']';
    w += snprintf(w, 7, ":%d", port);
    if (comma == NULL)
      break;
    e = comma + 1;
  }
  *w++ = '\0';
  b->used = (size_t)(w - b->p);
  p->sentinels = out;
  return 0;
}

/* user:password (decoded); the colon is required, the user may be empty. */
static int parse_userinfo(buf_t *b, const char *s, size_t n, parts_t *p) {
  const char *colon = memchr(s, ':', n);
  if (colon == NULL)
    return -1; /* "user@": a password needs its colon (redis://:secret@host) */
  p->userinfo = 1;
  p->user = decode(b, s, (size_t)(colon - s));
  p->pass = decode(b, colon + 1, n - (size_t)(colon - s) - 1);
  if (p->user == NULL || p->pass == NULL)
    return -1;
  /* An empty password only with a user: AUTH user "" reaches a nopass user,
   * while ":@" says nothing at all. */
  if (p->pass[0] == '\0' && p->user[0] == '\0')
    return -1;
  return 0;
}

/* key=value&key=value, each key known, allowed in this form, given once,
 * and with a non-empty value. */
static int parse_query(buf_t *b, const char *s, size_t n, parts_t *p) {
  const char *e = s, *end = s + n;
  if (n == 0)
    return -1; /* a bare '?' */
  while (e <= end) {
    const char *amp = memchr(e, '&', (size_t)(end - e));
    size_t en = amp != NULL ? (size_t)(amp - e) : (size_t)(end - e);
    const char *eq = memchr(e, '=', en);
    size_t kn;
    int k;
    if (eq == NULL || eq == e + en - 1)
      return -1; /* no value */
    kn = (size_t)(eq - e);
    for (k = 0; k < Q_COUNT; k++)
      if (strlen(params[k]) == kn && memcmp(params[k], e, kn) == 0)
        break;
    if (k == Q_COUNT || !(param_forms(k) & p->form) || p->q[k] != NULL)
      return -1;
    p->q[k] = decode(b, eq + 1, en - kn - 1);
    if (p->q[k] == NULL || p->q[k][0] == '\0')
      return -1;
    if (amp == NULL)
      break;
    e = amp + 1;
  }
  return 0;
}

/* The checks that need the whole URL: pairs, conflicts, limits. */
static int check_parts(const parts_t *p) {
  const char *cn = p->q[Q_CLIENT_NAME], *vp = p->q[Q_VERIFY_PEER];
  const char *sn = p->q[Q_SERVER_NAME], *db = p->q[Q_DB];
  /* Given twice (path and query, userinfo and query): which one wins is a
   * guess, so neither does. */
  if ((db != NULL && p->db_path != NULL) ||
      (p->userinfo && (p->q[Q_USERNAME] != NULL || p->q[Q_PASSWORD] != NULL)))
    return -1;
  if (p->q[Q_USERNAME] != NULL && p->q[Q_PASSWORD] == NULL)
    return -1;
  if (p->q[Q_SENTINEL_USERNAME] != NULL && p->q[Q_SENTINEL_PASSWORD] == NULL)
    return -1;
  if (db != NULL && number(db, strlen(db), 0, INT_MAX) < 0)
    return -1;
  if (vp != NULL && strcmp(vp, "0") != 0 && strcmp(vp, "1") != 0)
    return -1;
  if (p->q[Q_PUBSUB_MODE] != NULL && pubsub_mode_of(p->q[Q_PUBSUB_MODE]) < 0)
    return -1;
  if (cn != NULL && (strlen(cn) > CLIENT_NAME_MAX || strpbrk(cn, " \r\n") != NULL))
    return -1;
  if (sn != NULL && strlen(sn) > HOST_MAX)
    return -1;
  return 0;
}

/* The part after "scheme://" (or all of a bare address). */
static int parse_rest(buf_t *b, const char *s, size_t n, parts_t *p) {
  const char *end = s + n, *q = memchr(s, '?', n);
  const char *auth_end, *path, *at = NULL, *hosts;
  size_t i;
  if (q != NULL) {
    if (parse_query(b, q + 1, (size_t)(end - q - 1), p) != 0)
      return -1;
    end = q;
  }
  if (p->form == F_UNIX) {
    /* unix:///abs/path: an empty authority, then the absolute path. */
    size_t pn = (size_t)(end - s);
    if (pn < 2 || s[0] != '/')
      return -1;
    p->unix_path = decode(b, s, pn);
    if (p->unix_path == NULL || strlen(p->unix_path) > UNIX_PATH_MAX)
      return -1;
    return 0;
  }
  path = memchr(s, '/', (size_t)(end - s));
  auth_end = path != NULL ? path : end;
  for (i = 0; s + i < auth_end; i++)
    if (s[i] == '@')
      at = s + i; /* the last '@': a raw '@' in a password still parses */
  if (at != NULL) {
    if (p->form == F_BARE || parse_userinfo(b, s, (size_t)(at - s), p) != 0)
      return -1;
    hosts = at + 1;
  } else {
    hosts = s;
  }
  if (p->form & F_SENTINEL) {
    /* /mastername or /mastername/db */
    const char *name, *slash;
    if (parse_sentinels(b, hosts, (size_t)(auth_end - hosts), p) != 0 || path == NULL)
      return -1;
    name = path + 1;
    slash = memchr(name, '/', (size_t)(end - name));
    p->sentinel_master = decode(b, name, (size_t)((slash != NULL ? slash : end) - name));
    if (p->sentinel_master == NULL || p->sentinel_master[0] == '\0')
      return -1;
    if (slash != NULL) {
      if (!is_digits(slash + 1, (size_t)(end - slash - 1)))
        return -1;
      p->db_path = decode(b, slash + 1, (size_t)(end - slash - 1));
    }
  } else {
    const char *h;
    size_t hn;
    int br;
    if (parse_hostport(hosts, (size_t)(auth_end - hosts), 6379, &h, &hn, &p->port, &br) != 0)
      return -1;
    p->host = host_copy(b, h, hn);
    if (path != NULL) {
      /* "/" alone is db 0, as every Redis client reads it. */
      size_t dn = (size_t)(end - path - 1);
      if (p->form == F_BARE || (dn > 0 && !is_digits(path + 1, dn)))
        return -1;
      if (dn > 0)
        p->db_path = decode(b, path + 1, dn);
    }
  }
  if (p->db_path != NULL && number(p->db_path, strlen(p->db_path), 0, INT_MAX) < 0)
    return -1;
  return 0;
}

/* Splits off the scheme; F_BARE when there is none. -1: unknown scheme. */
static int scheme_of(const char *url, size_t *skip) {
  const char *sep = strstr(url, "://");
  size_t i, sn;
  *skip = 0;
  if (sep == NULL)
    return F_BARE;
  sn = (size_t)(sep - url);
  for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
    if (strlen(schemes[i].name) == sn && strncasecmp(schemes[i].name, url, sn) == 0) {
      *skip = sn + 3;
      return schemes[i].form;
    }
  return -1;
}

static const char *named(const char *v, const char *old) { return v != NULL ? v : old; }

/* A URL names the whole address: the address fields it does not set go
 * back to their defaults, so a host set in code never mixes with a unix://
 * path or a sentinel list from the URL. A scheme also says TLS or not and
 * the database (0 when it names none); credentials and query parameters
 * replace only what they name. */
static void apply(lk_client_opts_t *o, const parts_t *p) {
  lk_client_opts_t d;
  const char *const *q = p->q;
  lk_client_opts_init(&d);
  o->host = p->host != NULL ? p->host : d.host;
  o->port = p->host != NULL ? p->port : d.port;
  o->unix_path = p->unix_path;
  o->sentinels = p->sentinels;
  o->sentinel_master = p->sentinel_master;
  if (p->form == F_BARE)
    return;
  o->tls.enable = (p->form & F_TLS) != 0;
  o->db = 0;
  if (p->db_path != NULL || q[Q_DB] != NULL)
    o->db = (int)number(named(q[Q_DB], p->db_path), strlen(named(q[Q_DB], p->db_path)), 0,
                        INT_MAX);
  if (p->userinfo) {
    o->username = p->user[0] != '\0' ? p->user : NULL;
    o->password = p->pass;
  } else if (q[Q_PASSWORD] != NULL) {
    o->username = q[Q_USERNAME];
    o->password = q[Q_PASSWORD];
  }
  o->client_name = named(q[Q_CLIENT_NAME], o->client_name);
  o->tls.ca_file = named(q[Q_CA_FILE], o->tls.ca_file);
  o->tls.ca_dir = named(q[Q_CA_DIR], o->tls.ca_dir);
  o->tls.cert_file = named(q[Q_CERT_FILE], o->tls.cert_file);
  o->tls.key_file = named(q[Q_KEY_FILE], o->tls.key_file);
  o->tls.server_name = named(q[Q_SERVER_NAME], o->tls.server_name);
  if (q[Q_VERIFY_PEER] != NULL)
    o->tls.verify_peer = q[Q_VERIFY_PEER][0] == '1';
  if (q[Q_PUBSUB_MODE] != NULL)
    o->pubsub_mode = pubsub_mode_of(q[Q_PUBSUB_MODE]);
  if (q[Q_SENTINEL_PASSWORD] != NULL) {
    o->sentinel_username = q[Q_SENTINEL_USERNAME];
    o->sentinel_password = q[Q_SENTINEL_PASSWORD];
  }
}

int lk__url_apply(lk_client_opts_t *o, const char *url, char **storage) {
  parts_t p;
  buf_t b;
  size_t len, i, skip, commas = 0;
  *storage = NULL;
  if (o == NULL || url == NULL)
    return LK_EINVAL;
  len = strnlen(url, URL_MAX + 1);
  if (len == 0 || len > URL_MAX)
    return LK_EINVAL;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)url[i];
    /* Printable ASCII only: a space, a newline from a file, or a raw UTF-8
     * byte is a copy-paste accident (encode it as %XX), and '#' has no
     * meaning in a connection URL. */
    if (c <= 0x20 || c >= 0x7f || c == '#')
      return LK_EINVAL;
    commas += c == ',';
  }
  memset(&p, 0, sizeof(p));
  p.form = scheme_of(url, &skip);
  if (p.form < 0)
    return LK_EINVAL;
  /* Every piece is a disjoint slice of the URL, decoded (never longer) plus
   * a NUL; sentinel entries may each gain ":26379". */
  b.cap = 2 * len + 6 * (commas + 1) + 16;
  b.used = 0;
  b.p = lk__malloc(b.cap);
  if (b.p == NULL)
    return LK_ENOMEM;
  if (parse_rest(&b, url + skip, len - skip, &p) != 0 || check_parts(&p) != 0) {
    lk__free(b.p);
    return LK_EINVAL;
  }
  apply(o, &p);
  *storage = b.p;
  return 0;
}

int lk_client_opts_apply_url(lk_client_opts_t *opts, const char *url, char **storage) {
  int rc;
  if (storage == NULL)
    return LK_EINVAL;
  rc = lk__url_apply(opts, url, storage);
  if (rc == 0)
    opts->url = NULL; /* applied: lk_client_new must not apply it again */
  return rc;
}

void lk_client_opts_free_url(char *storage) { lk__free(storage); }
