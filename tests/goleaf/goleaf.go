// goleaf: three frameless leaf loops under one caller, in a known split (hotA:hotB:hotC =
// 3:2:1 of the iterations), on two goroutines, with cgo on so the preload shim applies.
// Usage: goleaf SECONDS
package main

/*
static int osp_goleaf_c(int x) { return x + 1; }
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

var sink [3]uint64

// The leaves: no calls, a few registers, so the compiler gives them no frame (no rbp pushed);
// not inlined, so each is its own function under spin.
//
//go:noinline
func hotA(n uint64) uint64 {
	x := n
	for i := uint64(0); i < n; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	return x
}

//go:noinline
func hotB(n uint64) uint64 {
	x := n
	for i := uint64(0); i < n; i++ {
		x = x*3202034522624059733 + 4354685564936845319
	}
	return x
}

//go:noinline
func hotC(n uint64) uint64 {
	x := n
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func spin(deadline time.Time) {
	const chunk = 200000
	for time.Now().Before(deadline) {
		sink[0] += hotA(3 * chunk)
		sink[1] += hotB(2 * chunk)
		sink[2] += hotC(1 * chunk)
	}
}

func main() {
	seconds := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); spin(deadline) }()
	}
	wg.Wait()
	fmt.Println("goleaf", int(C.osp_goleaf_c(0)), sink[0]&1)
}
