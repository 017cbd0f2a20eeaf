#!/usr/bin/env bash
# Checks that a documentation page works as written (ctest: docs.<page>,
# label docs; test/lists/docs_tests.cmake registers one entry per page).
#
#   tools/check-docs.sh --build BUILD_DIR [--lib LIBRARY] [--bin DIR]
#                       [--cflags "..."] [--ldflags "..."] PAGE.md...
#
# For each page:
#   - it cites no file a reader does not have: no `shared/`, `research/` or
#     DESIGN.md (cite repository files, or state the fact);
#   - it states no count that changes with the code ("57 cases", "668 tests"):
#     such numbers are generated or left out;
#   - every relative link names a file of the repository, and every #anchor
#     a heading of the page it points to;
#   - every fenced code block says what it is (```c, ```cpp, ```sh, ```bash or
#     ```text) and works as written:
#       ```c     compiles and links as a complete program (-Wall -Wextra
#                -Werror, against the library), unless the last non-blank
#                line before it is
#                  <!-- excerpt: examples/NAME.c -->
#                (any file under examples/ or include/, which CI builds): then
#                its lines are that file's, in order and contiguous, with a
#                line `...` standing for lines left out; an example quoted so
#                also runs against the private server below (exit status 0);
#                a README block after <!-- ci-example: NAME pkg-config: PKG... -->
#                compiles with those packages' flags too (.ci/run also runs it);
#       ```cpp   the same as a C++17 program ($CXX, default c++), for
#                docs/cpp.md (include/latchkey.hpp);
#       ```sh / ```bash
#                runs with bash -eu in a scratch directory against a private
#                server this script starts on a free loopback port
#                ($LK_REDIS_SERVER, default redis-server): `redis-cli` there
#                is that server's cli aimed at it (a block may not pick a
#                server itself: -h, -p, -u and -s are refused). Marked
#                  <!-- docs-test: then PROGRAM ARGS... -->
#                it is followed by BIN_DIR/PROGRAM 127.0.0.1:PORT ARGS...,
#                which must succeed (e.g. acl_check proves an ACL recipe lets
#                every primitive work). Marked
#                  <!-- docs-test: skip REASON -->
#                it is not run (REASON is printed; README.md's set-up
#                commands are never run);
#       ```text  output, diagrams, configuration: not run, unless marked
#                  <!-- output-of: examples/NAME -->
#                then BUILD_DIR/examples/NAME 127.0.0.1:PORT must print
#                exactly the block;
#   - an ACL recipe (sh blocks with ACL SETUSER) allows every command the
#     Lua scripts (scripts/*/*.lua) call.
# Exit status: 0 all passed, 1 something failed, 77 a needed program was not
# built (ctest reports it skipped). Every wait is bounded.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

build=""
lib=""
bin=""
extra_cflags=""
extra_ldflags=""
pages=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift ;;
    --lib) lib=$2; shift ;;
    --bin) bin=$2; shift ;;
    --cflags) extra_cflags=$2; shift ;;
    --ldflags) extra_ldflags=$2; shift ;;
    -h | --help) sed -n '2,45p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-docs: unknown option $1" >&2; exit 2 ;;
    *) pages+=("$1") ;;
  esac
  shift
done
[ -n "$build" ] || { echo "check-docs: --build BUILD_DIR is required" >&2; exit 2; }
[ ${#pages[@]} -gt 0 ] || { echo "check-docs: no page given" >&2; exit 2; }
build=$(cd "$build" && pwd)
if [ -z "$lib" ]; then
  lib="$build/liblatchkey.so"
  [ -e "$lib" ] || lib="$build/liblatchkey.a"
fi
[ -n "$bin" ] || bin="$build/test/docs"
CC=${CC:-cc}
CXX=${CXX:-c++}

SERVER=${LK_REDIS_SERVER:-redis-server}
CLI=${LK_REDIS_CLI:-}
if [ -z "$CLI" ]; then
  case "$SERVER" in
    *-server) CLI=${SERVER%-server}-cli ;;
    *) CLI=redis-cli ;;
  esac
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lk-docs.XXXXXX")
SERVER_PID=""
PORT=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do # 5 s, then SIGKILL
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failures=0
skipped_missing=0
fail() { # page line message
  echo "FAIL $1:$2: $3" >&2
  failures=$((failures + 1))
}
note() { echo "  $*"; }

# ---- the private server, started on the first block that needs it ---------------

