#!/usr/bin/env bash
# Checks that src/core's layers hold: no file calls or includes a file of a
# higher layer by name (docs/design.md, "Layers"). ctest: layers.check.
#
#   tools/check-layers.sh [--allow FILE] [--list] [--core DIR]
#
# Each file of src/core says its layer in its first comment, as
#   /* Layer 1 (connections): ... */
# A header without such a line has the layer of its .c file (watchdog.h of
# watchdog.c). A file's names are the lk_ functions and variables it
# defines (a header's: its static inline functions); an arrow A -> B is A
# naming one of B's or including B's header. An arrow from a lower layer to
# a higher one is a violation, unless the allow list (default:
# tools/layers-allow.txt) holds it as a line
#   FROM TO NAME  why it stays, for now
# (paths under src/core/, NAME an lk_ name or #include). The check fails on
# a violation that is not listed, and on a listed one that is gone (strike
# the line): so the list can only shrink.
#
# --list prints every arrow between two files, lowest layer first, and the
# circles (files that call each other in a loop) with their sizes: the
# figures docs/design.md quotes come from it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
allow="$here/tools/layers-allow.txt"
core="$here/src/core"
list=0
while [ $# -gt 0 ]; do
  case "$1" in
    --allow) allow=$2; shift 2 ;;
    --core) core=$2; shift 2 ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "check-layers: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v python3 >/dev/null || { echo "check-layers: python3 is needed" >&2; exit 2; }
exec python3 - "$core" "$allow" "$list" <<'PY'
import os, re, sys

core, allow_path, want_list = sys.argv[1], sys.argv[2], sys.argv[3] == "1"

def strip(text):
    # Comments and string literals out, line breaks kept (for messages).
    out, i, n = [], 0, len(text)
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    def repl(m):
        s = m.group(0)
        return "\n" * s.count("\n") if s[0] == "/" else '""'
    return pat.sub(repl, text)

files = sorted(f for f in os.listdir(core) if f.endswith((".c", ".h")))
raw = {f: open(os.path.join(core, f), encoding="utf-8").read() for f in files}
src = {f: strip(t) for f, t in raw.items()}

def stem(f):
    return f[:-2]

errors = []
layer, lname = {}, {}
for f in files:
    m = re.match(r'\s*(?:#ifndef \w+\s+#define \w+\s+)?/\*(.*?)\*/', raw[f], re.S)
    hit = m and re.search(r'\bLayer (\d+) \(([^)]*)\)', m.group(1))
    if hit:
        layer[f], lname[f] = int(hit.group(1)), hit.group(2)
for f in files:
    if f in layer:
        continue
    pair = stem(f) + ".c"
    if f.endswith(".h") and pair in layer:
        layer[f], lname[f] = layer[pair], lname[pair]
    else:
        errors.append("src/core/%s: no layer comment (/* Layer N (name): ... */ at its top)" % f)

# Names each file defines.
fn_def = re.compile(r'^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \t\*]*?\b(lk_\w+)\s*\(([^()]|\([^()]*\))*\)\s*\{', re.M)
var_def = re.compile(r'^(?!static\b|typedef\b|extern\b)(?:const\s+)?[A-Za-z_][\w \t\*]*?\b(lk_\w+)\s*(?:\[[^\]]*\])?\s*=', re.M)
inline_def = re.compile(r'^static inline [^;{]*?\b(lk_\w+)\s*\(([^()]|\([^()]*\))*\)\s*\{', re.M)
owner = {}
for f in files:
    t = src[f]
    names = [m.group(1) for m in inline_def.finditer(t)]
    if f.endswith(".c"):
        names += [m.group(1) for m in fn_def.finditer(t)] + [m.group(1) for m in var_def.finditer(t)]
    for n in names:
        owner.setdefault(n, f)

def bodies(t):
    # What a header runs, not what it declares: its static inline functions'
    # bodies and its macros.
    out = [m.group(0) for m in re.finditer(r'^\s*#\s*define\b(?:[^\n]*\\\n)*[^\n]*', t, re.M)]
    for m in re.finditer(r'^static inline [^;{]*\{', t, re.M):
        depth, i = 1, m.end()
        while i < len(t) and depth:
            depth += {"{": 1, "}": -1}.get(t[i], 0)
            i += 1
        out.append(t[m.end():i])
    return "\n".join(out)

# Arrows: names used (in a header: by its inline functions and macros; a
# declaration is no arrow), headers included.
arrows = {}  # (a, b) -> set of names
inc = re.compile(r'^\s*#\s*include\s+"core/([\w.]+)"', re.M)
for f in files:
    t = src[f] if f.endswith(".c") else bodies(src[f])
    for n in set(re.findall(r'\blk_\w+\b', t)):
        g = owner.get(n)
        if g is None or g == f or stem(g) == stem(f):
            continue
        arrows.setdefault((f, g), set()).add(n)
    for m in inc.finditer(raw[f]):
        g = m.group(1)
        if g in raw and g != f and stem(g) != stem(f):
            arrows.setdefault((f, g), set()).add("#include")

up = set()
for (a, b), names in arrows.items():
    if a in layer and b in layer and layer[b] > layer[a]:
        for n in names:
            up.add(("src/core/" + a, "src/core/" + b, n))

allowed = {}
if os.path.exists(allow_path):
    for no, line in enumerate(open(allow_path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) < 4:
            errors.append("%s:%d: want FROM TO NAME why" % (allow_path, no))
            continue
        allowed[tuple(parts[:3])] = no

def circles():
    # Tarjan's strongly connected components over file arrows (a header
    # counts as its .c file).
    node = lambda f: stem(f) + ".c" if stem(f) + ".c" in raw else f
    g = {}
    for (a, b) in arrows:
        a, b = node(a), node(b)
        if a != b:
            g.setdefault(a, set()).add(b)
    index, low, stack, on, out, k = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = k[0]; k[0] += 1; stack.append(v); on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)

if want_list:
    key = lambda ab: (layer.get(ab[0], 99), ab[0], layer.get(ab[1], 99), ab[1])
    for (a, b) in sorted(arrows, key=key):
        mark = "UP " if (a in layer and b in layer and layer[b] > layer[a]) else "   "
        print("%s%d %-14s -> %d %-14s %s" % (mark, layer.get(a, -1), a, layer.get(b, -1), b,
                                             " ".join(sorted(arrows[(a, b)]))))
    cs = circles()
    pairs = len({(a, b) for (a, b, _) in up})
    print("files: %d; arrows between files: %d; arrows up: %d (%d names)"
          % (len(files), len(arrows), pairs, len(up)))
    for c in cs:
        print("circle of %d: %s" % (len(c), " ".join(c)))
    if not cs:
        print("no circle")

new = sorted(v for v in up if v not in allowed)
gone = sorted((allowed[k], k) for k in allowed if k not in up)
for a, b, n in new:
    errors.append("%s -> %s: %s: a call or include from layer %d (%s) up to layer %d (%s)"
                  % (a, b, n, layer[a[9:]], lname[a[9:]], layer[b[9:]], lname[b[9:]]))
for no, (a, b, n) in gone:
    errors.append("%s:%d: %s -> %s %s no longer runs up: strike the line" % (allow_path, no, a, b, n))
for e in errors:
    print("check-layers: " + e, file=sys.stderr)
if errors:
    sys.exit(1)
print("check-layers: %d files, %d arrows up, all on the allow list (%d lines)"
      % (len(files), len(up), len(allowed)))
PY
