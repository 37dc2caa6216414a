! nbprogress_f.f90 -- verify/nbprogress.c's progress rule from Fortran (mpif.h): every rank
! starts an MPI_IBCAST or MPI_IREDUCE of n doubles; every rank but 0 completes it first, while
! rank 0 first makes one blocking call (MPI_RECV, MPI_PROBE + MPI_RECV, MPI_SENDRECV, MPI_SSEND,
! MPI_RSEND to a receive posted before, MPI_BARRIER, and the blocking calls pcoll does not
! serve that wait for the other ranks: MPI_GATHER, MPI_GATHERV, MPI_ALLTOALL, MPI_ALLTOALLV,
! MPI_ALLTOALLW, MPI_COMM_SPLIT, MPI_COMM_DUP; MPI_GATHER, MPI_SCATTER and MPI_ALLTOALL with
! MPI_IN_PLACE, MPI_SCATTERV, MPI_SCAN, MPI_EXSCAN, MPI_COMM_SPLIT_TYPE, MPI_COMM_CREATE, whose
! results check pcoll's Fortran entries for them on Open MPI), MPI_MPROBE + MPI_MRECV or
! MPI_SENDRECV_REPLACE, and only then waits; the others make the same
! blocking call after their wait. Open MPI's Fortran wrappers call PMPI_ directly: pcoll must
! see these calls to advance its schedules. mpif.h (the
! same wrappers as `use mpi`), which every MPI's compiler wrapper can read (Intel MPI's modules
! are not readable by Debian's gfortran); built with -fallow-argument-mismatch.
!   mpirun -np <p> [PCOLL_BCAST=binomial PCOLL_REDUCE=binomial] nbprogress_f
! Last line "nbprogress_f: ok" or the first failure; a hang is the caller's timeout.
program nbprogress_f
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 262144, kinds = 21
  integer :: ierr, rank, p, round, coll, kind, r, v, q, pre, one, msg, two(2), out2(2)
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
      else if ((kind >= 6 .and. kind <= 12) .or. kind >= 15) then
        call unserved(kind, round)
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
          case (13)
            call MPI_Mprobe(r, 5, MPI_COMM_WORLD, msg, st, ierr)
            if (st(MPI_SOURCE) /= r) call fail('mprobe status', round)
            call MPI_Mrecv(v, 1, MPI_INTEGER, msg, MPI_STATUS_IGNORE, ierr)
            if (v /= r) call fail('mrecv message', round)
          case (14)
            two = [-r, -2 * r]
            call MPI_Sendrecv_replace(two, 2, MPI_INTEGER, r, 6, r, 5, MPI_COMM_WORLD, st, ierr)
            if (two(1) /= r .or. two(2) /= 10 * r) call fail('sendrecv_replace', round)
            if (st(MPI_SOURCE) /= r) call fail('sendrecv_replace status', round)
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
      case (6:12, 15:)
        call unserved(kind, round)
      case (14)
        out2 = [rank, 10 * rank]
        call MPI_Sendrecv(out2, 2, MPI_INTEGER, 0, 5, two, 2, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, &
          st, ierr)
        if (two(1) /= -rank .or. two(2) /= -2 * rank) call fail('sendrecv_replace reply', round)
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
  ! A blocking call pcoll does not serve (kinds 6..12, 15..20), its result checked.
  subroutine unserved(kind, round)
    integer, intent(in) :: kind, round
    integer, parameter :: pmax = 64
    integer :: sb(0:pmax - 1), rb(0:pmax - 1), cnt(0:pmax - 1), dsp(0:pmax - 1), ty(0:pmax - 1)
    integer :: j, nc, nr, e, grp, sub
    do j = 0, p - 1
      sb(j) = 100 * rank + j
      cnt(j) = 1
      dsp(j) = j
      ty(j) = MPI_INTEGER
    end do
    rb = -1
    select case (kind)
    case (6)
      call MPI_Gather(rank, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
      if (rank == 0) then
        do j = 0, p - 1
          if (rb(j) /= j) call fail('gather', round)
        end do
      end if
    case (7)
      call MPI_Gatherv(rank, 1, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
      if (rank == 0) then
        do j = 0, p - 1
          if (rb(j) /= j) call fail('gatherv', round)
        end do
      end if
    case (8:10)
      if (kind == 8) call MPI_Alltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, e)
      if (kind == 9) call MPI_Alltoallv(sb, cnt, dsp, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, &
        MPI_COMM_WORLD, e)
      if (kind == 10) then
        dsp(0:p - 1) = 4 * dsp(0:p - 1)
        call MPI_Alltoallw(sb, cnt, dsp, ty, rb, cnt, dsp, ty, MPI_COMM_WORLD, e)
      end if
      do j = 0, p - 1
        if (rb(j) /= 100 * j + rank) call fail('alltoall(v,w)', round)
      end do
    case (11)
      call MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, nc, e)
      call MPI_Comm_rank(nc, nr, e)
      if (nr /= p - 1 - rank) call fail('comm_split', round)
      call MPI_Comm_free(nc, e)
    case (12)
      call MPI_Comm_dup(MPI_COMM_WORLD, nc, e)
      call MPI_Comm_size(nc, nr, e)
      if (nr /= p) call fail('comm_dup', round)
      call MPI_Comm_free(nc, e)
    case (15)
      ! The root's own element is in place already (not 0: the MPI_IN_PLACE marker's storage)
      if (rank == 0) then
        rb(0) = 1
        call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
        do j = 0, p - 1
          if (rb(j) /= j + 1) call fail('gather in place', round)
        end do
      else
        call MPI_Gather(rank + 1, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
      end if
    case (16)
      do j = 0, p - 1
        sb(j) = 7 * j
      end do
      nr = -1
      if (rank == 0) then
        call MPI_Scatter(sb, 1, MPI_INTEGER, MPI_IN_PLACE, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
      else
        call MPI_Scatter(sb, 1, MPI_INTEGER, nr, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
        if (nr /= 7 * rank) call fail('scatter', round)
      end if
      nr = -1
      call MPI_Scatterv(sb, cnt, dsp, MPI_INTEGER, nr, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, e)
      if (nr /= 7 * rank) call fail('scatterv', round)
    case (17)
      rb(0:p - 1) = sb(0:p - 1)
      call MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, MPI_COMM_WORLD, e)
      do j = 0, p - 1
        if (rb(j) /= 100 * j + rank) call fail('alltoall in place', round)
      end do
    case (18)
      nr = rank + 1
      call MPI_Scan(MPI_IN_PLACE, nr, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e)
      if (nr /= (rank + 1) * (rank + 2) / 2) call fail('scan', round)
      nr = -7
      call MPI_Exscan(rank + 1, nr, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e)
      if (rank > 0 .and. nr /= rank * (rank + 1) / 2) call fail('exscan', round)
    case (19)
      call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, nc, e)
      call MPI_Comm_rank(nc, nr, e)
      if (nr /= p - 1 - rank) call fail('comm_split_type', round)
      call MPI_Comm_free(nc, e)
    case (20)
      call MPI_Comm_group(MPI_COMM_WORLD, grp, e)
      call MPI_Group_excl(grp, 1, [0], sub, e)
      call MPI_Comm_create(MPI_COMM_WORLD, sub, nc, e)
      if (rank == 0 .and. nc /= MPI_COMM_NULL) call fail('comm_create (excluded)', round)
      if (rank /= 0) then
        call MPI_Comm_rank(nc, nr, e)
        if (nr /= rank - 1) call fail('comm_create', round)
        call MPI_Comm_free(nc, e)
      end if
      call MPI_Group_free(grp, e)
      call MPI_Group_free(sub, e)
    end select
    if (e /= MPI_SUCCESS) call fail('error code', round)
  end subroutine unserved

  subroutine fail(what, round)
    character(*), intent(in) :: what
    integer, intent(in) :: round
    integer :: e
    print '(a, a, a, i0, a, i0)', 'nbprogress_f: FAILED: ', what, ', round ', round, ', rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail
end program nbprogress_f
