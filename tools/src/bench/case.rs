//! One benchmark case: a collective on a communicator with a message size, datatype and op;
//! its buffers, the calls (native `PMPI_*` or pcoll's exported `MPI_*` with a forced
//! algorithm), the result check and the sequential oracle.

use super::kind::{DType, OpKind};
use super::pool::{Layout, Pool, COLD_POOL_BYTES};
use mpi_sys::*;
use pcoll::{Algorithm, CallSpec, Collective, Pick};
use pcoll_mpi::ffi::entry as pe;
use pcoll_mpi::state;
use std::os::raw::{c_int, c_void};

/// What one timed call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The MPI's own collective, `PMPI_*` called directly (the baseline).
    Native,
    /// pcoll's exported `MPI_*` without forcing: the tuning table's choice.
    Auto,
    /// pcoll's exported `MPI_*` with `alg` forced (`Algorithm::Native`: pcoll's dispatch
    /// handing the call to `PMPI_*`, i.e. the pure interposition overhead; "passthru").
    Alg(Algorithm),
    /// As `Alg`, with the segment size (bytes) set at run time (`pcoll_segment`): `alg@32KiB`.
    Seg(Algorithm, usize),
}

impl Variant {
    pub fn label(self) -> String {
        match self {
            Variant::Native => "native".into(),
            Variant::Auto => "auto".into(),
            Variant::Alg(Algorithm::Native) => "passthru".into(),
            Variant::Alg(a) => a.name().into(),
            Variant::Seg(a, b) => format!("{}@{}", a.name(), size_label(b)),
        }
    }
    /// The algorithm forced for the call (`None`: native or the table's choice).
    pub fn forced(self) -> Option<Algorithm> {
        match self {
            Variant::Native | Variant::Auto => None,
            Variant::Alg(a) | Variant::Seg(a, _) => Some(a),
        }
    }
    /// The run-time segment size of the call (`None`: environment, table or model).
    pub fn segment(self) -> Option<usize> {
        match self {
            Variant::Seg(_, b) => Some(b),
            _ => None,
        }
    }
    /// `auto`, `passthru` (or `native`), an algorithm name, or `name@size` (`greedy@32KiB`).
    pub fn parse(s: &str) -> Result<Variant, String> {
        let t = s.trim().to_ascii_lowercase();
        if let Some((a, b)) = t.split_once('@') {
            let alg = a.parse::<Algorithm>()?;
            let bytes = super::kind::parse_size(b)?;
            if alg == Algorithm::Native || bytes == 0 || bytes > pcoll::tuning::MAX_SEGMENT {
                return Err(format!(
                    "bad variant '{s}': name@size needs an algorithm and 1..=2GiB bytes"
                ));
            }
            return Ok(Variant::Seg(alg, bytes));
        }
        match t.as_str() {
            "auto" => Ok(Variant::Auto),
            "passthru" | "passthrough" | "native" => Ok(Variant::Alg(Algorithm::Native)),
            t => t
                .parse::<Algorithm>()
                .map(Variant::Alg)
                .map_err(|e| format!("{e}, auto, passthru, name@size")),
        }
    }
}

/// `32768` -> `"32KiB"`, `1048576` -> `"1MiB"`, `100` -> `"100B"` (variant labels).
pub fn size_label(bytes: usize) -> String {
    let s = super::kind::short_size(bytes);
    if s.ends_with(['K', 'M', 'G']) {
        s + "iB"
    } else {
        s + "B"
    }
}

/// Sets the process-wide run-time overrides (`pcoll_force`, `pcoll_segment`) for a call of
/// `coll` with variant `v` (native and auto: none).
pub fn select(coll: Collective, v: Variant) {
    state::force(coll, v.forced().map(Pick::Alg));
    state::set_segment(v.segment());
}

/// Elements of a `bytes`-byte message of `dt` (at least one).
pub fn elems_for(bytes: usize, dt: DType) -> usize {
    (bytes / dt.size()).max(1)
}

