# Ruby: a recursive fib, a hash of words and a sort.
def fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)
scale = (ARGV[0] || 10).to_i
counts = Hash.new(0)
(scale * 30_000).times { |i| counts["w#{i * 7919 % 50021}"] += 1 }
sorted = counts.sort_by { |k, v| [-v, k] }.first(3)
puts fib(20 + scale), counts.size, sorted.inspect
