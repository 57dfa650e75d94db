# bash completion for osprey(1): its commands, each command's options, and the files each
# takes (sources and programs, raw profiles, process ids). Installed by `meson install` into
# bash-completion's directory (share/bash-completion/completions/osprey); to try it from
# the tree: source docs/completion/osprey.bash
# shellcheck shell=bash

_osprey_pids() {
  local IFS=$'\n'
  # shellcheck disable=SC2207
  COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null | tr -d ' ')" -- "$cur"))
}

_osprey_formats() {
  local formats="speedscope cpuprofile folded profile pprof trace html all"
  local prefix="" word=$cur
  if [[ $cur == *,* ]]; then
    prefix=${cur%,*},
    word=${cur##*,}
  fi
  local IFS=$'\n'
  # shellcheck disable=SC2207
  COMPREPLY=($(compgen -P "$prefix" -W "${formats// /$'\n'}" -- "$word"))
  compopt -o nospace 2>/dev/null
}

_osprey() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local commands="report diff cache attach top dump"
  local common="-h --help"
  local run_opts="--run --profile --duration -F --frequency -o --output --format -- -V --version"
  local symbol_opts="--binary --symfs --ignore-build-id --top -o --output"
  local view_opts="--format --pid --comm --per-process --merge-processes --fiber --focus --ignore --inverted --list"

  # the command: the first word after osprey that is not an option
  local command="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --) break ;;
      -*) ;;
      *)
        command=${words[i]}
        break
        ;;
    esac
  done
  case $command in
    report | diff | cache | attach | top | dump) ;;
    *) command=${command:+run} ;;
  esac

  # an option's argument
  case $prev in
    -o | --output | --binary)
      _filedir 2>/dev/null || mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --symfs)
      _filedir -d 2>/dev/null || mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return
      ;;
    --format)
      _osprey_formats
      return
      ;;
    -F | --frequency | --duration | --interval | --top | --max-size | --pid | --comm | \
      --fiber | --focus | --ignore | --list)
      return
      ;;
  esac

  local opts
  case $command in
    "") opts="$commands $run_opts $common" ;;
    run) opts="$run_opts $common" ;;
    report) opts="$symbol_opts $view_opts $common" ;;
    diff) opts="$symbol_opts $common" ;;
    cache) opts="prune --max-size $common" ;;
    attach) opts="--duration -F --frequency -o --output --format $common" ;;
    top) opts="-F --frequency --interval $common" ;;
    dump) opts="--duration -F --frequency $common" ;;
  esac

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    return
  fi
  case $command in
    "")
      # a command, or the program: a C or C++ source, an executable, a directory to go into
      mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
      local f
      while IFS= read -r f; do
        if [[ -d $f || $f == *.c || $f == *.cc || $f == *.cpp || $f == *.cxx || -x $f ]]; then
          COMPREPLY+=("$f")
        fi
      done < <(compgen -f -- "$cur")
      ;;
    report | diff)
      _filedir 'json' 2>/dev/null ||
        mapfile -t COMPREPLY < <(compgen -d -S / -- "$cur"; compgen -f -X '!*.json' -- "$cur")
      ;;
    cache) mapfile -t COMPREPLY < <(compgen -W "prune" -- "$cur") ;;
    attach | top | dump) _osprey_pids ;;
    run) mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur") ;;
  esac
} &&
  complete -F _osprey osprey