/// Near-equal split of `n` elements into `p` blocks (the first `n % p` one larger).
pub fn split_counts(n: usize, p: usize) -> (Vec<usize>, Vec<usize>) {
    let counts: Vec<usize> = (0..p).map(|j| n / p + (j < n % p) as usize).collect();
    let mut displs = Vec::with_capacity(p);
    let mut acc = 0;
    for c in &counts {
        displs.push(acc);
        acc += c;
    }
    (counts, displs)
}

pub struct Case {
    pub coll: Collective,
    pub comm: MPI_Comm,
    pub p: usize,
    pub rank: usize,
    pub dt: DType,
    pub op: OpKind,
    /// Total elements: reduce/allreduce the vector, reduce_scatter/allgatherv the sum over
    /// ranks (the tuning table's notion of message size, times the type size).
    pub n: usize,
    /// reduce_scatter/allgatherv per-rank counts and displacements (elements).
    pub counts: Vec<c_int>,
    pub displs: Vec<c_int>,
    send: Vec<u64>,
    recv: Vec<u64>,
    /// Cold buffers ([`Case::make_cold`]): sets of (send, receive) rotated over a pool of at
    /// least 96 MiB; `None`: every call uses `send` and `recv` (hot).
    pool: Option<Pool>,
    /// Calls use `send`/`recv` even when cold (the result check reads them).
    primary: bool,
}

fn words(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8).max(1)]
}

impl Case {
    pub fn new(
        coll: Collective,
        comm: MPI_Comm,
        p: usize,
        rank: usize,
        n: usize,
        dt: DType,
        op: OpKind,
    ) -> Case {
        let (counts, displs, n) = match coll {
            // Regular counts: p blocks of n / p.
            Collective::Allgather | Collective::ReduceScatterBlock => {
                let per = n / p;
                (vec![per; p], (0..p).map(|j| j * per).collect(), per * p)
            }
            _ => {
                let (c, d) = split_counts(n, p);
                (c, d, n)
            }
        };
        let es = dt.size();
        let send_elems = match coll.base() {
            Collective::Allgatherv => counts[rank],
            Collective::Bcast => 0,
            _ => n,
        };
        let mut c = Case {
            coll,
            comm,
            p,
            rank,
            dt,
            op,
            n,
            counts: counts.iter().map(|&x| x as c_int).collect(),
            displs: displs.iter().map(|&x| x as c_int).collect(),
            send: words(send_elems * es),
            recv: words(n * es),
            pool: None,
            primary: false,
        };
        let sb = c.send_bytes_mut();
        for i in 0..send_elems {
            let gi = if coll.base() == Collective::Allgatherv {
                displs[rank] + i
            } else {
                i
            };
            dt.encode(op.value(rank, gi), &mut sb[i * es..(i + 1) * es]);
        }
        c.root_data();
        c
    }

    /// Bcast: the root's (rank 0's) buffer holds its data before every call.
    fn root_data(&mut self) {
        if self.coll != Collective::Bcast || self.rank != 0 {
            return;
        }
        let es = self.dt.size();
        for i in 0..self.n {
            let v = self.op.value(0, i);
            self.dt
                .encode(v, &mut self.recv_bytes_mut()[i * es..(i + 1) * es]);
        }
    }

    /// Cold buffers from now on: every call on the next (send, receive) set of a pool of at
    /// least [`COLD_POOL_BYTES`], each set holding this case's input (and the bcast root's
    /// data), so no call finds its data in a cache. Advanced by [`Case::rotate`].
    pub fn make_cold(&mut self) {
        let layout = Layout::new(&[self.send.len() * 8, self.recv.len() * 8], COLD_POOL_BYTES);
        let mut pool = Pool::new(layout, 0);
        let (send, recv) = (self.send_bytes_mut().to_vec(), self.recv_bytes().to_vec());
        pool.fill_part(0, &send);
        pool.fill_part(1, &recv);
        self.pool = Some(pool);
    }

