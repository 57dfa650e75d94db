// bench/field/progs/spin.go — goroutines doing CPU work without cgo (a sieve and a
// float loop per goroutine), its result printed so that plain and profiled runs compare.
// Built twice: CGO_ENABLED=0 (static: `osprey attach`) and with cgo's runtime linked in
// (dynamic: `osprey --profile` preloads the shim beside Go's own signal handlers).
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

//go:noinline
func sieve(n int) int {
	composite := make([]bool, n)
	count := 0
	for i := 2; i < n; i++ {
		if !composite[i] {
			count++
			for j := i * i; j < n; j += i {
				composite[j] = true
			}
		}
	}
	return count
}

//go:noinline
func orbit(seed float64, rounds int) float64 {
	x := seed
	for i := 0; i < rounds; i++ {
		x = 3.9 * x * (1 - x)
	}
	return x
}

func main() {
	rounds := 40
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	var wg sync.WaitGroup
	results := make([]float64, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			total := 0.0
			for r := 0; r < rounds; r++ {
				total += float64(sieve(200000))
				total += orbit(0.1+float64(g)/100, 200000)
			}
			results[g] = total
		}(g)
	}
	wg.Wait()
	for g, r := range results {
		fmt.Printf("%d %.6f\n", g, r)
	}
}
