//! Nodes of a communicator: which ranks share a node (and so share its network link).
//!
//! The library learns one key per rank (the node's shared-memory group, its host name, or
//! `world rank / K`, see `PCOLL_NODES`) and turns the keys into a [`Layout`]: nodes numbered
//! in the order of their lowest rank, each node's members in rank order. The node-aware
//! algorithms ([`crate::algo::hier`]) are built from it; the decision code reads only its
//! [`NodeShape`].

/// How ranks are grouped into nodes (`PCOLL_NODES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NodeMode {
    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` (the default).
    #[default]
    Shared,
    /// Ranks with the same `MPI_Get_processor_name`.
    Hostname,
    /// Nodes of K consecutive `MPI_COMM_WORLD` ranks (`world rank / K`), for tests.
    Block(usize),
}

impl NodeMode {
    /// Parses `shared`, `hostname` or a positive integer K.
    pub fn parse(s: &str) -> Result<NodeMode, String> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "shared" => Ok(NodeMode::Shared),
            "hostname" => Ok(NodeMode::Hostname),
            _ => match t.parse::<usize>() {
                Ok(k) if k > 0 => Ok(NodeMode::Block(k)),
                _ => Err("accepted: shared, hostname, or a positive integer K".into()),
            },
        }
    }
}

/// The facts of a layout the decision code reads (equal on every rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NodeShape {
    /// Number of nodes (0: not known; treated as one node).
    pub nodes: usize,
    /// Fewest and most ranks on one node.
    pub min_ppn: usize,
    pub max_ppn: usize,
    /// Every node's ranks are one block of consecutive ranks (so node order is rank order and
    /// node-aware algorithms keep canonical order for non-commutative ops).
    pub contiguous: bool,
}

impl NodeShape {
    /// The shape of `p` ranks on `nodes` nodes of `ppn` consecutive ranks each (the last
    /// node takes the remainder), for the model and `pcoll-sim`.
    pub fn blocks(p: usize, ppn: usize) -> NodeShape {
        let ppn = ppn.clamp(1, p.max(1));
        let nodes = p.div_ceil(ppn).max(1);
        let last = p - (nodes - 1) * ppn;
        NodeShape {
            nodes,
            min_ppn: last.min(ppn),
            max_ppn: ppn,
            contiguous: true,
        }
    }
    /// The communicator spans more than one node with more than one rank on some node:
    /// the only case where the node-aware algorithms are priced by the model.
    pub fn multi(&self) -> bool {
        self.nodes > 1 && self.max_ppn > 1
    }
    /// A node-aware algorithm can serve an op of this commutativity.
    pub fn order_ok(&self, commutative: bool) -> bool {
        commutative || self.contiguous || self.nodes <= 1
    }
}

/// Nodes of a communicator of `p` ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Node index of each rank.
    pub node_of: Vec<usize>,
    /// Each node's ranks in rank order; nodes ordered by their lowest rank.
    pub members: Vec<Vec<usize>>,
}

impl Layout {
    /// Group ranks by equal key (`keys[rank]`).
    pub fn from_keys<K: PartialEq>(keys: &[K]) -> Layout {
        let mut node_of = Vec::with_capacity(keys.len());
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut first: Vec<usize> = Vec::new(); // lowest rank of each node
        for (r, k) in keys.iter().enumerate() {
            let n = match first.iter().position(|&f| keys[f] == *k) {
                Some(n) => n,
                None => {
                    first.push(r);
                    members.push(Vec::new());
                    first.len() - 1
                }
            };
            node_of.push(n);
            members[n].push(r);
        }
        Layout { node_of, members }
    }
    /// Consecutive blocks of the given sizes (node 0 = ranks `0..sizes[0]`, ...).
    pub fn from_sizes(sizes: &[usize]) -> Layout {
        let keys: Vec<usize> = sizes
            .iter()
            .enumerate()
            .flat_map(|(n, &s)| std::iter::repeat_n(n, s))
            .collect();
        Layout::from_keys(&keys)
    }
    /// One node holding every rank.
    pub fn single(p: usize) -> Layout {
        Layout::from_sizes(&[p])
    }
    pub fn p(&self) -> usize {
        self.node_of.len()
    }
    pub fn nodes(&self) -> usize {
        self.members.len()
    }
    /// This rank's index among its node's ranks.
    pub fn local_index(&self, rank: usize) -> usize {
        let m = &self.members[self.node_of[rank]];
        m.iter().position(|&r| r == rank).unwrap_or(0)
    }
    pub fn shape(&self) -> NodeShape {
        let sizes = self.members.iter().map(Vec::len);
        NodeShape {
            nodes: self.nodes(),
            min_ppn: sizes.clone().min().unwrap_or(0),
            max_ppn: sizes.max().unwrap_or(0),
            contiguous: self
                .members
                .iter()
                .all(|m| m.windows(2).all(|w| w[1] == w[0] + 1)),
        }
    }
    /// The multi-leader width: blocks of a `hier_ml` call (the smallest node's size).
    pub fn width(&self) -> usize {
        self.members.iter().map(Vec::len).min().unwrap_or(1).max(1)
    }
    /// Ranks with local index `j`, one per node that has one, in node order.
    pub fn peers(&self, j: usize) -> Vec<usize> {
        self.members
            .iter()
            .filter_map(|m| m.get(j).copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_group_in_order_of_lowest_rank() {
        let l = Layout::from_keys(&[7, 3, 7, 3, 9]);
        assert_eq!(l.members, vec![vec![0, 2], vec![1, 3], vec![4]]);
        assert_eq!(l.node_of, vec![0, 1, 0, 1, 2]);
        let s = l.shape();
        assert_eq!(
            (s.nodes, s.min_ppn, s.max_ppn, s.contiguous),
            (3, 1, 2, false)
        );
        assert_eq!(l.local_index(3), 1);
        assert_eq!(l.peers(1), vec![2, 3]);
        assert!(Layout::from_sizes(&[2, 3, 1]).shape().contiguous);
        assert!(!Layout::single(5).shape().multi());
    }

    #[test]
    fn mode_parse() {
        assert_eq!(NodeMode::parse("hostname"), Ok(NodeMode::Hostname));
        assert_eq!(NodeMode::parse(" 3 "), Ok(NodeMode::Block(3)));
        assert!(NodeMode::parse("0").is_err() && NodeMode::parse("x").is_err());
        let b = NodeShape::blocks(7, 3);
        assert_eq!((b.nodes, b.min_ppn, b.max_ppn), (3, 1, 3));
    }
}
