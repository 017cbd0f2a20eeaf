# bench/report.awk: medians over the rounds, goals, markdown summary.
# Used by tools/bench.sh; POSIX awk (mawk works).
#
#   awk -f bench/report.awk -v meta_server=... -v meta_placement=... \
#       -v meta_rounds=N -v meta_load0=... -v meta_load1=... -v meta_secs=S \
#       -v failures=FILE rounds.jsonl
#
# Input: the JSON lines of every run, each with the runner's "round" added.
# Lines are grouped by bench + impl + metric + variant. Per group, every
# numeric field becomes its median over the rounds ("min"/"max"/"reps"
# describe "value"); string fields keep their first value. A group whose
# lines name a "limit_impl" gets "limit" (that impl's median value, same
# bench/metric/variant), "ratio" = value / limit and "ratio_paired" (the
# median of the per-round ratios). B1/B2 groups get the minimal-work
# "ceiling" from L. A "goal" field ("<= 512", ">= 0.8", "== 0") is checked
# on the median value; a "goal_ratio" field (same form) on a group with a
# limit is checked on ratio_paired (else ratio) and reported as "met_ratio".
# Output: aggregated JSON lines, then the summary.

function jparse(s,    n, i, c, key, buf) {
  for (key in V)
    delete V[key]
  for (key in T)
    delete T[key]
  nk = 0
  n = length(s)
  i = index(s, "{")
  if (i == 0)
    return 0
  i++
  while (i <= n) {
    c = substr(s, i, 1)
    if (c == "}")
      break
    if (c == "," || c == " " || c == "\t") {
      i++
      continue
    }
    if (c != "\"")
      return 0
    buf = ""
    i++
    while (i <= n && (c = substr(s, i, 1)) != "\"") {
      if (c == "\\") {
        i++
        c = substr(s, i, 1)
      }
      buf = buf c
      i++
    }
    key = buf
    i++
    while (i <= n && ((c = substr(s, i, 1)) == " " || c == ":"))
      i++
    if (substr(s, i, 1) == "\"") {
      buf = ""
      i++
      while (i <= n && (c = substr(s, i, 1)) != "\"") {
        if (c == "\\") {
          i++
          c = substr(s, i, 1)
        }
        buf = buf c
        i++
      }
      i++
      T[key] = "s"
    } else {
      buf = ""
      while (i <= n && (c = substr(s, i, 1)) != "," && c != "}") {
        if (c != " ")
          buf = buf c
        i++
      }
      T[key] = (buf == "true" || buf == "false") ? "b" : (buf == "null" ? "z" : "n")
    }
    V[key] = buf
    K[++nk] = key
  }
  return 1
}

function jstr(s) {
  gsub(/\\/, "\\\\", s)
  gsub(/"/, "\\\"", s)
  return "\"" s "\""
}

function num(v) {
  if (v == int(v) && v < 1e15 && v > -1e15)
    return sprintf("%d", v)
  if (v >= 1000 || v <= -1000)
    return sprintf("%.1f", v)
  return sprintf("%.4g", v)
}

# Median of field f over the lines of group id ("" when absent).
function med(id, f,    j, m, t, a, b, x) {
  m = 0
  for (j = 1; j <= gn[id]; j++)
    if ((id, f, j) in GV)
      TMP[++m] = GV[id, f, j]
  if (m == 0)
    return ""
  for (a = 2; a <= m; a++) {
    x = TMP[a]
    for (b = a - 1; b >= 1 && TMP[b] > x; b--)
      TMP[b + 1] = TMP[b]
    TMP[b + 1] = x
  }
  t = (m % 2) ? TMP[(m + 1) / 2] : (TMP[m / 2] + TMP[m / 2 + 1]) / 2
  return t
}

