! fortran_nb.F90 -- the non-blocking collectives through the `use mpi` Fortran bindings, or with
! -DF08 through `use mpi_f08` (c-tests/run-tests.sh builds both: fortran_nb, fortran_nb_f08)
! (issue 27): MPI_IREDUCE (every root), MPI_IALLREDUCE (also in place), MPI_IBCAST,
! MPI_IALLGATHERV, MPI_IALLGATHER, MPI_IREDUCE_SCATTER and MPI_IREDUCE_SCATTER_BLOCK, several
! outstanding at once with the program's own MPI_ISEND / MPI_IRECV in the same arrays, completed
! by MPI_WAITALL (with statuses), MPI_WAITANY, MPI_TESTSOME, MPI_TEST, MPI_TESTALL,
! MPI_WAITSOME, MPI_TESTANY, MPI_REQUEST_GET_STATUS + MPI_WAIT; each result checked against a
! rank-order reference computed locally from every rank's regenerated input. Integer sums and
! double maxima (exact in any order). Runs on a dup of MPI_COMM_WORLD, MPI_COMM_WORLD and an
! odd/even split, with a blocking MPI_ALLREDUCE between sizes. Arguments: `quick` leaves out
! the 30011-element case. Then an MPI_IBCAST of a vector type freed right after the initiation.
#ifdef F08
#define NAME 'fortran_nb_f08'
program fortran_nb_f08
  use mpi_f08
#else
#define NAME 'fortran_nb'
program fortran_nb
  use mpi
#endif
  implicit none
  integer :: ierr, wrank, wsize, nfail, ncases, total, ic, ni, n, i, j, k, crank, csize, nsizes
#ifdef F08
  type(MPI_Comm) :: comm
  type(MPI_Request), allocatable :: reqs(:)
  type(MPI_Status), allocatable :: sts(:)
  type(MPI_Status) :: st
  type(MPI_Datatype) :: vt
#define SOURCE_OF(k) sts(k)%MPI_SOURCE
#define TAG_OF(k) sts(k)%MPI_TAG
#define STS_SHAPE csize + 4
#else
  integer :: comm
  integer, allocatable :: reqs(:), sts(:, :)
  integer :: st(MPI_STATUS_SIZE)
  integer :: vt
