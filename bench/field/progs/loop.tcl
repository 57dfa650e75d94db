# bench/field/progs/loop.tcl — tclsh: a loop of integer expressions
set s 0
for {set i 0} {$i < 300000} {incr i} { set s [expr {($s + $i*$i) % 1000003}] }
puts $s