start_server() {
  [ -z "$PORT" ] || return 0
  command -v "$SERVER" >/dev/null || { echo "check-docs: $SERVER not found" >&2; return 1; }
  local p pid
  for _ in 1 2 3 4 5 6 7 8; do
    p=$((20000 + RANDOM % 20000))
    if ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then continue; fi
    "$SERVER" --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
      --dir "$work" --loglevel warning </dev/null >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do # 5 s
      kill -0 "$pid" 2>/dev/null || break
      if "$CLI" -p "$p" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
        SERVER_PID=$pid
        PORT=$p
        break 2
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [ -n "$PORT" ] || { echo "check-docs: $SERVER did not start" >&2; cat "$work/server.log" >&2; return 1; }
  # redis-cli for the blocks: the server's cli, aimed at the private server.
  mkdir -p "$work/path"
  cat >"$work/path/redis-cli" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do
  case "\$a" in
    -h | -p | -u | -s | --user | --pass) echo "check-docs: a block may not pick the server (\$a)" >&2; exit 2 ;;
  esac
done
exec "$(command -v "$CLI")" -p "$PORT" "\$@"
EOF
  chmod +x "$work/path/redis-cli"
  note "private $SERVER on 127.0.0.1:$PORT"
}

# ---- whole-page checks ---------------------------------------------------------------

check_references() { # page
  local page=$1 hits
  hits=$(grep -n -E 'shared/|research/|DESIGN\.md' "$page" || true)
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      fail "$page" "${h%%:*}" "cites a file readers do not have: ${h#*:}"
    done <<<"$hits"
  fi
}

# Counts that change with the code: "57 cases", "668 tests", "(17 cases)",
# also when the number ends one line and its noun starts the next.
check_counts() { # page
  local page=$1 hits
  hits=$(awk '
    function report(s, n,   re) {
      re = "(^|[^-A-Za-z0-9_.])[0-9][0-9 ,]*[0-9]? (test |ctest )?(cases|tests)([^A-Za-z]|$)"
      if (match(s, re) && RSTART <= n) print prevnr ": " s
    }
    /^ *```/ { fence = !fence }
    NR > 1 && !prevfence { report(prev " " $0, length(prev)) }
    { prev = $0; prevnr = NR; prevfence = fence || /^ *```/ }
    END { if (NR > 0 && !prevfence) report(prev, length(prev)) }
  ' "$page")
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      fail "$page" "${h%%:*}" "states a count that changes with the code (generate it or leave it out): ${h#*: }"
    done <<<"$hits"
  fi
}

