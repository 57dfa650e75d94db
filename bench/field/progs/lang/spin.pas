{ Free Pascal: a sieve run SCALE times and a recursive fib; statically linked, so attached to. }
program spin;
uses SysUtils;
var scale, i: longint; total: int64;
function fib(n: longint): int64;
begin
  if n < 2 then fib := n else fib := fib(n - 1) + fib(n - 2);
end;
function sieve(n: longint): longint;
var composite: array of boolean; i, j, count: longint;
begin
  SetLength(composite, n + 1); count := 0;
  for i := 2 to n do
    if not composite[i] then
    begin
      inc(count); j := i * 2;
      while j <= n do begin composite[j] := true; j := j + i; end;
    end;
  sieve := count;
end;
begin
  scale := 10;
  if ParamCount > 0 then scale := StrToInt(ParamStr(1));
  total := 0;
  for i := 1 to scale do total := total + sieve(1000000);
  writeln(total, ' ', fib(30));
end.
