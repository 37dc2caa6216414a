! freecb_f.f90 -- verify/freecb.c in Fortran (mpif.h, which Intel MPI's gfortran wrapper
! reads too): a delete callback on X that calls MPI_ALLREDUCE on MPI_COMM_WORLD and frees
! Y, set on even ranks before X's first collective and on odd ranks after it; then X goes by
! MPI_COMM_FREE, or by MPI_COMM_DISCONNECT when the second argument is `disconnect`. Open
! MPI's Fortran entries call PMPI_Comm_free / PMPI_Comm_disconnect, past pcoll's C entries,
! and MPI_Comm_disconnect did not come through pcoll on any MPI: until session 54 pcoll's
! window release ran in its own delete callback there, and with the callbacks in another
! order on two ranks the job hung. First argument: doubles per allreduce (default 131072:
! pcoll's `shm` window on X). Rank 0 prints `freecb_f: PASS` or `freecb_f: FAIL (n wrong)`.
module freecb_state
  implicit none
  include 'mpif.h'
  integer :: y = MPI_COMM_NULL
  integer :: wrong = 0
contains
  subroutine on_delete(comm, key, val, extra, ierr)
    integer :: comm, key, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    integer :: rank, p
    double precision :: x(1), s(1)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
    x(1) = rank + 1
    call MPI_ALLREDUCE(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (s(1) /= p * (p + 1) / 2.0d0) wrong = wrong + 1
    call MPI_COMM_FREE(y, ierr)
    ierr = MPI_SUCCESS
  end subroutine on_delete
end module freecb_state

program freecb_f
  use freecb_state
  implicit none
  integer :: ierr, rank, p, key, n, x, it, k, i, c, total(1), mine(1)
  character(len=32) :: arg
  logical :: disconnect
  double precision, allocatable :: a(:), b(:)
  integer(kind=MPI_ADDRESS_KIND) :: zero = 0

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  n = 131072
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  disconnect = .false.
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    disconnect = trim(arg) == 'disconnect'
  end if
  call MPI_COMM_DUP(MPI_COMM_WORLD, x, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, y, ierr)
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_NULL_COPY_FN, on_delete, key, zero, ierr)
  if (mod(rank, 2) == 0) call MPI_COMM_SET_ATTR(x, key, zero, ierr)
  allocate (a(n), b(n))
  do it = 1, 10
    do k = 0, 1
      do i = 1, n
        a(i) = rank + mod(i - 1, 7)
      end do
      c = x
      if (k == 1) c = y
      call MPI_ALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, c, ierr)
      do i = 1, n
        if (b(i) /= p * (p - 1) / 2.0d0 + dble(p) * mod(i - 1, 7)) wrong = wrong + 1
      end do
      if (it == 1 .and. k == 0 .and. mod(rank, 2) == 1) &
        call MPI_COMM_SET_ATTR(x, key, zero, ierr)
    end do
  end do
  if (disconnect) then
    call MPI_COMM_DISCONNECT(x, ierr)
  else
    call MPI_COMM_FREE(x, ierr)
  end if
  if (x /= MPI_COMM_NULL .or. y /= MPI_COMM_NULL) wrong = wrong + 1
  call MPI_COMM_FREE_KEYVAL(key, ierr)
  mine(1) = wrong
  call MPI_REDUCE(mine, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total(1) == 0) then
      print '(a)', 'freecb_f: PASS'
    else
      print '(a,i0,a)', 'freecb_f: FAIL (', total(1), ' wrong)'
    end if
  end if
  deallocate (a, b)
  call MPI_FINALIZE(ierr)
end program freecb_f