# GitHub's heading anchors: lower case, punctuation dropped, spaces to '-'.
anchors_of() { # file
  awk '
    /^ *```/ { fence = !fence; next }
    fence { next }
    /^#+ / {
      h = $0
      sub(/^#+ +/, "", h)
      sub(/ +#* *$/, "", h)
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      print h
    }' "$1"
}

check_links() { # page
  local page=$1 dir line target file anchor
  dir=$(dirname "$page")
  # One link per line: its line number, then the target. Code spans and
  # fenced blocks are skipped.
  while IFS=$'\t' read -r line target; do
    case "$target" in
      http://* | https://* | mailto:*) continue ;;
    esac
    file=${target%%#*}
    anchor=""
    [ "$file" = "$target" ] || anchor=${target#*#}
    if [ -z "$file" ]; then
      file=$page
    else
      file="$dir/$file"
      if [ ! -e "$file" ]; then
        fail "$page" "$line" "links to $target: no such file in the repository"
        continue
      fi
    fi
    if [ -n "$anchor" ] && [[ "$file" == *.md ]]; then
      if ! anchors_of "$file" | grep -qx -- "$anchor"; then
        fail "$page" "$line" "links to $target: $(basename "$file") has no heading with that anchor"
      fi
    fi
  done < <(awk '
    /^ *```/ { fence = !fence; next }
    fence { next }
    {
      s = $0
      gsub(/`[^`]*`/, "", s)
      while (match(s, /\]\([^) ]+\)/)) {
        print NR "\t" substr(s, RSTART + 2, RLENGTH - 3)
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$page")
}

# ---- code blocks -----------------------------------------------------------------------

# Writes each fenced block of the page to $out/N.body and a line
# "N<TAB>LINE<TAB>INFO<TAB>MARKER" to $out/index (MARKER: the last non-blank
# line before the fence when it is an HTML comment, else empty).
extract_blocks() { # page out
  awk -v out="$2" '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    !inblock && /^ *```/ {
      inblock = 1
      n++
      indent = match($0, /[^ ]/) - 1
      info = $0
      sub(/^ *```/, "", info)
      info = trim(info)
      body = out "/" n ".body"
      printf "" > body
      m = (prev ~ /^<!--.*-->$/) ? prev : ""
      printf "%d\t%d\t%s\t%s\n", n, NR, info, m > (out "/index")
      next
    }
    inblock && /^ *```/ { inblock = 0; close(body); prev = ""; next }
    inblock {
      line = $0
      for (i = 0; i < indent && substr(line, 1, 1) == " "; i++) line = substr(line, 2)
      print line > body
      next
    }
    { t = trim($0); if (t != "") prev = t }
  ' "$1"
  touch "$2/index"
}

marker_value() { # marker kind -> the text after "<!-- kind:" and before "-->"
  local m=$1 kind=$2 v
  case "$m" in
    "<!-- $kind:"*"-->")
      v=${m#"<!-- $kind:"}
      v=${v%"-->"}
      v=${v#"${v%%[! ]*}"}
      v=${v%"${v##*[! ]}"}
      printf '%s' "$v"
      return 0 ;;
  esac
  return 1
}

compile_program() { # page line body [pkg-config packages the block needs]
  local page=$1 line=$2 body=$3 exe="$3.exe" log="$3.log" pkgs=${4:-}
  local link pkgflags=""
  cp "$body" "$body.c"
  # As a user links it: the shared library needs only libuv beside it (its
  # own dependencies are its business); the static one needs them all.
  case "$lib" in
    *.so | *.so.*) link="$lib -Wl,-rpath,$(dirname "$lib") $(pkg-config --libs libuv)" ;;
    *) link="$lib $(pkg-config --libs libuv hiredis libssl libcrypto) -lpthread" ;;
  esac
  if [ -n "${pkgs// /}" ]; then
    # shellcheck disable=SC2086
    if ! pkgflags=$(pkg-config --cflags --libs $pkgs 2>&1); then
      fail "$page" "$line" "the C block needs pkg-config packages that are missing: $pkgs"
      return
    fi
  fi
  # shellcheck disable=SC2086,SC2046
  if ! "$CC" -Wall -Wextra -Werror -I"$ROOT/include" $(pkg-config --cflags libuv) $extra_cflags \
    -o "$exe" "$body.c" $link $pkgflags $extra_ldflags >"$log" 2>&1; then
    fail "$page" "$line" "the C block does not compile as a complete program (mark an excerpt with <!-- excerpt: examples/NAME.c -->):"
    head -n 8 "$log" | sed 's/^/    /' >&2
    return
  fi
  note "line $line: C program compiles and links"
}

# A ```cpp block: a complete C++17 program against include/latchkey.hpp,
# linked as compile_program links a C one.
compile_cpp_program() { # page line body
  local page=$1 line=$2 body=$3 exe="$3.exe" log="$3.log"
  local link
  cp "$body" "$body.cpp"
  case "$lib" in
    *.so | *.so.*) link="$lib -Wl,-rpath,$(dirname "$lib") $(pkg-config --libs libuv)" ;;
    *) link="$lib $(pkg-config --libs libuv hiredis libssl libcrypto) -lpthread" ;;
  esac
  # shellcheck disable=SC2086,SC2046
  if ! "$CXX" -std=c++17 -Wall -Wextra -Werror -I"$ROOT/include" $(pkg-config --cflags libuv) \
    $extra_cflags -o "$exe" "$body.cpp" $link $extra_ldflags >"$log" 2>&1; then
    fail "$page" "$line" "the C++ block does not compile as a complete program:"
    head -n 8 "$log" | sed 's/^/    /' >&2
    return
  fi
  note "line $line: C++ program compiles and links"
}

