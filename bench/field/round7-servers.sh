#!/bin/bash
# bench/field/round7-servers.sh BUILD [OUT] [CASE...] — round 7 of the programs nobody here had
# profiled: Debian's servers under load on loopback, and distro programs doing real work. Each
# distro program (ffmpeg, convert, gs, tesseract, dot, rsync, ssh-keygen, gpg, sqlite3) runs
# through run.sh as root and as nobody (setpriv, outputs under OUT/nobody, OUT of mode 777),
# then check.sh on its outputs. Each server starts under `osprey SERVER --profile --duration N`
# with its load running inside the window (nginx with 2 workers and haproxy under `wrk`,
# apache2 mpm_event and prefork under `ab`, memcached under memcslap, unbound under dnsperf,
# lighttpd under `ab`), then serves once more after the report; nginx's worker is also
# attached by root, by nobody and by nobody with perf events refused (tests/refuse). Installs
# its Debian packages (root); a program that cannot run is skipped with one line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field7}
shift $(($# >= 2 ? 2 : 1))
osprey=$build/tools/osprey
nb=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp)
mkdir -p "$out/bin" "$out/root" "$out/nobody" "$out/srv"
chmod 777 "$out" "$out/nobody" "$out/srv"
chmod 755 "$out/bin" "$out/root"
bin=$out/bin

# The packages, each installed only where its command is missing.
need() { # COMMAND PACKAGE...
  command -v "$1" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${@:2}" \
    >>"$out/apt.log" 2>&1
  command -v "$1" >/dev/null 2>&1
}
need ffmpeg ffmpeg
# Debian's own binary by name: a `convert` earlier on the PATH may be another program.
need convert-im6.q16 imagemagick
need gs ghostscript
need tesseract tesseract-ocr tesseract-ocr-eng
need dot graphviz
need rsync rsync
need ssh-keygen openssh-client
need gpg gnupg
need sqlite3 sqlite3
need nginx nginx-light
need wrk wrk
need ab apache2-utils
need apache2 apache2
need haproxy haproxy
need memcached memcached
need memcslap libmemcached-tools
need unbound unbound
need dnsperf dnsperf
need dig bind9-dnsutils
need lighttpd lighttpd
need curl curl

have() { # COMMAND... — every one of them is on the PATH
  local c
  for c; do command -v "$c" >/dev/null 2>&1 || return 1; done
}

# The inputs, made once.
if [ ! -s "$bin/text.png" ] && have convert-im6.q16; then
  convert-im6.q16 -size 1600x1200 plasma:fractal "$bin/plasma.png"
  convert-im6.q16 -size 1400x400 xc:white -font DejaVu-Sans -pointsize 36 \
    -draw "text 20,80 'The quick brown fox jumps over the lazy dog 0123456789'" \
    -draw "text 20,180 'Pack my box with five dozen liquor jugs, said the profiler.'" \
    -draw "text 20,280 'Sphinx of black quartz, judge my vow: 42 samples a second.'" \
    "$bin/text.png"
  chmod a+rw "$bin"/*.png
fi
if [ ! -s "$bin/rows.sql" ]; then
  # A PDF of 12 pages of vector drawing and text, from PostScript.
  python3 - "$bin/doc.ps" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("%!PS\n/Helvetica findfont 10 scalefont setfont\n")
    for page in range(12):
        for i in range(400):
            x, y = (i * 37 + page * 11) % 560 + 20, (i * 53) % 760 + 20
            f.write(f"newpath {x} {y} moveto {x + 40} {y + 13} lineto {x + 7} {y + 30} "
                    f"{x + 20} {y + 3} {x + 50} {y + 25} curveto stroke\n")
            f.write(f"{x} {y} moveto (row {i} of page {page}) show\n")
        f.write("showpage\n")
EOF
  ps2pdf "$bin/doc.ps" "$bin/doc.pdf"
  # A binary tree of 1,500 nodes with a few cross edges (random graphs take dot minutes).
python3 -c '
print("digraph g {")
for i in range(1500):
    for j in (2 * i + 1, 2 * i + 2, i + 37):
        if j < 1500 and (j != i + 37 or i % 25 == 0):
            print(f"  n{i} -> n{j};")
print("}")' >"$bin/graph.dot"
  head -c 50000000 /dev/urandom >"$bin/rand50m"
  python3 -c '
print("create table a(id integer primary key, k integer, v text);")
print("create table b(k integer, w real);")
print("begin;")
for i in range(1000000):
    print(f"insert into a values({i}, {i * 7919 % 50000}, \"v{i % 977}\");")
for i in range(50000):
    print(f"insert into b values({i}, {i * 0.5});")
print("commit;")' >"$bin/rows.sql"
  printf 'select count(*), sum(b.w), max(length(a.v)) from a join b on a.k = b.k where a.v like "%%7%%";\nselect k %% 10, count(*) from a group by 1 order by 2 desc limit 3;\n' >"$bin/query.sql"
  chmod -R a+rwX "$bin"
fi

cases=(ffmpeg convert gs tesseract dot rsync ssh-keygen gpg sqlite3 nginx apache-event
  apache-prefork haproxy memcached unbound lighttpd nginx-attach)
[ $# -gt 0 ] && cases=("$@")

# One distro program: root's run and nobody's, each through run.sh and check.sh.
field() { # NAME COMMAND...
  local name=$1
  shift
  command -v "$1" >/dev/null 2>&1 || { echo "$name: skipped: no $1"; return; }
  FIELD_OUT=$out/root bash "$here/run.sh" "$name" "$build" -- "$@" | sed 's/^/root   /'
  bash "$here/check.sh" "$build" "$out/root/$name"
  "${nb[@]}" FIELD_OUT="$out/nobody" bash "$here/run.sh" "$name" "$build" -- "$@" |
    sed 's/^/nobody /'
  bash "$here/check.sh" "$build" "$out/nobody/$name"
}

# The report's header and top rows of a run's stderr, for the log.
summary() { # STEM.err
  grep -E '^osprey:|^  (thread|process)|processes|warning|names:|kernel:|sampling|stacks:' "$1" |
    head -12
  grep -A4 'SELF%' "$1" | tail -4
}

# A server profiled for SECONDS under osprey --profile while LOAD runs inside the window, then
# served once more by PROBE after the report; STOP ends it. Every raw file's process is listed.
server() { # NAME SECONDS "LOAD" "PROBE" "STOP" -- SERVER ARGS...
  local name=$1 seconds=$2 load=$3 probe=$4 stop=$5 stem=$out/root/$1
  shift 6
  rm -f "$stem".raw*.json "$stem.err"
  # A session of its own: apache's parent signals its whole process group at its end.
  (NO_COLOR=1 setsid "$osprey" "$1" --profile --duration "$seconds" -o "$stem" -- "${@:2}" \
    >"$stem.out" 2>"$stem.err"
  echo "$name: osprey exit $?") &
  local run=$!
  sleep 1.5
  bash -c "$load" >"$stem.load" 2>&1
  echo "$name: load: $(grep -m2 -E 'Requests/sec|Requests per second|Queries per second|Failed requests|Non-2xx|Time to set' "$stem.load" | tr -s ' ' | paste -sd ';')"
  local waited=0
  while ! grep -q '^written:' "$stem.err" 2>/dev/null && [ $waited -lt 60 ]; do
    sleep 0.5
    waited=$((waited + 1))
  done
  # The server: the child of osprey (the subshell's child) that runs the program.
  SERVER_PID=$(pgrep -o -P "$(pgrep -o -P "$run")" -x "$(basename "$1" | cut -c1-15)")
  export SERVER_PID
  echo "$name: after the report: $(bash -c "$probe" 2>&1 | head -1)"
  bash -c "$stop" >/dev/null 2>&1
  wait "$run"
  summary "$stem.err"
  for f in "$stem".raw*.json; do
    [ -e "$f" ] || continue
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("  pid %d %s: %s, %d samples over %.2f s" % (r["pid"], r.get("comm", "?"), r["exit"]["status"], len(r["samples"]), (r["end_unix_ns"] - r["start_unix_ns"]) / 1e9))' "$f"
  done
  bash "$here/check.sh" "$build" "$stem"
}

srv=$out/srv
nginx_conf() { # PORT -> $srv/nginx.conf, 2 workers, the master in the foreground
  mkdir -p "$srv/nginx/www"
  head -c 20000 /usr/share/common-licenses/GPL-3 >"$srv/nginx/www/index.html"
  cat >"$srv/nginx.conf" <<EOF
user nobody nogroup;
worker_processes 2;
daemon off;
pid $srv/nginx/nginx.pid;
error_log $srv/nginx/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $srv/nginx/body;
  proxy_temp_path $srv/nginx/proxy;
  fastcgi_temp_path $srv/nginx/fastcgi;
  uwsgi_temp_path $srv/nginx/uwsgi;
  scgi_temp_path $srv/nginx/scgi;
  server { listen 127.0.0.1:$1; root $srv/nginx/www; gzip on; gzip_types text/html; }
}
EOF
}
apache_conf() { # MPM PORT
  mkdir -p "$srv/apache/www"
  head -c 20000 /usr/share/common-licenses/GPL-3 >"$srv/apache/www/index.html"
  local m=/usr/lib/apache2/modules
  cat >"$srv/apache-$1.conf" <<EOF
ServerRoot $srv/apache
LoadModule mpm_$1_module $m/mod_mpm_$1.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule dir_module $m/mod_dir.so
LoadModule mime_module $m/mod_mime.so
LoadModule deflate_module $m/mod_deflate.so
LoadModule filter_module $m/mod_filter.so
Listen 127.0.0.1:$2
ServerName localhost
User nobody
Group nogroup
PidFile $srv/apache/$1.pid
ErrorLog $srv/apache/error-$1.log
DocumentRoot $srv/apache/www
TypesConfig /etc/mime.types
AddOutputFilterByType DEFLATE text/html
StartServers 2
EOF
}

for c in "${cases[@]}"; do
  case $c in
  ffmpeg) field ffmpeg ffmpeg -nostdin -hide_banner -loglevel error -f lavfi -i testsrc=duration=6:size=640x360:rate=25 -c:v mpeg4 -q:v 3 -threads 2 -f rawvideo -y /dev/null ;;
  convert) field convert convert-im6.q16 "$bin/plasma.png" -resize 37% -sharpen 0x1 -quality 90 jpg:- ;;
  gs) field gs gs -q -dNOPAUSE -dBATCH -dSAFER -sDEVICE=png16m -r150 -sOutputFile=/dev/null "$bin/doc.pdf" ;;
  tesseract) field tesseract tesseract "$bin/text.png" - ;;
  dot) field dot dot -Tsvg "$bin/graph.dot" ;;
  rsync)
    rm -rf "$out/rsync-root" "$out/nobody/rsync-nobody" "$out/rsync-plain"
    field rsync rsync -a --delete /usr/share/doc /usr/share/man "$out/nobody/rsync-to/"
    ;;
  ssh-keygen)
    rm -f "$out/nobody/key"*
    field ssh-keygen sh -c "rm -f $out/nobody/key-\$(id -u)*; ssh-keygen -q -t ed25519 -a 200 -N secret -f $out/nobody/key-\$(id -u) && ssh-keygen -y -P secret -f $out/nobody/key-\$(id -u) | wc -c"
    ;;
  gpg)
    field gpg sh -c "mkdir -p -m 700 /tmp/gpg-\$(id -u) && gpg --batch --homedir /tmp/gpg-\$(id -u) --pinentry-mode loopback --passphrase secret --symmetric --cipher-algo AES256 --compress-algo none -o - $bin/rand50m | wc -c"
    ;;
  sqlite3)
    field sqlite3 sh -c "sqlite3 :memory: '.read $bin/rows.sql' '.read $bin/query.sql'"
    ;;
  nginx)
    have nginx wrk || { echo "nginx: skipped: no nginx or wrk"; continue; }
    nginx_conf 8781
    server nginx 6 "wrk -t2 -c16 -d3s http://127.0.0.1:8781/" \
      "curl -s -o /dev/null -w 'HTTP %{http_code}' http://127.0.0.1:8781/" \
      "kill -QUIT \$(cat $srv/nginx/nginx.pid)" -- nginx -c "$srv/nginx.conf"
    ;;
  nginx-attach)
    have nginx wrk || { echo "nginx-attach: skipped"; continue; }
    nginx_conf 8781
    nginx -c "$srv/nginx.conf" &
    sleep 1
    for who in root nobody ptrace; do
      wrk -t2 -c16 -d5s http://127.0.0.1:8781/ >"$out/root/nginx-attach-$who.load" 2>&1 &
      w=$!
      sleep 1
      worker=$(pgrep -o -P "$(cat "$srv/nginx/nginx.pid")")
      run=()
      [ $who = nobody ] && run=("${nb[@]}")
      [ $who = ptrace ] && run=("${nb[@]}" "$build/tests/refuse" perf_event_open)
      stem=$out/nobody/nginx-attach-$who
      (cd "$out/nobody" && NO_COLOR=1 "${run[@]}" "$osprey" attach "$worker" --duration 3 \
        -o "$stem" >/dev/null 2>"$stem.err")
      echo "nginx-attach $who: attach to worker $worker exit $?"
      wait $w
      grep -m1 Requests/sec "$out/root/nginx-attach-$who.load"
      summary "$stem.err"
      bash "$here/check.sh" "$build" "$stem"
    done
    kill -QUIT "$(cat "$srv/nginx/nginx.pid")"
    wait
    ;;
  apache-event | apache-prefork)
    have apache2 ab || { echo "$c: skipped: no apache2 or ab"; continue; }
    mpm=${c#apache-}
    apache_conf "$mpm" 8782
    server "$c" 6 "ab -q -t 3 -n 1000000 -c 8 -H 'Accept-Encoding: gzip' http://127.0.0.1:8782/index.html" \
      "curl -s -o /dev/null -w 'HTTP %{http_code}' http://127.0.0.1:8782/index.html" \
      "kill -TERM \$(cat $srv/apache/$mpm.pid)" -- apache2 -f "$srv/apache-$mpm.conf" -DFOREGROUND
    ;;
  haproxy)
    have haproxy nginx || { echo "haproxy: skipped"; continue; }
    nginx_conf 8781
    nginx -c "$srv/nginx.conf" &
    cat >"$srv/haproxy.cfg" <<EOF
global
  nbthread 2
defaults
  mode http
  timeout connect 2s
  timeout client 10s
  timeout server 10s
frontend f
  bind 127.0.0.1:8783
  default_backend b
backend b
  server n 127.0.0.1:8781
EOF
    server haproxy 6 "wrk -t2 -c16 -d3s http://127.0.0.1:8783/" \
      "curl -s -o /dev/null -w 'HTTP %{http_code}' http://127.0.0.1:8783/" \
      "kill -USR1 \$SERVER_PID" -- haproxy -db -f "$srv/haproxy.cfg"
    kill -QUIT "$(cat "$srv/nginx/nginx.pid")"
    wait
    ;;
  memcached)
    command -v memcached >/dev/null || { echo "memcached: skipped"; continue; }
    command -v memcslap >/dev/null || { echo "memcached: skipped: no memcslap"; continue; }
    load="memcslap --servers=127.0.0.1:11311 --concurrency=4 --execute-number=5000 --flush"
    server memcached 6 "$load" \
      "memcstat --servers=127.0.0.1:11311 | grep -m1 total_items" \
      "kill -TERM \$(cat $srv/memcached.pid)" -- memcached -u nobody -l 127.0.0.1 -p 11311 -t 2 -P "$srv/memcached.pid"
    ;;
  unbound)
    have unbound dnsperf || { echo "unbound: skipped"; continue; }
    {
      printf 'server:\n  interface: 127.0.0.1\n  port: 8753\n  do-daemonize: no\n  chroot: ""\n'
      printf '  username: "nobody"\n  pidfile: "%s/unbound.pid"\n  use-syslog: no\n  num-threads: 2\n' "$srv"
      printf '  access-control: 127.0.0.0/8 allow\n  local-zone: "test." static\n'
      for i in $(seq 1 200); do printf '  local-data: "h%d.test. A 10.0.%d.%d"\n' "$i" $((i / 250)) $((i % 250)); done
      printf 'remote-control:\n  control-enable: no\n'
    } >"$srv/unbound.conf"
    for i in $(seq 1 200); do echo "h$i.test A"; done >"$srv/dns-queries"
    server unbound 6 "dnsperf -s 127.0.0.1 -p 8753 -d $srv/dns-queries -l 3 -c 4 -Q 20000" \
      "dig +short -p 8753 @127.0.0.1 h7.test" \
      "kill -TERM \$(cat $srv/unbound.pid)" -- unbound -d -c "$srv/unbound.conf"
    ;;
  lighttpd)
    have lighttpd ab || { echo "lighttpd: skipped"; continue; }
    mkdir -p "$srv/lighttpd"
    head -c 20000 /usr/share/common-licenses/GPL-3 >"$srv/lighttpd/index.html"
    printf 'server.document-root = "%s"\nserver.port = 8784\nserver.bind = "127.0.0.1"\nserver.username = "nobody"\nserver.groupname = "nogroup"\nserver.pid-file = "%s/lighttpd.pid"\nindex-file.names = ("index.html")\n' \
      "$srv/lighttpd" "$srv" >"$srv/lighttpd.conf"
    server lighttpd 6 "ab -q -t 3 -n 1000000 -c 8 http://127.0.0.1:8784/index.html" \
      "curl -s -o /dev/null -w 'HTTP %{http_code}' http://127.0.0.1:8784/index.html" \
      "kill -TERM \$(cat $srv/lighttpd.pid)" -- lighttpd -D -f "$srv/lighttpd.conf"
    ;;
  *) echo "$c: no such case" ;;
  esac
done
