#!/usr/bin/env bash
# End-to-end tests of function names as their authors wrote them: a Rust program (rustc's
# legacy and v0 manglings) and a C++ one (g++, std::sort, a class template) built here and
# profiled. The report's table shows short names (pprof's: no parameters, no template
# arguments, no hash) cut at their start when they must be; every export and --list keep the
# full name; nothing shows a Rust hash suffix or a `$u7b$` escape. Without rustc the Rust half
# is skipped (said on stdout); without g++ the test is skipped (exit 77).
# Usage: e2e-names.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-names.sh path/to/osprey}")
command -v g++ >/dev/null 2>&1 || skip "g++ is not installed"
scratch_dir names
cd "$work" || exit 1

# table_names FILE: the FUNCTION cells of the report's table (the text between the TOTAL time
# and the two spaces before LOCATION).
table_names() {
  sed -n '/SELF% TOTAL%/,/^$/p' "$1" | grep -E '^.{8} +[0-9.]+% +[0-9.]+% ' |
    sed -E 's/^.*[0-9.]+m?s +[0-9.]+m?s  //; s/  +[^ ]+$//'
}

# no_rust_mangling FILE WHAT: no hash suffix (::h + 16 hex) and no $-escape in FILE.
no_rust_mangling() {
  # shellcheck disable=SC2016 # the $ are the escapes' own
  if grep -Eq '::h[0-9a-f]{16}|\$(u[0-9a-f]{2}|LT|GT|C|RF|BP|SP|LP|RP)\$' "$1"; then
    # shellcheck disable=SC2016
    fail "$2: a Rust hash or escape: $(grep -Eo '[^;]*(::h[0-9a-f]{16}|\$u[0-9a-f]{2}\$)[^;]*' "$1" | head -n 3)"
  fi
}

# --- C++: templates, operators, a class template's method -----------------------------------
cat >sorter.cc <<'EOF2'
#include <algorithm>
#include <cstdio>
#include <vector>
namespace shapes {
template <typename T> struct Grid {
    std::vector<T> cells;
    __attribute__((noinline)) T sum(int rounds) const
    {
        T total = 0;
        for (int r = 0; r < rounds; r++)
            for (const T &c : cells)
                total = total * 31 + c;
        return total;
    }
};
} // namespace shapes
int main()
{
    std::vector<int> v(3000000);
    unsigned x = 1;
    for (auto &e : v)
        e = (int)(x = x * 1103515245u + 12345u);
    std::sort(v.begin(), v.end());
    shapes::Grid<long> g{std::vector<long>(v.begin(), v.begin() + 100000)};
    std::printf("%ld\n", g.sum(300) & 1);
    return 0;
}
EOF2
g++ -O2 -g -fno-omit-frame-pointer -o sorter sorter.cc || fail "cannot build the C++ program"
"$osprey" ./sorter --profile -o cpp >out 2>err
expect_status 0 $? "profiling the C++ program"
"$osprey" report cpp.raw.json --top 40 >report.txt 2>&1
table_names report.txt >names.txt
grep -qx 'shapes::Grid::sum' names.txt || fail "C++: no shapes::Grid::sum row: $(cat report.txt)"
grep -Eq '^std::__introsort_loop( \(\.isra\.[0-9]+\)| \[clone [^]]*\])?$' names.txt ||
  fail "C++: no short std::__introsort_loop row: $(cat names.txt)"
# short names: no parameter list, no template arguments; cut only at their start
grep -E '\(.*\)$' names.txt | grep -Ev '\((\.isra|anonymous)|operator\(\)' >bad.txt &&
  fail "C++: a parameter list in the table: $(cat bad.txt)"
# template arguments only where two instances of one template would look alike
grep '^std::vector<' names.txt >bad.txt && fail "C++: template arguments in the table: $(cat bad.txt)"
grep '.…' names.txt >bad.txt && fail "C++: a name cut in its middle or end: $(cat bad.txt)"
# no name left mangled (LLVM 14's demangler gives up on some of g++'s: __cxa_demangle's turn)
grep -Eo '(^|;)_Z[A-Za-z0-9_]+' cpp.folded >bad.txt && fail "C++: mangled names: $(head -n 3 bad.txt)"
# the full names in the exports
grep -q 'shapes::Grid<long>::sum(int) const' cpp.folded ||
  fail "C++: the folded file lacks the full name: $(head -c 400 cpp.folded)"
