# The cluster benchmarks' summary (bench/cluster.sh): medians over the
# rounds, the range, and the ratios cluster / standalone and latchkey / raw,
# each also as the median of per-round ratios (runs seconds apart). mawk and
# gawk alike: no asort.
function num(line, k,    i, s) {
  i = index(line, "\"" k "\":")
  if (i == 0) return ""
  s = substr(line, i + length(k) + 3)
  if (substr(s, 1, 1) == "\"") { s = substr(s, 2); sub(/".*/, "", s); return s }
  sub(/[,}].*/, "", s)
  return s
}
function med(list,    n, v, i, j, x) {
  n = split(list, v, " ")
  if (n == 0) return ""
  for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
  lo = v[1]; hi = v[n]
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function put(key, r, v) {
  if (v == "") return
  vals[key] = vals[key] " " v
  byround[key, r] = v
  keys[key] = 1
}
function fmt(x) {
  if (x == "") return "-"
  if (x + 0 >= 1000) return sprintf("%.0f", x)
  if (x + 0 >= 10) return sprintf("%.1f", x)
  return sprintf("%.3f", x)
}
function cell(key,    m) {
  if (!(key in keys)) return "-"
  m = med(vals[key])
  return fmt(m) " (" fmt(lo) "-" fmt(hi) ")"
}
function ratio(a, b,    r, l, n, ma, mb) {
  if (!(a in keys) || !(b in keys)) return "-"
  ma = med(vals[a]); mb = med(vals[b])
  l = ""
  for (r = 1; r <= 20; r++)
    if ((a, r) in byround && (b, r) in byround && byround[b, r] + 0 != 0)
      l = l " " byround[a, r] / byround[b, r]
  if (mb + 0 == 0) return "-"
  n = med(l)
  return sprintf("%.3f (paired %.3f, %.3f-%.3f)", ma / mb, n, lo, hi)
}
{
  b = num($0, "bench"); m = num($0, "metric"); v = num($0, "variant"); im = num($0, "impl")
  d = num($0, "deploy"); r = num($0, "round")
  if (r == "") r = 1
  if (b == "B1" || b == "B2") {
    k = b " " v
    put(k "|pairs/s|" im "|" d, r, num($0, "value"))
    put(k "|client cmds/pair|" im "|" d, r, num($0, "commands_per_pair"))
    put(k "|server evalsha/pair|" im "|" d, r, num($0, "srv_evalsha_per_unit"))
    put(k "|server calls/pair (all nodes)|" im "|" d, r, num($0, "srv_calls_per_unit"))
    put(k "|client CPU us/pair|" im "|" d, r, num($0, "cpu_us_per_pair"))
    put(k "|server CPU us/pair|" im "|" d, r, num($0, "srv_cpu_us_per_unit"))
    rows[k] = 1
  } else if (b == "B3") {
    k = "B3 8 processes"
    rows[k] = 1
    if (m == "acquisitions_per_s") {
      put(k "|acquisitions/s|" im "|" d, r, num($0, "value"))
      put(k "|server evalsha/acq|" im "|" d, r, num($0, "srv_evalsha_per_unit"))
      put(k "|server calls/acq (all nodes)|" im "|" d, r, num($0, "srv_calls_per_unit"))
      put(k "|SPUBLISH/acq|" im "|" d, r, num($0, "srv_spublish_per_unit"))
      put(k "|PUBLISH/acq|" im "|" d, r, num($0, "srv_publish_per_unit"))
      put(k "|bus pub msgs on non-owners/acq|" im "|" d, r, num($0, "nonowner_bus_pub_per_unit"))
      put(k "|nodes that ran scripts|" im "|" d, r, num($0, "nodes_used"))
    }
    if (m == "transfers_per_s") put(k "|transfers/s|" im "|" d, r, num($0, "value"))
    if (m == "handoff_p50_us") put(k "|handoff p50 us|" im "|" d, r, num($0, "value"))
    if (m == "toplevel_cmds_per_acq") put(k "|client cmds/acq|" im "|" d, r, num($0, "value"))
    if (m == "mutex_violations") put(k "|mutex violations|" im "|" d, r, num($0, "value"))
  } else if (b == "watchdog_scale") {
    wd[++nwd] = $0
  }
}
END {
  printf "\n## Cluster benchmarks: 3 masters (no replicas) against 1 standalone master\n\n"
  printf "redis-server %s; %s rounds, interleaved (the order of the deployments alternates); servers on CPU 0, clients on CPU 1.\n", meta_server, meta_rounds
  printf "Load before: %s\nLoad after: %s\n\n", meta_load0, meta_load1
  printf "Medians (min-max over the rounds). Ratios: of the medians, then the median of the per-round ratios and their range.\n\n"
  printf "| bench | metric | impl | standalone | cluster | cluster / standalone |\n|---|---|---|---|---|---|\n"
  nm = split("pairs/s|client cmds/pair|server evalsha/pair|server calls/pair (all nodes)|client CPU us/pair|server CPU us/pair|acquisitions/s|transfers/s|handoff p50 us|client cmds/acq|server evalsha/acq|server calls/acq (all nodes)|SPUBLISH/acq|PUBLISH/acq|bus pub msgs on non-owners/acq|nodes that ran scripts|mutex violations", mlist, "|")
  nr = split("B1 sequential|B2 64 in flight|B2 256 in flight|B3 8 processes", rlist, "|")
  for (i = 1; i <= nr; i++) {
    k = rlist[i]
    if (!(k in rows)) continue
    for (j = 1; j <= nm; j++) {
      for (t = 1; t <= 2; t++) {
        im = t == 1 ? "latchkey" : "raw"
        if (k ~ /^B3/) im = "latchkey"
        if (t == 2 && k ~ /^B3/) continue
        a = k "|" mlist[j] "|" im "|cluster"; s = k "|" mlist[j] "|" im "|standalone"
        if (!(a in keys) && !(s in keys)) continue
        printf "| %s | %s | %s | %s | %s | %s |\n", k, mlist[j], im, cell(s), cell(a), ratio(a, s)
      }
    }
  }
  printf "\n| bench | latchkey / raw, standalone | latchkey / raw, cluster | cluster latchkey / standalone raw |\n|---|---|---|---|\n"
  for (i = 1; i <= 3; i++) {
    k = rlist[i] "|pairs/s|"
    printf "| %s | %s | %s | %s |\n", rlist[i], ratio(k "latchkey|standalone", k "raw|standalone"),
      ratio(k "latchkey|cluster", k "raw|cluster"), ratio(k "latchkey|cluster", k "raw|standalone")
  }
  if (nwd > 0) {
    printf "\n### Watchdog\n\n| run | deploy | variant | metric | value | details |\n|---|---|---|---|---|---|\n"
    for (i = 1; i <= nwd; i++) {
      l = wd[i]
      det = ""
      split("keys_per_script client_counted renewals_per_period renewing_ticks_per_period slots_used core_fraction us_per_renewal ratio_to_standalone evalsha_all_nodes_per_period keys_seen not_held", f, " ")
      for (j = 1; j <= 11; j++) { x = num(l, f[j]); if (x != "") det = det f[j] "=" x " " }
      printf "| %s | %s | %s | %s | %s | %s |\n", num(l, "label"), num(l, "deploy"), num(l, "variant"), num(l, "metric"), num(l, "value"), det
    }
  }
  if (failures != "" && (getline line < failures) > 0) {
    printf "\n### Failed or killed runs\n\n- %s\n", line
    while ((getline line < failures) > 0) printf "- %s\n", line
  }
}
