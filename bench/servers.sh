# Sourced by tools/bench.sh and bench/peers.sh: private redis-servers on free
# loopback ports, each with its own log, stopped by the caller by PID.
# The caller provides: srv_pin (an array, empty for no pinning), the arrays
# server_pids and server_ports, and die().

port_in_use() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_server LOGDIR: starts one redis-server (no persistence) on a free
# port, waits for its PONG, appends its PID to server_pids and its port to
# server_ports; dies after 20 ports that would not serve.
start_server() {
  local logdir=$1 p pid="" ok=0 _
  for _ in $(seq 1 20); do
    p=$((20000 + RANDOM % 30000))
    port_in_use "$p" && continue
    "${srv_pin[@]}" redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$logdir" --logfile "$logdir/redis-$p.log" &
    pid=$!
    server_pids+=("$pid")
    for _ in $(seq 1 50); do
      if redis-cli -h 127.0.0.1 -p "$p" PING 2>/dev/null | grep -q PONG; then
        ok=1
        break
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if [ "$ok" -eq 1 ]; then
      server_ports+=("$p")
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  die "could not start redis-server on a free port (logs: $logdir)"
}