check_excerpt() { # page line body file
  local page=$1 line=$2 body=$3 src=$4 missing
  case "$src" in
    examples/* | include/*) ;;
    *) fail "$page" "$line" "an excerpt names $src: only files under examples/ or include/ (built by CI)"; return ;;
  esac
  if [ ! -f "$ROOT/$src" ]; then
    fail "$page" "$line" "an excerpt of $src, which does not exist"
    return
  fi
  # Segments (split at lines "...") must appear in the file in order, each
  # as consecutive lines; blank lines and surrounding blanks are ignored.
  missing=$(awk '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    FNR == NR { t = trim($0); if (t != "") f[++nf] = t; next }
    {
      t = trim($0)
      if (t == "") next
      if (t == "...") { if (ns > 0) flush(); next }
      seg[++ns] = t
      segline[ns] = FNR
    }
    function flush(   p, k, ok) {
      for (p = pos + 1; p + ns - 1 <= nf; p++) {
        ok = 1
        for (k = 1; k <= ns; k++) if (f[p + k - 1] != seg[k]) { ok = 0; break }
        if (ok) { pos = p + ns - 1; ns = 0; return }
      }
      # Report the first line of the segment that breaks the match.
      for (k = 1; k <= ns; k++) {
        found = 0
        for (p = pos + 1; p <= nf; p++) if (f[p] == seg[k]) { found = 1; break }
        if (!found) { print segline[k] ": " seg[k]; bad = 1; ns = 0; return }
      }
      print segline[1] ": " seg[1] " (the lines are there, but not together in this order: mark a gap with ...)"
      bad = 1
      ns = 0
    }
    END { if (ns > 0) flush(); exit bad }
  ' "$ROOT/$src" "$body" || true)
  if [ -n "$missing" ]; then
    while IFS= read -r m; do
      fail "$page" "$((line + ${m%%:*}))" "not in $src as written:${m#*:}"
    done <<<"$missing"
    return
  fi
  note "line $line: excerpt of $src"
  case "$src" in
    examples/*.c) run_example "$page" "$line" "examples/$(basename "$src" .c)" ;;
  esac
}

# An example a page quotes also runs, once per page, against the private
# server: exit status 0 (its output is checked only where the page shows it).
declare -A examples_run=()
run_example() { # page line examples/NAME
  local page=$1 line=$2 ex=$3 exe
  [ -z "${examples_run[$ex]:-}" ] || return 0
  examples_run[$ex]=1
  exe="$build/$ex"
  if [ ! -x "$exe" ]; then
    echo "check-docs: $exe is not built (LATCHKEY_BUILD_EXAMPLES)" >&2
    skipped_missing=1
    return
  fi
  start_server || { fail "$page" "$line" "no private server"; return; }
  if ! timeout 60 "$exe" "127.0.0.1:$PORT" >"$work/example.out" 2>&1; then
    fail "$page" "$line" "$ex failed against a private server:"
    sed 's/^/    /' "$work/example.out" >&2
    return
  fi
  note "line $line: $ex ran"
}

run_shell() { # page line body then
  local page=$1 line=$2 body=$3 then=$4 rc=0 dir
  start_server || { fail "$page" "$line" "no private server"; return; }
  dir=$(mktemp -d "$work/run.XXXXXX")
  (cd "$dir" && PATH="$work/path:$PATH" timeout 30 bash -eu "$body") >"$body.out" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$page" "$line" "the shell block failed (exit $rc):"
    sed 's/^/    /' "$body.out" >&2
    return
  fi
  # A command's error is not always its exit status (redis-cli prints
  # "(error) ..." or "ERR ..." and exits 0 when not on a terminal).
  if grep -q -E '^(\(error\) |ERR |WRONGPASS|NOPERM)' "$body.out"; then
    fail "$page" "$line" "the shell block printed an error:"
    sed 's/^/    /' "$body.out" >&2
    return
  fi
  note "line $line: shell block ran"
  if [ -n "$then" ]; then
    local prog=${then%% *} args=""
    [ "$prog" = "$then" ] || args=${then#* }
    if [ ! -x "$bin/$prog" ]; then
      echo "check-docs: $bin/$prog is not built" >&2
      skipped_missing=1
      return
    fi
    # shellcheck disable=SC2086
    if ! timeout 120 "$bin/$prog" "127.0.0.1:$PORT" $args >"$body.then" 2>&1; then
      fail "$page" "$line" "after the block, $prog $args failed:"
      sed 's/^/    /' "$body.then" >&2
      return
    fi
    note "line $line: then $prog $args: $(tail -n 1 "$body.then")"
  fi
}

check_output() { # page line body example
  local page=$1 line=$2 body=$3 ex=$4 exe
  exe="$build/$ex"
  [ -x "$exe" ] || exe="$build/$ex/$(basename "$ex")"
  if [ ! -x "$exe" ]; then
    echo "check-docs: $build/$ex is not built (LATCHKEY_BUILD_EXAMPLES)" >&2
    skipped_missing=1
    return
  fi
  start_server || { fail "$page" "$line" "no private server"; return; }
  if ! timeout 60 "$exe" "127.0.0.1:$PORT" >"$body.out" 2>"$body.err"; then
    fail "$page" "$line" "$ex failed:"
    sed 's/^/    /' "$body.err" >&2
    return
  fi
  if ! diff -u "$body" "$body.out" >"$body.diff"; then
    fail "$page" "$line" "$ex does not print what the page shows:"
    sed 's/^/    /' "$body.diff" >&2
    return
  fi
  note "line $line: $ex prints the block"
}

# A page that gives an ACL recipe (sh blocks with ACL SETUSER) must allow
# every command the Lua scripts call: the server checks each one a script
# runs, so one missing denies that verb (a path acl_check may not reach).
check_acl_covers_scripts() { # page out
  local page=$1 out=$2 allowed used missing n line
  allowed=$(
    while IFS=$'\t' read -r n line _; do
      grep -q 'ACL SETUSER' "$out/$n.body" 2>/dev/null || continue
      grep -oE "(^|[ '])\+[a-z]+" "$out/$n.body" | tr -d " '+"
    done <"$out/index" | sort -u)
  [ -n "$allowed" ] || return 0
  used=$(grep -rhoE "redis\.p?call\( *'[A-Za-z]+'" "$ROOT/scripts" --include='*.lua' |
    sed -E "s/.*'([A-Za-z]+)'/\1/" | tr '[:upper:]' '[:lower:]' | sort -u)
  missing=$(comm -13 <(printf '%s\n' "$allowed") <(printf '%s\n' "$used") | tr '\n' ' ')
  line=$(grep -n 'ACL SETUSER' "$page" | head -n 1 | cut -d: -f1)
  if [ -n "${missing// /}" ]; then
    fail "$page" "$line" "the ACL recipe does not allow commands the scripts (scripts/*/*.lua) call: $missing"
  else
    note "line $line: the ACL recipe allows every command the scripts call"
  fi
}

