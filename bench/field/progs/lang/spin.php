<?php
// PHP: a recursive fib, an array of words and a sort.
function fib($n) { return $n < 2 ? $n : fib($n - 1) + fib($n - 2); }
$scale = (int)($argv[1] ?? 10);
$counts = [];
for ($i = 0; $i < $scale * 100000; $i++) { $k = "w" . ($i * 7919 % 50021); $counts[$k] = ($counts[$k] ?? 0) + 1; }
ksort($counts);
echo fib(20 + $scale), " ", count($counts), "\n";
