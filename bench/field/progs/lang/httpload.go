// A net/http server on loopback and 8 client goroutines hammering it for N seconds: handlers
// hash the request, the rest of the goroutines block in the netpoller.
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	seconds := 3.0
	if len(os.Args) > 1 {
		seconds, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.URL.Path))
		for i := 0; i < 200; i++ {
			sum = sha256.Sum256(sum[:])
		}
		fmt.Fprintf(w, "%x\n", sum[:4])
	})
	go http.Serve(ln, nil)
	url := "http://" + ln.Addr().String() + "/"
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var ok, failed int64
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			client := &http.Client{}
			for i := 0; time.Now().Before(end); i++ {
				resp, err := client.Get(url + strconv.Itoa(c*1000000+i))
				if err != nil {
					atomic.AddInt64(&failed, 1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				atomic.AddInt64(&ok, 1)
			}
		}(c)
	}
	wg.Wait()
	// The count of requests depends on the speed: print only whether any failed.
	fmt.Println("failed", failed, "served", ok > 0)
}
