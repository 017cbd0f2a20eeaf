/* The permits a permit-expirable semaphore object holds: ids, local
 * deadlines, the watchdog entry that renews them, and their loss
 * (psem_internal.h). */
#include <string.h>

#include "core/loglevel.h"
#include "core/router.h"
#include "semaphore/psem_internal.h"

const lk__wd_class_t lk__wd_psem_class = {"semaphore/psem_renew", 2, "semaphore/psem_renew_split",
                                           1};

/* --- ids --- */

void lk__psem_to_hex(const unsigned char *raw, char *hex) {
  static const char digits[] = "0123456789abcdef";
  int i;
  for (i = 0; i < LK__PSEM_ID_BYTES; i++) {
    hex[2 * i] = digits[raw[i] >> 4];
    hex[2 * i + 1] = digits[raw[i] & 15];
  }
  hex[LK_PSEM_ID_LEN] = '\0';
}

int lk__psem_from_hex(const char *hex, unsigned char *raw) {
  int i;
  if (hex == NULL || strnlen(hex, LK_PSEM_ID_LEN + 1) != LK_PSEM_ID_LEN)
    return LK_EINVAL;
  for (i = 0; i < LK__PSEM_ID_BYTES; i++) {
    int hi = lk__hex_digit(hex[2 * i]), lo = lk__hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return LK_EINVAL;
    raw[i] = (unsigned char)(hi << 4 | lo);
  }
  return 0;
}

long lk__psem_find(const lk_psem_t *p, const unsigned char *raw) {
  size_t i;
  for (i = 0; i < p->count; i++)
    if (memcmp(p->permits[i].raw, raw, LK__PSEM_ID_BYTES) == 0)
      return (long)i;
  return -1;
}

void lk__psem_drop(lk_psem_t *p, size_t i) {
  memmove(&p->permits[i], &p->permits[i + 1], (p->count - i - 1) * sizeof(*p->permits));
  p->count--;
}

/* Drops every permit whose id is among the pending operation's ids. */
void lk__psem_drop_req(lk_psem_t *p) {
  size_t k;
  for (k = 0; k < p->req_n; k++) {
    long i = lk__psem_find(p, p->req_ids + k * LK__PSEM_ID_BYTES);
    if (i >= 0)
      lk__psem_drop(p, (size_t)i);
  }
}

int lk__psem_set_req(lk_psem_t *p, size_t n) {
  int rc = lk__grow((void **)&p->req_ids, &p->req_cap, n * LK__PSEM_ID_BYTES, 1, 4);
  if (rc == 0)
    p->req_n = n;
  return rc;
}

int lk__psem_stage_ids(lk_psem_t *p, const unsigned char *one) {
  size_t k;
  int rc = lk__psem_set_req(p, one != NULL ? 1 : p->count);
  if (rc != 0)
    return rc;
  if (one != NULL)
    memcpy(p->req_ids, one, LK__PSEM_ID_BYTES);
  else
    for (k = 0; k < p->count; k++)
      memcpy(p->req_ids + k * LK__PSEM_ID_BYTES, p->permits[k].raw, LK__PSEM_ID_BYTES);
  return 0;
}

/* --- leases --- */

uint64_t lk__psem_deadline(uint64_t sent_ns, int64_t lease_ms) {
  return sent_ns + (uint64_t)lease_ms * 1000000u - lk__wd_drift_ns(lease_ms);
}

/* The renewed permits changed: the watchdog entry follows. added_sent_ns is
 * the send time of the command that gave a permit a renewed lease (0: none
 * did): the entry's deadline is then the earlier of the two, so no permit is
 * believed held past its own lease. */
void lk__psem_watch(lk_psem_t *p, uint64_t added_sent_ns) {
  lk_client_t *c = CLIENT(p);
  uint64_t confirmed = added_sent_ns;
  size_t i, k = 0;
  int watching = lk__wd_watching(&p->wd);
  for (i = 0; i < p->count; i++)
    if (p->permits[i].renewed)
      k++;
  if (k > 0 &&
      lk__grow((void **)&p->wd_ids, &p->wd_ids_cap, k * LK__PSEM_ID_BYTES, 1, 4) != 0) {
    /* Cannot track them: they stop being renewed and expire with their
     * lease; the object no longer counts on them. */
    for (i = 0; i < p->count; i++)
      if (p->permits[i].renewed) {
        p->permits[i].renewed = 0;
        p->permits[i].deadline_ns = p->wd.confirmed_ns;
      }
    k = 0;
  }
  for (i = 0, k = 0; i < p->count; i++)
    if (p->permits[i].renewed)
      memcpy(p->wd_ids + LK__PSEM_ID_BYTES * k++, p->permits[i].raw, LK__PSEM_ID_BYTES);
  p->wd.owner = (const char *)p->wd_ids;
  p->wd.owner_len = k * LK__PSEM_ID_BYTES;
  if (k == 0) {
    if (watching)
      lk__wd_remove(c, &p->wd);
    return;
  }
  if ((watching || added_sent_ns == 0) &&
      (added_sent_ns == 0 || p->wd.confirmed_ns < added_sent_ns))
    confirmed = p->wd.confirmed_ns;
  if (watching && added_sent_ns == 0) {
    p->wd.paused = 0; /* same deadline; renewal resumes */
    return;
  }
  /* Re-registered: a renewal in flight is forgotten (it did not carry the
   * new ids), and the deadline is the earliest lease's. */
  int risky = watching && p->wd.at_risk;
  if (watching)
    lk__wd_remove(c, &p->wd);
  lk__wd_add(c, &p->wd, confirmed);
  if (risky)
    lk__wd_mark_at_risk(c, &p->wd); /* its old permits still are */
}

