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
!   mpirun -np <p> [PCOLL_BCAST=binomial PCOLL_REDUCE=binomial] nbprogress_f [kind]
! Last line "nbprogress_f: ok" or the first failure; a hang is the caller's timeout.
program nbprogress_f
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 262144, kinds = 38
  integer :: ierr, rank, p, round, coll, kind, r, v, q, pre, one, msg, two(2), out2(2)
  integer :: st(MPI_STATUS_SIZE), cart, half, cw, cr, pc, pid, first, last
  double precision, allocatable :: a(:), b(:)
  double precision :: want
  character(len=64) :: fname
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  allocate(a(n), b(n))
  ! The communicators of the neighbourhood and MPI_INTERCOMM_CREATE rounds, each given a blocking
  ! collective first (Open MPI: pcoll serves a communicator's I-forms after one), and the file
  ! of the MPI_FILE_OPEN rounds (rank 0's process id: one name per run)
  call MPI_Cart_create(MPI_COMM_WORLD, 1, [p], [.true.], .false., cart, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  pid = getpid()
  call MPI_Bcast(pid, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(a, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(a, n, MPI_DOUBLE_PRECISION, 0, cart, ierr)
  call MPI_Bcast(a, n, MPI_DOUBLE_PRECISION, 0, half, ierr)
  write (fname, '(a, i0)') '/tmp/pcoll-nbprogress-f.', pid
  ! An argument K runs kind K's two rounds only
  first = 0
  last = kinds - 1
  if (command_argument_count() > 0) then
    call get_command_argument(1, fname)
    read (fname, *) first
    last = first
  end if
  do round = 2 * first, 2 * last + 1
    coll = mod(round, 2)
    kind = round / 2
    a = rank + 1
    b = -1
    pre = MPI_REQUEST_NULL
    if (kind == 4) then
      if (rank /= 0) call MPI_Irecv(v, 1, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, pre, ierr)
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
    end if
    cw = MPI_COMM_WORLD
    if (kind >= 30 .and. kind <= 34) cw = cart
    if (kind == 35) cw = half
    call MPI_Comm_rank(cw, cr, ierr)
    call MPI_Comm_size(cw, pc, ierr)
    a = cr + 1
    if (coll == 0) then
      call MPI_Ibcast(a, n, MPI_DOUBLE_PRECISION, 0, cw, q, ierr)
    else
      call MPI_Ireduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, cw, q, ierr)
    end if
    if (rank == 0) then
      if (kind == 5) then
        call MPI_Barrier(MPI_COMM_WORLD, ierr)
      else if ((kind >= 6 .and. kind <= 12) .or. (kind >= 15 .and. kind <= 35)) then
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
          case (36, 37)
            flag = .false.
            do while (.not. flag)
              if (kind == 36) call MPI_Iprobe(r, 5, MPI_COMM_WORLD, flag, st, ierr)
              if (kind == 37) call MPI_Improbe(r, 5, MPI_COMM_WORLD, flag, msg, st, ierr)
            end do
            if (st(MPI_SOURCE) /= r) call fail('iprobe status', round)
            if (kind == 36) call MPI_Recv(v, 1, MPI_INTEGER, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
            if (kind == 37) call MPI_Mrecv(v, 1, MPI_INTEGER, msg, MPI_STATUS_IGNORE, ierr)
            if (v /= r) call fail('iprobe message', round)
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
      case (6:12, 15:35)
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
    want = pc * (pc + 1) / 2.0d0
    if (coll == 0 .and. a(n) /= 1.0d0) call fail('bcast', round)
    if (coll == 1 .and. cr == 0 .and. b(n) /= want) call fail('reduce', round)
  end do
  call MPI_Comm_free(cart, ierr)
  call MPI_Comm_free(half, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a)', 'nbprogress_f: ok'
  call MPI_Finalize(ierr)
contains
  ! A blocking call pcoll does not serve (kinds 6..12, 15..35), its result checked.
  subroutine unserved(kind, round)
    integer, intent(in) :: kind, round
    integer, parameter :: pmax = 64
    integer :: sb(0:pmax - 1), rb(0:pmax - 1), cnt(0:pmax - 1), dsp(0:pmax - 1), ty(0:pmax - 1)
    integer :: j, nc, nr, e, grp, sub, left, right, win, fh, i1, i2
    integer(kind=MPI_ADDRESS_KIND) :: wsize, base, adsp(0:1)
    logical :: weighted
    left = mod(rank - 1 + p, p)
    right = mod(rank + 1, p)
    wsize = 4 * pmax
    e = MPI_SUCCESS
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
    case (21)
      call MPI_Cart_create(MPI_COMM_WORLD, 1, [p], [.true.], .false., nc, e)
      call ok(e, 'cart_create', round)
      call MPI_Comm_rank(nc, nr, e)
      if (nr /= rank) call fail('cart_create rank', round)
      call MPI_Cart_sub(nc, [.true.], sub, e)
      call ok(e, 'cart_sub', round)
      call MPI_Comm_size(sub, nr, e)
      if (nr /= p) call fail('cart_sub size', round)
      call MPI_Comm_free(sub, e)
      call MPI_Comm_free(nc, e)
    case (22)
      ! A ring: node j's one edge goes to j + 1
      do j = 0, p - 1
        cnt(j) = j + 1
        dsp(j) = mod(j + 1, p)
      end do
      call MPI_Graph_create(MPI_COMM_WORLD, p, cnt, dsp, .false., nc, e)
      call ok(e, 'graph_create', round)
      call MPI_Graphdims_get(nc, i1, i2, e)
      if (i1 /= p .or. i2 /= p) call fail('graph_create dims', round)
      call MPI_Comm_free(nc, e)
    case (23, 24)
      if (kind == 23) then
        call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, [left], MPI_UNWEIGHTED, 1, [right], &
          MPI_UNWEIGHTED, MPI_INFO_NULL, .false., nc, e)
      else
        call MPI_Dist_graph_create(MPI_COMM_WORLD, 1, [rank], [1], [right], MPI_UNWEIGHTED, &
          MPI_INFO_NULL, .false., nc, e)
      end if
      call ok(e, 'dist_graph_create', round)
      call MPI_Dist_graph_neighbors_count(nc, i1, i2, weighted, e)
      if (i1 /= 1 .or. i2 /= 1 .or. weighted) call fail('dist_graph_create degrees', round)
      call MPI_Comm_free(nc, e)
    case (25)
      call MPI_Win_create(sb, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, e)
      call ok(e, 'win_create', round)
      call MPI_Win_fence(0, win, e)
      base = 0
      call MPI_Get(nr, 1, MPI_INTEGER, right, base, 1, MPI_INTEGER, win, e)
      call MPI_Win_fence(0, win, e)
      if (nr /= 100 * right) call fail('win_create get', round)
      call MPI_Win_free(win, e)
    case (26, 27)
      base = 0
      if (kind == 26) then
        call MPI_Win_allocate(wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, e)
      else
        call MPI_Win_allocate_shared(wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, e)
      end if
      call ok(e, 'win_allocate(_shared)', round)
      if (base == 0) call fail('win_allocate base', round)
      call MPI_Win_free(win, e)
    case (28)
      call MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, win, e)
      call ok(e, 'win_create_dynamic', round)
      call MPI_Win_free(win, e)
    case (29)
      call MPI_File_open(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR + &
        MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, fh, e)
      call ok(e, 'file_open', round)
      call MPI_File_get_amode(fh, i1, e)
      if (i1 /= MPI_MODE_CREATE + MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE) &
        call fail('file_open amode', round)
      call MPI_File_close(fh, e)
    case (30:34)
      ! A periodic ring's neighbours, in the standard's order: left, then right
      cnt(0:1) = 1
      dsp(0:1) = [0, 1]
      adsp = [0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND]
      ty(0:1) = MPI_INTEGER
      sb(0:1) = [10 * rank, 10 * rank + 1]
      select case (kind)
      case (30)
        call MPI_Neighbor_allgather(rank, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, cart, e)
      case (31)
        call MPI_Neighbor_allgatherv(rank, 1, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, cart, e)
      case (32)
        call MPI_Neighbor_alltoall(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, cart, e)
      case (33)
        call MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, cart, e)
      case (34)
        ! (Open MPI 4.1's own MPI_NEIGHBOR_ALLTOALLW fails at p = 1: MPI_ERR_TYPE)
        if (p == 1) rb(0:1) = sb(1:0:-1)
        if (p > 1) call MPI_Neighbor_alltoallw(sb, cnt, adsp, ty, rb, cnt, adsp, ty, cart, e)
      end select
      call ok(e, 'neighbor collective', round)
      i1 = left
      i2 = right
      if (kind >= 32) i1 = 10 * left + 1
      if (kind >= 32) i2 = 10 * right
      ! (At p <= 2 both neighbours are one process: which block arrives where is the MPI's)
      if (.not. ((rb(0) == i1 .and. rb(1) == i2) .or. (p < 3 .and. rb(0) == i2 .and. rb(1) == i1))) &
        call fail('neighbor collective result', round)
    case (35)
      ! Between the halves (even and odd ranks; one of them empty at p = 1)
      if (p > 1) then
        call MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - mod(rank, 2), 77, nc, e)
        call ok(e, 'intercomm_create', round)
        call MPI_Comm_remote_size(nc, nr, e)
        if (nr /= p / 2 + mod(p, 2) * mod(rank, 2)) call fail('intercomm_create size', round)
        call MPI_Comm_free(nc, e)
      end if
    end select
    if (e /= MPI_SUCCESS) call fail('error code', round)
  end subroutine unserved

  subroutine ok(e, what, round)
    integer, intent(in) :: e, round
    character(*), intent(in) :: what
    if (e /= MPI_SUCCESS) call fail(what, round)
  end subroutine ok

  subroutine fail(what, round)
    character(*), intent(in) :: what
    integer, intent(in) :: round
    integer :: e
    print '(a, a, a, i0, a, i0)', 'nbprogress_f: FAILED: ', what, ', round ', round, ', rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail
end program nbprogress_f
