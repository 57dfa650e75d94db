// CPU-bound JS: sorting (V8's builtins) and integer arithmetic (JIT code), two known hot functions.
function sortArr(n) {
  const a = [];
  for (let i = 0; i < n; i++) a.push((i * 7919) % 10007);
  a.sort((x, y) => x - y);
  return a[n >> 1];
}
function mixLoop(n) {
  let s = 0;
  for (let i = 1; i < n; i++) s = (s * 31 + (i ^ (s >>> 3))) | 0;
  return s;
}
const end = Date.now() + (Number(process.argv[2]) || 3000);
let t = 0;
while (Date.now() < end) { t += sortArr(20000); t += mixLoop(300000); }
console.log(t !== 0.5 ? "ok" : "?");