check_blocks() { # page
  local page=$1 out n line info marker v is_readme=0
  [ "$(basename "$page")" = README.md ] && is_readme=1
  out=$(mktemp -d "$work/blocks.XXXXXX")
  extract_blocks "$page" "$out"
  while IFS=$'\t' read -r n line info marker; do
    local body="$out/$n.body"
    case "$info" in
      c)
        if v=$(marker_value "$marker" excerpt); then
          check_excerpt "$page" "$line" "$body" "$v"
        elif v=$(marker_value "$marker" ci-example); then
          # "NAME pkg-config: PKG...": a README way in that CI also runs.
          compile_program "$page" "$line" "$body" "${v#*pkg-config:}"
        else
          compile_program "$page" "$line" "$body"
        fi ;;
      cpp)
        compile_cpp_program "$page" "$line" "$body" ;;
      sh | bash)
        if v=$(marker_value "$marker" docs-test) && [[ "$v" == skip* ]]; then
          note "line $line: shell block not run: ${v#skip}"
        elif [ "$is_readme" -eq 1 ]; then
          note "line $line: README set-up command, not run here"
        elif v=$(marker_value "$marker" docs-test) && [[ "$v" == then\ * ]]; then
          run_shell "$page" "$line" "$body" "${v#then }"
        elif [ -n "$marker" ] && [[ "$marker" == "<!-- docs-test:"* ]]; then
          fail "$page" "$line" "unknown marker $marker"
        else
          run_shell "$page" "$line" "$body" ""
        fi ;;
      text)
        if v=$(marker_value "$marker" output-of); then
          check_output "$page" "$line" "$body" "$v"
        fi ;;
      "")
        fail "$page" "$line" "a code block without a language: say \`\`\`c, \`\`\`sh or \`\`\`text" ;;
      *)
        fail "$page" "$line" "a \`\`\`$info block: the docs test knows c, cpp, sh, bash and text" ;;
    esac
  done <"$out/index"
  check_acl_covers_scripts "$page" "$out"
}

cd "$ROOT"
for page in "${pages[@]}"; do
  page=${page#"$ROOT/"}
  [ -f "$page" ] || { fail "$page" 0 "no such page"; continue; }
  echo "== $page"
  check_references "$page"
  check_counts "$page"
  check_links "$page"
  check_blocks "$page"
done

if [ "$failures" -gt 0 ]; then
  echo "check-docs: $failures problem(s)" >&2
  exit 1
fi
if [ "$skipped_missing" -eq 1 ]; then
  exit 77
fi
echo "check-docs: every check passed"
