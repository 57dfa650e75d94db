! gfortran -fopenmp: a parallel loop of two threads summing a series, then a reduction.
program omp
  use omp_lib
  implicit none
  integer :: i, j, n
  real(8) :: s, x
  character(len=16) :: arg
  n = 20
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  s = 0
  !$omp parallel do private(j, x) reduction(+:s) schedule(static)
  do i = 1, n * 100000
    x = 0
    do j = 1, 40
      x = x + sin(dble(i + j)) * cos(dble(i - j))
    end do
    s = s + x
  end do
  !$omp end parallel do
  print '(F20.6)', s
end program omp
