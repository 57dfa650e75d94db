// A Go program with a known call tree, for tests/e2e-stacks.sh: two goroutines each run
// main.run, which calls three hot functions with 5:3:2 of the work (hotA, hotB, hotC), for a
// given time of CPU. Built with cgo (import "C"), so it is linked dynamically and the preload
// shim applies. Usage: goprog SECONDS
package main

/*
static int osprey_cgo_marker(void) { return 1; }
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

var sink uint64

//go:noinline
func tick(h uint64) uint64 { return h + 1 }

// spin calls tick now and then so that it has a frame of its own: a Go function without one
// (a leaf that needs no stack) sets no frame pointer, and a walk by frame pointers through it
// loses its caller (Go's own unwind rows are in .debug_frame, beside a cgo binary's .eh_frame).
//
//go:noinline
func spin(n int, seed uint64) uint64 {
	h := seed
	for i := 0; i < n; i++ {
		if i&0xffff == 0 {
			h = tick(h)
		}
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
	}
	return h
}

//go:noinline
func hotA(seed uint64) uint64 { return spin(50000, seed) }

//go:noinline
func hotB(seed uint64) uint64 { return spin(30000, seed) }

//go:noinline
func hotC(seed uint64) uint64 { return spin(20000, seed) }

//go:noinline
func run(deadline time.Time, id uint64) uint64 {
	h := id
	for time.Now().Before(deadline) {
		h = hotA(h)
		h = hotB(h)
		h = hotC(h)
	}
	return h
}

func main() {
	seconds := 1.0
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = s
		}
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			h := run(deadline, id)
			mu.Lock()
			sink ^= h
			mu.Unlock()
		}(uint64(g))
	}
	wg.Wait()
	fmt.Println("done", C.osprey_cgo_marker(), sink == 42)
}
