// selfprof.go — a Go program built with cgo that profiles itself with runtime/pprof, for
// tests/e2e-selfprof.sh: Go's runtime takes SIGPROF for its own (its handler installed through
// the C library's sigaction, its timers by raw setitimer and per-thread timer_create, its
// threads' masks set by raw rt_sigprocmask). Two goroutines burn until the process has used
// 2 x SECONDS of CPU time; it writes the CPU profile to PROFILE and prints `cpu_ns N`, the CPU
// time the process used while the profile ran.
// Usage: selfprof PROFILE SECONDS
package main

/*
static int cgo_on(void) { return 1; }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
)

var sink uint64

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func burn(until int64) {
	x := uint64(1)
	for cpuNs() < until {
		for i := 0; i < 200000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink += x
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: selfprof PROFILE SECONDS")
		os.Exit(2)
	}
	secs, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	_ = C.cgo_on()
	start := cpuNs()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	until := start + int64(secs*2e9)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			burn(until)
		}()
	}
	wg.Wait()
	pprof.StopCPUProfile()
	f.Close()
	fmt.Printf("cpu_ns %d\n", cpuNs()-start)
}
