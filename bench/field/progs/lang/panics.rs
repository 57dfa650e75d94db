// Panics caught by std::panic::catch_unwind in a loop, the hook silenced; some CPU between.
use std::panic;

fn work(i: u64) -> u64 {
    let mut h = i;
    for k in 0..2000u64 {
        h = h.wrapping_mul(6364136223846793005).wrapping_add(k);
    }
    if h % 3 == 0 {
        panic!("odd {}", h);
    }
    h
}

fn main() {
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(100000);
    panic::set_hook(Box::new(|_| {}));
    let (mut caught, mut sum) = (0u64, 0u64);
    for i in 0..n {
        match panic::catch_unwind(|| work(i)) {
            Ok(v) => sum = sum.wrapping_add(v),
            Err(_) => caught += 1,
        }
    }
    println!("{} {}", caught, sum);
}
