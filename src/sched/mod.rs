//! Pure schedule generators: plain integers in, per-rank step lists out. No buffers, no MPI.

pub mod blocks;
pub mod butterfly;
pub mod circulant;
pub mod greedy;
pub mod pipeline;
pub mod trees;

/// Test helper: `parents` (one entry per rank) is a tree rooted at `root`: every rank reaches
/// it in at most p steps.
#[cfg(test)]
pub(crate) fn assert_tree(parents: &[Option<usize>], root: usize) {
    let p = parents.len();
    for r in 0..p {
        let (mut v, mut h) = (r, 0);
        while let Some(u) = parents[v] {
            v = u;
            h += 1;
            assert!(h <= p, "rank {r}: a cycle");
        }
        assert_eq!(v, root, "rank {r}");
    }
}
