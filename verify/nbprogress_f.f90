! nbprogress_f.f90 -- verify/nbprogress.c's progress rule from Fortran (mpif.h): every rank
! starts an MPI_IBCAST or MPI_IREDUCE of n doubles; every rank but 0 completes it first, while
! rank 0 first makes one blocking call (MPI_RECV, MPI_PROBE + MPI_RECV, MPI_SENDRECV, MPI_SSEND,
! MPI_RSEND to a receive posted before, MPI_BARRIER) and only then waits. Open MPI's Fortran
! wrappers call PMPI_ directly: pcoll must see these calls to advance its schedules. mpif.h (the
! same wrappers as `use mpi`), which every MPI's compiler wrapper can read (Intel MPI's modules
! are not readable by Debian's gfortran); built with -fallow-argument-mismatch.
!   mpirun -np <p> [PCOLL_BCAST=binomial PCOLL_REDUCE=binomial] nbprogress_f
! Last line "nbprogress_f: ok" or the first failure; a hang is the caller's timeout.
program nbprogress_f
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 262144, kinds = 6
  integer :: ierr, rank, p, round, coll, kind, r, v, q, pre, one
  integer :: st(MPI_STATUS_SIZE)
  double precision, allocatable :: a(:), b(:)
  double precision :: want
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  allocate(a(n), b(n))
  do round = 0, 2 * kinds - 1
    coll = mod(round, 2)
    kind = round / 2
    a = rank + 1
    b = -1
    pre = MPI_REQUEST_NULL
    if (kind == 4) then
      if (rank /= 0) call MPI_Irecv(v, 1, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, pre, ierr)
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
    end if
    if (coll == 0) then
      call MPI_Ibcast(a, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, q, ierr)
    else
      call MPI_Ireduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, q, ierr)
    end if
    if (rank == 0) then
      if (kind == 5) then
        call MPI_Barrier(MPI_COMM_WORLD, ierr)
      else
        do r = 1, p - 1
          select case (kind)
          case (0)
            call MPI_Recv(v, 1, MPI_INTEGER, r, 5, MPI_COMM_WORLD, st, ierr)
          case (1)
            call MPI_Probe(r, 5, MPI_COMM_WORLD, st, ierr)
            call MPI_Recv(v, 1, MPI_INTEGER, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
          case (2)
            one = 0
            call MPI_Sendrecv(one, 1, MPI_INTEGER, r, 6, v, 1, MPI_INTEGER, r, 5, MPI_COMM_WORLD, st, ierr)
          case (3)
            v = -r
            call MPI_Ssend(v, 1, MPI_INTEGER, r, 7, MPI_COMM_WORLD, ierr)
          case (4)
            v = -r
            call MPI_Rsend(v, 1, MPI_INTEGER, r, 8, MPI_COMM_WORLD, ierr)
          end select
          if (kind <= 2 .and. v /= r) call fail('message', round)
          if (kind <= 1 .and. st(MPI_SOURCE) /= r) call fail('status source', round)
        end do
      end if
      call MPI_Wait(q, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Wait(q, MPI_STATUS_IGNORE, ierr)
      select case (kind)
      case (2)
        call MPI_Sendrecv(rank, 1, MPI_INTEGER, 0, 5, v, 1, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, st, ierr)
      case (3)
        call MPI_Recv(v, 1, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, st, ierr)
        if (v /= -rank) call fail('ssend message', round)
      case (4)
        call MPI_Wait(pre, MPI_STATUS_IGNORE, ierr)
        if (v /= -rank) call fail('rsend message', round)
      case (5)
        call MPI_Barrier(MPI_COMM_WORLD, ierr)
      case default
        call MPI_Send(rank, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, ierr)
      end select
    end if
    want = p * (p + 1) / 2.0d0
    if (coll == 0 .and. a(n) /= 1.0d0) call fail('bcast', round)
    if (coll == 1 .and. rank == 0 .and. b(n) /= want) call fail('reduce', round)
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a)', 'nbprogress_f: ok'
  call MPI_Finalize(ierr)
contains
  subroutine fail(what, round)
    character(*), intent(in) :: what
    integer, intent(in) :: round
    integer :: e
    print '(a, a, a, i0, a, i0)', 'nbprogress_f: FAILED: ', what, ', round ', round, ', rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail
end program nbprogress_f
