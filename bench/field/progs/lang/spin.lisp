;; SBCL: a compiled fib and a hash table of strings, run by --script.
(defun fib (n) (declare (fixnum n)) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(defun words (n)
  (let ((h (make-hash-table :test #'equal)))
    (dotimes (i n) (incf (gethash (format nil "w~d" (mod (* i 7919) 50021)) h 0)))
    (hash-table-count h)))
(let ((scale (parse-integer (or (second sb-ext:*posix-argv*) "10"))))
  (format t "~d ~d~%" (fib (+ 20 scale)) (words (* scale 30000))))
