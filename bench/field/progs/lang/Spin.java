// Two threads of CPU-bound work for the JIT to compile: a sieve and a string hash.
public class Spin {
    static long sieve(int n) {
        boolean[] composite = new boolean[n + 1];
        long count = 0;
        for (int i = 2; i <= n; i++) {
            if (composite[i]) continue;
            count++;
            for (long j = (long) i * i; j <= n; j += i) composite[(int) j] = true;
        }
        return count;
    }

    static long hashes(int rounds) {
        long h = 7;
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < rounds; i++) {
            b.setLength(0);
            b.append("item-").append(i).append('-').append(h & 0xff);
            h = h * 31 + b.toString().hashCode();
        }
        return h;
    }

    public static void main(String[] args) throws Exception {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        long[] out = new long[2];
        Thread a = new Thread(() -> { long s = 0; for (int r = 0; r < scale; r++) s += sieve(2_000_000); out[0] = s; }, "sieve");
        Thread b = new Thread(() -> out[1] = hashes(scale * 300_000), "hashes");
        a.start();
        b.start();
        a.join();
        b.join();
        System.out.println(out[0] + " " + out[1]);
    }
}
