#!/bin/bash
# bench/field/round7-sandbox.sh BUILD [OUT] [CASE...] — programs run the way sandboxes and
# production run them: namespaces (unshare, bwrap, firejail), chroot, seccomp filters that forbid
# one thing each (bench/field/progs/deny.c), resource limits (prlimit), nice/taskset/ionice, a
# full /dev/shm and a read-only /tmp (a tmpfs or a bind in a mount namespace of their own), an
# environment without HOME, TMPDIR pointing nowhere, a 1000-character cwd, closed stdin, stdout,
# stderr, another process of the user killing or stopping the collector, and another user's
# files planted at the outputs. Each case runs `bc -l` (pi to 1500 digits, about 0.8 s of CPU)
# plain and through `osprey WRAPPER --profile -o STEM -- ARGS` and prints one line: both exit
# statuses, stdout the same or not, CPU plain / osprey, what the profile holds (the process's
# on-CPU samples), then Osprey's own lines (`osprey: …`, warnings) indented. Root runs every case;
# the cases marked (+nobody) run again as nobody. Idempotent; installs what it needs. Root only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field7-sandbox}
shift $(($# >= 2 ? 2 : 1))
[ "$(id -u)" = 0 ] || {
  echo "round7-sandbox.sh: needs root (namespaces, chroot, nobody's runs)"
  exit 2
}
for pkg in bubblewrap:bwrap firejail:firejail bc:bc; do
  command -v "${pkg#*:}" >/dev/null || apt-get install -y "${pkg%%:*}" >/dev/null 2>&1 ||
    echo "(could not install ${pkg%%:*}; its cases are skipped)"
done
osprey=$build/tools/osprey
mkdir -p "$out/bin" "$out/root" "$out/nobody"
chmod 777 "$out" "$out/nobody"
chmod 755 "$out/bin" "$out/root"
bin=$out/bin
[ -x "$bin/deny" ] || gcc -O2 -o "$bin/deny" "$here/progs/deny.c"
printf 'scale=1500\n4*a(1)\nquit\n' >"$bin/pi.bc"
chmod -R a+rX "$bin"
BC=(/usr/bin/bc -lq "$bin/pi.bc")

# A hand-made chroot: bc, its libraries and the loader; neither the shim nor ospreyd in it.
root=$out/chroot
if [ ! -x "$root/usr/bin/bc" ]; then
  mkdir -p "$root/usr/bin" "$root/tmp" "$root/out"
  chmod 1777 "$root/tmp"
  chmod 777 "$root/out"
  cp /usr/bin/bc "$root/usr/bin/"
  cp "$bin/pi.bc" "$root/pi.bc"
  for lib in $(ldd /usr/bin/bc | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
fi

TIMEFORMAT='%3U %3S'
cpu() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }
# run NAME WHO -- CMD...: the plain run, then osprey's, one line and osprey's lines.
run() {
  local name=$1 who=$2
  shift 3
  local dir=$out/$who stem=$out/$who/$name as=()
  [ "$who" = nobody ] && as=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp)
  rm -f "$stem".*
  { time "${as[@]}" timeout 120 "$@" >"$stem.plain.out" 2>"$stem.plain.err"; } 2>"$stem.plain.time"
  local plain=$?
  { time "${as[@]}" env NO_COLOR=1 timeout 120 "$osprey" "$1" --profile -o "$stem" -- "${@:2}" \
    >"$stem.prof.out" 2>"$stem.prof.err"; } 2>"$stem.prof.time"
  local prof=$?
  local same=same
  cmp -s "$stem.plain.out" "$stem.prof.out" || same=DIFFERENT
  printf '%-7s %-18s exit %d / %d, stdout %s, CPU %s / %s s, %s\n' "$who" "$name" "$plain" "$prof" \
    "$same" "$(cpu "$stem.plain.time")" "$(cpu "$stem.prof.time")" "$(profiled "$stem")"
  grep -E '^osprey: |^warning|^sampling stopped|^process [0-9]+ .*(sandbox|left)|^\(|^ld\.so|ERROR' \
    "$stem.prof.err" | grep -v '^osprey: [0-9.]*s wall\|^osprey: [0-9]* processes' |
    head -6 | cut -c1-200 | sed 's/^/          /'
  [ -e "$stem.raw.json" ] && bash "$here/check.sh" "$build" "$stem" | grep -v ' parses$' |
    sed 's/^/        /'
  chmod -R a+rX "$dir" 2>/dev/null
}
# What the profile holds: bc's on-CPU samples in every raw file of the run.
profiled() {
  python3 - "$1" <<'PY'
import glob, json, sys
n = files = 0
for p in glob.glob(sys.argv[1] + ".raw*.json"):
    try:
        d = json.load(open(p))
    except Exception as e:
        print(f"{p}: {e}"); sys.exit()
    files += 1
    if d.get("exe", "").endswith("/bc"):
        n += sum(s[4] if len(s) > 4 else 1 for s in d["samples"] if s[3] == 0)
print(f"bc on-CPU {n} periods in {files} raw files" if files else "no raw file")
PY
}

cases=(pidns pidns-noproc userns netns bwrap firejail chroot
  deny-execve deny-socket deny-memfd deny-perf deny-vmread deny-timer kill-timer deny-sigprof
  nofile8 nproc as sigpending memlock nice19 taskset ionice shm-full tmp-ro
  no-home tmpdir longcwd stdout-closed stderr-closed stdin-closed collector-killed
  collector-stopped planted attach-pidns)
[ $# -gt 0 ] && cases=("$@")
both() { for who in root nobody; do run "$@" "$who" "${cmd[@]}"; done; }
for c in "${cases[@]}"; do
  cmd=()
  case $c in
  pidns) run "$c" root -- /usr/bin/unshare --pid --fork --mount-proc "${BC[@]}" ;;
  pidns-noproc) run "$c" root -- /usr/bin/unshare --pid --fork "${BC[@]}" ;;
  userns) cmd=(-- /usr/bin/unshare --user --map-root-user --pid --fork --mount-proc "${BC[@]}") && both "$c" ;;
  netns) run "$c" root -- /usr/bin/unshare --net "${BC[@]}" ;;
  bwrap)
    if command -v bwrap >/dev/null; then
      cmd=(-- "$(command -v bwrap)" --ro-bind / / --dev /dev --proc /proc --bind "$out" "$out"
        --unshare-all --die-with-parent "${BC[@]}") && both "$c"
    else echo "bwrap: not installed, skipped"; fi
    ;;
  firejail)
    if command -v firejail >/dev/null; then
      run "$c" root -- "$(command -v firejail)" --quiet --noprofile --net=none "${BC[@]}"
    else echo "firejail: not installed, skipped"; fi
    ;;
  chroot) run "$c" root -- /usr/sbin/chroot "$root" /usr/bin/bc -lq /pi.bc ;;
  deny-execve) cmd=(-- "$bin/deny" execve "${BC[@]}") && both "$c" ;;
  deny-socket) cmd=(-- "$bin/deny" socket "${BC[@]}") && both "$c" ;;
  deny-memfd) cmd=(-- "$bin/deny" memfd_create "${BC[@]}") && both "$c" ;;
  deny-perf) cmd=(-- "$bin/deny" perf_event_open "${BC[@]}") && both "$c" ;;
  deny-vmread) cmd=(-- "$bin/deny" process_vm_readv "${BC[@]}") && both "$c" ;;
  deny-timer) cmd=(-- "$bin/deny" timer_create "${BC[@]}") && both "$c" ;;
  kill-timer) cmd=(-- "$bin/deny" kill-timer_create "${BC[@]}") && both "$c" ;;
  deny-sigprof) cmd=(-- "$bin/deny" sigprof "${BC[@]}") && both "$c" ;;
  nofile8) cmd=(-- /usr/bin/prlimit --nofile=8 "${BC[@]}") && both "$c" ;;
  nproc) cmd=(-- /usr/bin/prlimit --nproc=1 "${BC[@]}") && both "$c" ;;
  as) cmd=(-- /usr/bin/prlimit --as=60000000 "${BC[@]}") && both "$c" ;;
  sigpending) cmd=(-- /usr/bin/prlimit --sigpending=1 "${BC[@]}") && both "$c" ;;
  memlock) cmd=(-- /usr/bin/prlimit --memlock=0 "${BC[@]}") && both "$c" ;;
  nice19) cmd=(-- /usr/bin/nice -n 19 "${BC[@]}") && both "$c" ;;
  taskset) cmd=(-- /usr/bin/taskset -c 1 "${BC[@]}") && both "$c" ;;
  ionice) cmd=(-- /usr/bin/ionice -c 3 "${BC[@]}") && both "$c" ;;
  shm-full)
    run "$c" root -- /usr/bin/unshare -m sh -c \
      'mount -t tmpfs -o size=4k tmpfs /dev/shm && head -c 4096 /dev/zero >/dev/shm/fill 2>/dev/null; exec "$@"' \
      sh "${BC[@]}"
    ;;
  tmp-ro)
    # /tmp read-only in a mount namespace; the outputs under /var/tmp.
    out_saved=$out
    out=/var/tmp/osprey-field7-sandbox && mkdir -p "$out/root"
    run "$c" root -- /usr/bin/unshare -m sh -c 'mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && exec "$@"' \
      sh "${BC[@]}"
    out=$out_saved
    ;;
  no-home) cmd=(-- /usr/bin/env -u HOME "${BC[@]}") && both "$c" ;;
  tmpdir) cmd=(-- /usr/bin/env TMPDIR=/nonexistent/tmp "${BC[@]}") && both "$c" ;;
  longcwd)
    long=$out/$(printf 'd%.0s' $(seq 1 200))/$(printf 'e%.0s' $(seq 1 200))/$(printf 'f%.0s' $(seq 1 200))/$(printf 'g%.0s' $(seq 1 200))/$(printf 'h%.0s' $(seq 1 200))
    mkdir -p "$long" && chmod -R a+rwx "$out"/ddd* 2>/dev/null
    (cd "$long" && run "$c" root -- "${BC[@]}")
    ;;
  stdout-closed | stderr-closed | stdin-closed)
    for who in root nobody; do
      stem=$out/$who/$c
      as=()
      [ "$who" = nobody ] && as=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp)
      rm -f "$stem".*
      case $c in
      stdout-closed) "${as[@]}" "${BC[@]}" >&- 2>"$stem.plain.err"; plain=$?
        "${as[@]}" "$osprey" "${BC[0]}" --profile -o "$stem" -- "${BC[@]:1}" >&- 2>"$stem.prof.err"; prof=$? ;;
      stderr-closed) "${as[@]}" "${BC[@]}" >"$stem.plain.out" 2>&-; plain=$?
        "${as[@]}" "$osprey" "${BC[0]}" --profile -o "$stem" -- "${BC[@]:1}" >"$stem.prof.out" 2>&-; prof=$? ;;
      stdin-closed) "${as[@]}" "${BC[@]}" <&- >"$stem.plain.out" 2>"$stem.plain.err"; plain=$?
        "${as[@]}" "$osprey" "${BC[0]}" --profile -o "$stem" -- "${BC[@]:1}" <&- >"$stem.prof.out" 2>"$stem.prof.err"; prof=$? ;;
      esac
      same=same
      [ -e "$stem.plain.out" ] && { cmp -s "$stem.plain.out" "$stem.prof.out" || same=DIFFERENT; }
      printf '%-7s %-18s exit %d / %d, stdout %s, %s\n' "$who" "$c" "$plain" "$prof" "$same" "$(profiled "$stem")"
      [ -e "$stem.prof.err" ] && grep -E '^osprey: |^warning' "$stem.prof.err" | grep -v 'wall,' | head -4 | sed 's/^/          /'
      [ -e "$stem.raw.json" ] && bash "$here/check.sh" "$build" "$stem" | grep -v ' parses$' | sed 's/^/        /'
    done
    ;;
  collector-killed | collector-stopped)
    # Another process of the same user kills (SIGKILL) or stops (SIGSTOP) the run's collector
    # 0.3 s in: the ospreyd that is a child of this run's osprey (its subreaper), no other.
    sig=KILL
    [ "$c" = collector-stopped ] && sig=STOP
    stem=$out/root/$c
    rm -f "$stem".*
    { time "${BC[@]}" >"$stem.plain.out" 2>"$stem.plain.err"; } 2>"$stem.plain.time"
    plain=$?
    start=$(date +%s.%N)
    NO_COLOR=1 timeout 120 "$osprey" "${BC[0]}" --profile -o "$stem" -- "${BC[@]:1}" \
      >"$stem.prof.out" 2>"$stem.prof.err" &
    ospid=$!
    sleep 0.3
    collectors=$(pgrep -P "$(pgrep -P "$ospid" -x osprey)" -x ospreyd)
    for p in $collectors; do kill -"$sig" "$p"; done
    wait "$ospid"
    prof=$?
    for p in $collectors; do kill -CONT "$p" 2>/dev/null; done
    same=same
    cmp -s "$stem.plain.out" "$stem.prof.out" || same=DIFFERENT
    printf '%-7s %-18s exit %d / %d, stdout %s, wall %.1f s, collector %s, %s\n' root "$c" "$plain" "$prof" \
      "$same" "$(echo "$(date +%s.%N) - $start" | bc)" "${collectors:-not found}" "$(profiled "$stem")"
    grep -E '^osprey: |^warning' "$stem.prof.err" | grep -v 'wall,' | head -4 | cut -c1-200 |
      sed 's/^/          /'
    ;;
  planted)
    # nobody plants a link at root's raw file and outputs, in a directory of mode 1777.
    pl=$out/planted-dir && mkdir -p "$pl" && chmod 1777 "$pl"
    rm -f "$pl"/* "$out/planted-target"
    for ext in raw.json folded speedscope.json cpuprofile html; do
      setpriv --reuid=nobody --regid=nogroup --clear-groups ln -sf "$out/planted-target" "$pl/p.$ext"
    done
    { time NO_COLOR=1 "$osprey" "${BC[0]}" --profile -o "$pl/p" -- "${BC[@]:1}" >"$pl/out" 2>"$pl/err"; } 2>"$pl/time"
    printf '%-7s %-18s exit %d, %s\n' root planted $? "$([ -e "$out/planted-target" ] && echo 'FOLLOWED A LINK' || echo 'no link followed')"
    grep -E '^osprey: |^warning|cannot|not' "$pl/err" | grep -v 'wall,' | head -4 | sed 's/^/          /'
    ;;
  attach-pidns)
    # `osprey attach` from outside to bc running as pid 1 of its own pid namespace.
    stem=$out/root/$c
    rm -f "$stem".*
    printf 'scale=2600\n4*a(1)\nquit\n' >"$bin/pi-long.bc"
    unshare --pid --fork --mount-proc /usr/bin/bc -lq "$bin/pi-long.bc" >"$stem.plain.out" &
    uns=$!
    sleep 0.5
    target=$(pgrep -P "$uns" -x bc)
    NO_COLOR=1 timeout 60 "$osprey" attach "$target" --duration 2 -o "$stem" >"$stem.prof.out" 2>"$stem.prof.err"
    prof=$?
    wait "$uns"
    printf '%-7s %-18s bc exit %d, attach exit %d, %s\n' root "$c" $? "$prof" "$(profiled "$stem")"
    grep -E '^osprey: |^warning|^  [0-9]+ thread|SELF%' -A2 "$stem.prof.err" | grep -v '^--' | head -6 | cut -c1-160 | sed 's/^/          /'
    [ -e "$stem.raw.json" ] && bash "$here/check.sh" "$build" "$stem" | grep -v ' parses$' | sed 's/^/        /'
    ;;
  *) echo "$c: no such case" ;;
  esac
done
