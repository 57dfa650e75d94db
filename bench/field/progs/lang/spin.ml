(* A native OCaml program: a tail-recursive collatz search and a Hashtbl of words. *)
let rec collatz n steps = if n = 1 then steps else collatz (if n land 1 = 0 then n / 2 else 3 * n + 1) (steps + 1)

let longest limit =
  let best = ref 0 and at = ref 0 in
  for i = 1 to limit do
    let s = collatz i 0 in
    if s > !best then (best := s; at := i)
  done;
  (!at, !best)

let words n =
  let t = Hashtbl.create 1024 in
  for i = 0 to n - 1 do
    let k = Printf.sprintf "w%d" (i * 7919 mod 50021) in
    Hashtbl.replace t k (1 + try Hashtbl.find t k with Not_found -> 0)
  done;
  Hashtbl.length t

let () =
  let scale = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 10 in
  let at, best = longest (scale * 100_000) in
  Printf.printf "%d %d %d\n" at best (words (scale * 100_000))