function ext(id, f, want_max,    j, v, have) {
  have = 0
  for (j = 1; j <= gn[id]; j++)
    if ((id, f, j) in GV) {
      if (!have || (want_max ? GV[id, f, j] > v : GV[id, f, j] < v))
        v = GV[id, f, j]
      have = 1
    }
  return have ? v : ""
}

function gid(b, i, m, v) { return b SUBSEP i SUBSEP m SUBSEP v }

function has(id) { return (id in gn) }

# Median value of a group, or "".
function mv(id) { return has(id) ? AV[id] : "" }

# An integer with thousands separators.
function fmt0(v,    s, neg, out) {
  if (v == "")
    return "–"
  s = sprintf("%.0f", v)
  neg = substr(s, 1, 1) == "-"
  if (neg)
    s = substr(s, 2)
  out = ""
  while (length(s) > 3) {
    out = "," substr(s, length(s) - 2) out
    s = substr(s, 1, length(s) - 3)
  }
  return (neg ? "-" : "") s out
}
function f0(v) { return v == "" ? "–" : sprintf("%.0f", v) }
function f1(v) { return v == "" ? "–" : sprintf("%.1f", v) }
function f2(v) { return v == "" ? "–" : sprintf("%.2f", v) }
function f3(v) { return v == "" ? "–" : sprintf("%.3f", v) }

function goal_check(op, target, v) {
  if (v == "")
    return ""
  if (op == "<=") return v <= target
  if (op == ">=") return v >= target
  if (op == "==") return v == target
  if (op == "<") return v < target
  if (op == ">") return v > target
  return ""
}

function add_goal(what, measured, met) {
  NG++
  G_what[NG] = what
  G_meas[NG] = measured
  G_met[NG] = met
}

# A goal string's operator and target: sets GOP and GTV, 1 when well formed.
function goal_parse(gs) {
  if (!match(gs, /^(<=|>=|==|<|>)/))
    return 0
  GOP = substr(gs, 1, RLENGTH)
  GTV = substr(gs, RLENGTH + 1) + 0
  return 1
}

function yesno(m) { return m == "" ? "n/a" : (m ? "**met**" : "**not met**") }

BEGIN {
  ngroups = 0
}

{
  if (!jparse($0))
    next
  if (!("bench" in V) || !("metric" in V))
    next
  id = gid(V["bench"], V["impl"], V["metric"], ("variant" in V) ? V["variant"] : "")
  if (!(id in gn)) {
    gn[id] = 0
    G[++ngroups] = id
    GB[id] = V["bench"]
    GI[id] = V["impl"]
    GM[id] = V["metric"]
    GVar[id] = ("variant" in V) ? V["variant"] : ""
    nf[id] = 0
  }
  j = ++gn[id]
  rnd = ("round" in V) ? V["round"] + 0 : j
  for (q = 1; q <= nk; q++) {
    k = K[q]
    if (k == "round" || k == "bench" || k == "impl" || k == "metric" || k == "variant")
      continue
    if (!((id, k) in FT)) {
      FT[id, k] = T[k]
      FK[id, ++nf[id]] = k
    }
    if (T[k] == "n")
      GV[id, k, j] = V[k] + 0
    else if (!((id, k) in GS))
      GS[id, k] = V[k]
  }
  if (T["value"] == "n")
    RV[id, rnd] = V["value"] + 0
  ROUNDS[rnd] = 1
}

