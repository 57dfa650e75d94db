// bench/field/progs/rsthreads.rs — std::thread workers sorting and hashing vectors (rustc
// 1.63: no black_box; the results are printed instead), joined through a channel.
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

#[inline(never)]
fn shuffle_sort(seed: u64, n: usize) -> u64 {
    let mut x = seed;
    let mut v: Vec<u64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    v.sort_unstable();
    v[n / 2]
}

#[inline(never)]
fn count_words(seed: u64, n: usize) -> usize {
    let mut m: HashMap<u64, u32> = HashMap::new();
    let mut x = seed | 1;
    for _ in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        *m.entry(x >> 50).or_insert(0) += 1;
    }
    m.len()
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let (tx, rx) = mpsc::channel();
    for t in 0..3u64 {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut acc = 0u64;
            for r in 0..rounds {
                acc = acc.wrapping_add(shuffle_sort(t * 1000 + r + 1, 200_000));
                acc = acc.wrapping_add(count_words(t + r, 200_000) as u64);
            }
            tx.send((t, acc)).unwrap();
        });
    }
    drop(tx);
    let mut all: Vec<(u64, u64)> = rx.iter().collect();
    all.sort();
    for (t, acc) in all {
        println!("{} {}", t, acc);
    }
}
