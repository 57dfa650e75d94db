// bench/field/progs/spincgo.go — spin.go's work in a binary linked to libc by cgo (the
// import below), so that the dynamic loader runs and `osprey --profile` preloads the shim.
package main

import "C"
