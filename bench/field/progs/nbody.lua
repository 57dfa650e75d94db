-- bench/field/progs/nbody.lua — lua: closures, tables and float work
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local t = {}
for i = 1, 200000 do t[i] = math.sin(i) * 1000 end
table.sort(t)
print(fib(tonumber(arg[1]) or 30), string.format("%.3f", t[1000]))
