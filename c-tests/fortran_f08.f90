! fortran_f08.f90 -- MPI_REDUCE, MPI_ALLREDUCE, MPI_REDUCE_SCATTER, MPI_ALLGATHERV through
! the `use mpi_f08` Fortran bindings (incl. MPI_IN_PLACE), checked against a rank-order
! reference computed locally from every rank's regenerated input. Runs on MPI_COMM_WORLD,
! a dup and an odd/even split. (fortran_mpif.f90 / fortran_usempi.f90 are the same program
! for `include 'mpif.h'` / `use mpi`; here the communicator is a type(MPI_Comm).)
! Arguments: `avoid-native-defects` skips MPI_IN_PLACE reduces at a root other than 0 over
! 2048 bytes (they crash Debian's MPICH 4.0.2); `quick` leaves out the 30011-element case.
program fortran_f08
  use mpi_f08
  implicit none
  integer :: ierr, wrank, wsize, nfail, ncases, total, ic, root, ni, n, inpl, i, j, crank, csize, nbuf
  type(MPI_Comm) :: comm
  integer :: avoid, nsizes
  character(len=64) :: arg
  integer, allocatable :: wr(:), allfail(:), counts(:), displs(:)
  integer, allocatable :: isend(:), irecv(:), iref(:)
  double precision, allocatable :: dsend(:), drecv(:), dref(:)
  integer :: sizes(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, wsize, ierr)
  avoid = 0
  nsizes = 4
  do i = 1, command_argument_count()
    call get_command_argument(i, arg)
    if (trim(arg) == 'avoid-native-defects') avoid = 1
    if (trim(arg) == 'quick') nsizes = 3
  end do
  nfail = 0
  ncases = 0
  sizes = (/ 1, wsize + 1, 1000, 30011 /)

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
    allocate(wr(0:csize-1), counts(0:csize-1), displs(0:csize-1))
    call MPI_Allgather(wrank, 1, MPI_INTEGER, wr, 1, MPI_INTEGER, comm, ierr)

    do ni = 1, nsizes
      n = sizes(ni)
      nbuf = 3 * n + 64 * csize + 16
      allocate(isend(nbuf), irecv(nbuf), iref(nbuf))
      allocate(dsend(n), drecv(n + 1), dref(n))

      ! ---- MPI_REDUCE: every root, in place at the root or not (integer sum), double max
      do root = 0, csize - 1
        do inpl = 0, 1
          ncases = ncases + 1
          if (avoid == 1 .and. inpl == 1 .and. root /= 0 .and. n * 4 > 2048) cycle
          do i = 1, n
            isend(i) = ival(wr(crank), i)
            iref(i) = sum((/ (ival(wr(j), i), j = 0, csize - 1) /))
          end do
          irecv(1:n + 1) = -777
          if (inpl == 1 .and. crank == root) then
            irecv(1:n) = isend(1:n)
            call MPI_Reduce(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_SUM, root, comm, ierr)
          else
            call MPI_Reduce(isend, irecv, n, MPI_INTEGER, MPI_SUM, root, comm, ierr)
          end if
          if (ierr /= MPI_SUCCESS) call fail('MPI_REDUCE ierr', ic, n, root, inpl)
          if (crank == root) then
            if (any(irecv(1:n) /= iref(1:n)) .or. irecv(n + 1) /= -777) &
              call fail('MPI_REDUCE integer sum', ic, n, root, inpl)
          end if
        end do
      end do
      ncases = ncases + 1
      root = csize - 1
      do i = 1, n
        dsend(i) = dval(wr(crank), i)
        dref(i) = maxval((/ (dval(wr(j), i), j = 0, csize - 1) /))
      end do
      drecv = -1.0d300
      call MPI_Reduce(dsend, drecv, n, MPI_DOUBLE_PRECISION, MPI_MAX, root, comm, ierr)
      if (crank == root) then
        if (any(drecv(1:n) /= dref(1:n)) .or. drecv(n + 1) /= -1.0d300) &
          call fail('MPI_REDUCE double max', ic, n, root, 0)
      end if

      ! ---- MPI_ALLREDUCE: integer sum in place or not, double max
      do inpl = 0, 1
        ncases = ncases + 1
        do i = 1, n
          isend(i) = ival(wr(crank), i)
          iref(i) = sum((/ (ival(wr(j), i), j = 0, csize - 1) /))
        end do
        irecv(1:n + 1) = -777
        if (inpl == 1) then
          irecv(1:n) = isend(1:n)
          call MPI_Allreduce(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_SUM, comm, ierr)
        else
          call MPI_Allreduce(isend, irecv, n, MPI_INTEGER, MPI_SUM, comm, ierr)
        end if
        if (ierr /= MPI_SUCCESS .or. any(irecv(1:n) /= iref(1:n)) .or. irecv(n + 1) /= -777) &
          call fail('MPI_ALLREDUCE integer sum', ic, n, -1, inpl)
      end do
      ncases = ncases + 1
      drecv = -1.0d300
      call MPI_Allreduce(dsend, drecv, n, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)
      if (any(drecv(1:n) /= dref(1:n)) .or. drecv(n + 1) /= -1.0d300) &
        call fail('MPI_ALLREDUCE double max', ic, n, -1, 0)

      ! ---- MPI_REDUCE_SCATTER: irregular counts with zeros (block base n / csize)
      do inpl = 0, 1
        ncases = ncases + 1
        do j = 0, csize - 1
          counts(j) = mod(j * 5 + 1 + inpl, 4) * (n / csize + 1)
        end do
        displs(0) = 0
        do j = 1, csize - 1
          displs(j) = displs(j - 1) + counts(j - 1)
        end do
        total = sum(counts)
        do i = 1, total
          isend(i) = ival(wr(crank), i)
          iref(i) = sum((/ (ival(wr(j), i), j = 0, csize - 1) /))
        end do
        irecv(1:total + 1) = -777
        if (inpl == 1) then
          irecv(1:total) = isend(1:total)
          call MPI_Reduce_scatter(MPI_IN_PLACE, irecv, counts, MPI_INTEGER, MPI_SUM, comm, ierr)
        else
          call MPI_Reduce_scatter(isend, irecv, counts, MPI_INTEGER, MPI_SUM, comm, ierr)
        end if
        if (ierr /= MPI_SUCCESS .or. any(irecv(1:counts(crank)) /= &
            iref(displs(crank) + 1:displs(crank) + counts(crank)))) &
          call fail('MPI_REDUCE_SCATTER integer sum', ic, n, -1, inpl)
        if (inpl == 0 .and. irecv(counts(crank) + 1) /= -777) &
          call fail('MPI_REDUCE_SCATTER wrote past its block', ic, n, -1, inpl)
      end do

      ! ---- MPI_ALLGATHERV: blocks in reverse order with gaps of 2, sentinel -777
      do inpl = 0, 1
        ncases = ncases + 1
        do j = 0, csize - 1
          counts(j) = mod(j * 3 + inpl, 3) * (n / csize + 1)
        end do
        displs(csize - 1) = 1
        do j = csize - 2, 0, -1
          displs(j) = displs(j + 1) + counts(j + 1) + 2
        end do
        total = displs(0) + counts(0) + 2
        irecv(1:total) = -777
        iref(1:total) = -777
        do j = 0, csize - 1
          do i = 1, counts(j)
            iref(displs(j) + i) = ival(wr(j), i) + 3
          end do
        end do
        do i = 1, counts(crank)
          isend(i) = ival(wr(crank), i) + 3
        end do
        if (inpl == 1) then
          irecv(displs(crank) + 1:displs(crank) + counts(crank)) = isend(1:counts(crank))
          call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INTEGER, irecv, counts, displs, MPI_INTEGER, comm, ierr)
        else
          call MPI_Allgatherv(isend, counts(crank), MPI_INTEGER, irecv, counts, displs, MPI_INTEGER, comm, ierr)
        end if
        if (ierr /= MPI_SUCCESS .or. any(irecv(1:total) /= iref(1:total))) &
          call fail('MPI_ALLGATHERV blocks/gaps', ic, n, -1, inpl)
      end do

      deallocate(isend, irecv, iref, dsend, drecv, dref)
    end do
    deallocate(wr, counts, displs)
    if (ic /= 1) call MPI_Comm_free(comm)  ! (ierror is optional in mpi_f08)
  end do

  allocate(allfail(0:wsize - 1))
  call MPI_Allgather(nfail, 1, MPI_INTEGER, allfail, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  total = sum(allfail)
  if (wrank == 0) then
    if (total == 0) then
      write (*, '(a,i0)') 'PASS fortran_f08 ', ncases
    else
      write (*, '(a,i0,a)') 'FAILED fortran_f08 ', total, ' failures'
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

  subroutine fail(what, ic, n, root, inpl)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ic, n, root, inpl
    character(len=12), parameter :: cname(0:2) = (/ 'dup         ', 'world       ', 'split_parity' /)
    nfail = nfail + 1
    if (nfail <= 10) write (*, '(a,i0,a,i0,a,i0,5a,i0,a,i0,a,i0)') 'FAIL fortran_f08 p=', wsize, ' rank=', &
      wrank, ' case=', ncases, ' [', trim(cname(ic)), ' ', what, '] count=', n, ' root=', root, ' inplace=', inpl
  end subroutine fail

end program fortran_f08
