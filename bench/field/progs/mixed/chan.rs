// Threads that block on channels: 4 workers share one job channel (a Mutex around the
// receiver), each job a hash loop, results back on another channel to the main thread, which
// sends in batches and sleeps 1 ms between them. Prints one checksum.
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

fn work(seed: u64, rounds: u32) -> u64 {
    let mut h = seed ^ 0x9e3779b97f4a7c15;
    for _ in 0..rounds {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51afd7ed558ccd);
        h ^= h >> 29;
    }
    h
}

fn main() {
    let jobs: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20000);
    let (job_tx, job_rx) = mpsc::channel::<u64>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (res_tx, res_rx) = mpsc::channel::<u64>();
    let mut workers = Vec::new();
    for _ in 0..4 {
        let rx = Arc::clone(&job_rx);
        let tx = res_tx.clone();
        workers.push(thread::spawn(move || loop {
            let job = rx.lock().unwrap().recv();
            match job {
                Ok(j) => tx.send(work(j, 20000)).unwrap(),
                Err(_) => break,
            }
        }));
    }
    drop(res_tx);
    let mut sum = 0u64;
    let mut got = 0u64;
    for batch in 0..jobs / 100 {
        for i in 0..100 {
            job_tx.send(batch * 100 + i).unwrap();
        }
        for _ in 0..100 {
            sum = sum.wrapping_add(res_rx.recv().unwrap());
            got += 1;
        }
        thread::sleep(Duration::from_millis(1));
    }
    drop(job_tx);
    for w in workers {
        w.join().unwrap();
    }
    println!("{} {}", got, sum);
}
