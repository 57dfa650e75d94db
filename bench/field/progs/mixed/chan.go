// A pipeline of goroutines that block on channels: a producer, three stages of 2 workers each
// hashing what they receive, a collector, and a ticker goroutine that sleeps 2 ms at a time.
// Built with cgo (`import "C"`) so that the loader preloads the shim. Prints one checksum.
package main

// #include <stdlib.h>
import "C"

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

func stage(in <-chan []byte, out chan<- []byte, rounds int, wg *sync.WaitGroup) {
	defer wg.Done()
	for b := range in {
		for i := 0; i < rounds; i++ {
			s := sha256.Sum256(b)
			b = s[:]
		}
		out <- b
	}
}

func main() {
	items := 20000
	if len(os.Args) > 1 {
		items, _ = strconv.Atoi(os.Args[1])
	}
	done := make(chan struct{})
	ticks := 0
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				time.Sleep(2 * time.Millisecond)
				ticks++
			}
		}
	}()
	chans := []chan []byte{make(chan []byte)}
	for s := 0; s < 3; s++ {
		chans = append(chans, make(chan []byte))
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go stage(chans[s], chans[s+1], 20+10*s, &wg)
		}
		go func(out chan []byte, wg *sync.WaitGroup) { wg.Wait(); close(out) }(chans[s+1], &wg)
	}
	go func() {
		for i := 0; i < items; i++ {
			chans[0] <- []byte(strconv.Itoa(i))
		}
		close(chans[0])
	}()
	var sum byte
	n := 0
	for b := range chans[3] {
		sum ^= b[0]
		n++
	}
	close(done)
	fmt.Println(n, sum)
}
