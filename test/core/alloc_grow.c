/* lk__grow (src/core/alloc.c), the one growth routine every buffer in the
 * library uses, without a server: it doubles from its first capacity, keeps
 * the buffer as it was when the allocator fails, and refuses a size whose
 * bytes no size_t can count instead of wrapping to a small allocation (or
 * doubling a capacity of 0 forever). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "latchkey.h"
#include "test.h"

/* What the library asked the allocator for last. */
static size_t g_last_realloc;
static int g_reallocs, g_fail_reallocs;

static void *seen_realloc(void *p, size_t n) {
  g_reallocs++;
  g_last_realloc = n;
  return g_fail_reallocs ? NULL : realloc(p, n);
}

static void watch_allocator(void) {
  g_reallocs = 0;
  g_last_realloc = 0;
  g_fail_reallocs = 0;
  ASSERT_OK(lk_replace_allocator(malloc, seen_realloc, calloc, free));
}

TEST(doubles_from_first_and_keeps_the_buffer_when_the_allocator_fails) {
  uint32_t *v = NULL;
  size_t cap = 0;
  watch_allocator();
  ASSERT_OK(lk__grow((void **)&v, &cap, 3, sizeof(*v), 4));
  ASSERT_EQ(cap, 4u);
  ASSERT_EQ(g_last_realloc, 4 * sizeof(*v));
  for (uint32_t i = 0; i < 4; i++)
    v[i] = i + 1;
  ASSERT_OK(lk__grow((void **)&v, &cap, 4, sizeof(*v), 4)); /* fits: no call */
  ASSERT_EQ(g_reallocs, 1);
  ASSERT_OK(lk__grow((void **)&v, &cap, 9, sizeof(*v), 4));
  ASSERT_EQ(cap, 16u);
  ASSERT_EQ(v[3], 4u);

  uint32_t *before = v;
  g_fail_reallocs = 1;
  ASSERT_EQ(lk__grow((void **)&v, &cap, 17, sizeof(*v), 4), LK_ENOMEM);
  ASSERT(v == before);
  ASSERT_EQ(cap, 16u);
  ASSERT_EQ(v[0], 1u);
  g_fail_reallocs = 0;
  lk__free(v);
  ASSERT_OK(lk_replace_allocator(malloc, realloc, calloc, free));
}

TEST(a_size_past_size_max_is_enomem_without_an_allocation) {
  char *b = NULL;
  size_t cap = 0;
  watch_allocator();
  /* need * elem wraps: before the check the first asked for a tiny block,
   * and the second (a need past SIZE_MAX / 2) doubled until the capacity
   * wrapped to 0 and looped for ever. */
  ASSERT_EQ(lk__grow((void **)&b, &cap, SIZE_MAX / 8 + 2, 16, 4), LK_ENOMEM);
  ASSERT_EQ(lk__grow((void **)&b, &cap, SIZE_MAX, 2, 4), LK_ENOMEM);
  ASSERT_EQ(g_reallocs, 0);
  ASSERT_NULL(b);
  ASSERT_EQ(cap, 0u);
  ASSERT_OK(lk_replace_allocator(malloc, realloc, calloc, free));
}

TEST(doubling_stops_short_of_overflow_and_asks_for_exactly_the_need) {
  char *b = NULL;
  size_t cap = 0;
  watch_allocator();
  g_fail_reallocs = 1; /* nothing is really allocated: only the size asked is seen */
  /* Doubling 4096 past SIZE_MAX / 2 wraps to 0 and never ends. */
  ASSERT_EQ(lk__grow((void **)&b, &cap, SIZE_MAX / 2 + 10, 1, 4096), LK_ENOMEM);
  ASSERT_EQ(g_reallocs, 1);
  ASSERT_EQ(g_last_realloc, SIZE_MAX / 2 + 10);
  /* A first capacity of 0 still grows. */
  g_fail_reallocs = 0;
  ASSERT_OK(lk__grow((void **)&b, &cap, 5, 1, 0));
  ASSERT_EQ(cap, 8u);
  lk__free(b);
  ASSERT_OK(lk_replace_allocator(malloc, realloc, calloc, free));
}
