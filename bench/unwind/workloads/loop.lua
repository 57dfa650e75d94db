-- loop.lua — bench/unwind's Lua workload: recursion, table and string work, ROUNDS (arg[1])
-- times. Prints a checksum.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function fill(n)
  local t = {}
  for i = 1, n do t[#t + 1] = string.format("k%07d", (i * 7919) % n) end
  table.sort(t)
  return t
end

local function concat_all(t)
  local parts = {}
  for i = 1, #t, 7 do parts[#parts + 1] = t[i]:upper() end
  return #table.concat(parts, ",")
end

local rounds = tonumber(arg[1] or "3")
local sum = 0
for _ = 1, rounds do
  sum = sum + fib(24) + concat_all(fill(60000))
end
print(sum)