#define SOURCE_OF(k) sts(MPI_SOURCE, k)
#define TAG_OF(k) sts(MPI_TAG, k)
#define STS_SHAPE MPI_STATUS_SIZE, csize + 4
#endif
  integer :: root, idx, outc, nleft, right, left, worst
  logical :: flag
  character(len=64) :: arg
  integer, allocatable :: wr(:), allfail(:), counts(:), displs(:), inds(:)
  integer, allocatable :: isend(:), ired(:, :), iall(:), iinp(:), ibc(:), igv(:), irs(:), irsb(:), iag(:)
  integer, allocatable :: pin(:), pout(:)
  double precision, allocatable :: dsend(:), dmax(:)
  integer :: sizes(3), blk

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, wsize, ierr)
  nsizes = 3
  do i = 1, command_argument_count()
    call get_command_argument(i, arg)
    if (trim(arg) == 'quick') nsizes = 2
  end do
  nfail = 0
  ncases = 0
  sizes = (/ 1, 1000, 30011 /)

  do ic = 0, 2
    if (ic == 0) then
      call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
    else if (ic == 1) then
      comm = MPI_COMM_WORLD
    else
      call MPI_Comm_split(MPI_COMM_WORLD, mod(wrank, 2), wrank, comm, ierr)
    end if
    call MPI_Comm_rank(comm, crank, ierr)
    call MPI_Comm_size(comm, csize, ierr)
    allocate(wr(0:csize-1), counts(0:csize-1), displs(0:csize-1), inds(csize + 2))
    call MPI_Allgather(wrank, 1, MPI_INTEGER, wr, 1, MPI_INTEGER, comm, ierr)
    right = mod(crank + 1, csize)
    left = mod(crank + csize - 1, csize)

    do ni = 1, nsizes
      n = sizes(ni)
      blk = max(1, n / csize)
      do j = 0, csize - 1
        counts(j) = n / csize + merge(1, 0, j < mod(n, csize))
      end do
      displs(0) = 0
      do j = 1, csize - 1
        displs(j) = displs(j - 1) + counts(j - 1)
      end do
      allocate(isend(max(n, blk * csize)), ired(n, 0:csize-1), iall(n), iinp(n), ibc(n), igv(n), irs(n), irsb(blk))
      allocate(iag(blk * csize), dsend(n), dmax(n), pin(n), pout(n))
      allocate(reqs(csize + 4), sts(STS_SHAPE))
      do i = 1, max(n, blk * csize)
        isend(i) = ival(wr(crank), i)
      end do
      do i = 1, n
        dsend(i) = dval(wr(crank), i)
        pout(i) = ival(wr(crank), i + 7)
      end do
      ired = -7
      pin = -7

      ! ---- a reduce to every root, an allreduce and the program's own ring exchange, all
      ! outstanding at once, completed by one MPI_WAITALL with statuses
      do root = 0, csize - 1
        call MPI_Ireduce(isend, ired(1, root), n, MPI_INTEGER, MPI_SUM, root, comm, reqs(root + 1), ierr)
      end do
      call MPI_Iallreduce(dsend, dmax, n, MPI_DOUBLE_PRECISION, MPI_MAX, comm, reqs(csize + 1), ierr)
      call MPI_Irecv(pin, n, MPI_INTEGER, left, 77, comm, reqs(csize + 2), ierr)
      call MPI_Isend(pout, n, MPI_INTEGER, right, 77, comm, reqs(csize + 3), ierr)
      call MPI_Waitall(csize + 3, reqs, sts, ierr)
      ncases = ncases + 1
      if (ierr /= MPI_SUCCESS) call fail('waitall ierr', ic, n)
      do k = 1, csize + 3
        if (reqs(k) /= MPI_REQUEST_NULL) call fail('waitall left a request', ic, n)
      end do
      if (SOURCE_OF(csize + 2) /= left .or. TAG_OF(csize + 2) /= 77) &
        call fail('waitall: receive status', ic, n)
      do i = 1, n
        if (pin(i) /= ival(wr(left), i + 7)) then
          call fail('ring data', ic, n); exit
        end if
      end do
      do i = 1, n
        if (ired(i, crank) /= sum((/ (ival(wr(j), i), j = 0, csize - 1) /))) then
          call fail('ireduce', ic, n); exit
        end if
      end do
      do i = 1, n
        if (dmax(i) /= maxval((/ (dval(wr(j), i), j = 0, csize - 1) /))) then
          call fail('iallreduce max', ic, n); exit
        end if
      end do

      ! ---- bcast, allgatherv, reduce_scatter, reduce_scatter_block, allgather at once;
      ! completed by MPI_WAITANY (two), MPI_TESTSOME (until two more), MPI_TEST (the last)
      root = mod(n, csize)
      ibc = -7
      if (crank == root) ibc = isend(1:n)
      igv = -7
      irs = -7
      irsb = -7
      iag = -7
      call MPI_Ibcast(ibc, n, MPI_INTEGER, root, comm, reqs(1), ierr)
      call MPI_Iallgatherv(isend, counts(crank), MPI_INTEGER, igv, counts, displs, MPI_INTEGER, comm, &
                           reqs(2), ierr)
      call MPI_Ireduce_scatter(isend, irs, counts, MPI_INTEGER, MPI_SUM, comm, reqs(3), ierr)
      call MPI_Ireduce_scatter_block(isend, irsb, blk, MPI_INTEGER, MPI_SUM, comm, reqs(4), ierr)
      call MPI_Iallgather(isend, blk, MPI_INTEGER, iag, blk, MPI_INTEGER, comm, reqs(5), ierr)
      do k = 1, 2
        call MPI_Waitany(5, reqs, idx, st, ierr)
        if (idx < 1 .or. idx > 5) call fail('waitany index', ic, n)
      end do
      nleft = 2
      do while (nleft > 0)
        call MPI_Testsome(5, reqs, outc, inds, MPI_STATUSES_IGNORE, ierr)
        if (outc == MPI_UNDEFINED) then
          call fail('testsome: no active request', ic, n); exit
        end if
        do k = 1, outc
          if (inds(k) < 1 .or. inds(k) > 5) call fail('testsome index', ic, n)
        end do
        nleft = nleft - outc
      end do
      flag = .false.
      do while (.not. flag)
        do k = 1, 5
          if (reqs(k) /= MPI_REQUEST_NULL) idx = k
        end do
        call MPI_Test(reqs(idx), flag, MPI_STATUS_IGNORE, ierr)
      end do
      ncases = ncases + 1
      do k = 1, 5
        if (reqs(k) /= MPI_REQUEST_NULL) call fail('a request left after completion', ic, n)
      end do
      do i = 1, n
        if (ibc(i) /= ival(wr(root), i)) then
          call fail('ibcast', ic, n); exit
        end if
      end do
      do j = 0, csize - 1
        do i = 1, counts(j)
          if (igv(displs(j) + i) /= ival(wr(j), i)) then
            call fail('iallgatherv', ic, n); exit
          end if
        end do
        do i = 1, blk
          if (iag(j * blk + i) /= ival(wr(j), i)) then
            call fail('iallgather', ic, n); exit
          end if
        end do
      end do
      do i = 1, counts(crank)
        if (irs(i) /= sum((/ (ival(wr(j), displs(crank) + i), j = 0, csize - 1) /))) then
          call fail('ireduce_scatter', ic, n); exit
        end if
      end do
      do i = 1, blk
        if (irsb(i) /= sum((/ (ival(wr(j), crank * blk + i), j = 0, csize - 1) /))) then
          call fail('ireduce_scatter_block', ic, n); exit
        end if
      end do

      ! ---- in-place allreduce polled by MPI_REQUEST_GET_STATUS (which frees nothing), then
      ! MPI_WAIT; two allreduces completed by MPI_TESTALL; then MPI_WAITSOME and MPI_TESTANY
      iinp = isend(1:n)
      call MPI_Iallreduce(MPI_IN_PLACE, iinp, n, MPI_INTEGER, MPI_SUM, comm, reqs(1), ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Request_get_status(reqs(1), flag, st, ierr)
      end do
      if (reqs(1) == MPI_REQUEST_NULL) call fail('request_get_status freed the request', ic, n)
      call MPI_Wait(reqs(1), st, ierr)
      ncases = ncases + 1
      if (reqs(1) /= MPI_REQUEST_NULL) call fail('wait left the request', ic, n)
      do i = 1, n
        if (iinp(i) /= sum((/ (ival(wr(j), i), j = 0, csize - 1) /))) then
          call fail('iallreduce in place', ic, n); exit
        end if
      end do
      call MPI_Iallreduce(isend, iall, n, MPI_INTEGER, MPI_SUM, comm, reqs(1), ierr)
      call MPI_Iallreduce(dsend, dmax, n, MPI_DOUBLE_PRECISION, MPI_MAX, comm, reqs(2), ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(2, reqs, flag, sts, ierr)
      end do
      call MPI_Ireduce(isend, ired(1, 0), n, MPI_INTEGER, MPI_SUM, 0, comm, reqs(3), ierr)
      call MPI_Waitsome(1, reqs(3:3), outc, inds, sts, ierr)
      if (outc /= 1 .or. inds(1) /= 1) call fail('waitsome', ic, n)
      ibc = -7
      if (crank == 0) ibc = isend(1:n)
      call MPI_Ibcast(ibc, n, MPI_INTEGER, 0, comm, reqs(4), ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Testany(1, reqs(4:4), idx, flag, st, ierr)
      end do
      if (idx /= 1) call fail('testany index', ic, n)
      ncases = ncases + 1
      do i = 1, n
        if (iall(i) /= sum((/ (ival(wr(j), i), j = 0, csize - 1) /)) .or. &
            dmax(i) /= maxval((/ (dval(wr(j), i), j = 0, csize - 1) /))) then
          call fail('iallreduce (testall)', ic, n); exit
        end if
      end do
      if (crank == 0) then
        do i = 1, n
          if (ired(i, 0) /= iall(i)) then
            call fail('ireduce (waitsome)', ic, n); exit
          end if
        end do
      end if
      do i = 1, n
        if (ibc(i) /= ival(wr(0), i)) then
          call fail('ibcast (testany)', ic, n); exit
        end if
      end do

      deallocate(isend, ired, iall, iinp, ibc, igv, irs, irsb, iag, dsend, dmax, pin, pout, reqs, sts)
      ! A blocking collective between sizes, as a program checks its progress: on Open MPI it
      ! also makes pcoll's shadow of `comm`, which pcoll's non-blocking schedules run on (Open
      ! MPI's MPI_Comm_idup is not used: docs/nonblocking.md), so the later sizes are served
      call MPI_Allreduce(nfail, worst, 1, MPI_INTEGER, MPI_MAX, comm, ierr)
      if (ierr /= MPI_SUCCESS .or. worst < nfail) call fail('allreduce between sizes', ic, n)
    end do
    deallocate(wr, counts, displs, inds)
    if (ic /= 1) call MPI_Comm_free(comm, ierr)
  end do

  ! A derived type freed while the call that uses it is pending (legal: the call completes
  ! normally). Open MPI's two bindings and MPICH's mpi_f08 call PMPI_Type_free themselves;
  ! pcoll leaves the type to the pending call (session 50; before, the call used it freed).
  allocate(ibc(2000), reqs(1))
  ibc = -1
  if (wrank == wsize - 1) then
    do i = 1, 2000
      ibc(i) = ival(wrank, i)
    end do
  end if
  call MPI_Type_vector(1000, 1, 2, MPI_INTEGER, vt, ierr)
  call MPI_Type_commit(vt, ierr)
  call MPI_Ibcast(ibc, 1, vt, wsize - 1, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Type_free(vt, ierr)
  ncases = ncases + 1
  if (vt /= MPI_DATATYPE_NULL) call fail('ibcast: type handle not null after MPI_TYPE_FREE', 1, 1000)
  call MPI_Wait(reqs(1), st, ierr)
  do i = 1, 2000
    if (mod(i, 2) == 1 .and. ibc(i) /= ival(wsize - 1, i)) then
      call fail('ibcast of a type freed while pending', 1, 1000); exit
    end if
    if (mod(i, 2) == 0 .and. wrank /= wsize - 1 .and. ibc(i) /= -1) then
      call fail('ibcast of a type freed while pending: a hole written', 1, 1000); exit
    end if
  end do
  deallocate(ibc, reqs)

  allocate(allfail(0:wsize - 1))
  call MPI_Allgather(nfail, 1, MPI_INTEGER, allfail, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  total = sum(allfail)
  if (wrank == 0) then
    if (total == 0) then
      write (*, '(3a,i0)') 'PASS ', NAME, ' ', ncases
    else
      write (*, '(3a,i0,a)') 'FAILED ', NAME, ' ', total, ' failures'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  integer function ival(r, i)
    integer, intent(in) :: r, i
    ival = mod(r * 7919 + i * 104729, 1001) - 500
  end function ival

  double precision function dval(r, i)
    integer, intent(in) :: r, i
    dval = dble(mod(r * 31 + i * 17, 2001) - 1000) * 0.25d0
  end function dval

  subroutine fail(what, ic, n)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ic, n
    character(len=12), parameter :: cname(0:2) = (/ 'dup         ', 'world       ', 'split_parity' /)
    nfail = nfail + 1
    if (nfail <= 10) write (*, '(3a,i0,a,i0,a,i0,5a,i0)') 'FAIL ', NAME, ' p=', wsize, ' rank=', &
      wrank, ' case=', ncases, ' [', trim(cname(ic)), ' ', what, '] count=', n
  end subroutine fail

#ifdef F08
end program fortran_nb_f08
#else
end program fortran_nb
#endif
