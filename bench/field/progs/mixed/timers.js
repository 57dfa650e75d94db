// Node with timers and file I/O: a 2 ms interval hashing a buffer, and a loop of async
// writeFile/readFile of 64 KiB files in a directory (libuv's thread pool), for ROUNDS rounds.
// Prints one checksum.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const dir = process.argv[2];
const rounds = Number(process.argv[3] || 400);
const data = Buffer.alloc(65536, 7);
let ticks = 0;
let acc = 0;
const timer = setInterval(() => {
  acc ^= crypto.createHash('sha256').update(data).digest()[0];
  ticks++;
}, 2);
async function main() {
  let sum = 0;
  for (let i = 0; i < rounds; i++) {
    const f = path.join(dir, 'f' + (i % 16));
    await fs.promises.writeFile(f, data);
    const back = await fs.promises.readFile(f);
    sum = (sum + back[i % back.length] + i) % 1000003;
    if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5));
  }
  clearInterval(timer);
  console.log(rounds, sum);
}
main();