    /// Hot or cold buffers (the table's and the CSV's `buffers`).
    pub fn buffers(&self) -> &'static str {
        if self.pool.is_some() {
            "cold"
        } else {
            "hot"
        }
    }

    /// The next call uses the next set of the cold pool (hot: nothing changes).
    pub fn rotate(&mut self) {
        if let Some(p) = &mut self.pool {
            p.advance();
        }
    }

    /// `true`: calls use the case's own buffers even when cold (for the result check).
    pub fn use_primary(&mut self, on: bool) {
        self.primary = on;
    }

    /// The send and receive buffers of the next call.
    fn call_buffers(&mut self) -> (*const c_void, *mut c_void) {
        match &mut self.pool {
            Some(p) if !self.primary => (
                p.cur_mut(0).as_ptr() as *const c_void,
                p.cur_mut(1).as_mut_ptr() as *mut c_void,
            ),
            _ => (
                self.send.as_ptr() as *const c_void,
                self.recv.as_mut_ptr() as *mut c_void,
            ),
        }
    }

    /// The message size as the tuning table keys it.
    pub fn bytes(&self) -> usize {
        self.n * self.dt.size()
    }

    fn send_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.send.len() * 8;
        // SAFETY: reinterpreting a live Vec<u64> as bytes (u8 has no alignment or validity
        // requirements); the length is the Vec's byte length.
        unsafe { std::slice::from_raw_parts_mut(self.send.as_mut_ptr() as *mut u8, len) }
    }

    fn recv_bytes(&self) -> &[u8] {
        // SAFETY: as above, read-only.
        unsafe { std::slice::from_raw_parts(self.recv.as_ptr() as *const u8, self.recv.len() * 8) }
    }

    fn recv_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe {
            std::slice::from_raw_parts_mut(self.recv.as_mut_ptr() as *mut u8, self.recv.len() * 8)
        }
    }

    /// The part of the receive buffer that carries this rank's result (bytes range).
    pub fn result_range(&self) -> std::ops::Range<usize> {
        let es = self.dt.size();
        match self.coll {
            Collective::Reduce if self.rank != 0 => 0..0,
            Collective::Reduce
            | Collective::Allreduce
            | Collective::Allgatherv
            | Collective::Allgather
            | Collective::Bcast => 0..self.n * es,
            Collective::ReduceScatter | Collective::ReduceScatterBlock => {
                0..self.counts[self.rank] as usize * es
            }
        }
    }

    pub fn result(&self) -> &[u8] {
        &self.recv_bytes()[self.result_range()]
    }

    /// Fills the receive buffer with a pattern no correct result contains (0xA5 bytes are
    /// not small integers in any type), so a stale result cannot pass the check.
    pub fn poison(&mut self) {
        self.recv_bytes_mut().fill(0xA5);
        self.root_data();
    }

    /// The expected result on this rank, from a sequential rank-order fold of every rank's
    /// input (independent of MPI and of pcoll).
    pub fn oracle(&self) -> Vec<u8> {
        let es = self.dt.size();
        let fold = |i: usize| {
            (1..self.p).fold(self.op.value(0, i), |a, r| {
                self.op.apply(a, self.op.value(r, i))
            })
        };
        let range: Vec<i64> = match self.coll.base() {
            Collective::Reduce if self.rank != 0 => vec![],
            Collective::Reduce | Collective::Allreduce => (0..self.n).map(fold).collect(),
            Collective::Bcast => (0..self.n).map(|i| self.op.value(0, i)).collect(),
            Collective::ReduceScatter => {
                let d = self.displs[self.rank] as usize;
                (d..d + self.counts[self.rank] as usize).map(fold).collect()
            }
            _ => {
                let mut v = Vec::with_capacity(self.n);
                for j in 0..self.p {
                    let d = self.displs[j] as usize;
                    for i in d..d + self.counts[j] as usize {
                        v.push(self.op.value(j, i));
                    }
                }
                v
            }
        };
        let mut out = vec![0u8; range.len() * es];
        for (k, v) in range.iter().enumerate() {
            self.dt.encode(*v, &mut out[k * es..(k + 1) * es]);
        }
        out
    }

    /// The `CallSpec` pcoll's dispatch builds for this call on this rank (for probing
    /// whether an algorithm can serve it, and for the model).
    pub fn spec(&self) -> CallSpec {
        let counts = match self.coll {
            Collective::Reduce | Collective::Allreduce | Collective::Bcast => vec![self.n],
            _ => self.counts.iter().map(|&c| c as usize).collect(),
        };
        let displs = match self.coll.base() {
            Collective::Allgatherv => self.displs.iter().map(|&d| d as usize).collect(),
            _ => vec![],
        };
        let g = state::global();
        let es = self.dt.size();
        let mut spec = CallSpec {
            coll: self.coll,
            p: self.p,
            rank: self.rank,
            root: 0,
            counts,
            displs,
            // sum/max/min/prod are commutative.
            commutative: true,
            elem_bytes: es,
            seg_elems: 0,
            params: g.table.model(),
            in_place: false,
        };
        // The segment the library's decision brings (run time > PCOLL_SEGMENT > the rule's).
        if let Ok(d) = decision(&spec) {
            spec.seg_elems = d.seg_elems(es);
        }
        spec
    }

    /// Runs the collective once; returns the MPI return code.
    /// One call of variant `v`; pcoll must already be set to `v` ([`select`], done outside the
    /// timed region).
    pub fn call(&mut self, v: Variant) -> c_int {
        let native = v == Variant::Native;
        let dt = self.dt.handle();
        let op = self.op.handle();
        let comm = self.comm;
        let n = self.n as c_int;
        let (sbuf, rbuf) = self.call_buffers();
        let counts = self.counts.as_ptr();
        let displs = self.displs.as_ptr();
        let mine = self.counts[self.rank];
        // SAFETY: send and receive buffers are live Vecs sized in `new` for exactly these
        // counts (send: n or counts[rank] elements, receive: n elements), or a cold pool's
        // parts of the same sizes (`make_cold`), counts/displs have
        // p entries, the communicator is live; every rank of `comm` makes the same call.
        unsafe {
            match (self.coll, native) {
                (Collective::Reduce, true) => PMPI_Reduce(sbuf, rbuf, n, dt, op, 0, comm),
                (Collective::Reduce, false) => pe::MPI_Reduce(sbuf, rbuf, n, dt, op, 0, comm),
                (Collective::Allreduce, true) => PMPI_Allreduce(sbuf, rbuf, n, dt, op, comm),
                (Collective::Allreduce, false) => pe::MPI_Allreduce(sbuf, rbuf, n, dt, op, comm),
                (Collective::ReduceScatter, true) => {
                    PMPI_Reduce_scatter(sbuf, rbuf, counts, dt, op, comm)
                }
                (Collective::ReduceScatter, false) => {
                    pe::MPI_Reduce_scatter(sbuf, rbuf, counts, dt, op, comm)
                }
                (Collective::Allgatherv, true) => {
                    PMPI_Allgatherv(sbuf, mine, dt, rbuf, counts, displs, dt, comm)
                }
                (Collective::Allgatherv, false) => {
                    pe::MPI_Allgatherv(sbuf, mine, dt, rbuf, counts, displs, dt, comm)
                }
                (Collective::Bcast, true) => PMPI_Bcast(rbuf, n, dt, 0, comm),
                (Collective::Bcast, false) => pe::MPI_Bcast(rbuf, n, dt, 0, comm),
                (Collective::Allgather, true) => {
                    PMPI_Allgather(sbuf, mine, dt, rbuf, mine, dt, comm)
                }
                (Collective::Allgather, false) => {
                    pe::MPI_Allgather(sbuf, mine, dt, rbuf, mine, dt, comm)
                }
                (Collective::ReduceScatterBlock, true) => {
                    PMPI_Reduce_scatter_block(sbuf, rbuf, mine, dt, op, comm)
                }
                (Collective::ReduceScatterBlock, false) => {
                    pe::MPI_Reduce_scatter_block(sbuf, rbuf, mine, dt, op, comm)
                }
            }
        }
    }

    /// Can pcoll serve this case with `v` without failing? Builds this rank's program with
    /// pcoll's builder (pure, no communication): unimplemented algorithms and failed
    /// preconditions are found here. Callers combine the answer over all ranks.
    pub fn probe(&self, v: Variant) -> Result<Algorithm, String> {
        let mut spec = self.spec();
        let alg = match v {
            Variant::Native => return Ok(Algorithm::Native),
            Variant::Alg(a) => a,
            Variant::Seg(a, b) => {
                spec.seg_elems = (b / self.dt.size()).max(1);
                a
            }
            Variant::Auto => auto_choice(&spec),
        };
        if alg == Algorithm::Native {
            return Ok(alg);
        }
        alg.check(&spec)?;
        // A node-aware program needs the communicator's nodes, which the library asks of MPI
        // (it checks them itself, falling back like any forced algorithm that cannot serve).
        if spec.total() == 0 || alg.node_aware() || alg == Algorithm::Shm {
            return Ok(alg);
        }
        pcoll::algo::build(alg, &spec)
            .map(|_| alg)
            .map_err(|e| e.to_string())
    }
}