END {
  # --- medians ---
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    AV[id] = med(id, "value")
  }
  # --- limits, ratios, ceilings ---
  c1 = mv(gid("L", "minimal", "pairs_per_s", "-c 1 -P 1"))
  c50 = mv(gid("L", "minimal", "pairs_per_s", "-c 50 -P 16"))
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    if ((id, "limit_impl") in GS) {
      lid = gid(GB[id], GS[id, "limit_impl"], GM[id], GVar[id])
      if (has(lid) && AV[lid] != "" && AV[lid] > 0) {
        LIM[id] = AV[lid]
        RAT[id] = AV[id] / AV[lid]
        m = 0
        for (r in ROUNDS)
          if ((id, r) in RV && (lid, r) in RV && RV[lid, r] > 0)
            PR[++m] = RV[id, r] / RV[lid, r]
        if (m > 0) {
          for (a = 2; a <= m; a++) {
            x = PR[a]
            for (b = a - 1; b >= 1 && PR[b] > x; b--)
              PR[b + 1] = PR[b]
            PR[b + 1] = x
          }
          RATP[id] = (m % 2) ? PR[(m + 1) / 2] : (PR[m / 2] + PR[m / 2 + 1]) / 2
        }
      }
    }
    if (GB[id] == "B1" && GM[id] == "pairs_per_s" && c1 != "")
      CEIL[id] = c1
    if (GB[id] == "B2" && GM[id] == "pairs_per_s" && c50 != "")
      CEIL[id] = c50
  }

  # --- aggregated JSON lines ---
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    line = "{\"bench\":" jstr(GB[id]) ",\"impl\":" jstr(GI[id])
    if (GVar[id] != "")
      line = line ",\"variant\":" jstr(GVar[id])
    line = line ",\"metric\":" jstr(GM[id]) ",\"value\":" (AV[id] == "" ? "null" : num(AV[id]))
    for (q = 1; q <= nf[id]; q++) {
      k = FK[id, q]
      if (k == "value" || k == "met" || ((k == "limit" || k == "ratio") && (id in LIM)))
        continue
      if (FT[id, k] == "n") {
        v = med(id, k)
        if (v != "")
          line = line ",\"" k "\":" num(v)
      } else if (FT[id, k] == "s") {
        line = line ",\"" k "\":" jstr(GS[id, k])
      } else if (FT[id, k] == "b") {
        line = line ",\"" k "\":" GS[id, k]
      }
    }
    if (id in LIM)
      line = line ",\"limit\":" num(LIM[id]) ",\"ratio\":" num(RAT[id])
    if (id in RATP)
      line = line ",\"ratio_paired\":" num(RATP[id])
    if (id in CEIL)
      line = line ",\"ceiling\":" num(CEIL[id]) ",\"ceiling_ratio\":" num(AV[id] / CEIL[id])
    if ((id, "goal") in GS) {
      gs = GS[id, "goal"]
      if (match(gs, /^(<=|>=|==|<|>)/)) {
        op = substr(gs, 1, RLENGTH)
        tv = substr(gs, RLENGTH + 1) + 0
        GOALMET[id] = goal_check(op, tv, AV[id])
        if (GOALMET[id] != "")
          line = line ",\"met\":" (GOALMET[id] ? "true" : "false")
      }
    }
    if ((id, "goal_ratio") in GS && (id in RAT) && goal_parse(GS[id, "goal_ratio"])) {
      GOALRMET[id] = goal_check(GOP, GTV, (id in RATP) ? RATP[id] : RAT[id])
      line = line ",\"met_ratio\":" (GOALRMET[id] ? "true" : "false")
    }
    if (gn[id] > 1 && AV[id] != "")
      line = line ",\"min\":" num(ext(id, "value", 0)) ",\"max\":" num(ext(id, "value", 1))
    line = line ",\"reps\":" gn[id] "}"
    print line
  }

  # --- markdown ---
  print ""
  print "## latchkey benchmark suite: medians of " meta_rounds " interleaved rounds"
  print ""
  print "- redis-server " meta_server "; " meta_placement
  print "- load average before " meta_load0 ", after " meta_load1 "; wall time " meta_secs " s"
  print "- ranges (min–max) are over the rounds; compare figures within one run only (bench/README.md)"

  # L
  print ""
  print "### L: limits"
  print ""
  print "| limit | median | range | p50 µs | p99 µs | note |"
  print "|---|---|---|---|---|---|"
  nL = split("PING -c 1 -P 1|SET NX PX -c 1 -P 1|compare-DEL -c 1 -P 1|SET NX PX -c 50 -P 16|compare-DEL -c 50 -P 16", LV, "|")
  for (q = 1; q <= nL; q++) {
    id = gid("L", "redis-benchmark", "ops_per_s", LV[q])
    if (!has(id))
      continue
    note = ""
    if ((id, "hit_pct") in FT)
      note = sprintf("%.0f%% of calls deleted a key", med(id, "hit_pct"))
    if (LV[q] ~ /^PING/)
      note = sprintf("round trip %.1f µs (1/rate)", 1e6 / AV[id])
    printf "| redis-benchmark %s | %s ops/s | %s–%s | %s | %s | %s |\n", LV[q], fmt0(AV[id]),
      fmt0(ext(id, "value", 0)), fmt0(ext(id, "value", 1)), f1(med(id, "p50_us")),
      f1(med(id, "p99_us")), note
  }
  for (q = 1; q <= 2; q++) {
    vv = q == 1 ? "-c 1 -P 1" : "-c 50 -P 16"
    id = gid("L", "minimal", "pairs_per_s", vv)
    if (has(id))
      printf "| minimal-work pair ceiling %s | %s pairs/s | %s–%s | | | 1 / (1/SET NX PX + 1/compare-DEL) |\n",
        vv, fmt0(AV[id]), fmt0(ext(id, "value", 0)), fmt0(ext(id, "value", 1))
  }

  # B1 / B2
  print ""
  print "### B1, B2: acquire+release pairs, one connection"
  print ""
  print "| bench | latchkey pairs/s (range) | bench/raw = limit (range) | ratio (paired) | raw on blocking hiredis | minimal ceiling: redis-benchmark / same layer | latchkey / ceiling: redis-benchmark / same layer | best peer | latchkey p50 / p99 µs | raw p50 / p99 µs | client CPU µs/pair latchkey / raw | server CPU µs/pair latchkey / raw / minimal | cmds/pair |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  nb = split("B1|sequential|5,740 (node redlock T1; redis-semaphore 6,126)#B2|64 in flight|52,875 (redis-semaphore, 64 promises)#B2|256 in flight|–", BR, "#")
  for (q = 1; q <= nb; q++) {
    split(BR[q], bp, "|")
    lk = gid(bp[1], "latchkey", "pairs_per_s", bp[2])
    rw = gid(bp[1], "raw", "pairs_per_s", bp[2])
    rh = gid(bp[1], "raw-hiredis", "pairs_per_s", bp[2])
    rm = gid(bp[1], "raw-minimal", "pairs_per_s", bp[2])
    if (!has(lk) && !has(rw))
      continue
    cm = (has(rm) && AV[rm] > 0) ? f3(AV[lk] / AV[rm]) : "–"
    printf "| %s %s | %s (%s–%s) | %s (%s–%s) | %s (%s) | %s | %s / %s | %s / %s | %s | %s / %s | %s / %s | %s / %s | %s / %s / %s | %s |\n",
      bp[1], bp[2], fmt0(mv(lk)), fmt0(ext(lk, "value", 0)), fmt0(ext(lk, "value", 1)),
      fmt0(mv(rw)), fmt0(ext(rw, "value", 0)), fmt0(ext(rw, "value", 1)),
      (lk in RAT) ? f3(RAT[lk]) : "–", (lk in RATP) ? f3(RATP[lk]) : "–",
      has(rh) ? fmt0(mv(rh)) : "–", (lk in CEIL) ? fmt0(CEIL[lk]) : "–", fmt0(mv(rm)),
      (lk in CEIL) ? f3(AV[lk] / CEIL[lk]) : "–", cm, bp[3],
      f1(med(lk, "p50_us")), f1(med(lk, "p99_us")), f1(med(rw, "p50_us")), f1(med(rw, "p99_us")),
      f2(med(lk, "cpu_us_per_pair")), f2(med(rw, "cpu_us_per_pair")),
      f2(med(lk, "server_cpu_us_per_pair")), f2(med(rw, "server_cpu_us_per_pair")),
      f2(med(rm, "server_cpu_us_per_pair")), f3(med(lk, "commands_per_pair"))
  }

  # B2, lean layout: server CPU per pair against the minimal work, same run
  ln = gid("B2", "latchkey-lean", "pairs_per_s", "64 in flight")
  if (has(ln)) {
    lk = gid("B2", "latchkey", "pairs_per_s", "64 in flight")
    rm = gid("B2", "raw-minimal", "pairs_per_s", "64 in flight")
    print ""
    print "| B2 64 in flight | pairs/s lean / Redisson layout / minimal | server CPU µs/pair lean / Redisson layout / minimal | lean server CPU / minimal |"
    print "|---|---|---|---|"
    printf "| lean layout | %s / %s / %s | %s / %s / %s | %s |\n", fmt0(mv(ln)), fmt0(mv(lk)), fmt0(mv(rm)),
      f2(med(ln, "server_cpu_us_per_pair")), f2(med(lk, "server_cpu_us_per_pair")),
      f2(med(rm, "server_cpu_us_per_pair")),
      (med(rm, "server_cpu_us_per_pair") > 0) ? f3(med(ln, "server_cpu_us_per_pair") / med(rm, "server_cpu_us_per_pair")) : "–"
  }

  # B3
  nv = 0
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    if (GB[id] == "B3" && GM[id] == "acquisitions_per_s") {
      VARS[++nv] = GI[id] SUBSEP GVar[id]
    }
  }
  if (nv > 0) {
    print ""
    print "### B3: contention, one name"
    print ""
    hdr = "| metric |"
    sep = "|---|"
    for (q = 1; q <= nv; q++) {
      split(VARS[q], vp, SUBSEP)
      hdr = hdr " " vp[2] " (" vp[1] ") |"
      sep = sep "---|"
    }
    print hdr " peers, default settings (perf-baseline T3) |"
    print sep "---|"
    nm = split("acquisitions_per_s:acquisitions/s:6,782–8,112#transfers_per_s:transfers/s (owner changes between processes):20.9–382#same_process_pct@transfers_per_s:same-process acquisitions %:95.2–99.7#handoff_p50_us:handoff p50 µs (release call → next acquired):90–142#handoff_p99_us:handoff p99 µs:251–538#in_rtts@handoff_p50_us:handoff p50 in PING round trips:–#transfer_p50_us:transfer p50 µs:166–332#transfer_p99_us:transfer p99 µs:2,701–41,926#wait_p50_us:wait p50 µs:50–78#wait_p99_us:wait p99 µs:154–30,768#wait_max_us:wait max µs:146,565–1,806,097#over_p50@wait_max_us:wait max / wait p50:–#longest_streak:longest same-process streak:254–1,752#toplevel_cmds_per_acq:top-level Redis commands / acquisition:–#evalsha_per_acq@toplevel_cmds_per_acq:EVALSHA / acquisition:–#inner_cmds_per_acq:commands inside scripts / acquisition:–#server_cmds_per_acq:all Redis commands / acquisition (top-level + inner):4.01–6.01#redis_cpu_pct:Redis CPU %:29.9–32.4#redis_cpu_us_per_acq:Redis CPU µs / acquisition:~89–114 (issue 17)#mutex_violations:mutual-exclusion violations:0#order_violations:order violations (overtaken earlier waiters):–#acquire_failures:acquire failures:0", MR, "#")
    for (q = 1; q <= nm; q++) {
      split(MR[q], mp, ":")
      fld = "value"
      met = mp[1]
      if (index(met, "@")) {
        fld = substr(met, 1, index(met, "@") - 1)
        met = substr(met, index(met, "@") + 1)
      }
      row = "| " mp[2] " |"
      for (v = 1; v <= nv; v++) {
        split(VARS[v], vp, SUBSEP)
        id = gid("B3", vp[1], met, vp[2])
        x = has(id) ? (fld == "value" ? AV[id] : med(id, fld)) : ""
        row = row " " (x == "" ? "–" : ((x >= 100 || x == int(x)) ? fmt0(x) : f2(x))) " |"
      }
      print row " " mp[3] " |"
    }
  }

  # everything else
  print ""
  print "### Other benchmarks (B4, B5, B6 and the registered programs)"
  print ""
  print "| bench | impl | variant | metric | median | range | unit | limit | ratio | goal |"
  print "|---|---|---|---|---|---|---|---|---|---|"
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    if (GB[id] == "L" || GB[id] == "B1" || GB[id] == "B2" || GB[id] == "B3")
      continue
    lim = (id in LIM) ? LIM[id] : med(id, "limit")
    rat = (id in RAT) ? RAT[id] : med(id, "ratio")
    gl = ((id, "goal") in GS) ? GS[id, "goal"] " " yesno(GOALMET[id]) : ""
    cv = (AV[id] == "") ? "–" : num(AV[id])
    rg = (gn[id] > 1) ? num(ext(id, "value", 0)) "–" num(ext(id, "value", 1)) : ""
    lim = (lim == "") ? "" : num(lim)
    rat = (rat == "") ? "" : f3(rat)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", GB[id], GI[id], GVar[id], GM[id],
      cv, rg, GS[id, "unit"], lim, rat, gl
  }

  # goals
  id = gid("B1", "latchkey", "pairs_per_s", "sequential")
  if (id in RAT)
    add_goal("B1 latchkey >= 0.95 x bench/raw", sprintf("%.3f (paired %.3f)", RAT[id], RATP[id]), RAT[id] >= 0.95)
  if (id in CEIL)
    add_goal("B1 latchkey >= 0.85 x minimal-work ceiling: redis-benchmark SET NX PX + compare-DEL, -c 1 -P 1", sprintf("%.3f", AV[id] / CEIL[id]), AV[id] / CEIL[id] >= 0.85)
  rm = gid("B1", "raw-minimal", "pairs_per_s", "sequential")
  if (has(id) && has(rm) && AV[rm] > 0)
    add_goal("B1 latchkey >= 0.85 x minimal-work ceiling: the same minimal pair on latchkey's connection layer (bench/raw --minimal)", sprintf("%.3f", AV[id] / AV[rm]), AV[id] / AV[rm] >= 0.85)
  for (q = 1; q <= 2; q++) {
    vv = q == 1 ? "64 in flight" : "256 in flight"
    id = gid("B2", "latchkey", "pairs_per_s", vv)
    if (id in RAT)
      add_goal("B2 " vv ": latchkey >= 0.8 x bench/raw", sprintf("%.3f (paired %.3f)", RAT[id], RATP[id]), RAT[id] >= 0.8)
    if (q == 1 && has(id))
      add_goal("B2 64 in flight: well above the best peer, 52,875 pairs/s (read as >= 1.2x)",
               sprintf("%s pairs/s = %.2fx", fmt0(AV[id]), AV[id] / 52875), AV[id] >= 1.2 * 52875)
  }
  for (v = 1; v <= nv; v++) {
    split(VARS[v], vp, SUBSEP)
    if (vp[1] == "latchkey" && vp[2] == "lock") {
      id = gid("B3", vp[1], "wait_max_us", vp[2])
      id2 = gid("B3", vp[1], "wait_p50_us", vp[2])
      if (has(id) && has(id2) && AV[id2] > 0)
        add_goal("B3 lock: wait max <= 10 x wait p50", sprintf("%s / %s µs = %.1fx", fmt0(AV[id]), f1(AV[id2]), AV[id] / AV[id2]), AV[id] <= 10 * AV[id2])
      id = gid("B3", vp[1], "transfers_per_s", vp[2])
      if (has(id))
        add_goal("B3 lock: transfers/s above every peer's default (382/s)", f1(AV[id]), AV[id] > 382)
    }
  }
  # Fair lock goals, on whichever shape its program prints: a B3 variant
  # from contend.h (in_rtts) or a program of its own (handoff_p50_rtts or
  # rtt_p50_us; an order_violations field).
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    if (GI[id] != "latchkey" || !(GB[id] ~ /fair/ || GVar[id] ~ /fair/))
      continue
    lbl = GB[id] (GVar[id] != "" ? " " GVar[id] : "")
    x = ""
    if (GM[id] == "handoff_p50_us") {
      x = med(id, "in_rtts")
      if (x == "" && med(id, "rtt_p50_us") > 0)
        x = AV[id] / med(id, "rtt_p50_us")
    }
    if (x == "" && ((id, "handoff_p50_rtts") in FT))
      x = med(id, "handoff_p50_rtts")
    if (x != "")
      add_goal(lbl ": handoff p50 <= 3 round trips", sprintf("%.2f RTT", x), x <= 3)
    if (((id, "order_violations") in FT) && GM[id] != "order_violations")
      add_goal(lbl ": 0 order violations", med(id, "order_violations"), med(id, "order_violations") == 0)
  }
  id = gid("watchdog_scale", "latchkey", "renewal_commands_per_period", "")
  if (has(id))
    add_goal("B5: renewal commands per period ~ ceil(N/100) (0.95 <= ratio <= 1.05, every lock still held)",
             sprintf("%s, %d not held", f3(med(id, "ratio")), med(id, "not_held")),
             med(id, "ratio") <= 1.05 && med(id, "ratio") >= 0.95 && med(id, "not_held") == 0)
  id = gid("watchdog_scale", "latchkey", "client_cpu_ms_per_period", "")
  if (has(id))
    add_goal("B5: client CPU < 1% of a core at the default 30 s lease (the fraction measured at --lease 3000, over 10)",
             sprintf("%.3f%% (%.2f%% at --lease 3000)", med(id, "core_fraction") * 10, med(id, "core_fraction") * 100),
             med(id, "core_fraction") / 10 < 0.01)
  for (g = 1; g <= ngroups; g++) {
    id = G[g]
    if ((id, "goal") in GS && GOALMET[id] != "")
      add_goal(GB[id] " " GI[id] " " (GVar[id] != "" ? GVar[id] " " : "") GM[id] " " GS[id, "goal"], num(AV[id]) " " GS[id, "unit"], GOALMET[id])
    # A goal on the ratio to a yardstick run in the same rounds; shown as
    # n/a when the yardstick did not run.
    if ((id, "goal_ratio") in GS && (id, "limit_impl") in GS)
      add_goal(GB[id] " " GI[id] " " (GVar[id] != "" ? GVar[id] " " : "") GM[id] " / " GS[id, "limit_impl"] " (same run) " GS[id, "goal_ratio"],
               (id in RAT) ? sprintf("%s (paired %s): %s / %s %s", f3(RAT[id]), (id in RATP) ? f3(RATP[id]) : "–", num(AV[id]), num(LIM[id]), GS[id, "unit"]) : "no " GS[id, "limit_impl"] " line in this run",
               (id in GOALRMET) ? GOALRMET[id] : "")
  }
  print ""
  print "### Goals"
  print ""
  print "| goal | measured (medians) | |"
  print "|---|---|---|"
  for (q = 1; q <= NG; q++)
    printf "| %s | %s | %s |\n", G_what[q], G_meas[q], yesno(G_met[q])

  if (failures != "") {
    nfail = 0
    while ((getline fl < failures) > 0) {
      if (nfail == 0) {
        print ""
        print "### Runs that failed or were skipped"
        print ""
      }
      print "- " fl
      nfail++
    }
  }
}