/* --- giving back in the background --- */

/* How long a give-back is worth resending: every command that may have set
 * the lease of one of its ids was sent by now (or is `after`, and the clock
 * then starts at its outcome); one whose reply is lost has its connection
 * dropped within a reply timeout of its send, so it ran by then or never
 * will. The lease runs from there on the server's clock (drift allowed for,
 * as the watchdog does). A give-back sent later finds the ids gone: harmless,
 * but worth nothing. */
static int64_t give_back_valid_ms(const lk_client_t *c, int64_t lease_ms) {
  return lease_ms + lease_ms / 100 + 2 + c->o.reply_timeout_ms;
}

/* Releases the pending operation's ids (those the server still has): now,
 * or when `after` turns out to satisfy pred. */
void lk__psem_give_back(lk_psem_t *p, const unsigned char *ids, size_t n, int64_t lease_ms,
                        lk__op_t *after, lk__sem_pred pred) {
  size_t pub_len;
  const char *pub = lk__publish_cmd(CLIENT(p), &pub_len);
  const char *argv[5] = {p->name, p->zset, p->channel, (const char *)ids, pub};
  size_t lens[5] = {p->name_len, p->zset_len, p->channel_len, n * LK__PSEM_ID_BYTES, pub_len};
  if (n == 0) {
    if (after != NULL)
      lk__op_retarget(after, NULL, NULL);
    return;
  }
  lk__sem_give_back_owned(&p->jobs, give_back_valid_ms(CLIENT(p), lease_ms),
                          "semaphore/psem_release", 3, 2, argv, lens, after, pred);
}

/* --- lost leases --- */

/* The renewed permits are gone (or may be): they leave the object, what the
 * server still has of them is given back, the holder is told. */
void lk__psem_on_wd_event(lk__wd_entry_t *e, int event) {
  lk_psem_t *p = lk__container_of(e, lk_psem_t, wd);
  size_t i;
  if (event != LK__WD_LOST)
    return; /* the only event there is */
  /* Stop watching entirely: a renewal still in flight was sent before the
   * give-back, which therefore undoes it. The give-back's ids are the
   * entry's own (wd_ids), copied by the job. Their leases were set by this
   * object's commands, within max_lease_ms (the default lease, unless an
   * update whose reply was lost asked for more): the give-back is resent
   * until then, however long the server stays out of reach. */
  lk__wd_remove(CLIENT(p), &p->wd);
  lk__psem_give_back(p, p->wd_ids, p->wd.owner_len / LK__PSEM_ID_BYTES, p->max_lease_ms, NULL,
                     lk__sem_always);
  for (i = p->count; i-- > 0;)
    if (p->permits[i].renewed)
      lk__psem_drop(p, i);
  p->wd.owner_len = 0;
  CLIENT(p)->stats.leases_lost++;
  lk__log(CLIENT(p), lk__lost_level(&p->base), "lease lost on semaphore permits");
  lk__obj_tell_lost(&p->base);
}

LK__KIND_SET_LOST_CB(lk_psem)

/* --- accessors --- */

size_t lk_psem_permit_count(const lk_psem_t *p) { return p ? p->count : 0; }

const char *lk_psem_permit_id(const lk_psem_t *p, size_t i) {
  return p != NULL && i < p->count ? p->permits[i].hex : NULL;
}

int lk_psem_is_held(const lk_psem_t *p) { return lk_handle_is_held(LK__CH(p)) == 1; }

int lk__psem_held(const lk_psem_t *p) {
  uint64_t now = lk__now_ns();
  size_t i;
  for (i = 0; i < p->count; i++) {
    const lk__permit_t *pm = &p->permits[i];
    if (pm->renewed ? lk__wd_watching(&p->wd) && now < lk__wd_deadline(CLIENT(p), &p->wd)
                    : now < pm->deadline_ns)
      return 1;
  }
  return 0;
}