/// The library's decision for this call with the current overrides (the same resolver the
/// dispatch asks; the benchmark's data is plain: no defect fact holds).
fn decision(spec: &CallSpec) -> Result<pcoll::decide::Decision, pcoll::Error> {
    let call = pcoll::decide::CallFacts {
        commutative: spec.commutative,
        ..pcoll::decide::CallFacts::new(spec.coll, spec.p, spec.bytes())
    };
    state::resolver(state::global(), spec.coll, spec.p).resolve(&call, &pcoll::decide::PlainFacts)
}

/// The algorithm pcoll's dispatch picks without `pcoll_force` (the resolver, with the
/// run-time force left out).
pub fn auto_choice(spec: &CallSpec) -> Algorithm {
    let call = pcoll::decide::CallFacts {
        commutative: spec.commutative,
        ..pcoll::decide::CallFacts::new(spec.coll, spec.p, spec.bytes())
    };
    let g = state::global();
    let mut r = state::resolver(g, spec.coll, spec.p);
    r.over.algorithm = None;
    r.resolve(&call, &pcoll::decide::PlainFacts)
        .map_or(Algorithm::Native, |d| d.algorithm)
}

#[cfg(test)]
mod tests {
    use super::Variant;
    use pcoll::Algorithm::*;

    #[test]
    fn segment_variants_parse_and_label() {
        assert_eq!(
            Variant::parse("greedy@32KiB"),
            Ok(Variant::Seg(Greedy, 32768))
        );
        assert_eq!(Variant::Seg(Greedy, 32768).label(), "greedy@32KiB");
        assert_eq!(Variant::Seg(GreedyUni, 1 << 20).label(), "greedy_uni@1MiB");
        for v in [
            Variant::Seg(Pipeline, 100),
            Variant::Seg(Circulant, 3 << 10),
        ] {
            assert_eq!(Variant::parse(&v.label()), Ok(v));
        }
        assert_eq!(Variant::Seg(Pipeline, 100).label(), "pipeline@100B");
        assert!(Variant::parse("native@1k").is_err());
        assert!(Variant::parse("greedy@0").is_err());
        assert!(Variant::parse("greedy@4g").is_err());
        assert_eq!(Variant::parse("passthru"), Ok(Variant::Alg(Native)));
        assert_eq!(Variant::Seg(Greedy, 8).forced(), Some(Greedy));
        assert_eq!(Variant::Auto.segment(), None);
    }
}