grep -q 'std::__introsort_loop<__gnu_cxx::__normal_iterator<int\*, std::vector<int' cpp.speedscope.json ||
  fail "C++: the speedscope file lacks the full name"
"$osprey" report cpp.raw.json --list 'Grid.*::sum' >list.txt 2>&1
grep -q "ROUTINE =* shapes::Grid<long>::sum(int) const in " list.txt ||
  fail "C++: --list lacks the full name: $(head -n 3 list.txt)"

# --- Rust: legacy and v0 symbols ---------------------------------------------------------------
if ! command -v rustc >/dev/null 2>&1; then
  skip_part "Rust names" "rustc is not installed"
  finish "all name checks passed (C++ only)"
fi
cat >rusty.rs <<'EOF2'
// std::hint::black_box is stable from Rust 1.66 only (Debian 12 has 1.63): a volatile read
// keeps the optimizer from folding the loops away the same way.
#[inline(always)]
fn black_box<T: Copy>(x: T) -> T {
    unsafe { std::ptr::read_volatile(&x) }
}
mod churn {
    #[inline(never)]
    pub fn churn(n: u64) -> u64 {
        let mut x = super::black_box(1u64);
        for i in 0..n {
            x = super::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        x
    }
}
#[inline(never)]
fn spin_generic<T: Into<u64> + Copy>(v: T, n: u64) -> u64 {
    churn::churn(n + v.into()).rotate_left(black_box(3)) /* no tail call */
}
fn main() {
    let mut total = 0u64;
    for r in 0..30u64 {
        total = total.wrapping_add(spin_generic(black_box(3u32), black_box(2_000_000)));
        let f = move |k: u64| churn::churn(k) ^ r;
        total = total.wrapping_add(black_box(&f)(black_box(2_000_000)));
    }
    println!("{}", total & 1);
}
EOF2
for mangling in legacy v0; do
  # legacy is rustc's default (naming it needs -Z unstable-options)
  flags=()
  [ "$mangling" = v0 ] && flags=(-C symbol-mangling-version=v0)
  rustc -C opt-level=2 -g -C force-frame-pointers=yes "${flags[@]}" -o "rusty_$mangling" \
    rusty.rs 2>rustc.err || fail "rustc ($mangling): $(cat rustc.err)"
  if [ "$mangling" = legacy ]; then
    nm "rusty_$mangling" >symbols.txt
    grep -q '_ZN5rusty5churn5churn17h' symbols.txt ||
      fail "Rust legacy: the symbols are not legacy ones: $(grep churn symbols.txt)"
  fi
  "$osprey" "./rusty_$mangling" --profile -o "$mangling" >out 2>err
  expect_status 0 $? "profiling the Rust program ($mangling)"
  "$osprey" report "$mangling.raw.json" --top 40 >report.txt 2>&1
  table_names report.txt >names.txt
  grep -qx 'rusty::churn::churn' names.txt ||
    fail "Rust ($mangling): no rusty::churn::churn row: $(cat report.txt)"
  grep -q '.…' names.txt && fail "Rust ($mangling): a name cut in its middle: $(cat names.txt)"
  for file in report.txt "$mangling.folded" "$mangling.speedscope.json" "$mangling.profile.json"; do
    no_rust_mangling "$file" "Rust ($mangling): $file"
  done
  gzip -dc "$mangling.pb.gz" >pprof.bin && no_rust_mangling pprof.bin "Rust ($mangling): pprof"
  grep -q 'rusty::spin_generic' "$mangling.folded" ||
    fail "Rust ($mangling): no rusty::spin_generic in the folded file"
  "$osprey" report "$mangling.raw.json" --list 'churn::churn$' >list.txt 2>&1
  grep -q "ROUTINE =* rusty::churn::churn in " list.txt ||
    fail "Rust ($mangling): --list: $(head -n 3 list.txt)"
done
# v0 keeps a generic's arguments in the full name (as rustc's demangler prints it); legacy
# symbols carry none
grep -q 'rusty::spin_generic::<u32>' v0.folded ||
  fail "Rust v0: the folded file lacks rusty::spin_generic::<u32>: $(grep -o 'rusty::spin[^;]*' v0.folded | head -n 2)"
grep -q 'rusty::main::{closure#0}' v0.folded || grep -q 'rusty::main::{{closure}}' legacy.folded ||
  echo "note: the closure was inlined by this rustc"

finish "all name checks passed"
